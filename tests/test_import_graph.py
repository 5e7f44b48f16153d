"""The package's import graph has no cycle: every module under the package folders is
parsed (imports inside functions included: a lazy import that closes a cycle is still
one), relative imports are resolved through pyproject's package-dir mapping, and the
graph is searched for a cycle."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# pyproject.toml [tool.setuptools.package-dir]
PACKAGES = {"specc": "specc", "specc.dsl": "dsl", "specc.compiler": "compiler", "specc.verify": "verify",
            "specc.render": "render"}


def _modules() -> dict:
    found = {}
    for package, folder in PACKAGES.items():
        for path in sorted((ROOT / folder).glob("*.py")):
            found[package if path.stem == "__init__" else f"{package}.{path.stem}"] = path
    return found


def _targets(module: str, path: Path, node, modules: dict) -> list:
    package = module if path.stem == "__init__" else module.rsplit(".", 1)[0]
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level == 0:
        base = node.module or ""
    else:
        parts = package.split(".")
        base = ".".join(parts[:len(parts) - (node.level - 1)] + ([node.module] if node.module else []))
    # `from . import x` imports the module x; `from .m import name` imports m
    return [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]


def import_graph() -> dict:
    modules = _modules()
    graph = {}
    for module, path in modules.items():
        edges = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                edges.update(t for t in _targets(module, path, node, modules) if t in modules and t != module)
        graph[module] = edges
    return graph


def find_cycle(graph: dict) -> list | None:
    """One cycle of the graph as a list of modules, or None."""
    state, stack = {}, []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        state[node] = "done"
        stack.pop()
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_the_package_has_no_import_cycle():
    graph = import_graph()
    assert len(graph) > 60 and "specc.compiler.queries" in graph
    cycle = find_cycle(graph)
    assert cycle is None, " -> ".join(cycle)


def test_the_cycle_finder_finds_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_command_modules_know_nothing_of_the_group():
    from specc import cli_group

    graph = import_graph()
    for target in cli_group.COMMANDS.values():
        module = "specc." + target.split(":")[0]
        assert not graph[module] & {"specc.cli", "specc.cli_group"}, module
