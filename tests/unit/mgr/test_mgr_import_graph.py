"""The mgr module's own files import one another at module level only, and without a circle:
an import inside a function is how a circle hides (the graph below would not see it)."""
from __future__ import annotations

import ast
import pathlib

MODULE = pathlib.Path(__file__).resolve().parents[3] / "mgr_module" / "recovery"


def _relative_imports(tree: ast.AST):
    """(module-level sibling imports, sibling imports inside a function)."""
    top, inner = set(), []

    def names(node):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            return [node.module] if node.module else [a.name for a in node.names]
        return []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for sub in ast.walk(node):
                inner += names(sub)
    for node in ast.walk(tree):
        top.update(names(node))
    return top - set(inner), inner


def graph():
    out, inner = {}, {}
    for path in sorted(MODULE.glob("*.py")):
        top, hidden = _relative_imports(ast.parse(path.read_text()))
        out[path.stem] = {m.split(".")[0] for m in top}
        if hidden:
            inner[path.stem] = hidden
    return out, inner


def _cycle(g):
    state = {}

    def visit(n, path):
        state[n] = 1
        for m in sorted(g.get(n, ())):
            if state.get(m) == 1:
                return path + [m]
            if m not in state:
                found = visit(m, path + [m])
                if found:
                    return found
        state[n] = 2
        return None
    for n in sorted(g):
        if n not in state:
            found = visit(n, [n])
            if found:
                return found
    return None


def test_no_sibling_import_inside_a_function():
    assert graph()[1] == {}


def test_the_module_level_imports_have_no_circle():
    g, _ = graph()
    assert g["maint"] >= {"drillcli", "answers"} and "maint" not in g["drillcli"]
    assert _cycle(g) is None


def test_the_cycle_finder_finds_one():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None
