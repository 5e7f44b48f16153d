"""Generate docs/: per spec a claims report (Markdown + self-contained HTML),
model- and op-level diagrams (SVG + DOT), module/state/FLOPs tables and a
state plot; across specs an index, comparison tables and plots.

    specc docs -o docs/          (or: python -m specc.render.docs docs/)

Output is deterministic: no timestamps, Graphviz's version comment stripped,
matplotlib SVGs with a fixed hash salt and no dates, sorted inputs. Which
specs share the cross-model charts is data: docs/docs.yaml (`charts:` with a
title and a list of spec paths); without it every spec goes on one chart.
VERSIONS.txt records the Graphviz and matplotlib versions the drawings were
made with (a different version may lay out the same graph differently)."""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

CONFIG = "docs.yaml"
KEEP = {CONFIG, "writing-specs.md"}    # hand-written files in docs/ that regeneration keeps


def tool_versions() -> str:
    import matplotlib

    dot = "none"
    if shutil.which("dot"):
        proc = subprocess.run(["dot", "-V"], capture_output=True, text=True)
        dot = (proc.stderr or proc.stdout).strip()
    return f"graphviz: {dot}\nmatplotlib: {matplotlib.__version__}\n"


def _stem(path: str) -> str:
    from .output_tree import safe_stem

    return safe_stem(path)


def spec_files(spec_path: str, drawings: bool = True) -> dict:
    """{relative file name: text} for one spec (runs in a worker process).
    drawings=False skips what Graphviz and matplotlib draw (SVG, and the HTML
    that embeds it) and keeps every text artifact (Markdown, DOT, JSON, CSV)."""
    from ..compiler.query.queries import QueryEngine
    from ..compiler.schema.spec import load_spec
    from . import diagrams as D
    from . import plots as PL
    from . import report as R
    from . import tables as T
    from . import views as V

    from ..dsl.errors import SpecError
    from .views import RenderError

    try:
        spec = load_spec(spec_path)
        engine = QueryEngine(spec)
        model = engine.model({})
    except SpecError as exc:            # picklable across worker processes, with the location
        raise RenderError(f"{spec_path}: cannot compile:\n{exc.render()}") from None
    stem = _stem(spec_path)
    files = {}
    mg, og = D.model_graph(model), D.op_graph(model)
    files["model.dot"] = mg.source + "\n"
    files["op.dot"] = og.source + "\n"
    state_plot = PL.state_bytes_plot([engine])
    flops_plot = PL.flops_plot([engine], components=True)
    model_svg = op_svg = state_svg = flops_svg = ""
    if drawings and D.has_dot():
        model_svg, op_svg = D.render(mg, "svg", strict=True), D.render(og, "svg", strict=True)
        files["model.svg"], files["op.svg"] = model_svg, op_svg
    if drawings:
        state_svg = PL.to_svg(state_plot)
        files["state_bytes.svg"] = state_svg
        flops_svg = PL.to_svg(flops_plot)
        files["flops.svg"] = flops_svg
    files["state_bytes.json"] = json.dumps(PL.data_json(state_plot), indent=1) + "\n"
    files["flops.json"] = json.dumps(PL.data_json(flops_plot), indent=1) + "\n"
    tables = [T.modules_table(model), T.state_table(engine), T.flops_table(engine)]
    block = V.find_group(model, None)
    figures = [("Model: layer stack, groups of identical layers, state stores", model_svg, "model.svg"),
               (f"Ops of {block.prefix} (layers {V.layer_text_short(block.layers, 60)})", op_svg, "op.svg"),
               ("State per request by store", state_svg, "state_bytes.svg"),
               ("Matrix FLOPs of one decode step by component", flops_svg, "flops.svg")]
    figures = [f for f in figures if f[1]] if drawings else [f for f in figures]
    rep = R.build(spec_path, engine, figures, tables)
    rep.path = spec_path
    files["README.md"] = R.to_markdown(rep)
    nav = '<nav><a href="../index.html">← all specs</a><a href="README.md">Markdown</a></nav>'
    if drawings:
        files["report.html"] = R.to_html(rep, nav)
    files["modules.csv"] = T.to_csv(tables[0])
    meta = {"model": rep.model, "path": spec_path, "counts": rep.counts, "stem": stem}
    return {"files": files, "meta": meta}


def _documented(out_dir: Path, specs: list) -> list:
    """The specs docs/ documents: those docs.yaml lists under `specs:` (the shipped
    ones), so a user's own spec saved in specs/ neither gets a page nor makes the
    docs-staleness test fail; without such a list, every spec found."""
    from .views import RenderError

    cfg = out_dir / CONFIG
    listed = None
    if cfg.exists():
        import yaml

        listed = (yaml.safe_load(cfg.read_text(encoding="utf-8")) or {}).get("specs")
    if listed is None:
        return specs
    missing = sorted(set(listed) - set(specs))
    if missing:
        raise RenderError(f"{cfg} lists specs that do not exist (or do not match the spec glob): {missing}")
    return [p for p in specs if p in set(listed)]


def _charts(out_dir: Path, specs: list) -> list:
    cfg = out_dir / CONFIG
    if cfg.exists():
        import yaml

        data = yaml.safe_load(cfg.read_text(encoding="utf-8")) or {}
        charts = []
        for c in data.get("charts", []):
            members = [p for p in c.get("specs", []) if p in specs]
            if members:
                charts.append({"name": c["name"], "title": c.get("title", c["name"]), "specs": members})
        if charts:
            return charts
    return [{"name": "all", "title": "All specs", "specs": specs}]


def cross_files(specs: list, charts: list, drawings: bool = True) -> dict:
    from ..compiler.query.queries import QueryEngine
    from ..compiler.schema.spec import load_spec
    from . import plots as PL
    from . import tables as T

    engines = {p: QueryEngine(load_spec(p)) for p in specs}
    files = {}
    md = ["# Cross-model comparisons", "", "Generated by `specc docs`; every value is a query of the spec.", ""]
    md.append(T.to_markdown(T.params_table([engines[p] for p in specs])))
    md.append(T.to_markdown(T.compare_table([engines[p] for p in specs], title="All specs: one call, one request, "
                                                                                 "state per request")))
    for chart in charts:
        es = [engines[p] for p in chart["specs"]]
        md.append(f"## {chart['title']}\n")
        md.append(T.to_markdown(T.compare_table(es, title=chart["title"])))
        for q in PL.QUANTITIES:
            plot = PL.make_plot(q, es, components=False)
            if q == "state_bytes":
                plot.series = [s for s in plot.series if s.component is None]
            name = f"plots/{chart['name']}_{q}"
            if drawings:
                files[name + ".svg"] = PL.to_svg(plot)
            files[name + ".json"] = json.dumps(PL.data_json(plot), indent=1) + "\n"
            md.append(f"![{plot.title}]({name}.svg)\n")
    files["compare.md"] = "\n".join(md)
    return files


def _run_specs(specs: list, jobs: int, drawings: bool = True) -> list:
    if jobs <= 1 or len(specs) <= 1:
        return [spec_files(p, drawings) for p in specs]
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(spec_files, specs, [drawings] * len(specs)))


def generate(out_dir: Path, spec_glob: str = "specs/*.yaml", jobs: int | None = None, clean: bool = True) -> list:
    """Write the documentation into out_dir; returns the files written (relative)."""
    from .diagrams import has_dot
    from .views import RenderError

    if not has_dot():
        raise RenderError("docs need Graphviz's `dot` on PATH for SVG diagrams (apt-get install graphviz)")
    from .output_tree import previous_files, write_files

    out_dir = Path(out_dir)
    # refused before any work: a folder specc did not make is never written into or cleaned
    previous = previous_files(out_dir, "docs", frozenset(KEEP)) if clean else None
    files = build_files(out_dir, spec_glob, jobs, drawings=True)
    write_files(out_dir, files, "docs", previous)
    return sorted(files)


def build_files(out_dir: Path, spec_glob: str = "specs/*.yaml", jobs: int | None = None,
                drawings: bool = True) -> dict:
    """{relative path: text} of the documentation (charts configured by out_dir/docs.yaml)."""
    from . import report as R
    from .views import RenderError

    specs = _documented(Path(out_dir), sorted(glob.glob(spec_glob)))
    if not specs:
        raise RenderError(f"no spec matches {spec_glob}")
    for path in specs:
        _stem(path)                                   # every name checked before any work
    jobs = jobs if jobs is not None else min(2, os.cpu_count() or 1)
    files, entries = _per_spec_files(_run_specs(specs, jobs, drawings))
    charts = _charts(Path(out_dir), specs)
    files.update(cross_files(specs, charts, drawings))
    extra_md = "\n## Cross-model comparisons\n\nSee [compare.md](compare.md).\n\n" + "".join(
        f"![{c['title']}: {q}](plots/{c['name']}_{q}.svg)\n\n" for c in charts for q in ("state_bytes", "flops", "b_max"))
    extra_md += "\nRegenerate with `specc docs -o docs/` (or `python -m specc.render.docs docs/`).\n"
    files["README.md"] = R.index_markdown(entries, extra_md)
    html_entries = [(m, p, c, link.replace("README.md", "report.html")) for m, p, c, link in entries]
    if drawings:
        figs = ""
        for c in charts:
            for q in ("state_bytes", "flops", "b_max"):
                svg = R.svg_inline(files["plots/" + c["name"] + "_" + q + ".svg"])
                figs += f'<div class="figure"><h3>{R.e(c["title"])}: {q}</h3>{svg}</div>'
        files["index.html"] = R.index_html(html_entries, "<h2>Cross-model charts</h2>" + figs)
        files["VERSIONS.txt"] = tool_versions()
    return files


def _per_spec_files(results) -> tuple:
    """Each spec's pages under its own folder, and its index entry."""
    files: dict = {}
    entries = []
    for res in results:
        stem = res["meta"]["stem"]
        for name, text in res["files"].items():
            files[f"{stem}/{name}"] = text
        m = res["meta"]
        entries.append((m["model"], m["path"], m["counts"], f"{stem}/README.md"))
    return files, entries


def write_tree(out_dir: Path, files: dict, clean: bool = True) -> None:
    """Write `files` into out_dir; clean=True also deletes what the previous `specc docs`
    wrote there and this run does not (render/output_tree.py: only files it listed)."""
    from .output_tree import previous_files, write_files

    out_dir = Path(out_dir)
    write_files(out_dir, files, "docs", previous_files(out_dir, "docs", frozenset(KEEP)) if clean else None)


def write_reports(specs: list, out_dir: Path) -> list:
    """`specc report`: per spec report.md/report.html (+ diagrams, plot), and an index."""
    from . import report as R

    for path in specs:
        _stem(path)                                   # every name checked before any work
    files, entries = _per_spec_files(_run_specs(sorted(specs), min(2, os.cpu_count() or 1)))
    files["README.md"] = R.index_markdown(entries)
    files["index.html"] = R.index_html([(m, p, c, link.replace("README.md", "report.html"))
                                        for m, p, c, link in entries])
    write_tree(Path(out_dir), files, clean=False)
    return sorted(files)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    out = Path(argv[0]) if argv else Path("docs")
    written = generate(out)
    print(f"wrote {len(written)} files to {out}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
