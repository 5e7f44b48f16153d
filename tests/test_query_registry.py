"""The one table of queries (compiler/query_registry.py) drives `eval --help` and the
README's query table; these tests fail when the three drift or the import graph loops."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from specc.cli import main
from specc.compiler import query_registry
from specc.compiler.queries import QUERIES, QueryEngine

ROOT = Path(__file__).resolve().parent.parent


def test_readme_query_table_is_the_registry():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index(query_registry.README_BEGIN) + len(query_registry.README_BEGIN)
    block = text[start:text.index(query_registry.README_END)].strip()
    assert block == query_registry.markdown_table(), \
        "README query table is stale: run python -m specc.compiler.query_registry README.md"
    names = re.findall(r"^\| `(\w+)\(", block, flags=re.M)
    assert names == list(query_registry.REGISTRY)


def test_eval_help_names_every_query():
    out = CliRunner().invoke(main, ["eval", "--help"]).output
    listed = set(re.findall(r"\b\w+\b", out[out.index("Queries, by family"):]))
    assert set(QUERIES) <= listed, set(QUERIES) - listed


def test_every_registered_query_has_a_method_and_back():
    for name, info in QUERIES.items():
        assert name in query_registry.SPECIAL_FORMS or hasattr(QueryEngine, "q_" + name), name
        assert info.family in query_registry.FAMILIES and info.doc
    methods = {m[2:] for m in dir(QueryEngine) if m.startswith("q_")}
    assert methods <= set(QUERIES)


def test_registry_imports_no_heavy_module():
    code = ("import sys; import specc.compiler.query_registry; "
            "print(sorted(m for m in ('sympy', 'lark', 'yaml', 'networkx') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def _imports(path: Path) -> set:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
            out.add(node.module.split(".")[0])
    return out


def test_query_family_modules_do_not_import_the_engine():
    """queries.py imports the families; no family (nor training.py) imports queries.py back."""
    compiler = ROOT / "compiler"
    families = [compiler / "training.py", compiler / "query_base.py", *compiler.glob("q_*.py")]
    for path in families:
        assert "queries" not in _imports(path), path.name
