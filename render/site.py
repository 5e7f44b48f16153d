"""The static explorer site: `specc site -o DIR`.

For every shipped spec the site exports, as JavaScript data files the page
loads with <script> tags (so it works from file:// and needs no server):
its options and formats, and for every figure in FIGURES and every option
combination the figure's closed form over the scenario symbols, printed to
JavaScript by compiler.codegen (BigInt integers, exact rationals). The page
(render/site_assets/) evaluates those functions as the controls move and
labels each figure with `data-query` (the specc query text it shows) and
`data-value` (its exact value, as `specc eval --json` prints it).

What is exported is data, not code per model: FIGURES is the one table of
what the page shows; a figure whose closed form cannot be built for a spec
(e.g. a sum over decode steps with no closed form) is exported as unavailable
with the reason, never approximated.

Derived capacity figures (b_max) are computed in the page from exported
figures with the engine's definition, and the browser test compares them with
`specc eval` like every other figure."""

from __future__ import annotations

import itertools
import json
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path

ASSETS = Path(__file__).with_name("site_assets")
# argument order of every exported function
SCENARIO_ARGS = ("B", "S", "P", "G", "H")
# page state keys: an option of a spec may not take one of these names in the URL
STATE_KEYS = {"spec", "device", "memory", "format", "workspace", "tp", "pp", "ep", "dp", "mfu", "mbu",
              *SCENARIO_ARGS}
# at most this many option combinations are exported per spec (the full product of the shipped specs is 36)
MAX_VARIANTS = 64


@dataclass(frozen=True)
class Figure:
    """One figure of the page: `query(args)` with args bound to page state.

    args: (query argument, page-state variable or integer literal) pairs, e.g.
    ("S", "H") asks flops at S = the page's H. context: the query arguments
    whose sum (plus context_offset) the engine checks against max_context.
    """
    id: str
    label: str
    unit: str                # "bytes", "FLOPs", "parameters", "bytes per token", "requests"
    query: str
    args: tuple = ()
    formatted: bool = False  # takes format=
    context: tuple = ()
    context_offset: int = 0
    doc: str = ""
    deployed: bool = False   # asked per device (per_device=true) at each point of DEPLOYMENT_GRID


FIGURES = (
    Figure("params", "Parameters", "parameters", "params", doc="every stored parameter"),
    Figure("weight_bytes", "Weights", "bytes", "weight_bytes", formatted=True, doc="bytes of stored weights"),
    Figure("kv_bytes_per_token", "State growth per token", "bytes per token", "kv_bytes_per_token",
           formatted=True, doc="average context-state bytes added per token"),
    Figure("state_request", "State per request", "bytes", "state_bytes", (("H", "H"),), True, ("H",),
           doc="resident state of one request at context H"),
    Figure("state_batch", "State of the batch", "bytes", "state_bytes", (("H", "H"), ("B", "B")), True, ("H",),
           doc="resident state of B requests at context H"),
    Figure("prefill_flops", "Prefill FLOPs", "FLOPs", "flops", (("B", "B"), ("S", "S"), ("P", "P")), False,
           ("S", "P"), doc="matrix FLOPs of one call adding P tokens to S cached ones, for B requests"),
    Figure("decode_flops", "Decode step FLOPs", "FLOPs", "flops", (("B", "B"), ("S", "H"), ("P", 1)), False,
           ("S", "P"), doc="matrix FLOPs of one decode step with H cached tokens"),
    Figure("request_flops", "Request FLOPs", "FLOPs", "request_flops",
           (("B", "B"), ("S", "S"), ("P", "P"), ("G", "G")), False, ("S", "P", "G"), -1,
           doc="the prefill call plus its G−1 decode steps"),
    Figure("decode_read_bytes", "Bytes read per decode step", "bytes", "decode_read_bytes",
           (("H", "H"), ("B", "B")), True, ("H",), doc="weights and state one decode step at context H reads"),
)


# Deployment degrees are integers the closed forms are built for, not symbols: the
# per-device figures are exported at every point of this grid (for the default
# options), and the page offers exactly these degrees. An impossible split (heads
# not divisible by tp, experts by ep) is exported as unavailable with the engine's message.
DEPLOYMENT_GRID = {"tp": (1, 2, 4, 8), "pp": (1, 2), "ep": (1, 2, 8)}
DEPLOYED = (
    Figure("weights_device", "Weights per device", "bytes", "weight_bytes", formatted=True, deployed=True,
           doc="the most loaded device's weights"),
    Figure("state_device", "State per request per device", "bytes", "state_bytes", (("H", "H"),), True, ("H",),
           deployed=True, doc="the most loaded device's share of one request's state at context H"),
)


def deployment_key(point: dict) -> str:
    return "&".join(f"{k}={point[k]}" for k in DEPLOYMENT_GRID)


def deployment_args(point: dict) -> dict:
    """The query arguments of a grid point: degrees other than 1, and per_device=true."""
    return {**{k: v for k, v in point.items() if v != 1}, "per_device": "true"}


def query_text(fig: Figure, values: dict | None, extra: dict) -> str:
    """The specc query of a figure: values binds page-state variables; None asks
    the symbolic form (each bound argument its own symbol, S=S, which the page
    then binds: flops(S=H) is the function of S called at the page's H). extra
    holds option/format arguments. The page builds the same text (explorer.js)."""
    parts = [f"{arg}={(arg if values is None else values[src]) if isinstance(src, str) else src}"
             for arg, src in fig.args]
    parts += [f"{k}={v}" for k, v in extra.items()]
    return f"{fig.query}({', '.join(parts)})"


def _variants(spec) -> list[dict]:
    """Every option combination (defaults first), capped at MAX_VARIANTS: past the
    cap only the default and each single-option change are exported."""
    names = list(spec.options)
    if not names:
        return [{}]
    default = {n: spec.options[n].default for n in names}
    product = [dict(zip(names, combo)) for combo in itertools.product(*[list(spec.options[n].choices) for n in names])]
    if len(product) > MAX_VARIANTS:
        product = [default] + [{**default, n: c} for n in names for c in spec.options[n].choices
                               if c != default[n]]
    product.sort(key=lambda v: v != default)
    return product


def variant_key(choices: dict) -> str:
    return "&".join(f"{k}={v}" for k, v in sorted(choices.items()))


def _exact(value) -> int | str:
    """An exact value as `specc eval --json` prints it: an integer, or "p/q"."""
    import sympy as sp

    if isinstance(value, sp.Integer):
        return int(value)
    if isinstance(value, sp.Rational):
        return f"{value.p}/{value.q}"
    raise ValueError(f"not an exact number: {value}")


def export_devices(engine, hardware_dir: Path) -> list[dict]:
    """The device table, each fact asked through the engine's device queries."""
    from ..dsl.errors import SpecError
    from ..dsl.yamlload import load_yaml_file

    devices = []
    for path in sorted(hardware_dir.glob("*.yaml")):
        raw = load_yaml_file(path)
        row = {"name": path.stem, "display_name": str(raw.get("display_name", path.stem)),
               "source": str(raw.get("source", ""))}
        for field, query in (("memory", "device_memory"), ("flops", "device_flops"),
                             ("bandwidth", "device_bandwidth")):
            try:
                row[field] = _exact(engine.evaluate_text(f"{query}(device={path.stem})").value)
            except SpecError:
                row[field] = None        # the datasheet does not give this fact
        row["memory_text"] = str(raw.get("memory", ""))
        devices.append(row)
    return devices


def export_spec(path: str) -> dict:
    """Everything the page needs about one spec (runs in a worker process)."""
    import sympy as sp

    from ..compiler import codegen
    from ..compiler.patterns import NoClosedForm
    from ..compiler.queries import QueryEngine
    from ..compiler.spec import load_spec
    from ..dsl.errors import SpecError
    from ..verify.claims import verify_spec
    from ..verify.output import as_json

    spec = load_spec(path)
    engine = QueryEngine.shared(spec)
    for name in spec.options:
        if name in STATE_KEYS:
            raise ValueError(f"{path}: option '{name}' would collide with the page state key of that name")
    functions: list[str] = []
    index: dict[str, int] = {}
    printed: dict = {}           # closed form -> function index: options often leave a figure unchanged

    def function_of(expr) -> int:
        if expr not in printed:
            source = codegen.emit(expr, list(SCENARIO_ARGS), "javascript")
            if source not in index:
                index[source] = len(functions)
                functions.append(source)
            printed[expr] = index[source]
        return printed[expr]

    variants, unavailable = {}, {}
    for choices in _variants(spec):
        key = variant_key(choices)
        table = {}
        for fig in FIGURES:
            for fmt in (spec.formats if fig.formatted else [None]):
                extra = dict(choices)
                if fmt is not None:
                    extra["format"] = fmt
                slot = fig.id if fmt is None else f"{fig.id}|{fmt}"
                try:
                    value = engine.evaluate_text(query_text(fig, None, extra), "<site>", symbolic_ok=True).value
                    table[slot] = function_of(sp.sympify(value))
                except (NoClosedForm, SpecError, ValueError) as exc:
                    table[slot] = None
                    unavailable[f"{key}#{slot}"] = str(exc).splitlines()[0][:300]
        variants[key] = table
    deployed = {}
    default = variant_key(_variants(spec)[0])
    for values in itertools.product(*DEPLOYMENT_GRID.values()):
        point = dict(zip(DEPLOYMENT_GRID, values))
        for fig in DEPLOYED:
            for fmt in (spec.formats if fig.formatted else [None]):
                extra = {**deployment_args(point), **({"format": fmt} if fmt else {})}
                slot = f"{fig.id}|{fmt}|{deployment_key(point)}" if fmt else f"{fig.id}|{deployment_key(point)}"
                try:
                    value = engine.evaluate_text(query_text(fig, None, extra), "<site>", symbolic_ok=True).value
                    deployed[slot] = function_of(sp.sympify(value))
                except (NoClosedForm, SpecError, ValueError) as exc:
                    deployed[slot] = None
                    unavailable[f"{default}#{slot}"] = str(exc).splitlines()[0][:300]
    model = engine.model({})
    claims = json.loads(as_json(verify_spec(spec)))
    return {
        "name": Path(path).stem, "model": spec.model, "path": str(path),
        "max_context": None if model.max_context is None else int(model.max_context),
        "options": [{"name": n, "default": o.default, "choices": list(o.choices), "doc": o.doc or ""}
                    for n, o in spec.options.items()],
        "formats": [{"name": f, "default": f == spec.default_format, "doc": getattr(spec.formats[f], "doc", "") or ""}
                    for f in spec.formats],
        "has_state": any(True for _ in spec.stores),
        "variants": variants, "unavailable": unavailable, "functions": functions, "deployed": deployed,
        "claims": claims["claims"], "summary": claims["summary"],
    }


def _spec_js(data: dict) -> str:
    """A data file the page loads with a <script> tag: the closed forms as real
    JavaScript functions (nothing is eval-ed in the page), the rest as JSON."""
    functions = data.pop("functions")
    body = ",\n".join(src.rstrip() for src in functions)
    return f"SPECC.register({json.dumps(data, ensure_ascii=False, sort_keys=True)},\n[\n{body}\n]);\n"


def _query_names() -> set:
    """The engine's query names: the page shows a derived figure (h_max) only when
    the engine can answer its query, so the figure's data-query always evaluates."""
    from ..compiler.queries import QUERIES

    return set(QUERIES)


def _byte_units() -> dict:
    """The byte unit words of dsl/units.py (exact factors), for the page's memory and workspace fields."""
    from ..dsl.units import BYTES, UNITS

    return {word: str(factor) for word, (factor, dims) in UNITS.items() if dims == BYTES}


def write_site(out_dir: Path, spec_paths: list[str], docs_dir: Path | None = None, jobs: int = 2) -> list[Path]:
    """Write the explorer, its data files and (when given) a copy of the docs."""
    from concurrent.futures import ProcessPoolExecutor

    from ..compiler import codegen
    from ..compiler.queries import QueryEngine
    from ..compiler.spec import load_spec

    out_dir = Path(out_dir)
    (out_dir / "data").mkdir(parents=True, exist_ok=True)
    spec_paths = sorted(spec_paths)
    if jobs > 1 and len(spec_paths) > 1:
        with ProcessPoolExecutor(jobs) as pool:
            exported = list(pool.map(export_spec, spec_paths))
    else:
        exported = [export_spec(p) for p in spec_paths]
    written = []
    index = []
    for data in exported:
        index.append({"name": data["name"], "model": data["model"], "claims": data["summary"]})
        target = out_dir / "data" / f"{data['name']}.js"
        target.write_text(_spec_js(data), encoding="utf-8")
        written.append(target)
    engine = QueryEngine.shared(load_spec(spec_paths[0]))
    hardware = Path(spec_paths[0]).resolve().parent / "hardware"
    site = {"specs": index, "devices": export_devices(engine, hardware),
            "figures": [asdict(f) for f in FIGURES], "byte_units": _byte_units(),
            "deployed_figures": [asdict(f) for f in DEPLOYED], "deployment_grid": DEPLOYMENT_GRID,
            # the page offers deployment controls only when some spec answers some grid point past (1, 1, 1)
            "deployment": any(i is not None for d in exported for k, i in d["deployed"].items()
                              if not k.endswith(deployment_key({k2: 1 for k2 in DEPLOYMENT_GRID}))),
            "docs": docs_dir is not None, "queries": sorted(_query_names())}
    target = out_dir / "data" / "site.js"
    target.write_text("var SPECC_SITE = " + json.dumps(site, ensure_ascii=False, indent=1) + ";\n", encoding="utf-8")
    written.append(target)
    target = out_dir / "data" / "exact.js"
    target.write_text(codegen.prelude("javascript"), encoding="utf-8")
    written.append(target)
    for asset in sorted(ASSETS.iterdir()):
        shutil.copyfile(asset, out_dir / asset.name)
        written.append(out_dir / asset.name)
    if docs_dir is not None and Path(docs_dir).is_dir():
        shutil.copytree(docs_dir, out_dir / "docs", dirs_exist_ok=True)
        written.append(out_dir / "docs")
        target = out_dir / "reports.html"
        target.write_text(_reports_page(index, out_dir / "docs"), encoding="utf-8")
        written.append(target)
    return written


def _reports_page(index: list[dict], docs: Path) -> str:
    """An HTML index of the copied claims reports (docs/ itself is Markdown)."""
    from html import escape

    rows = []
    for entry in index:
        counts = ", ".join(f"{n} {v}" for v, n in entry["claims"].items() if n) or "no claims"
        name = escape(entry["name"])
        report = f'<a href="docs/{name}/report.html">claims report</a>' \
            if (docs / entry["name"] / "report.html").exists() else "no report"
        rows.append(f'<tr><td>{escape(entry["model"])}</td><td><a href="explorer.html?spec={name}">{name}</a></td>'
                    f"<td>{escape(counts)}</td><td>{report}</td></tr>")
    return ('<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            '<title>specc claims reports</title><link rel="stylesheet" href="explorer.css"></head>\n<body>'
            '<header><h1>specc claims reports</h1><p class="lede">Every number the source documents print about '
            'each shipped spec, checked by <code>specc verify</code>. <a href="explorer.html">The explorer</a></p>'
            '</header>\n<div class="table-wrap"><table><thead><tr><th scope="col">Model</th><th scope="col">Explorer</th>'
            '<th scope="col">Verdicts</th><th scope="col">Report</th></tr></thead><tbody>\n'
            + "\n".join(rows) + "\n</tbody></table></div></body></html>\n")
