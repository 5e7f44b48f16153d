"""Renderers: diagrams, tables, plots, reports and docs/.

Every rendered number must be the compiled model's or the query engine's;
tests check structure and data, never pixels."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import pytest
import sympy as sp

from conftest import QWEN, REPO, V41

from specc.compiler.graph.build import compile_spec
from specc.compiler.schema.spec import load_spec
from specc.render import diagrams as D
from specc.render import plots as PL
from specc.render import report as R
from specc.render import tables as T
from specc.render import views as V

needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz `dot` not installed")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


@pytest.fixture(scope="module")
def qwen_model(qwen_engine):
    return qwen_engine.model({})


@pytest.fixture(scope="module")
def v41_model(v41_engine):
    return v41_engine.model({})


# ------------------------------------------------------------------ Bảng 2-1
# Transcribed from 000_f4a9f3652d679e1f.txt:128-149 (Bảng 2-1, Qwen3-8B): module,
# input → output, weight matrices, matrix FLOPs, layers per call. m = B·P;
# m_out = rows of the vocabulary head (B with the default head=last);
# N_pair = query-key pairs.
BANG_2_1 = [
    # (what, io, weights [(shape, count)], FLOPs formula, layers)
    ("word embedding lookup", "m IDs → m×4096", [((151936, 4096), 1)], "0", 1),
    ("projection Q", "m×4096 → m×4096", [((4096, 4096), 1)], "2*m*4096*4096", 36),
    ("projection K, V", "m×4096 → m×1024", [((4096, 1024), 2)], "2*2*m*4096*1024", 36),
    ("QK^T and AV", None, [], "4*32*128*N_pair", 36),
    ("output projection", "m×4096 → m×4096", [((4096, 4096), 1)], "2*m*4096*4096", 36),
    ("SwiGLU", "m×4096 → m×12288 → m×4096", [((4096, 12288), 2), ((12288, 4096), 1)], "6*m*4096*12288", 36),
    ("norms, RoPE, activation, residual", None, None, "elementwise", 36),
    ("vocabulary output head", "m_out×4096 → m_out×151936", [((4096, 151936), 1)], "2*m_out*4096*151936", 1),
]
_SYM = {name: sp.Symbol(name) for name in ("m", "m_out", "N_pair", "B")}


def _formula_value(text: str):
    text = text.split(";")[0].strip()
    if text in ("element-wise", "elementwise"):
        return "elementwise"
    return sp.sympify(text.replace("×", "*"), locals=_SYM)


def _shapes(row) -> list:
    return [(tuple(int(x) for x in shape), n) for shape, n in row.weight_shapes]


def test_modules_table_reproduces_bang_2_1(qwen_model):
    table = T.modules_table(qwen_model)
    rows = [r for r in table.data if not (r.section == "head" and r.formula == "element-wise")]
    assert len(rows) == len(BANG_2_1), [r.module for r in rows]
    for row, (what, io_text, weights, formula, layers) in zip(rows, BANG_2_1):
        assert row.layers == layers, what
        if io_text is not None:
            assert row.io.replace("B", "m_out") == io_text, what
        if weights is not None:
            assert _shapes(row) == weights, what
        expected = _formula_value(formula)
        got = _formula_value(row.formula.replace("B", "m_out") if row.section == "head" else row.formula)
        if expected == "elementwise":
            assert got == "elementwise", what
        else:
            assert sp.expand(got - expected) == 0, (what, row.formula)


def test_modules_rows_add_up_to_the_query_engine(qwen_engine, v41_engine):
    """Σ rows (FLOPs per instance × layers/call) = flops() of the whole model."""
    from specc.compiler.schema.symbols import B, P, S

    for engine in (qwen_engine, v41_engine):
        model = engine.model({})
        rows = T.module_rows(model)
        for scen in ({B: 1, S: 0, P: 8192}, {B: 2, S: 4096, P: 1}):
            total = sum(r.flops.xreplace(scen) * r.layers for r in rows)
            args = ", ".join(f"{k}={v}" for k, v in scen.items())
            assert total == engine.evaluate_text(f"flops({args})").value
        params = sum(r.total_params for r in rows)
        assert params == engine.evaluate_text("params()").value


def test_modules_table_marks_partial_layer_sets(v41_model):
    table = T.modules_table(v41_model)
    text = T.to_markdown(table)
    assert "ekv [layers 1, 14]" in text          # Engram only on its layers
    assert any(r.layers == 20 for r in table.data if r.module.startswith("shared"))


@pytest.mark.parametrize("fmt", ["md", "html", "csv", "latex"])
def test_table_formats(qwen_model, fmt):
    table = T.modules_table(qwen_model)
    out = T.FORMATS[fmt](table)
    if fmt == "csv":
        rows = list(csv.reader(io.StringIO(out)))
        assert rows[0][0] == "section" and len(rows) == len(table.rows) + 1
        assert all(len(r) == len(table.columns) + 1 for r in rows)
    elif fmt == "html":
        parser = HTMLParser()
        parser.feed(out)
        assert out.count("<tr>") == len(table.rows) + 1
    elif fmt == "latex":
        assert "\\begin{tabular}" in out and "\\end{tabular}" in out and "$\\times$" in out
    else:
        assert out.count("\n| ") >= len(table.rows)


def test_params_and_compare_tables_are_queries(qwen_engine, v41_engine):
    engines = [v41_engine, qwen_engine]
    params = T.params_table(engines)
    for engine, data in zip(engines, params.data):
        assert sum(v for k, v in data.items() if k != "total") == data["total"]
        assert data["total"] == engine.evaluate_text("params()").value
    # Bảng 2-B: Qwen3-8B 1,245 / 1,510 / 5,436 / 0 / 0 / <0.001 (billions)
    qwen_row = params.rows[1]
    assert qwen_row[1:7] == ["1.245", "1.510", "5.436", "0.000", "0.000", "<0.001"]
    cols = [T.parse_column("Prefill 8K=flops(P=8192)@TFLOPs"), T.parse_column("State 8K=state_bytes(H=8192)@GiB")]
    cmp_ = T.compare_table(engines, cols)
    assert cmp_.rows[0][1] == "143.947" and cmp_.rows[1][1] == "133.594"     # Bảng 2-C
    assert cmp_.rows[1][2] == "1.125"                                          # Bảng 2-E
    assert cmp_.data[1]["State 8K"] == qwen_engine.evaluate_text("state_bytes(H=8192)").value


def test_table_cli(cli):
    result = cli("table", QWEN, "--kind", "modules")
    assert result.exit_code == 0, result.output
    assert "| attn_out.k, v | attention_projection | m×4096 → m×1024 | 4096×1024, 2 in total | 2×2×m×4096×1024 | 36 |" \
        in result.stdout
    result = cli("table", QWEN, V41, "--kind", "compare", "--format", "csv",
                 "--column", "Decode 8K=flops(S=8192, P=1)@GFLOPs")
    assert result.exit_code == 0, result.output
    rows = list(csv.reader(io.StringIO(result.stdout)))
    assert rows[0] == ["Model", "Decode 8K"] and rows[1][0] == "Qwen3-8B" and len(rows) == 3
    for kind in ("params", "flops", "state"):
        result = cli("table", V41, "--kind", kind, "--format", "latex")
        assert result.exit_code == 0 and "\\begin{tabular}" in result.stdout, result.output
    result = cli("table", QWEN, "--kind", "compare", "--column", "nonsense")
    assert result.exit_code == 2 and "LABEL=QUERY" in result.output


# ------------------------------------------------------------------ diagrams
def test_model_diagram_groups_layers(v41_model, qwen_model):
    dot = D.model_graph(v41_model).source
    # one map cell per layer, lettered by layer type
    assert dot.count('TOOLTIP="layer ') == 40
    for store in v41_model.spec.stores:
        assert f"store_{store}" in dot
    assert "every layer: holds min(128, H)" in dot             # the per-layer window
    assert "A (20): holds H" in dot                            # the decoder's one global KV owner
    q = D.model_graph(qwen_model).source
    assert q.count('TOOLTIP="layer ') == 36 and "layers 0–35  (36 layers)" in q


def test_model_diagram_of_a_deep_alternating_stack(write_spec):
    """93 layers of two alternating kinds collapse to a handful of nodes."""
    path = write_spec("""
        model: Deep
        imports: [lib/core.yaml]
        dims: {d: 64, L: 93, n_q: 4, n_kv: 2, d_h: 16, f: 128, V: 1000, E: 8, k: 2}
        sets:
          moe_layers: 1..L-1
        stores:
          kv: {tags: [kv], bytes: {default: 2*n_kv*d_h*2}}
        formats: {bf16: {default: true, weights: {default: 2}}}
        stack:
          - {name: embed, block: token_embedding, with: {V: V, d: d}}
          - name: layers
            layers: 0..L-1
            block: mixed
            with: {moe: layer in moe_layers, local: "layer % 4 != 3"}
            state: [{store: kv, entries: "if(local, min(H, 64), H)"}]
          - {name: head, block: lm_head, with: {d: d, V: V, rows: B}}
        blocks:
          mixed:
            doc: test layer
            params: {moe: null, local: null}
            inputs: {x: d}
            outputs: [y]
            ops:
              - a = gqa_attention(x; d=d, n_q=n_q, n_kv=n_kv, d_h=d_h, pairs=B*causal_pairs(S, P))
              - f1 = swiglu(a; d=d, f=f); when=1 - moe
              - r = a @ W_router[d, E]; when=moe
              - f2 = routed_swiglu_experts(a, r; d=d, f=f, E=E, k=k); when=moe
              - y = add(x, a)
        """)
    model = compile_spec(load_spec(path))
    g = D.model_graph(model)
    types = V.layer_types(model, dict(V.segments(model))["layers"])
    assert len(types) == 2 and sorted(len(t.layers) for t in types) == [1, 92]
    assert g.source.count('TOOLTIP="layer ') == 93
    if shutil.which("dot"):
        assert D.graphviz_warnings(g) == ""


@needs_dot
@pytest.mark.parametrize("path", [QWEN, V41])
def test_diagrams_render_without_warnings(path):
    model = compile_spec(load_spec(path))
    for graph in (D.model_graph(model), D.op_graph(model)):
        assert D.graphviz_warnings(graph) == ""
        svg = D.render(graph, "svg")
        ET.fromstring(svg.encode("utf-8"))             # well-formed
        assert "Generated by graphviz" not in svg
    png = D.render(D.op_graph(model), "png")
    assert png[:8] == b"\x89PNG\r\n\x1a\n"


def test_op_diagram_labels_every_edge(qwen_model):
    g = D.op_graph(qwen_model, "layers")
    edges = [line for line in g.source.splitlines() if "->" in line]
    assert edges and all("label=" in line for line in edges)
    src = g.source
    assert "Wq [4096×4096]" in src and "FLOPs 2·m·4096·4096" in src and "q  m×4096" in src
    assert "k  m×1024" in src and "holds H · reads H" in src
    data = json.loads(D.op_json(qwen_model, "7"))
    assert data["block"] == "layers" and len(data["layers"]) == 36
    with pytest.raises(V.RenderError, match="no block"):
        D.op_graph(qwen_model, "nope")


def test_op_diagram_draws_only_ops_the_model_has(qwen_model):
    """Llama's attention has no Q/K norms (qk_norm=0 turns them into aliases of q and k):
    its diagram has no Q/K-norm box and q feeds the rotary directly; Qwen3's has both."""
    llama = compile_spec(load_spec(REPO / "specs" / "llama2_7b.yaml"))
    src = D.op_graph(llama, "layers").source
    assert "q_norm" not in src and "k_norm" not in src
    assert re.search(r'"layers\.attn_out\.q" -> "layers\.attn_out\.q_rot" \[label="q  m', src), src
    qwen = D.op_graph(qwen_model, "layers").source
    assert '"layers.attn_out.q_norm" [label=' in qwen and "q_norm [128]" in qwen


def test_graph_cli_levels_and_missing_dot(cli, tmp_path, monkeypatch):
    out = tmp_path / "m.json"
    result = cli("graph", V41, "--level", "model", "--format", "json", "-o", out)
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text(encoding="utf-8"))
    assert {s["segment"] for s in data["segments"]} == {"embed", "encoder", "decoder", "head"}
    result = cli("graph", V41, "--level", "op", "--block", "encoder#4", "--format", "dot")
    assert result.exit_code == 0 and "engram_table" in result.stdout
    monkeypatch.setenv("PATH", str(tmp_path))          # no `dot` here
    result = cli("graph", QWEN, "--format", "svg", "-o", tmp_path / "x.svg")
    assert result.exit_code == 2
    assert "needs Graphviz" in result.output and "Traceback" not in result.output
    result = cli("graph", QWEN, "--level", "op", "--format", "dot")
    assert result.exit_code == 0 and result.stdout.startswith("digraph")


# ------------------------------------------------------------------ plots
def test_state_plot_data_is_the_query_engine(qwen_engine, v41_engine):
    plot = PL.state_bytes_plot([qwen_engine, v41_engine], contexts=[1024, 8192, 65536])
    totals = [s for s in plot.series if s.component is None]
    assert [s.model for s in totals] == ["Qwen3-8B", "DeepSeek V4.1 Flash"]
    qwen = totals[0]
    assert qwen.ys[1] == sp.Rational(9, 8) * 2 ** 30                 # 1.125 GiB at 8K
    assert qwen.extrapolated == [False, False, True]                  # beyond 40,960
    for s in plot.series:
        engine = qwen_engine if s.model == "Qwen3-8B" else v41_engine
        for q, y in zip(s.queries, s.ys):
            assert engine.evaluate_text(q).value == y
    comps = [s for s in plot.series if s.model == "DeepSeek V4.1 Flash" and s.component]
    for i, _ in enumerate(plot.series[0].xs):
        assert sum(s.ys[i] for s in comps) == totals[1].ys[i]         # stores add up to the total
    fig = PL.figure(plot)
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "Qwen3-8B" in labels and "DeepSeek V4.1 Flash: global_main" in labels


def test_flops_and_b_max_plots(qwen_engine, v41_engine):
    plot = PL.flops_plot([qwen_engine], contexts=[8192, 16384])
    total = plot.series[0]
    assert total.ys[0] == qwen_engine.evaluate_text("flops(B=1, S=8191, P=1)").value
    comps = plot.series[1:]
    assert sum(s.ys[1] for s in comps) == total.ys[1]
    bm = PL.b_max_plot([qwen_engine, v41_engine], device="rtx_4090", workspace="2 GiB", contexts=[4096, 8192, 16384])
    # the datasheet's 24,564 MiB (the chapter's 24e9 B gives its 9, 4 and 2: claims hw.rtx4090.bmax-*)
    assert bm.series[0].ys == [11, 5, 2]
    assert bm.series[1].ys == [0, 0, 0]                                # 1.5 TB of weights do not fit


def test_plot_cli(cli, tmp_path):
    out, data = tmp_path / "s.svg", tmp_path / "s.json"
    result = cli("plot", QWEN, V41, "--quantity", "state_bytes", "--context", 4096, "--context", 8192,
                 "-o", out, "--data", data)
    assert result.exit_code == 0, result.output
    ET.fromstring(out.read_bytes())
    payload = json.loads(data.read_text(encoding="utf-8"))
    assert payload["series"][0]["y"] == [603979776, 1207959552]
    result = cli("plot", QWEN, "--quantity", "b_max", "--device", "nope", "-o", tmp_path / "b.png")
    assert result.exit_code == 2 and "unknown device" in result.output


# ------------------------------------------------------------------ reports
def test_report_numbers_are_the_verifiers(qwen_engine):
    from specc.verify.claims import check, load_claims

    rep = R.build(str(QWEN), qwen_engine)
    results = [check(qwen_engine, c) for c in load_claims(qwen_engine.spec)]
    assert [c.id for c in rep.claims] == [r.claim.id for r in results]
    for row, res in zip(rep.claims, results):
        assert row.verdict == res.verdict and row.exact == res.computed_exact()
    assert sum(rep.counts.values()) == len(results)
    prefill = next(c for c in rep.claims if c.query.replace(" ", "") == "flops(B=1,S=0,P=8192)")
    assert prefill.closed_form                      # the scenario query as a closed form in B, S, P
    html_text = R.to_html(rep)
    for c in rep.claims[:20]:
        assert f'id="{c.id}"' in html_text
    md = R.to_markdown(rep)
    assert md.count("\n| ") >= len(rep.claims)


@pytest.mark.slow           # the whole report of a spec, then a browser
@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed")
def test_report_html_in_headless_chromium(tmp_path, cli):
    result = cli("report", QWEN, "-o", tmp_path / "rep")
    assert result.exit_code == 0, result.output
    page = tmp_path / "rep" / "qwen3_8b" / "report.html"
    text = page.read_text(encoding="utf-8")
    # self-contained: drawings inline, no external scripts, styles or images
    assert text.count("<svg") >= 3 and 'rel="stylesheet"' not in text
    assert all(src.startswith("data:") for src in re.findall(r'\bsrc="([^"]*)"', text))
    control = tmp_path / "control.html"
    control.write_text("<!DOCTYPE html><html><body><script>console.error('specc-control-error')</script>"
                       "</body></html>", encoding="utf-8")

    def run(path, shot):
        proc = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                               "--window-size=1280,2000", "--enable-logging=stderr", "--v=0",
                               f"--screenshot={shot}", path.as_uri()],
                              capture_output=True, text=True, timeout=90)
        return proc.stderr

    log = run(control, tmp_path / "control.png")
    assert "specc-control-error" in log                 # console errors do reach the log
    log = run(page, tmp_path / "report.png")
    console = [line for line in log.splitlines() if "CONSOLE" in line or "Uncaught" in line]
    assert not console, console
    shot = (tmp_path / "report.png").read_bytes()
    assert shot[:8] == b"\x89PNG\r\n\x1a\n" and len(shot) > 20000


# ------------------------------------------------------------------ docs/
DOCS = REPO / "docs"


@pytest.mark.slow           # regenerates the text of docs/ for every documented spec
def test_docs_are_current(monkeypatch):
    """docs/ equals a fresh regeneration (text artifacts; the SVGs and HTML are
    drawn from the committed DOT sources and plot data by `specc docs`)."""
    from specc.render import docs

    if not (DOCS / "README.md").exists():
        pytest.fail("docs/ is missing: run `specc docs -o docs/`")
    monkeypatch.chdir(REPO)
    fresh = docs.build_files(DOCS, "specs/*.yaml", drawings=False)
    stale = [rel for rel, text in sorted(fresh.items())
             if not (DOCS / rel).exists() or (DOCS / rel).read_text(encoding="utf-8") != text]
    drawn = {".svg", ".html"}
    committed = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*") if p.is_file()}
    from specc.render.output_tree import MANIFEST

    extra = sorted(rel for rel in committed - set(fresh) - docs.KEEP - {"VERSIONS.txt", MANIFEST}
                   if Path(rel).suffix not in drawn)
    missing_drawings = sorted(rel[:-4] + ".svg" for rel in fresh if rel.endswith(".dot")
                              and rel[:-4] + ".svg" not in committed)
    assert not stale and not extra and not missing_drawings, (
        f"docs/ is stale (regenerate with `specc docs -o docs/`): changed {stale[:8]}, "
        f"obsolete {extra[:8]}, undrawn {missing_drawings[:8]}")


@pytest.mark.slow           # one spec's docs, drawn twice in two processes
@needs_dot
def test_drawings_are_deterministic(tmp_path, monkeypatch):
    from specc.render import docs

    monkeypatch.chdir(REPO)
    first = docs.spec_files("specs/qwen3_8b.yaml")["files"]
    assert "Date" not in first["state_bytes.svg"] and "<dc:date>" not in first["state_bytes.svg"]
    # another process with another hash seed draws the same bytes
    code = ("import json, sys; from specc.render import docs; "
            "json.dump(docs.spec_files('specs/qwen3_8b.yaml')['files'], sys.stdout)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=300,
                          env={**os.environ, "PYTHONHASHSEED": "12345"})
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == first
