"""The static explorer site: `specc site -o DIR`.

For every shipped spec the site exports, as JavaScript data files the page
loads with <script> tags (so it works from file:// and needs no server):
its options and formats, and for every figure in FIGURES and every option
combination the figure's closed form over the scenario symbols, printed to
JavaScript by compiler.codegen (BigInt integers, exact rationals). The page
(render/site_assets/) evaluates those functions as the controls move and
labels each figure with `data-query` (the specc query text it shows) and
`data-value` (its exact value, as `specc eval --json` prints it).

What is exported is data, not code per model: FIGURES (from the query
declarations, compiler/query_registry.py) is what the page shows; a figure whose closed form cannot be built for a spec
(e.g. a sum over decode steps with no closed form) is exported as unavailable
with the reason, never approximated.

Derived capacity figures (b_max) are computed in the page from exported
figures with the engine's definition, and the browser test compares them with
`specc eval` like every other figure."""

from __future__ import annotations

import itertools
import json
from dataclasses import asdict, dataclass
from pathlib import Path

from ..compiler.query_value import make_call

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


def _figures(group: str) -> tuple:
    """The page's figures of a group, as the query declarations list them (compiler/query_registry.py)."""
    from ..compiler.query_registry import figures

    return tuple(Figure(f.id, f.label, f.unit, name, f.args, f.formatted, f.context, f.context_offset, f.doc,
                        group == "deployed") for name, f in figures(group))


FIGURES = _figures("model")


# Deployment degrees are integers the closed forms are built for, not symbols: the
# per-device figures are exported at every point of this grid (for the default
# options; other option combinations at tp = pp = ep = 1), and the page offers exactly
# these degrees. ep is offered only at degrees that divide a spec's routed-expert counts
# (a spec without routed experts has ep = 1). dp is any positive integer: a deployment
# of dp instances is its instance's closed forms at ceil(B/dp) requests. An impossible
# split (heads not divisible by tp, pp above the layer count) is exported as
# unavailable with the engine's message.
DEPLOYMENT_GRID = {"tp": (1, 2, 4, 8, 16), "pp": (1, 2, 4, 8), "ep": (1, 2, 4, 8, 16, 32, 64)}
# the time figures' rows are exported for tp·ep up to this many devices per pipeline stage
MAX_TP_EP = 64
DEPLOYED = _figures("deployed")
# The time figures (q_time.py's ttft, tpot, throughput) are computed in the page from the
# roofline's rows exported per (options, format, tp, ep) and its communication bytes per
# (options, tp, pp, ep); see _time_forms.
TIME_FIGURES = _figures("time")


def deployment_key(point: dict) -> str:
    return "&".join(f"{k}={point[k]}" for k in DEPLOYMENT_GRID if k in point)


def spec_grid(model) -> dict:
    """The degrees the page offers for a compiled model: DEPLOYMENT_GRID, with ep cut to the
    degrees that divide every routed-expert count (1 alone without routed experts)."""
    experts = {int(op.experts) for op in model.ops if op.experts != 1}
    return {**DEPLOYMENT_GRID, "ep": tuple(e for e in DEPLOYMENT_GRID["ep"]
                                           if experts and all(n % e == 0 for n in experts)) or (1,)}


def merged_rows(rows) -> list[tuple]:
    """Roofline rows [(name, flops, bytes)] -> fewer rows [(pf, w, pb, wr)] standing for
    (w·pf, wr·pb) with the same Σ max(flops / p, bytes / q) for every p, q > 0.

    Each row is written w·(pf, r·pb) with w > 0 the positive rational content of its
    FLOPs (of its bytes when it has no FLOPs) and pf, pb primitive parts; rows with the
    same (pf, pb, r) add their w, since Σ w_i·max(x, y) = (Σ w_i)·max(x, y). Nothing else
    is merged: a sum of maxima is not the maximum of sums."""
    import sympy as sp

    def content(expr):
        c, prim = sp.sympify(expr).as_content_primitive()
        return (-c, -prim) if c < 0 else (c, prim)

    groups: dict = {}
    for _, flops, nbytes in rows:
        flops, nbytes = sp.sympify(flops), sp.sympify(nbytes)
        if flops != 0:
            w, pf = content(flops)
            cb, pb = content(nbytes) if nbytes != 0 else (sp.Integer(0), sp.Integer(0))
            key = (pf, pb, cb / w)
        elif nbytes != 0:
            w, pb = content(nbytes)
            key = (sp.Integer(0), pb, sp.Integer(1))
        else:
            continue
        groups[key] = groups.get(key, 0) + w
    return [(pf, w, pb, w * r) for (pf, pb, r), w in groups.items()]


def deployment_args(point: dict) -> dict:
    """The query arguments of a grid point: degrees other than 1, and per_device=true."""
    return {**{k: v for k, v in point.items() if v != 1}, "per_device": "true"}


def query_text(fig: Figure, values: dict | None, extra: dict) -> str:
    """The specc query of a figure: values binds page-state variables; None asks
    the symbolic form (each bound argument its own symbol, S=S, which the page
    then binds: flops(S=H) is the function of S called at the page's H). extra
    holds option/format arguments. Printed by the one query printer; the page
    builds the same text (explorer.js)."""
    args = [(arg, (arg if values is None else values[src]) if isinstance(src, str) else src) for arg, src in fig.args]
    return make_call(fig.query, args + list(extra.items())).text()


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
    from ..dsl.errors import Loc
    from .output_tree import safe_stem

    for path in sorted(hardware_dir.glob("*.yaml")):
        raw = load_yaml_file(path)
        if not isinstance(raw, dict):
            raise SpecError("a device file is a mapping of facts", Loc(str(path), 1, 1),
                            expected="name:, memory:, bandwidth:, flops: ... (see specs/hardware/)")
        row = {"name": safe_stem(path), "display_name": str(raw.get("display_name", path.stem)),
               "source": str(raw.get("source", ""))}
        for field, query in (("memory", "device_memory"), ("flops", "device_flops"),
                             ("bandwidth", "device_bandwidth"), ("link", "device_link")):
            try:
                row[field] = str(_exact(engine.evaluate_text(make_call(query, {"device": path.stem}).text()).value))
            except SpecError:
                row[field] = None        # the datasheet does not give this fact
        row["memory_text"] = str(raw.get("memory", ""))
        devices.append(row)
    return devices


def _public_path(path) -> str:
    """A path as the published site shows it: relative to the folder specc ran in, or
    the file's name alone (never the build machine's absolute paths)."""
    import os

    text = str(path)
    if not os.path.isabs(text):
        return text
    try:
        return Path(text).resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return Path(text).name


class _Exported:
    """What one spec's data file accumulates: JavaScript functions (one per distinct
    closed form), roofline row sets (one per distinct set), and why a figure is
    unavailable (each distinct message once)."""

    def __init__(self):
        self.functions: list[str] = []
        self._source_index: dict[str, int] = {}
        self._printed: dict = {}      # closed form -> function index: options often leave a figure unchanged
        self.rowsets: list[list] = []
        self._rowset_index: dict[str, int] = {}
        self.messages: list[str] = []
        self.unavailable: dict[str, int] = {}

    def function_of(self, expr) -> int:
        from ..compiler import codegen

        if expr not in self._printed:
            source = codegen.emit(expr, list(SCENARIO_ARGS), "javascript")
            if source not in self._source_index:
                self._source_index[source] = len(self.functions)
                self.functions.append(source)
            self._printed[expr] = self._source_index[source]
        return self._printed[expr]

    def rowset_of(self, rows) -> int:
        """A roofline row set: [[FLOPs function or -1, its factor, bytes function or -1, its factor]]."""
        # factors as strings: JSON numbers past 2**53 would lose digits in the page
        table = [[-1 if pf == 0 else self.function_of(pf), str(_exact(w)), -1 if pb == 0 else self.function_of(pb),
                  str(_exact(wr))] for pf, w, pb, wr in merged_rows(rows)]
        return self._rowset_index_of(table)

    def _rowset_index_of(self, table: list) -> int:
        text = json.dumps(table)
        if text not in self._rowset_index:
            self._rowset_index[text] = len(self.rowsets)
            self.rowsets.append(table)
        return self._rowset_index[text]

    def why(self, key: str, exc: Exception | str) -> None:
        message = str(exc).splitlines()[0][:300]
        if message not in self.messages:
            self.messages.append(message)
        self.unavailable[key] = self.messages.index(message)

    def absorb(self, other: "_Exported"):
        """Take another part's functions, row sets and reasons; returns how its function
        and row-set indices map to this one's."""
        fmap = []
        for source in other.functions:
            if source not in self._source_index:
                self._source_index[source] = len(self.functions)
                self.functions.append(source)
            fmap.append(self._source_index[source])
        rmap = [self._rowset_index_of([[-1 if pf < 0 else fmap[pf], w, -1 if pb < 0 else fmap[pb], wr]
                                       for pf, w, pb, wr in table]) for table in other.rowsets]
        for key, i in other.unavailable.items():
            self.why(key, other.messages[i])
        return fmap, rmap


def _unavailable_errors():
    from ..compiler.codegen import CodegenError
    from ..compiler.patterns import NoClosedForm
    from ..dsl.errors import SpecError

    return (NoClosedForm, SpecError, CodegenError, ValueError)


def _symbolic(engine, text: str):
    import sympy as sp

    return sp.sympify(engine.evaluate_text(text, "<site>", symbolic_ok=True).value)


def _time_forms(engine, spec, work: list[tuple[dict, list]], pps, out: _Exported) -> tuple[dict, dict]:
    """The roofline at each (options, [(tp, ep), ...]) of `work`, for every format, as row
    sets: the call's and (when it differs at P = 1) the decode step's; and its communication
    bytes at every pp of `pps`. The rows do not depend on pp (a call passes every stage in
    turn: roofline sums all ops) and the communication does not depend on the format."""
    errors = _unavailable_errors()
    time, comm = {}, {}
    for choices, points in work:
        vkey = variant_key(choices)
        time.setdefault(vkey, {fmt: {} for fmt in spec.formats})
        comm.setdefault(vkey, {})
        for tp, ep in points:
            for i, fmt in enumerate(spec.formats):
                key = f"tp={tp}&ep={ep}"
                try:
                    forms = engine.roofline_forms(choices, fmt, tp, 1, ep)
                except errors as exc:
                    time[vkey][fmt][key] = None
                    out.why(f"time#{vkey}#{fmt}#{key}", exc)
                    continue
                time[vkey][fmt][key] = [out.rowset_of(forms["call"]),
                                        None if forms["step"] is None else out.rowset_of(forms["step"])]
                if i == 0:
                    comm[vkey][f"tp={tp}&pp=1&ep={ep}"] = out.function_of(forms["comm"])
            for pp in pps:
                key = f"tp={tp}&pp={pp}&ep={ep}"
                if pp == 1 and key in comm[vkey]:
                    continue
                try:
                    comm[vkey][key] = out.function_of(engine.roofline_forms(choices, None, tp, pp, ep, rows=False)["comm"])
                except errors as exc:
                    comm[vkey][key] = None
                    out.why(f"comm#{vkey}#{key}", exc)
    return time, comm


def time_points(grid: dict) -> list[tuple[int, int]]:
    """The (tp, ep) points whose roofline rows are exported for the default options: every
    pair of the grid with tp·ep <= MAX_TP_EP devices (rows cost a symbolic roofline each)."""
    return [(tp, ep) for tp in grid["tp"] for ep in grid["ep"] if tp * ep <= MAX_TP_EP]


def _parts(path: str) -> list:
    """The export of one spec in independent pieces (so that worker processes share a
    big spec): "base", then the default options' time forms one tp at a time."""
    from ..compiler.queries import QueryEngine
    from ..compiler.spec import load_spec

    spec = load_spec(path)
    model = QueryEngine.shared(spec).model({})
    grid = spec_grid(model)
    # a rough cost (ops times the roofline calls of the part), so the workers start with the longest
    cost = len(model.ops) * len(spec.formats)
    return [((path, "base"), cost * 2)] + [((path, tp), cost * sum(1 for t, _ in time_points(grid) if t == tp))
                                           for tp in grid["tp"]]


def export_part(task) -> dict:
    """One piece of a spec's export (see _parts); export_spec joins them."""
    path, part = task
    from ..compiler.queries import QueryEngine
    from ..compiler.spec import load_spec

    spec = load_spec(path)
    engine = QueryEngine.shared(spec)
    all_variants = _variants(spec)
    grid = spec_grid(engine.model({}))
    out = _Exported()
    if part == "base":
        data = _export_base(path, spec, engine, all_variants, grid, out)
        # other options: their rows at tp = ep = 1 (every pp)
        data["time"], data["comm"] = _time_forms(engine, spec, [(c, [(1, 1)]) for c in all_variants[1:]],
                                                 grid["pp"], out)
    else:
        points = [(tp, ep) for tp, ep in time_points(grid) if tp == part]
        data = {}
        data["time"], data["comm"] = _time_forms(engine, spec, [(all_variants[0], points)], grid["pp"], out)
    data["_out"] = out
    return data


def join_parts(parts: list[dict]) -> dict:
    """The parts of one spec's export as one data dict (functions and row sets renumbered)."""
    out = _Exported()
    data = None
    for part in sorted(parts, key=lambda part: "name" not in part):      # the base part first
        fmap, rmap = out.absorb(part.pop("_out"))
        if "variants" in part:
            part["variants"] = {k: {slot: None if i is None else fmap[i] for slot, i in table.items()}
                                for k, table in part["variants"].items()}
            part["deployed"] = {slot: None if i is None else fmap[i] for slot, i in part["deployed"].items()}
        if data is None:
            data = {**part, "time": {}, "comm": {}}
        for vkey, formats in part["time"].items():
            for fmt, points in formats.items():
                target = data["time"].setdefault(vkey, {}).setdefault(fmt, {})
                for key, pair in points.items():
                    target[key] = None if pair is None else [rmap[pair[0]], None if pair[1] is None else rmap[pair[1]]]
        for vkey, points in part["comm"].items():
            data["comm"].setdefault(vkey, {}).update({k: None if i is None else fmap[i] for k, i in points.items()})
    data.update(unavailable=out.unavailable, messages=out.messages, functions=out.functions, rowsets=out.rowsets)
    return data


def export_spec(path: str) -> dict:
    """Everything the page needs about one spec."""
    return join_parts([export_part(task) for task, _ in _parts(path)])


def _export_base(path, spec, engine, all_variants, grid, out: _Exported) -> dict:
    """The figures of every option combination, the per-device figures and the claims."""
    from ..verify.claims import verify_spec
    from ..verify.output import as_json

    for name in spec.options:
        if name in STATE_KEYS:
            raise ValueError(f"{path}: option '{name}' would collide with the page state key of that name")
    errors = _unavailable_errors()
    variants = {}
    for choices in all_variants:
        key = variant_key(choices)
        table = {}
        for fig in FIGURES:
            for fmt in (spec.formats if fig.formatted else [None]):
                extra = dict(choices)
                if fmt is not None:
                    extra["format"] = fmt
                slot = fig.id if fmt is None else f"{fig.id}|{fmt}"
                try:
                    table[slot] = out.function_of(_symbolic(engine, query_text(fig, None, extra)))
                except errors as exc:
                    table[slot] = None
                    out.why(f"{key}#{slot}", exc)
        variants[key] = table
    model = engine.model({})
    deployed = {}
    default = variant_key(all_variants[0])
    for values in itertools.product(*grid.values()):
        point = dict(zip(grid, values))
        for fig in DEPLOYED:
            for fmt in (spec.formats if fig.formatted else [None]):
                extra = {**deployment_args(point), **({"format": fmt} if fmt else {})}
                slot = f"{fig.id}|{fmt}|{deployment_key(point)}" if fmt else f"{fig.id}|{deployment_key(point)}"
                try:
                    deployed[slot] = out.function_of(_symbolic(engine, query_text(fig, None, extra)))
                except errors as exc:
                    deployed[slot] = None
                    out.why(f"{default}#{slot}", exc)
    results = verify_spec(spec)
    claims = json.loads(as_json(results))
    from ..verify import sources as S

    for record, result in zip(claims["claims"], results):      # the page shows sources and quotes in English
        record["spec"] = _public_path(record["spec"])
        record["source_name"], record["gloss"] = S.source_name(result.claim.source), S.gloss(result.claim)
    return {
        "name": Path(path).stem, "model": spec.model, "path": _public_path(path),
        "max_context": None if model.max_context is None else int(model.max_context),
        "options": [{"name": n, "default": o.default, "choices": list(o.choices), "doc": o.doc or ""}
                    for n, o in spec.options.items()],
        "formats": [{"name": f, "default": f == spec.default_format, "doc": getattr(spec.formats[f], "doc", "") or ""}
                    for f in spec.formats],
        "has_state": any(True for _ in spec.stores), "grid": grid, "time_points": time_points(grid),
        "variants": variants, "deployed": deployed,
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


def write_site(out_dir: Path, spec_paths: list[str], docs_dir: Path | None = None, jobs: int = 2,
               progress=None) -> list[Path]:
    """Write the explorer, its data files and (when given) a copy of the docs.
    progress(done, total, spec_path) is called as each export part finishes."""
    from concurrent.futures import ProcessPoolExecutor, as_completed

    from ..compiler import codegen
    from ..compiler.queries import QueryEngine
    from ..compiler.spec import load_spec

    from .output_tree import previous_files, relative_files, safe_stem, write_files

    out_dir = Path(out_dir)
    spec_paths = sorted(spec_paths)
    for path in spec_paths:
        safe_stem(path)                       # names data files and links: checked before any work
    # refused before any work: a folder specc did not make is never written into or cleaned
    previous = previous_files(out_dir, "site")
    tasks = [task for _, task in sorted(((-cost, task) for p in spec_paths for task, cost in _parts(p)),
                                        key=lambda t: t[0])]
    report = progress or (lambda done, total, path: None)
    if jobs > 1 and len(tasks) > 1:
        with ProcessPoolExecutor(jobs) as pool:
            futures = {pool.submit(export_part, task): i for i, task in enumerate(tasks)}
            done = [None] * len(tasks)
            for count, future in enumerate(as_completed(futures), 1):
                done[futures[future]] = future.result()
                report(count, len(tasks), tasks[futures[future]][0])
    else:
        done = []
        for task in tasks:
            done.append(export_part(task))
            report(len(done), len(tasks), task[0])
    exported = [join_parts([d for task, d in zip(tasks, done) if task[0] == p]) for p in spec_paths]
    files: dict = {}
    index = []
    for data in exported:
        index.append({"name": data["name"], "model": data["model"], "claims": data["summary"]})
        files[f"data/{data['name']}.js"] = _spec_js(data)
    engine = QueryEngine.shared(load_spec(spec_paths[0]))
    hardware = Path(spec_paths[0]).resolve().parent / "hardware"
    site = {"specs": index, "devices": export_devices(engine, hardware),
            "figures": [asdict(f) for f in FIGURES], "byte_units": _byte_units(),
            "deployed_figures": [asdict(f) for f in DEPLOYED], "deployment_grid": DEPLOYMENT_GRID,
            "time_figures": [asdict(f) for f in TIME_FIGURES], "max_tp_ep": MAX_TP_EP,
            # the page offers deployment controls only when some spec answers some grid point past (1, 1, 1)
            "deployment": any(i is not None for d in exported for k, i in d["deployed"].items()
                              if not k.endswith(deployment_key({k2: 1 for k2 in DEPLOYMENT_GRID}))),
            "docs": docs_dir is not None, "queries": sorted(_query_names())}
    files["data/site.js"] = "var SPECC_SITE = " + json.dumps(site, ensure_ascii=False, indent=1) + ";\n"
    files["data/exact.js"] = codegen.prelude("javascript")
    for asset in sorted(ASSETS.iterdir()):
        files[asset.name] = asset.read_bytes()
    if docs_dir is not None and Path(docs_dir).is_dir():
        from .output_tree import MANIFEST

        copied = {f"docs/{rel}": data for rel, data in relative_files(Path(docs_dir)).items()
                  if rel != MANIFEST}
        files.update(copied)
        files["reports.html"] = _reports_page(index, {rel for rel in copied})
    write_files(out_dir, files, "site", previous)
    return [out_dir / rel for rel in sorted(files)]


def _reports_page(index: list[dict], docs: set) -> str:
    """An HTML index of the copied claims reports (docs/ itself is Markdown); `docs`:
    the copied files' paths."""
    from html import escape
    from urllib.parse import quote

    from .output_tree import link

    rows = []
    for entry in index:
        counts = ", ".join(f"{n} {v}" for v, n in entry["claims"].items() if n) or "no claims"
        name = escape(entry["name"])
        href = escape(link(f"docs/{entry['name']}/report.html"))
        report = f'<a href="{href}">claims report</a>' \
            if f"docs/{entry['name']}/report.html" in docs else "no report"
        spec = escape(quote(entry["name"], safe=""))
        rows.append(f'<tr><td>{escape(entry["model"])}</td><td><a href="explorer.html?spec={spec}">{name}</a></td>'
                    f"<td>{escape(counts)}</td><td>{report}</td></tr>")
    return ('<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            '<title>specc claims reports</title><link rel="stylesheet" href="explorer.css"></head>\n<body>'
            '<header><h1>specc claims reports</h1><p class="lede">Every number the source documents print about '
            'each shipped spec, checked by <code>specc verify</code>. <a href="explorer.html">The explorer</a></p>'
            '</header>\n<div class="table-wrap"><table><thead><tr><th scope="col">Model</th><th scope="col">Explorer</th>'
            '<th scope="col">Verdicts</th><th scope="col">Report</th></tr></thead><tbody>\n'
            + "\n".join(rows) + "\n</tbody></table></div></body></html>\n")
