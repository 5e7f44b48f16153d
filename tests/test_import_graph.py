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
            "specc.render": "render", "specc.plan": "plan", "specc.hf": "hf", "specc.cache": "cache"}


def _modules() -> dict:
    found = {}
    for package, folder in PACKAGES.items():
        for path in sorted((ROOT / folder).rglob("*.py")):         # stage packages below the folder too
            parts = [package, *path.relative_to(ROOT / folder).with_suffix("").parts]
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
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
    assert len(graph) > 60 and "specc.compiler.query.queries" in graph
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


# compiler/'s stage packages in data-flow order: each imports only the stages before it
STAGES = ("schema", "deploy", "graph", "query", "lanes")
# the exceptions, each a lookup of a declared table, not a use of a later stage's work:
# the schema checks a spec's option names against the query declarations and its format
# names against the scheme table
CHECKED_AGAINST_TABLES = {("specc.compiler.schema.spec", "specc.compiler.query.query_registry"),
                          ("specc.compiler.schema.spec", "specc.compiler.deploy.schemes")}


def test_compiler_stages_import_only_earlier_stages():
    graph = import_graph()
    rank = {f"specc.compiler.{stage}": i for i, stage in enumerate(STAGES)}

    def stage(module):
        return ".".join(module.split(".")[:3])

    assert set(rank) <= {stage(m) for m in graph}, "a stage package is missing"
    late = sorted((a, b) for a, edges in graph.items() for b in edges
                  if stage(a) in rank and stage(b) in rank and rank[stage(b)] > rank[stage(a)]
                  and (a, b) not in CHECKED_AGAINST_TABLES)
    assert not late, late


def test_no_module_imports_another_modules_private_name():
    """A name with a leading underscore is its module's own: no other module imports it."""
    crossing = []
    for module, path in _modules().items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("specc")):
                crossing += [f"{module}: {alias.name}" for alias in node.names
                             if alias.name.startswith("_") and not alias.name.startswith("__")]
    assert not crossing, crossing
