"""Commands that draw: graph, table, report, plot and docs."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from .cli_support import load_spec_file
from .cli_spec import SPEC
from .compiler.query.query_registry import plotted


def _choices(options) -> dict:
    choices = {}
    for item in options:
        if "=" not in item:
            raise click.BadParameter(f"'{item}' is not NAME=CHOICE", param_hint="--option")
        key, value = item.split("=", 1)
        choices[key.strip()] = value.strip()
    return choices


def _render_error(exc) -> None:
    click.echo(f"error: {exc}", err=True)
    sys.exit(2)


def _write(output, payload) -> None:
    if output:
        mode = "wb" if isinstance(payload, bytes) else "w"
        with open(output, mode, **({} if mode == "wb" else {"encoding": "utf-8"})) as fh:
            fh.write(payload if isinstance(payload, bytes) or payload.endswith("\n") else payload + "\n")
    elif isinstance(payload, bytes):
        raise click.UsageError("binary output (png) needs -o FILE")
    else:
        click.echo(payload.rstrip("\n"))


_OPTION = click.option("--option", "options", multiple=True, metavar="NAME=CHOICE",
                       help="Choose a spec option, e.g. --option mode=reference.")


@click.command()
@click.argument("spec", type=SPEC)
@click.option("--level", type=click.Choice(["model", "op", "full"]), default="model", show_default=True,
              help="model: the layer stack, groups of identical layers, state stores; op: one block's ops "
                   "and tensors; full: every op node of the compiled graph.")
@click.option("--block", default=None, metavar="NAME",
              help="For --level op: a segment name, a group such as encoder#3, or a layer index.")
@click.option("--format", "fmt", type=click.Choice(["svg", "png", "dot", "json"]), default="dot", show_default=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None, help="Write here instead of stdout.")
@_OPTION
def graph(spec, level, block, fmt, output, options):
    """Draw the compiled graph of SPEC (Graphviz).

    SVG and PNG need Graphviz's `dot` on PATH; DOT and JSON do not.

    \b
    specc graph specs/<model>.yaml --level model --format svg -o model.svg
    specc graph specs/<model>.yaml --level op --block layers --format png -o layer.png
    specc graph specs/<model>.yaml --level full --format json -o graph.json
    specc graph specs/<model>.yaml --option mode=reference --format dot
    """
    from .compiler.graph.build import compile_spec
    from .render import diagrams
    from .render.graph_export import to_dot, to_json
    from .render.views import RenderError

    model = compile_spec(load_spec_file(spec), None, _choices(options))
    try:
        if level == "full":
            payload = to_json(model) if fmt == "json" else to_dot(model)
            if fmt in ("svg", "png"):
                import graphviz

                payload = diagrams.render(graphviz.Source(to_dot(model)), fmt)
        elif fmt == "json":
            payload = diagrams.model_json(model) if level == "model" else diagrams.op_json(model, block)
        else:
            g = diagrams.model_graph(model) if level == "model" else diagrams.op_graph(model, block)
            payload = diagrams.render(g, fmt)
    except RenderError as exc:
        _render_error(exc)
    _write(output, payload)


@click.command()
@click.argument("specs", nargs=-1, required=True, type=SPEC)
@click.option("--kind", type=click.Choice(["modules", "params", "flops", "state", "compare", "roofline"]),
              default="modules",
              show_default=True)
@click.option("--format", "fmt", type=click.Choice(["md", "html", "csv", "latex"]), default="md", show_default=True)
@click.option("--column", "columns", multiple=True, metavar="LABEL=QUERY[@UNIT]",
              help="compare: a column, e.g. 'Prefill 8K=flops(P=8192)@TFLOPs' (repeatable).")
@click.option("--scenario", "scenarios", multiple=True, metavar="LABEL=ARGS",
              help="flops: a scenario column, e.g. 'decode 32K=S=32768, P=1' (repeatable).")
@click.option("--context", "contexts", multiple=True, type=int, help="state: context lengths H (repeatable).")
@click.option("--unit", default=None, help="flops: unit of the values (default GFLOPs).")
@click.option("--state-format", "state_format", default=None, help="state: storage format of the spec.")
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None)
@_OPTION
def table(specs, kind, fmt, columns, scenarios, contexts, unit, state_format, output, options):
    """Tables of one or more SPECS, computed by the query engine.

    \b
    modules  per-layer modules: role, input → output, weights, FLOPs formula, layers/call
    params   parameters by group (billions), one row per spec
    flops    matrix FLOPs by component and stage per scenario, per spec
    state    state bytes by store at several context lengths, per spec
    compare  one row per spec, one column per query (--column LABEL=QUERY@UNIT)
    roofline per op of one call on a device (--scenario 'B=1, S=4096, P=1, device=h100_sxm, tp=8')
    \b
    specc table specs/<model>.yaml --kind modules
    specc table specs/*.yaml --kind params --format csv
    specc table specs/a.yaml specs/b.yaml --kind compare --column 'Prefill 8K=flops(P=8192)@TFLOPs'
    """
    from .compiler.query.queries import QueryEngine
    from .render import tables as T
    from .render.views import RenderError

    choices = _choices(options)
    engines = [QueryEngine(load_spec_file(p)) for p in specs]
    render = T.FORMATS[fmt]
    try:
        if kind == "modules":
            out = [render(T.modules_table(e.model(choices))) for e in engines]
        elif kind == "params":
            out = [render(T.params_table(engines))]
        elif kind == "flops":
            scen = [tuple(s.split("=", 1)) for s in scenarios] or None
            out = [render(T.flops_table(e, scen, unit or "GFLOPs")) for e in engines]
        elif kind == "roofline":
            out = [render(T.roofline_table(e, s)) for e in engines for s in (scenarios or [None])]
        elif kind == "state":
            out = [render(T.state_table(e, list(contexts) or None, state_format)) for e in engines]
        else:
            cols = [T.parse_column(c) for c in columns] or None
            out = [render(T.compare_table(engines, cols))]
    except RenderError as exc:
        _render_error(exc)
    _write(output, "\n".join(out))


@click.command()
@click.argument("specs", nargs=-1, required=True, type=SPEC)
@click.option("--quantity", type=click.Choice(list(plotted() + plotted(on_request=True))), default="state_bytes",
              show_default=True)
@click.option("--device", default="h100_sxm", show_default=True, help="b_max, tpot: a device under specs/hardware/ (tpot: several, comma-separated).")
@click.option("--workspace", default="2 GiB", show_default=True, help="b_max: reserved memory.")
@click.option("--context", "contexts", multiple=True, type=int, help="Context lengths (default 1K…1M, powers of 2).")
@click.option("--components/--totals", default=None, help="Draw components too (default: for one spec).")
@click.option("--state-format", "state_format", default=None, help="Storage format of the specs.")
@click.option("--data", "data_out", type=click.Path(dir_okay=False), default=None,
              help="Also write the plotted values (exact, from the query engine) as JSON.")
@click.option("-o", "--output", type=click.Path(dir_okay=False), required=True, help="svg, png or pdf file.")
def plot(specs, quantity, device, workspace, contexts, components, state_format, data_out, output):
    """Plot a quantity against context length for one or more SPECS (matplotlib).

    \b
    state_bytes  state per request, log-log, totals and stores
    flops        matrix FLOPs of one decode step at context H
    b_max        requests that fit on --device with --workspace reserved
    tpot         roofline time of one decode step at context H on each --device
    \b
    specc plot specs/a.yaml specs/b.yaml --quantity state_bytes -o state.svg
    specc plot specs/a.yaml --quantity b_max --device rtx_4090 --workspace '2 GiB' -o bmax.png
    """
    import json

    from .compiler.query.queries import QueryEngine
    from .render import plots as PL
    from .render.views import RenderError

    engines = [QueryEngine(load_spec_file(p)) for p in specs]
    try:
        p = PL.make_plot(quantity, engines, contexts=list(contexts) or None, fmt=state_format, device=device,
                         workspace=workspace, components=components)
        if quantity == "state_bytes" and components is False:
            p.series = [s for s in p.series if s.component is None]
        PL.save(p, output)
    except RenderError as exc:
        _render_error(exc)
    if data_out:
        Path(data_out).write_text(json.dumps(PL.data_json(p), indent=1) + "\n", encoding="utf-8")
    click.echo(f"wrote {output} ({len(p.series)} series)")


@click.command()
@click.argument("specs", nargs=-1, required=True, type=SPEC)
@click.option("-o", "--output", "out_dir", type=click.Path(file_okay=False), required=True)
def report(specs, out_dir):
    """Claims reports: Markdown and self-contained HTML per SPEC, plus an index.

    \b
    specc report specs/*.yaml -o reports/
    """
    from .render.docs import write_reports
    from .render.views import RenderError

    from .render.diagrams import has_dot

    try:
        written = write_reports(list(specs), Path(out_dir))
    except RenderError as exc:
        _render_error(exc)
    if not has_dot():
        click.echo("warning: Graphviz 'dot' is not installed: the reports have no diagrams "
                   "(install graphviz for complete reports)", err=True)
        click.echo(f"wrote {len(written)} files to {out_dir} (incomplete: no diagrams)")
        return
    click.echo(f"wrote {len(written)} files to {out_dir}")


@click.command()
@click.option("-o", "--output", "out_dir", type=click.Path(file_okay=False), default="docs", show_default=True)
@click.option("--specs", "spec_glob", default="specs/*.yaml", show_default=True)
def docs(out_dir, spec_glob):
    """Regenerate the documentation of the shipped specs (deterministic).

    \b
    specc docs -o docs/
    """
    from .render.docs import generate
    from .render.views import RenderError

    try:
        written = generate(Path(out_dir), spec_glob)
    except RenderError as exc:
        _render_error(exc)
    click.echo(f"wrote {len(written)} files to {out_dir}")
