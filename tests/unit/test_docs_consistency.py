"""The operator's docs say what the code does: option names, types and defaults, commands and
their flags, health check codes.

The code is read statically (ast), from the checkout the docs live in: MODULE_OPTIONS and the
command decorators of mgr_module/recovery/*.py, and the RECOVERY_* string constants of the
core and the policies (plan() raises every health check; the module only reports them). The docs are README.md and docs/*.md; CHANGELOG.md is history
and may name what no longer exists.
"""
import ast
import pathlib
import re
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
MODULE_DIR = REPO / "mgr_module" / "recovery"
CORE_DIRS = [REPO / "orchestrator", REPO / "policies"]     # plan() raises every health check
DOCS = [REPO / "README.md"] + sorted((REPO / "docs").glob("*.md"))

COMMAND = re.compile(r"ceph recovery ((?:[a-z][a-z-]*)(?: [a-z][a-z-]*)*)")
FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z-]*|-f)(?![\w-])")
OPTION_REF = re.compile(r"mgr/recovery/([a-z_]+)")
HEALTH_CODE = re.compile(r"(?<![A-Z0-9_])RECOVERY_[A-Z_]+(?![A-Z0-9_])")


# ---------------------------------------------------------------- the code, read statically
def _trees(dirs):
    for d in dirs:
        for path in sorted(d.rglob("*.py")):
            yield path, ast.parse(path.read_text(), str(path))


def _const(node):
    return ast.literal_eval(node)


def module_options():
    """{name: (type, default)} from every `MODULE_OPTIONS = [Option(...), ...]`."""
    found = {}
    for _path, tree in _trees([MODULE_DIR]):
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Assign) and any(
                    isinstance(t, ast.Name) and t.id == "MODULE_OPTIONS" for t in node.targets)):
                continue
            for call in node.value.elts:
                kw = {k.arg: k.value for k in call.keywords}
                name = _const(call.args[0]) if call.args else _const(kw["name"])
                found[name] = (_const(kw["type"]) if "type" in kw else "str",
                               _const(kw["default"]) if "default" in kw else None)
    return found


def module_commands():
    """{("network", "probe"): {"hosts", ...}}: every `@...Command("recovery ...")` method and
    the flags its parameters give (`format` is `-f`)."""
    found = {}
    for _path, tree in _trees([MODULE_DIR]):
        for fn in ast.walk(tree):
            if not isinstance(fn, ast.FunctionDef):
                continue
            for deco in fn.decorator_list:
                if (isinstance(deco, ast.Call) and deco.args
                        and isinstance(deco.args[0], ast.Constant)
                        and str(deco.args[0].value).startswith("recovery ")):
                    params = [a.arg for a in fn.args.args if a.arg != "self"]
                    flags = {"--" + p.replace("_", "-") for p in params}
                    if "format" in params:
                        flags |= {"-f"}
                    found[tuple(deco.args[0].value.split()[1:])] = flags
    return found


def health_codes_in_code():
    """plan() raises every run check; the mgr shell raises the checks about its own stored
    state (RECOVERY_STATE_*)."""
    codes = set()
    for _path, tree in _trees(CORE_DIRS + [REPO / "mgr_module" / "recovery"]):
        for node in ast.walk(tree):
            if (isinstance(node, ast.Constant) and isinstance(node.value, str)
                    and HEALTH_CODE.fullmatch(node.value)):
                codes.add(node.value)
    return codes


# ---------------------------------------------------------------- the docs, parsed
def _tables(text):
    """Markdown tables as (header cells, [row cells]), cells stripped of backticks."""
    tables, rows = [], []
    for line in text.splitlines() + [""]:
        if line.startswith("|"):
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
            if not all(set(c) <= set("-: ") for c in cells):
                rows.append(cells)
        elif rows:
            tables.append((rows[0], rows[1:]))
            rows = []
    return tables


def _plain(cell):
    return cell.replace("`", "").strip()


def option_rows(text):
    """(name, type or None, default) for every row of a table headed `option | ... default`."""
    out = []
    for header, rows in _tables(text):
        head = [h.lower() for h in header]
        if head and head[0] == "option" and "default" in head:
            typ = head.index("type") if "type" in head else None
            for row in rows:
                out.append((_plain(row[0]), _plain(row[typ]) if typ is not None else None,
                            _plain(row[head.index("default")])))
    return out


def command_mentions(text):
    """(command words, the text that follows on its line up to the closing backtick)."""
    for line in text.splitlines():
        for m in COMMAND.finditer(line):
            tail = line[m.end():]
            tail = tail.split("`")[0] if line[:m.start()].count("`") % 2 else tail
            yield m.group(1).split(), tail.split("ceph recovery")[0]


def command_table_rows(text):
    """(command words, its arguments cell) for table rows whose first cell is one command."""
    for header, rows in _tables(text):
        if header and header[0].lower() == "command":
            for row in rows:
                m = COMMAND.fullmatch(_plain(row[0]))
                if m and len(row) > 2:
                    yield m.group(1).split(), row[1]


def _resolve(words, commands):
    """The longest known command the words start with (the rest are arguments), or None."""
    for n in range(len(words), 0, -1):
        if tuple(words[:n]) in commands:
            return tuple(words[:n])
    return None


def _default_matches(doc, typ, default):
    if typ == "bool":
        return doc in ("true", "false") and (doc == "true") == default
    if typ in ("int", "secs", "uint"):
        return doc.isdigit() and int(doc) == default
    if typ == "float":
        try:
            return float(doc) == default
        except ValueError:
            return False
    return doc == str(default)


def _doc_id(path):
    return str(path.relative_to(REPO))


# ---------------------------------------------------------------- the checks
def test_the_static_reading_of_the_module_finds_options_and_commands():
    # guards the other tests against passing on an empty parse
    assert len(module_options()) >= 5 and len(module_commands()) >= 5
    assert len(health_codes_in_code()) >= 5


@pytest.mark.parametrize("doc", DOCS, ids=_doc_id)
def test_every_option_the_doc_names_exists(doc):
    options = module_options()
    named = set(OPTION_REF.findall(doc.read_text()))
    named |= {name for name, _t, _d in option_rows(doc.read_text())}
    assert named - set(options) == set(), "not in MODULE_OPTIONS: %s" % sorted(named - set(options))


@pytest.mark.parametrize("doc", DOCS, ids=_doc_id)
def test_every_documented_default_and_type_is_the_modules(doc):
    options = module_options()
    wrong = []
    for name, typ, default in option_rows(doc.read_text()):
        if name not in options:
            continue                   # reported by the test above
        real_type, real_default = options[name]
        if typ is not None and typ != real_type:
            wrong.append("%s: type %s, module says %s" % (name, typ, real_type))
        if not _default_matches(default, real_type, real_default):
            wrong.append("%s: default %s, module says %r" % (name, default, real_default))
    assert wrong == []


def test_the_readme_documents_every_option():
    rows = {name for name, _t, _d in option_rows((REPO / "README.md").read_text())}
    assert rows == set(module_options())


@pytest.mark.parametrize("doc", DOCS, ids=_doc_id)
def test_every_command_and_flag_the_doc_names_exists(doc):
    commands = module_commands()
    text = doc.read_text()
    unknown, bad_flags = [], []
    mentions = list(command_mentions(text))
    mentions += [(w, cell) for w, cell in command_table_rows(text)]
    for words, tail in mentions:
        cmd = _resolve(words, commands)
        if cmd is None:
            unknown.append(" ".join(words))
            continue
        bad_flags += ["%s %s" % (" ".join(cmd), f) for f in FLAG.findall(tail)
                      if f not in commands[cmd]]
    assert unknown == [], "no such command in the module: %s" % unknown
    assert bad_flags == [], "no such flag: %s" % bad_flags


def test_the_readme_documents_every_command():
    text = (REPO / "README.md").read_text()
    documented = {tuple(words) for words, _c in command_table_rows(text)}
    assert documented == set(module_commands())


@pytest.mark.parametrize("doc", DOCS, ids=_doc_id)
def test_every_health_code_the_doc_names_is_raised_by_the_code(doc):
    named = set(HEALTH_CODE.findall(doc.read_text()))
    assert named - health_codes_in_code() == set()


def test_the_readme_lists_every_health_code():
    listed = set()
    for header, rows in _tables((REPO / "README.md").read_text()):
        if header and header[0].lower() == "code":
            listed |= {_plain(r[0]) for r in rows}
    assert listed == health_codes_in_code()


# ---------------------------------------------------------------- the parsers themselves
def test_the_parsers_catch_a_wrong_name_default_and_command():
    text = ("| option | type | default | x |\n|---|---|---|---|\n"
            "| `default_budget` | str | `80%` | x |\n| `tick_interval` | float | `3` | x |\n\n"
            "Run `ceph recovery frobnicate --now` or `ceph recovery status --verbose`.\n")
    rows = option_rows(text)
    assert rows == [("default_budget", "str", "80%"), ("tick_interval", "float", "3")]
    assert not _default_matches("3", "float", 2.0) and _default_matches("2.0", "float", 2.0)
    assert _default_matches("false", "bool", False) and not _default_matches("0", "bool", False)
    mentions = list(command_mentions(text))
    assert [w for w, _t in mentions] == [["frobnicate"], ["status"]]
    assert _resolve(["frobnicate"], module_commands()) is None
    assert FLAG.findall(mentions[1][1]) == ["--verbose"]
    assert "--verbose" not in module_commands()[("status",)]


# ---------------------------------------------------------------- the tools' flags
TOOL = re.compile(r"ceph-recovery-(lab|drill|sim|bench|helper|netfault|install-mgr-module)"
                  r"(?: ([a-z][a-z-]*))?")
TOOL_FLAG = re.compile(r"(?<![\w=-])--[a-z][a-z-]*")


def tool_mentions(text):
    """(tool, first bare word after it or None, flags given on its line and continuations)."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        for m in TOOL.finditer(line):
            tail = line[m.end():]
            if line[:m.start()].count("`") % 2:          # inside `...`: up to its end
                tail = tail.split("`")[0]
            j = i
            while tail.rstrip().endswith("\\") and j + 1 < len(lines):
                j += 1
                tail += " " + lines[j]
            tail = TOOL.split(tail.split(" # ")[0])[0]   # stop at a comment or the next tool
            yield m.group(1), m.group(2), set(TOOL_FLAG.findall(tail))


_HELP = {}


def _help(tool, sub):
    key = (tool, sub)
    if key not in _HELP:
        exe = pathlib.Path(sys.executable).parent / ("ceph-recovery-" + tool)
        argv = [str(exe)] + ([sub] if sub else []) + ["--help"]
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        _HELP[key] = proc.stdout if proc.returncode == 0 else None
    return _HELP[key]


@pytest.mark.parametrize("doc", DOCS, ids=_doc_id)
def test_every_tool_flag_the_doc_names_is_in_the_tools_help(doc):
    unknown = []
    for tool, sub, flags in tool_mentions(doc.read_text()):
        text = (_help(tool, sub) or "") + (_help(tool, None) or "")
        assert text, "ceph-recovery-%s --help failed" % tool
        known = set(TOOL_FLAG.findall(text))
        unknown += ["ceph-recovery-%s %s" % (tool, f) for f in sorted(flags - known)]
    assert unknown == []


def test_the_tool_parser_catches_a_wrong_flag():
    text = "```\nceph-recovery-lab up --dir D --hostz 3 \\\n    --netns  # a comment --ignored\n```\n"
    assert list(tool_mentions(text)) == [("lab", "up", {"--dir", "--hostz", "--netns"})]
    assert "--hostz" not in set(TOOL_FLAG.findall(_help("lab", "up")))


def test_the_module_options_default_budget_is_the_cores():
    from ceph_recovery.model import BUDGET_AUTO, Budget
    assert module_options()["budget_default"] == ("str", BUDGET_AUTO) == ("str", Budget().kind)
