"""The one table of queries (compiler/query/query_registry.py) drives `eval --help` and the
README's query table; these tests fail when the three drift or the import graph loops."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from specc.cli import main
from specc.compiler.query import query_registry
from specc.compiler.query.queries import QUERIES, QueryEngine

ROOT = Path(__file__).resolve().parent.parent


def test_readme_query_table_is_the_registry():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index(query_registry.README_BEGIN) + len(query_registry.README_BEGIN)
    block = text[start:text.index(query_registry.README_END)].strip()
    assert block == query_registry.markdown_table(), \
        "README query table is stale: run python -m specc.compiler.query.query_registry README.md"
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
    code = ("import sys; import specc.compiler.query.query_registry; "
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
    query = ROOT / "compiler" / "query"
    families = [query / "training.py", query / "query_base.py", *query.glob("q_*.py")]
    for path in families:
        assert "queries" not in _imports(path), path.name


# ------------------------------------------------------------------ every lane printed from the declarations
def test_eval_help_prints_every_signature():
    out = CliRunner().invoke(main, ["eval", "--help"]).output
    flat = " ".join(out.split())
    for info in QUERIES.values():
        assert info.signature in flat, info.signature


def test_api_methods_have_the_declared_signature():
    import inspect

    from specc.api import Model

    for info in QUERIES.values():
        method = getattr(Model, info.name)
        params = inspect.signature(method).parameters
        declared = [p for p in info.params if not p.positional]
        assert [n for n in params if n not in ("self", "symbolic", "more", "name")] == [p.name for p in declared]
        for p in declared:
            default = params[p.name].default
            if p.required:
                assert default is inspect.Parameter.empty, (info.name, p.name)
            elif p.kind == "flag":
                assert default == (p.default == "true"), (info.name, p.name)
            else:
                assert default == p.default, (info.name, p.name)
        assert method.__doc__ == query_registry.docstring(info)
        assert all(p.name in method.__doc__ for p in declared)


def test_site_figures_are_the_declared_ones():
    from specc.render import site

    for group, shown in (("model", site.FIGURES), ("deployed", site.DEPLOYED), ("time", site.TIME_FIGURES)):
        declared = query_registry.figures(group)
        assert [(f.query, f.id, f.label, f.unit, f.args) for f in shown] == \
            [(name, f.id, f.label, f.unit, f.args) for name, f in declared]
        for name, f in declared:
            assert all(arg in QUERIES[name].names for arg, _ in f.args), (name, f.id)
            assert (f.formatted and "format" in QUERIES[name].names) or not f.formatted


def test_tables_plots_and_claims_use_the_declarations():
    from specc.render import plots, tables
    from specc.verify.claims import touches_model

    assert [c.query for c in tables.default_columns()][:3] == ["params()", "weight_bytes()", "flops(B=1, S=0, P=8192)"]
    assert plots.QUANTITIES == ("state_bytes", "flops", "b_max") and plots.EXTRA_QUANTITIES == ("tpot",)
    for info in QUERIES.values():
        text = f"{info.name}(device=h100_sxm)" if not info.special else f"{info.name}(bf16)"
        assert touches_model(text) == info.reads_model, info.name
        for name in info.closed_form:
            assert name in info.names


def test_every_declared_parameter_is_one_the_engine_accepts_and_units_are_what_prints():
    """Each query's example evaluates; the unit it prints is the declared one. Reading an
    undeclared parameter inside the engine raises UndeclaredArgument, so the examples with
    every optional argument at its default also prove the code reads only declared names."""
    import specc
    from specc.compiler.query.query_value import make_call

    m = specc.load(str(ROOT / "specs" / "llama2_7b.yaml"))
    for info in QUERIES.values():
        args = dict(info.example)
        call = make_call(info.name, [(None if k == "NAME" else k, v) for k, v in args.items()])
        r = m.eval(call.text())
        assert r.unit == info.unit, (info.name, r.unit, info.unit)


def test_unknown_argument_names_the_query_s_own_parameters():
    import specc

    m = specc.load(str(ROOT / "specs" / "llama2_7b.yaml"))
    assert m.eval("train_memory(B=1, P=4096, component=static)").value > 0
    for text, hint in (("tpot(H=1, device=h100_sxm, mf=0.5)", "did you mean mfu?"),
                       ("ttft(P=1, device=h100_sxm, TP=2)", "did you mean tp?"),
                       ("flops(p=8192)", "did you mean P?"),
                       ("train_memory(ep=2)", "does not take 'ep='")):
        with pytest.raises(specc.Error) as err:
            m.eval(text)
        assert hint in str(err.value), (text, str(err.value))
    link = m.eval("tpot(H=100, device=h100_sxm, tp=2, link_bandwidth=100 GB / 1 s)")
    assert link.value != m.eval("tpot(H=100, device=h100_sxm, tp=2)").value


def test_argument_names_cover_every_parameter():
    for info in QUERIES.values():
        assert set(info.names) <= query_registry.ARGUMENT_NAMES
        for p in info.params:
            assert p.kind in query_registry.KINDS and (p.doc or p.positional), (info.name, p.name)
