"""Plots (matplotlib, Agg) of query-engine values against context length.

quantities:
  state_bytes — state_bytes(H, component=store) per request, log-log, every
                model's total (solid) and its stores (dashed)
  flops       — matrix FLOPs of one decode step at context H:
                flops(B=1, S=H-1, P=1), totals (and components for one model)
  b_max       — requests that fit on a device: b_max(device, H, workspace)
  tpot        — roofline time of one decode step at context H, tpot(H, B=1, device=),
                one series per (model, device); several devices comma-separated

Each plot keeps its data (Series: x, exact y from the query engine) so tests
check structure and values, not pixels. Points beyond a spec's maximum
context are extrapolated (extrapolate=true) and drawn dotted. SVG output is
deterministic (fixed hash salt, no dates)."""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

import sympy as sp

from ..compiler.query.queries import QueryEngine
from ..compiler.query.query_registry import plotted
from ..compiler.query.query_value import make_call
from ..dsl.human import exact_json, time_unit
from . import views as v

DEFAULT_CONTEXTS = [2 ** k for k in range(10, 21)]     # 1K … 1M
COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f",
          "#bcbd22"]
# what `specc plot` draws, as the query declarations say (compiler/query/query_registry.py: plot=)
QUANTITIES = plotted()                          # also the docs' cross-model charts
EXTRA_QUANTITIES = plotted(on_request=True)     # on request only (specc plot --quantity tpot)


@dataclass
class Series:
    model: str
    component: str | None           # None: the model's total
    queries: list                   # the query text of every point
    xs: list
    ys: list                        # exact values from the query engine
    extrapolated: list

    @property
    def label(self) -> str:
        return self.model if self.component is None else f"{self.model}: {self.component}"


@dataclass
class Plot:
    quantity: str
    title: str
    xlabel: str
    ylabel: str
    series: list = field(default_factory=list)
    logy: bool = True
    scale: float = 1.0              # y values are divided by this for drawing
    notes: list = field(default_factory=list)


def _series(engine: QueryEngine, component, make_query, contexts) -> Series:
    queries, ys, ext = [], [], []
    for h in contexts:
        q = make_query(h)
        result = engine.evaluate_text(q)
        queries.append(q)
        ys.append(result.value)
        ext.append(result.extrapolated)
    return Series(engine.spec.model, component, queries, list(contexts), ys, ext)


def _query(name: str, **args) -> str:
    """A plotted point's query (extrapolate=true: a chart runs past a model's context, flagged)."""
    return make_call(name, {**args, "extrapolate": True}).text()


def state_bytes_plot(engines: list, contexts=None, fmt: str | None = None, components: bool = True) -> Plot:
    contexts = contexts or DEFAULT_CONTEXTS
    plot = Plot("state_bytes", "Per-request state vs context length", "context length H (tokens)",
                "state bytes per request (GiB)", scale=2 ** 30)
    for e in engines:
        plot.series.append(_series(e, None, lambda h: _query("state_bytes", H=h, format=fmt), contexts))
        if components:
            used = [s for s in e.spec.stores if any(u.store == s for u in e.model({}).states)]
            if len(used) > 1:
                for store in used:
                    plot.series.append(_series(
                        e, store, lambda h, s=store: _query("state_bytes", H=h, component=s, format=fmt),
                        contexts))
    return plot


def flops_plot(engines: list, contexts=None, components: bool | None = None) -> Plot:
    contexts = contexts or DEFAULT_CONTEXTS
    if components is None:
        components = len(engines) == 1
    plot = Plot("flops", "Matrix FLOPs of one decode step vs context length", "context length H (tokens)",
                "FLOPs per decode step (GFLOPs)", scale=1e9)
    for e in engines:
        plot.series.append(_series(e, None, lambda h: _query("flops", B=1, S=h - 1, P=1), contexts))
        if components:
            comps = list(dict.fromkeys(o.component for o in e.model({}).ops if o.flops != 0))
            for comp in comps:
                plot.series.append(_series(
                    e, comp, lambda h, c=comp: _query("flops", B=1, S=h - 1, P=1, component=c),
                    contexts))
    return plot


def b_max_plot(engines: list, device: str = "h100_sxm", workspace: str = "2 GiB", contexts=None,
               fmt: str | None = None) -> Plot:
    contexts = contexts or DEFAULT_CONTEXTS
    plot = Plot("b_max", f"Requests that fit on {device} (workspace {workspace})", "context length H (tokens)",
                "requests that fit (b_max)", logy=False)
    for e in engines:
        if not e.spec.stores:       # no per-request state: b_max has no bound to draw
            plot.notes.append(f"{e.spec.model}: no per-request state, so no bound on requests")
            continue
        plot.series.append(_series(
            e, None, lambda h: _query("b_max", device=device, H=h, workspace=workspace, format=fmt),
            contexts))
    return plot


def tpot_plot(engines: list, devices=("h100_sxm",), contexts=None, fmt: str | None = None, batch: int = 1) -> Plot:
    contexts = contexts or DEFAULT_CONTEXTS
    plot = Plot("tpot", f"Time per output token (roofline, B={batch}) vs context length", "context length H (tokens)",
                "time per decode step")
    for e in engines:
        for device in devices:
            series = _series(e, device, lambda h, d=device: _query("tpot", H=h, B=batch, device=d, format=fmt,
                                                                   ignore_fit=True),
                             contexts)
            plot.series.append(series)
    # the axis in the readable unit of the largest time drawn (dsl/human.py: s, ms, µs or ns)
    largest = max((sp.Rational(y) for s in plot.series for y in s.ys if sp.sympify(y).is_Rational), default=1)
    label, factor = time_unit(Fraction(str(largest)))
    plot.ylabel, plot.scale = f"time per decode step ({label})", float(factor)
    return plot


def make_plot(quantity: str, engines: list, **kw) -> Plot:
    if quantity == "state_bytes":
        return state_bytes_plot(engines, kw.get("contexts"), kw.get("fmt"))
    if quantity == "flops":
        return flops_plot(engines, kw.get("contexts"), kw.get("components"))
    if quantity == "b_max":
        return b_max_plot(engines, kw.get("device") or "h100_sxm", kw.get("workspace") or "2 GiB",
                          kw.get("contexts"), kw.get("fmt"))
    if quantity == "tpot":
        devices = [d.strip() for d in (kw.get("device") or "h100_sxm").split(",") if d.strip()]
        return tpot_plot(engines, devices, kw.get("contexts"), kw.get("fmt"))
    raise v.RenderError(f"unknown quantity '{quantity}'; choose one of {', '.join(QUANTITIES + EXTRA_QUANTITIES)}")


# ------------------------------------------------------------------ drawing
def _mpl():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    matplotlib.rcParams.update({"svg.hashsalt": "specc", "svg.fonttype": "none", "font.size": 9,
                                "axes.titlesize": 11, "legend.fontsize": 7.5})
    return plt


def figure(plot: Plot):
    plt = _mpl()
    fig, ax = plt.subplots(figsize=(8.6, 4.6), dpi=100)
    fig.subplots_adjust(left=0.08, right=0.70, top=0.92, bottom=0.11)
    models = list(dict.fromkeys(s.model for s in plot.series))
    styles = ["--", "-.", ":", (0, (5, 1, 1, 1)), (0, (3, 1, 1, 1, 1, 1))]
    comp_index: dict = {}
    single = len(models) == 1
    for i, s in enumerate(plot.series):
        color = COLORS[(i if single else models.index(s.model)) % len(COLORS)]
        ys = [float(y) / plot.scale for y in s.ys]
        if plot.logy:
            pts = [(x, y, e) for x, y, e in zip(s.xs, ys, s.extrapolated) if y > 0]
        else:
            pts = list(zip(s.xs, ys, s.extrapolated))
        if not pts:
            continue
        if s.component is None:
            style, width, marker = "-", 2.0, "o"
        else:
            idx = comp_index.setdefault((s.model, s.component), len([k for k in comp_index if k[0] == s.model]))
            style, width, marker = styles[idx % len(styles)], 1.1, None
        inside = [(x, y) for x, y, e in pts if not e]
        beyond = [(x, y) for x, y, e in pts if e]
        if inside and beyond:
            beyond = [inside[-1]] + beyond
        draw, kw = ax.plot, {}
        if inside:
            draw([p[0] for p in inside], [p[1] for p in inside], linestyle=style, color=color, linewidth=width,
                 marker=marker, markersize=3, label=s.label, **kw)
        if beyond:
            draw([p[0] for p in beyond], [p[1] for p in beyond], linestyle=":", color=color, linewidth=width,
                 alpha=0.7, label=None if inside else s.label + " (extrapolated)", **kw)
    ax.set_xscale("log", base=2)
    if plot.logy:
        ax.set_yscale("log")
    else:
        ax.set_yscale("symlog", linthresh=1)
        ax.set_ylim(bottom=0)
    ax.set_xlabel(plot.xlabel)
    ax.set_ylabel(plot.ylabel)
    ax.set_title(plot.title)
    ax.grid(True, which="major", alpha=0.3)
    xs = sorted({x for s in plot.series for x in s.xs})
    ax.set_xticks(xs)
    ax.set_xticklabels([_ctx(x) for x in xs])
    if any(any(s.extrapolated) for s in plot.series):
        ax.text(0.01, 0.01, "dotted: beyond the spec's maximum context (extrapolated)", transform=ax.transAxes,
                fontsize=7, color="#555555")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)
    return fig


def _ctx(x: int) -> str:
    if x >= 2 ** 20 and x % 2 ** 20 == 0:
        return f"{x // 2 ** 20}M"
    if x >= 1024 and x % 1024 == 0:
        return f"{x // 1024}K"
    return str(x)


def save(plot: Plot, path, fmt: str | None = None) -> None:
    plt = _mpl()
    fmt = fmt or str(path).rsplit(".", 1)[-1]
    fig = figure(plot)
    metadata = {"Date": None, "Creator": None} if fmt == "svg" else ({"Software": None} if fmt == "png" else {})
    fig.savefig(path, format=fmt, metadata=metadata)
    plt.close(fig)


def to_svg(plot: Plot) -> str:
    import io

    plt = _mpl()
    fig = figure(plot)
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    plt.close(fig)
    return buf.getvalue()


def data_json(plot: Plot) -> dict:
    def exact(y):
        return exact_json(sp.sympify(y))

    return {"quantity": plot.quantity, "title": plot.title, "x": plot.xlabel, "y": plot.ylabel,
            "series": [{"model": s.model, "component": s.component, "x": s.xs, "y": [exact(y) for y in s.ys],
                        "extrapolated": s.extrapolated, "queries": s.queries} for s in plot.series]}
