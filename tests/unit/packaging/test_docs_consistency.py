"""The operator's docs say what the code does: option names, types and defaults, commands and
their flags, health check codes.

The code is read statically (ast), from the checkout the docs live in: MODULE_OPTIONS and the
command decorators of mgr_module/recovery/*.py, and the RECOVERY_* string constants of the
core and the policies (plan() raises every health check; the module only reports them). The docs are README.md and docs/*.md; CHANGELOG.md is history
and may name what no longer exists.
"""
import ast
import os
import pathlib
import re
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[3]
MODULE_DIR = REPO / "mgr_module" / "recovery"
CORE_DIRS = [REPO / "orchestrator", REPO / "policies"]     # plan() raises every health check
DOCS = [REPO / "README.md"] + sorted((REPO / "docs").glob("*.md"))
COMMANDS_DOC = REPO / "docs" / "commands.md"      # every command, argument, errno and option
RUNBOOK = REPO / "docs" / "runbook.md"
INTEGRATION = REPO / "tests" / "integration"

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
    """(command words, its arguments cell) for table rows whose first cell is one command; a
    two-column table (command | what it does, the README's) has no arguments cell: ""."""
    for header, rows in _tables(text):
        if header and header[0].lower() == "command":
            for row in rows:
                m = COMMAND.fullmatch(_plain(row[0]))
                if m and len(row) >= 2:
                    yield m.group(1).split(), row[1] if len(row) > 2 else ""


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


def test_the_commands_page_documents_every_option():
    rows = {name for name, _t, _d in option_rows(COMMANDS_DOC.read_text())}
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


@pytest.mark.parametrize("doc", ["README.md", "docs/commands.md"])
def test_the_command_table_lists_every_command(doc):
    text = (REPO / doc).read_text()
    documented = {tuple(words) for words, _c in command_table_rows(text)}
    assert documented == set(module_commands())


@pytest.mark.parametrize("doc", DOCS, ids=_doc_id)
def test_every_health_code_the_doc_names_is_raised_by_the_code(doc):
    named = set(HEALTH_CODE.findall(doc.read_text()))
    assert named - health_codes_in_code() == set()


@pytest.mark.parametrize("doc", ["README.md", "docs/commands.md"])
def test_the_health_table_lists_every_health_code(doc):
    listed = set()
    for header, rows in _tables((REPO / doc).read_text()):
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


# ---------------------------------------------------------------- the commands page, argument by argument
def command_params():
    """{("drill", "report"): ["id", "format"]}: each command's parameters, in order."""
    found = {}
    for _path, tree in _trees([MODULE_DIR]):
        for fn in ast.walk(tree):
            if isinstance(fn, ast.FunctionDef):
                for deco in fn.decorator_list:
                    if (isinstance(deco, ast.Call) and deco.args
                            and isinstance(deco.args[0], ast.Constant)
                            and str(deco.args[0].value).startswith("recovery ")):
                        found[tuple(deco.args[0].value.split()[1:])] = [
                            a.arg for a in fn.args.args if a.arg != "self"]
    return found


def _spellings(param):
    """How a parameter is written in an argument table: `-f`, `--dry-run` or `<bucket>`."""
    if param == "format":
        return {"-f"}
    return {"--" + param.replace("_", "-"), "<%s>" % param}


def command_sections(text):
    """{command words: its section's text} for `### `ceph recovery X``-headed sections; a
    heading may name siblings (`ceph recovery hold`, `release`: the last word replaced)."""
    out, current, lines = {}, [], []
    for line in text.splitlines() + ["## end"]:
        if line.startswith("#"):
            for words in current:
                out[words] = "\n".join(lines)
            current, lines = [], []
            names = re.findall(r"`([^`]+)`", line) if line.startswith("### ") else []
            if names and COMMAND.fullmatch(names[0]):
                base = tuple(COMMAND.fullmatch(names[0]).group(1).split())
                current = [base] + [base[:-1] + tuple(n.split()) for n in names[1:]]
        else:
            lines.append(line)
    return out


def argument_rows(section):
    """{argument as written: (values, default)} from the section's `argument | values | default`
    table."""
    rows = {}
    for header, body in _tables(section):
        if header and header[0].lower() == "argument":
            head = [h.lower() for h in header]
            for row in body:
                rows[_plain(row[0])] = (_plain(row[head.index("values")]),
                                        _plain(row[head.index("default")]))
    return rows


def test_the_commands_page_documents_every_argument_of_every_command():
    sections = command_sections(COMMANDS_DOC.read_text())
    missing, extra, empty = [], [], []
    for cmd, params in command_params().items():
        assert cmd in sections, "docs/commands.md has no section for %s" % " ".join(cmd)
        rows = argument_rows(sections[cmd])
        for p in params:
            hit = _spellings(p) & set(rows)
            if not hit:
                missing.append("%s %s" % (" ".join(cmd), p))
            elif not all(rows[h][0] and rows[h][1] for h in hit):
                empty.append("%s %s" % (" ".join(cmd), p))
        known = set().union(*[_spellings(p) for p in params]) if params else set()
        extra += ["%s %s" % (" ".join(cmd), r) for r in set(rows) - known]
    assert missing == [], "arguments the commands page does not document: %s" % missing
    assert extra == [], "documented arguments the command does not have: %s" % extra
    assert empty == [], "arguments without their values or default: %s" % empty


def test_the_helper_reports_host_argument_is_documented():
    # the host argument was missing from the docs while the module refused a report without it
    assert "host" in command_params()[("helper-report",)]
    rows = argument_rows(command_sections(COMMANDS_DOC.read_text())[("helper-report",)])
    assert "<host>" in rows and "required" in rows["<host>"][1]


def test_every_format_argument_names_json_and_json_pretty():
    from recovery import text
    sections = command_sections(COMMANDS_DOC.read_text())
    for cmd, params in command_params().items():
        if "format" in params:
            values = argument_rows(sections[cmd])["-f"][0]
            assert all(f in values.replace(",", " ").split() for f in text.JSON_FORMATS), cmd


def test_the_documented_concurrency_range_is_the_modules():
    from recovery import inputs

    def accepted(n):
        try:
            inputs.check_concurrency(str(n))
            return True
        except inputs.InputError:
            return False
    hi = max(n for n in range(1, 1025) if accepted(n))
    assert not accepted(0) and accepted(1) and accepted("auto")
    sections = command_sections(COMMANDS_DOC.read_text())
    rows = [(cmd, argument_rows(sec)["--concurrency"][0]) for cmd, sec in sections.items()
            if "--concurrency" in argument_rows(sec)]
    assert len(rows) == 3                 # start-controlled, maintenance exit, drill start
    for cmd, values in rows:
        assert values.startswith("1 to %d" % hi) and "auto" in values, (cmd, values)


def test_recovery_incomplete_is_described_by_stall_limit_not_memory_alone():
    for doc in ("README.md", "docs/commands.md"):
        (row,) = [r for h, body in _tables((REPO / doc).read_text()) if h[0].lower() == "code"
                  for r in body if _plain(r[0]) == "RECOVERY_INCOMPLETE"]
        assert "stall_limit" in row[1] and "without progress" in row[1], doc
        assert "10 min" not in row[1] and "without a start that fits" not in row[1], doc


# ---------------------------------------------------------------- errno: every one the module answers
ERRNO_NAME = re.compile(r"(?<![A-Z_])E[A-Z]{2,}(?![A-Z_])")


def errnos_in_code():
    """Every errno.EXXX the module and the core can answer with. executor.TRANSIENT lists mon
    command results it retries (EINTR, ENOTCONN), poolavail.NOT_AVAILABLE the answers to
    `osd pool availability-status` it reads as "not available" (EOPNOTSUPP): never answered
    to an operator."""
    names = set()
    for _path, tree in _trees([MODULE_DIR, REPO / "orchestrator"]):
        skip = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and any(
                    isinstance(t, ast.Name) and t.id in ("TRANSIENT", "NOT_AVAILABLE")
                    for t in node.targets):
                skip |= {id(n) for n in ast.walk(node)}
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id == "errno" and id(node) not in skip):
                names.add(node.attr)
    return names


def test_the_commands_page_lists_every_errno_the_module_answers():
    code = errnos_in_code()
    assert {"EINVAL", "EAGAIN", "EEXIST", "ENOSYS", "EACCES"} <= code   # the parse itself
    listed = set()
    for header, rows in _tables(COMMANDS_DOC.read_text()):
        if header and header[0].lower() == "errno":
            listed |= {ERRNO_NAME.search(_plain(r[0])).group(0) for r in rows}
    assert listed == code, "missing: %s, stale: %s" % (sorted(code - listed),
                                                       sorted(listed - code))


def test_the_readme_names_every_errno_the_module_answers():
    named = set(ERRNO_NAME.findall((REPO / "README.md").read_text()))
    assert errnos_in_code() - named == set()


# ---------------------------------------------------------------- the runbook
def integration_calls():
    """Every word sequence the integration tests send after "recovery": literally
    (`"recovery", "maintenance", "enter"`) or through a helper that sends `"recovery", *args`
    (test_drill_module.plain)."""
    def strings(args):
        out = []
        for a in args:
            if not (isinstance(a, ast.Constant) and isinstance(a.value, str)):
                break
            out.append(a.value)
        return out

    def sends_recovery_args(call):
        for i, a in enumerate(call.args[:-1]):
            if (isinstance(a, ast.Constant) and a.value == "recovery"
                    and isinstance(call.args[i + 1], ast.Starred)):
                return True
        return False

    found = set()
    for path in sorted(INTEGRATION.glob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        wrappers = {fn.name for fn in ast.walk(tree) if isinstance(fn, ast.FunctionDef)
                    and any(isinstance(c, ast.Call) and sends_recovery_args(c)
                            for c in ast.walk(fn))}
        for call in ast.walk(tree):
            if not isinstance(call, ast.Call):
                continue
            for i, a in enumerate(call.args):
                if isinstance(a, ast.Constant) and a.value == "recovery":
                    found.add(tuple(strings(call.args[i + 1:])))
            name = getattr(call.func, "id", getattr(call.func, "attr", None))
            if name in wrappers:
                first = next((i for i, a in enumerate(call.args)
                              if isinstance(a, ast.Constant) and isinstance(a.value, str)), None)
                if first is not None:
                    found.add(tuple(strings(call.args[first:])))
    return found


def test_every_runbook_command_is_a_module_command_run_by_the_integration_tests():
    commands = module_commands()
    used = {tuple(w) for w, _t in command_mentions(RUNBOOK.read_text())}
    assert len(used) >= 10
    unknown = sorted(" ".join(w) for w in used if _resolve(list(w), commands) is None)
    assert unknown == [], "the runbook names no such command: %s" % unknown
    calls = integration_calls()
    not_run = sorted({" ".join(_resolve(list(w), commands)) for w in used
                      if not any(c[:len(_resolve(list(w), commands))]
                                 == _resolve(list(w), commands) for c in calls)})
    assert not_run == [], "runbook commands no integration test runs: %s" % not_run


def test_the_integration_call_parser_sees_literal_and_wrapped_calls():
    calls = integration_calls()
    assert ("maintenance", "enter") in {c[:2] for c in calls}
    assert ("drill", "start") in {c[:2] for c in calls}         # through test_drill_module.plain


# ---------------------------------------------------------------- links between the pages
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _slug(heading):
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to '-'."""
    return "".join(c for c in heading.lower() if c.isalnum() or c in " -_").replace(" ", "-")


@pytest.mark.parametrize("doc", DOCS, ids=_doc_id)
def test_every_relative_link_reaches_a_file_and_heading(doc):
    broken = []
    for target in LINK.findall(doc.read_text()):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        dest = (doc.parent / path) if path else doc
        if not dest.exists():
            broken.append(target)
        elif anchor and dest.suffix == ".md":
            heads = {_slug(ln.lstrip("#").strip()) for ln in dest.read_text().splitlines()
                     if ln.startswith("#")}
            if anchor not in heads:
                broken.append(target)
    assert broken == []


def test_the_readme_is_an_operators_guide_of_at_most_2000_words():
    text = (REPO / "README.md").read_text()
    assert len(text.split()) <= 2000
    assert "./scripts/demo" in text and "./scripts/test" in text
    for page in ("docs/commands.md", "docs/runbook.md", "docs/install.md", "docs/cephadm.md"):
        assert "(%s" % page in text, page
    (achieves,) = [body for h, body in _tables(text) if h[0].lower() == "claim"]
    assert len(achieves) <= 8
    assert all(re.search(r"\]\(docs/[a-z-]+\.md", " ".join(r)) for r in achieves)


# ---------------------------------------------------------------- history stays in the CHANGELOG
HISTORY_REF = re.compile(r"\b[Ss]top[ -]#?\d+\b|\b[Ii]ssues? #?\d+\b")
HISTORY_EXTS = (".py", ".md", ".sh", ".cfg", ".ini")
SKIP_DIRS = {".git", ".venv", ".tox", "build", "dist", "__pycache__", ".hypothesis",
             "node_modules"}


def _repo_text_files():
    for root, dirs, files in os.walk(REPO):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.endswith(".egg-info"))
        for name in sorted(files):
            path = pathlib.Path(root) / name
            if name.endswith(HISTORY_EXTS) and path != REPO / "CHANGELOG.md":
                yield path


def test_no_heading_docstring_or_comment_names_a_stop_or_an_issue_number():
    """A rule is stated as the rule and its reason; which work session or issue brought it is
    history, and history is CHANGELOG.md's alone."""
    found = []
    for path in _repo_text_files():
        for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if HISTORY_REF.search(line):
                found.append("%s:%d: %s" % (path.relative_to(REPO), n, line.strip()[:100]))
    assert found == []


def test_the_history_pattern_catches_what_it_must_and_spares_prose():
    stop, issue = "stop", "issue"      # spelled apart: this file is scanned too
    for bad in ("## Margins (%s 16)" % stop, "# since %s 6" % stop, "(%s 9)" % issue,
                "%s #12" % issue, "the %s-25 drills" % stop, "%s 3's acceptance" % issue.title()):
        assert HISTORY_REF.search(bad), bad
    for fine in ("the brake stops 2 OSDs", "it stops 3 s later", "a stop supersedes it",
                 "defect 8's fix"):
        assert not HISTORY_REF.search(fine), fine
