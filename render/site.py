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
declarations, compiler/query/query_registry.py) is what the page shows; a figure whose closed form cannot be built for a spec
(e.g. a sum over decode steps with no closed form) is exported as unavailable
with the reason, never approximated.

Capacity, fit and time are formulas printed from the engine's own code with the
device's facts as symbols (capacity_forms, compute_forms, comm_forms), and the
memory bars' sums are printed too (helper_functions): the page passes values and
does no arithmetic of its own. The format knobs weights= and kv= (KNOB_CHOICES)
are exported as variants beside the option combinations; the browser test compares
every figure with `specc eval` of the query it names."""

from __future__ import annotations

import itertools
import json
from functools import lru_cache
from dataclasses import asdict, dataclass
from pathlib import Path

from ..compiler.query.query_value import make_call
from ..dsl.search_path import device_files
from .output_tree import public_path

ASSETS = Path(__file__).with_name("site_assets")
# argument order of every exported function
SCENARIO_ARGS = ("B", "S", "P", "G", "H")
# page state keys: an option of a spec may not take one of these names in the URL
STATE_KEYS = {"spec", "device", "memory", "format", "workspace", "tp", "pp", "ep", "dp", "mfu", "mbu", "overlap",
              "weights", "kv", "compute", *SCENARIO_ARGS}
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
    """The page's figures of a group, as the query declarations list them (compiler/query/query_registry.py)."""
    from ..compiler.query.query_registry import figures

    return tuple(Figure(f.id, f.label, f.unit, name, f.args, f.formatted, f.context, f.context_offset, f.doc,
                        group == "deployed") for name, f in figures(group))


FIGURES = _figures("model")


# The deployments the page offers, as engines lay them out (compiler/deploy/sharding.py): tp·pp·dp
# devices, the routed experts spread over ep of a stage's tp·dp devices. The page offers
# every tp, dp of LAYOUT_DEGREES with tp·dp <= MAX_STAGE_DEVICES, and ep = 1 (each expert
# split over tp·dp) or ep = tp·dp (vLLM's --enable-expert-parallel: tp=8, ep=8 is 8 GPUs,
# dp=8, ep=8 is "DP attention") where tp·dp divides every routed-expert count, at every pp.
# Degrees are integers the closed forms are built for, not symbols: every per-device figure,
# capacity and time formula is exported at each offered layout (default options; other
# option combinations at one device). An impossible split (heads not divisible by tp, pp
# above the layer count) is exported as unavailable with the engine's message.
LAYOUT_DEGREES = {"tp": (1, 2, 4, 8, 16), "pp": (1, 2, 4, 8), "dp": (1, 2, 4, 8, 16)}
MAX_STAGE_DEVICES = 16
# the degrees a URL may name (ep: 1 or a tp·dp)
DEPLOYMENT_GRID = {**LAYOUT_DEGREES, "ep": (1, 2, 4, 8, 16)}
# a layout's key in the data files; degrees appear in query text in the engine's order tp, pp, ep, dp
LAYOUT_ORDER = ("tp", "pp", "dp", "ep")
DEPLOYED = _figures("deployed")
# The time figures (q_time.py's ttft, tpot, throughput, as their declarations list them): the
# page calls formulas printed from the engine's roofline rows and collectives (see time_forms).
# ttft checks P and, beside decoding requests, H + 1 (EXTRA_CONTEXT; printed by context_functions).
TIME_FIGURES = _figures("time")
# ttft's second context check (H + 1 when others decode beside it), as (arguments, offset)
EXTRA_CONTEXT = {"ttft": (("H",), 1)}
# b_max checks its H against the spec's maximum context
CAPACITY_CONTEXT = {"b_max": (("H",), 0)}


# The deployment-format knobs the page offers (compiler/deploy/schemes.py, specs/formats/schemes.yaml):
# the weight schemes checkpoints are served in (FP8 per tensor, INT8 W8A8, INT4 W4A16 in groups
# of 128 as llm-compressor ships it, MXFP4, NVFP4) and an FP8 KV cache, each alone and together.
# Their closed forms are exported for the spec's default options, every format, on one device
# and at every offered layout (KNOB_LAYOUTS); any other combination (a knob beside a non-default
# option) the page says is not exported, and specc eval answers it. compute= changes no closed
# form, only which of the device's peaks the time formulas are given (the device table's
# `peaks` and `compute_for`, asked from the engine), so every choice works everywhere.
KNOB_CHOICES = {"weights": ("fp8", "int8", "int4_sym_g128", "mxfp4", "nvfp4"), "kv": ("fp8",)}
KNOB_LAYOUTS = False


def knob_formats(spec, knobs: dict) -> list:
    """The formats a knob combination is exported for: every format without knobs, the spec's
    default format with them (the knobs replace the format's quantized tensors; exporting them
    on every format too about doubled a four-format spec's export on one device: see the README)."""
    return list(spec.formats) if not knobs else [spec.default_format]
COMPUTE_CHOICES = ("bf16", "fp16", "fp8", "int8", "fp4")


def declared(query: str) -> tuple:
    """The parameters a query declares (compiler/query/query_registry.py)."""
    from ..compiler.query.query_registry import REGISTRY

    return REGISTRY[query].names


def knob_variants(names) -> list[dict]:
    """Every combination of KNOB_CHOICES over the knobs among `names` (a query's declared
    parameters) other than none: the knob-dependent closed forms exported beside the plain ones."""
    knobs = [k for k in KNOB_CHOICES if k in names]
    combos = itertools.product(*[(None,) + KNOB_CHOICES[k] for k in knobs])
    return [{k: v for k, v in zip(knobs, combo) if v is not None} for combo in combos
            if any(v is not None for v in combo)]


def layout_key(point: dict) -> str:
    return "&".join(f"{k}={point[k]}" for k in LAYOUT_ORDER)


def stage_key(point: dict) -> str:
    """The degrees a call's roofline rows depend on (not pp: a call passes every stage in turn)."""
    return "&".join(f"{k}={point[k]}" for k in ("tp", "dp", "ep"))


TRIVIAL = {"tp": 1, "pp": 1, "dp": 1, "ep": 1}


def spec_layouts(model) -> list[dict]:
    """The layouts the page offers for a compiled model (see LAYOUT_DEGREES), one device first."""
    experts = {int(op.experts) for op in model.ops if op.experts != 1}
    out = []
    for tp in LAYOUT_DEGREES["tp"]:
        for dp in LAYOUT_DEGREES["dp"]:
            if tp * dp > MAX_STAGE_DEVICES:
                continue
            eps = [1] + ([tp * dp] if tp * dp > 1 and experts and all(n % (tp * dp) == 0 for n in experts) else [])
            out += [{"tp": tp, "pp": pp, "dp": dp, "ep": ep} for ep in eps for pp in LAYOUT_DEGREES["pp"]]
    return out


def merged_rows(rows) -> list[tuple]:
    """Roofline rows [(name, flops, bytes)] -> fewer rows [(pf, w, pb, wr)] standing for
    (w·pf, wr·pb) with the same Σ max(flops / p, bytes / q) for every p, q > 0.

    Each row is written w·(pf, r·pb) with w > 0 the positive rational content of its
    FLOPs (of its bytes when it has no FLOPs) and pf, pb primitive parts; rows with the
    same (pf, pb, r) add their w, since Σ w_i·max(x, y) = (Σ w_i)·max(x, y). Nothing else
    is merged: a sum of maxima is not the maximum of sums."""
    import sympy as sp

    groups: dict = {}
    for _, flops, nbytes in rows:
        flops, nbytes = sp.sympify(flops), sp.sympify(nbytes)
        if flops != 0:
            w, pf = _content_primitive(flops)
            cb, pb = _content_primitive(nbytes) if nbytes != 0 else (sp.Integer(0), sp.Integer(0))
            key = (pf, pb, cb / w)
        elif nbytes != 0:
            w, pb = _content_primitive(nbytes)
            key = (sp.Integer(0), pb, sp.Integer(1))
        else:
            continue
        groups[key] = groups.get(key, 0) + w
    return [(pf, w, pb, w * r) for (pf, pb, r), w in groups.items()]


@lru_cache(maxsize=16384)
def _content_primitive(expr) -> tuple:
    """(c, p) with expr = c·p, c > 0 rational, p primitive (merged_rows' split; the same FLOPs
    recur at every format and knob of a layout)."""
    c, prim = expr.as_content_primitive()
    return (-c, -prim) if c < 0 else (c, prim)


def deployment_args(point: dict) -> dict:
    """The query arguments of a layout: degrees other than 1 (engine order), and per_device=true."""
    return {**{k: point[k] for k in ("tp", "pp", "ep", "dp") if point.get(k, 1) != 1}, "per_device": "true"}


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


# ------------------------------------------------------------------ formulas with device symbols
# Every capacity and time formula the page calls takes FORMULA_ARGS: the scenario, then the
# per-device memory and workspace, the device's peak FLOP/s, memory bandwidth, mfu, mbu,
# per-direction scale-up and scale-out rates, and each collective kind's latency inside a
# node (d_lu_<kind>) and across nodes (d_lo_<kind>): the page passes the device's facts and
# does no arithmetic of its own.
def _collective_kinds():
    from ..compiler.deploy.collectives import KINDS

    return KINDS


DEVICE_ARGS = ("d_memory", "d_workspace", "d_flops", "d_bandwidth", "d_mfu", "d_mbu", "d_up", "d_out")
FORMULA_ARGS = SCENARIO_ARGS + DEVICE_ARGS + tuple(f"d_lu_{k}" for k in _collective_kinds()) \
    + tuple(f"d_lo_{k}" for k in _collective_kinds())


def _device_symbols() -> dict:
    import sympy as sp

    return {name: sp.Symbol(name) for name in FORMULA_ARGS[len(SCENARIO_ARGS):]}


def _formula_args(engine, point: dict, fmt: str | None, **extra):
    """A query's arguments for the engine's own capacity and roofline code, with the device's
    memory and workspace as symbols and unit rates (a row's seconds are then its FLOPs and bytes)."""
    import sympy as sp

    from ..compiler.query.query_base import BYTE_RATE, FLOP_RATE, Quantity, QueryArgs
    from ..dsl.units import BYTES

    d = _device_symbols()
    values = {"device": "<rates given>", "flops": Quantity(sp.Integer(1), FLOP_RATE),
              "bandwidth": Quantity(sp.Integer(1), BYTE_RATE), "memory": Quantity(d["d_memory"], BYTES),
              "workspace": Quantity(d["d_workspace"], BYTES), **{k: sp.Integer(v) for k, v in point.items()}, **extra}
    if fmt is not None:
        values["format"] = fmt
    return QueryArgs(values, None, engine, {"symbolic_ok": True})


def capacity_forms(engine, model, point: dict, fmt: str | None, knobs: dict | None = None) -> dict:
    """The capacity rules of q_capacity.py on the engine's own budget (budget: per pipeline stage,
    memory − weights − workspace with memory and workspace as symbols, and one request's state):

      b_max(H) = dp · max(0, min over stages with state of ⌊free / state(H)⌋)          (q_b_max)
      short(B, H) = ⌈max over stages of ⌈B/dp⌉·state(H) − free⌉                          (check_fit)

    a deployment fits when short <= 0 (h_max searches it); short_tpot / short_ttft are the time
    queries' fit checks (B requests at H + 1 tokens; one request joining B at max(P, H + 1)).
    Built unevaluated (sympy would compare every Max and floor of symbols); the tests compare
    them with the engine's b_max and time refusals."""
    import sympy as sp

    from ..compiler.deploy.sharding import Deployment
    from ..compiler.query.q_capacity import as_written, requests_that_fit, stage_shortfalls
    from ..compiler.schema.symbols import B, H, P

    free, per_request, _ = engine.budget(model, _formula_args(engine, point, fmt, **(knobs or {})), need_state=False)
    dep = Deployment(point["tp"], point["pp"], point["ep"], point["dp"], per_device=True)

    def short(batch, context):
        # ⌈max_i t_i⌉ = max_i ⌈t_i⌉, and printing the latter asks sympy nothing about a Max
        return as_written(sp.Max, [sp.ceiling(x, evaluate=False)
                                   for x in stage_shortfalls(free, per_request, dep.requests_per_device(batch), context)])

    out = {"short": short(B, H), "short_tpot": short(B, H + 1), "short_ttft": short(B + 1, sp.Max(P, H + 1))}
    fits = requests_that_fit(free, per_request, dep.dp, evaluate=False)
    out["b_max"] = _no_state(engine) if fits is None else fits
    return out


def _no_state(engine):
    from ..dsl.errors import SpecError

    return SpecError(f"{engine.spec.model} keeps no per-request state, so capacity has no bound", None,
                     expected="a spec that declares state stores (state: in its stack)")


TIME_STEPS = {"tpot": "a decode step of B requests at H", "ttft": "a prefill of P beside B decoding at H"}


def _steps():
    import sympy as sp

    from ..compiler.schema.symbols import B, H, P

    one, zero = sp.Integer(1), sp.Integer(0)
    return {"tpot": [(B, H, one)], "ttft": [(one, zero, P), (B, H, one)]}


def compute_forms(engine, model, point: dict, fmt: str | None, knobs: dict | None = None) -> dict:
    """Each step's Σ_ops max(FLOPs / (peak·mfu), bytes / (bandwidth·mbu)) on the busiest device
    (q_time.roofline_step's rows, merged where that keeps the sum), in the device symbols."""
    import sympy as sp

    from ..compiler.query.q_capacity import as_written

    d = _device_symbols()
    peak, rate = d["d_flops"] * d["d_mfu"], d["d_bandwidth"] * d["d_mbu"]
    out = {}
    for name, parts in _steps().items():
        rows, _, _ = engine.roofline_step(model, _formula_args(engine, point, fmt, **(knobs or {})), parts,
                                          with_comm=False)
        terms = []
        for pf, w, pb, wr in merged_rows([(r.name, r.flops, r.bytes) for r in rows]):
            f, b = w * pf / peak, wr * pb / rate
            terms.append(b if pf == 0 else f if pb == 0 else as_written(sp.Max, [f, b]))
        out[name] = sp.Add(*terms)
    return out


def comm_forms(engine, model, point: dict, gpus_per_node: int | None) -> dict:
    """Each step's collectives (q_time._comm_seconds: the parts' rows travel together, one latency
    each), as seconds in the device symbols on nodes of gpus_per_node devices, and which links
    they need ("up", "out")."""
    import dataclasses

    import sympy as sp

    from ..compiler.deploy.collectives import Links, seconds, traffic
    from ..compiler.deploy.sharding import Deployment
    from ..compiler.schema.symbols import B, P, S

    dep = Deployment(point["tp"], point["pp"], point["ep"], point["dp"], per_device=True)
    d = _device_symbols()
    kinds = _collective_kinds()
    links = Links(d["d_up"], d["d_out"], gpus_per_node, {k: d[f"d_lu_{k}"] for k in kinds},
                  {k: d[f"d_lo_{k}"] for k in kinds})
    out = {}
    for name, parts in _steps().items():
        if (dep.tp, dep.pp, dep.dp) == (1, 1, 1):
            out[name] = (sp.Integer(0), [])
            continue
        act = sp.Integer(2)
        per_part = [engine.call_collectives(model, dep, {B: b, S: s, P: p}, act, None, gpus_per_node)
                    for b, s, p in parts]
        colls = per_part[0]
        for other in per_part[1:]:
            colls = [dataclasses.replace(c, size=c.size + o.size) for c, o in zip(colls, other)]
        moved = [traffic(c, gpus_per_node, None) for c in colls]
        # which links the step uses: bytes are never negative, so a sum is zero only when each term is
        up, across = any(t[0] != 0 for t in moved), any(t[1] != 0 for t in moved)
        out[name] = (sp.Add(*[c.mult * seconds(c, links, None, t) for c, t in zip(colls, moved)]),
                     [link for link, used in (("up", up), ("out", across)) if used])
    return out


def helper_functions() -> str:
    """The two formulas that join a step's parts, printed like every other: the step's
    seconds (compute plus collectives, or the larger with overlap) and B / seconds."""
    import sympy as sp

    from ..compiler.lanes import codegen

    from ..compiler.deploy.sharding import Deployment
    from ..compiler.query.q_time import step_seconds, tokens_per_second

    c, k, ov, b, t = sp.symbols("d_compute d_comm d_overlap B d_seconds", nonnegative=True)
    step = sp.Piecewise((step_seconds(c, k, True), sp.Eq(ov, 1)), (step_seconds(c, k, False), True))
    # the memory bars (every device): the requests the most loaded device holds (q_capacity's
    # ⌈B/dp⌉), their state, what the weights, state and workspace use and what is left or missing
    dp, one, w, st, ws, mem, h, top = sp.symbols("d_dp d_one d_weights d_state d_workspace d_memory d_h d_top",
                                                 positive=True)
    used = w + st + ws
    bars = {"specc_bar_requests": (Deployment(dp=dp).requests_per_device(b), ["B", "d_dp"]),
            "specc_bar_state": (b * one, ["B", "d_one"]),
            "specc_bar_used": (used, ["d_weights", "d_state", "d_workspace"]),
            "specc_bar_free": (mem - used, ["d_memory", "d_weights", "d_state", "d_workspace"]),
            "specc_bar_short": (sp.Max(0, used - mem), ["d_memory", "d_weights", "d_state", "d_workspace"]),
            # h_max answers at most the spec's maximum context without extrapolate=true (q_capacity)
            "specc_at_most": (sp.Min(h, top), ["d_h", "d_top"])}
    return (codegen.emit(step, ["d_compute", "d_comm", "d_overlap"], "javascript", "specc_step_seconds")
            + codegen.emit(tokens_per_second(b, t), ["B", "d_seconds"], "javascript", "specc_per_second")
            + "".join(codegen.emit(expr, args, "javascript", name) for name, (expr, args) in bars.items()))


def context_functions() -> str:
    """The context each figure's query checks against max_context, as printed functions of the
    query's scenario arguments (SPECC_CONTEXT[figure id]): the sum of Figure.context plus its
    offset, and the larger of two checks for ttft (P, and H + 1 beside decoding requests)."""
    import sympy as sp

    from ..compiler.lanes import codegen
    from ..compiler.schema.symbols import SCENARIO

    def total(names, offset):
        return sp.Add(*[SCENARIO[n] for n in names]) + offset

    checks = {fig.id: [total(fig.context, fig.context_offset)] for fig in FIGURES + DEPLOYED + TIME_FIGURES
              if fig.context}
    for fid, (names, offset) in {**EXTRA_CONTEXT, **CAPACITY_CONTEXT}.items():
        checks.setdefault(fid, []).append(total(names, offset))
    lines = ["// the context each figure's query checks against the spec's maximum (render/site.py)",
             "const SPECC_CONTEXT = {};"]
    for fid, exprs in checks.items():
        expr = exprs[0] if len(exprs) == 1 else sp.Max(*exprs)
        lines.append(f"SPECC_CONTEXT[{json.dumps(fid)}] = "
                     + codegen.emit(expr, list(SCENARIO_ARGS), "javascript", f"context_{fid}").rstrip() + ";")
    return "\n".join(lines) + "\n"


def device_links(engine, name: str):
    """A device's links as the time queries read them (collectives.Links)."""
    from ..compiler.query.query_base import QueryArgs

    return engine.links_of(QueryArgs({"device": name}, None, engine, {}), name)


def export_devices(engine, files: list) -> list[dict]:
    """The device table of the device files `files` (dsl/search_path.device_files: what the
    specs can name, beside them, on the search path or shipped), each fact asked through the
    engine's device queries (links and collective latencies as the time queries read them)."""
    from ..dsl.errors import SpecError
    from ..dsl.yamlload import load_yaml_file

    devices = []
    from ..dsl.errors import Loc
    from .output_tree import safe_stem

    for path in files:
        raw = load_yaml_file(path)
        if not isinstance(raw, dict):
            raise SpecError("a device file is a mapping of facts", Loc(str(path), 1, 1),
                            expected="name:, memory:, bandwidth:, flops: ... (see specs/hardware/)")
        row = {"name": safe_stem(path), "display_name": str(raw.get("display_name", path.stem)),
               "source": str(raw.get("source", ""))}
        for field, query, extra in (("memory", "device_memory", {}), ("flops", "device_flops", {}),
                                    ("bandwidth", "device_bandwidth", {}), ("scale_up", "device_link", {}),
                                    ("scale_out", "device_link", {"link": "scale_out"})):
            try:
                call = make_call(query, {"device": path.stem, **extra})
                row[field] = str(_exact(engine.evaluate_text(call.text()).value))
            except SpecError:
                row[field] = None        # the datasheet does not give this fact
        links = device_links(engine, path.stem)
        row["gpus_per_node"] = links.gpus_per_node
        row["latency"] = {k: str(_exact(v)) for k, v in links.latency.items()}
        row["scale_out_latency"] = {k: str(_exact(v)) for k, v in (links.scale_out_latency or links.latency).items()}
        row["memory_text"] = str(raw.get("memory", ""))
        # the peak of each math type the datasheet gives (compute=), and which of them the engine
        # runs a weight scheme's math type in (its fallback where the datasheet has no such rate)
        rates = raw.get("flops") if hasattr(raw.get("flops"), "items") else {}
        row["peaks"] = {}
        for dtype in rates:
            call = make_call("device_flops", {"device": path.stem, "dtype": str(dtype)})
            row["peaks"][str(dtype)] = str(_exact(engine.evaluate_text(call.text()).value))
        row["compute_for"] = {}
        for kind, scheme in _compute_types().items():
            from ..compiler.query.query_base import QueryArgs
            from ..compiler.deploy.schemes import FormatChoice

            fmt = FormatChoice(engine.spec.default_format, weights=scheme)
            row["compute_for"][kind] = engine.compute_dtype(QueryArgs({"device": path.stem}, None, engine, {}), fmt,
                                                             path.stem)[0]
        devices.append(row)
    return devices


def node_sizes(files: list) -> list:
    """The distinct gpus_per_node of the device files (None: no node size given): collectives
    are exported once per node size, since a group that spans nodes costs differently."""
    from ..dsl.yamlload import load_yaml_file

    sizes = set()
    for path in files:
        raw = load_yaml_file(path)
        value = raw.get("gpus_per_node") if hasattr(raw, "get") else None
        sizes.add(None if value is None else int(value))
    return sorted(sizes, key=lambda v: (v is not None, v or 0)) or [None]


def node_key(gpus_per_node) -> str:
    return "none" if gpus_per_node is None else str(gpus_per_node)


class _Exported:
    """What one spec's data file accumulates: JavaScript functions (one per distinct
    closed form) and why a figure is unavailable (each distinct message once)."""

    def __init__(self):
        self.functions: list[str] = []
        self._source_index: dict[str, int] = {}
        self._printed: dict = {}      # closed form -> function index: options often leave a figure unchanged
        self.messages: list[str] = []
        self.unavailable: dict[str, int] = {}

    def function_of(self, expr, args=SCENARIO_ARGS, shared=None) -> int:
        from ..compiler.lanes import codegen

        if (expr, args) not in self._printed:
            source = codegen.emit(expr, list(args), "javascript", shared=shared)
            if source not in self._source_index:
                self._source_index[source] = len(self.functions)
                self.functions.append(source)
            self._printed[(expr, args)] = self._source_index[source]
        return self._printed[(expr, args)]

    def formula_of(self, expr) -> int:
        # printed without shared sub-expressions: sympy's cse re-evaluates every Max it rebuilds,
        # which costs seconds per formula, and these are called once per figure
        return self.function_of(expr, FORMULA_ARGS, shared=False)

    def why(self, key: str, exc: Exception | str) -> None:
        import re

        # a spec's location as the published site shows it (never the build machine's absolute path)
        message = re.sub(r"(?<![^\s'\"(])/[^\s:'\"]+\.ya?ml", lambda m: public_path(m.group(0)), str(exc).splitlines()[0])[:300]
        if message not in self.messages:
            self.messages.append(message)
        self.unavailable[key] = self.messages.index(message)

    def plain(self) -> dict:
        """What absorb reads, as plain data (a cache entry: render/site_cache.py)."""
        return {"functions": self.functions, "messages": self.messages, "unavailable": self.unavailable}

    @classmethod
    def from_plain(cls, value: dict) -> "_Exported":
        out = cls()
        for source in value["functions"]:
            out._source_index.setdefault(source, len(out.functions))
            out.functions.append(source)
        out.messages, out.unavailable = list(value["messages"]), dict(value["unavailable"])
        return out

    def absorb(self, other: "_Exported") -> list:
        """Take another part's functions and reasons; returns how its function indices map to this one's."""
        fmap = []
        for source in other.functions:
            if source not in self._source_index:
                self._source_index[source] = len(self.functions)
                self.functions.append(source)
            fmap.append(self._source_index[source])
        for key, i in other.unavailable.items():
            self.why(key, other.messages[i])
        return fmap


def _unavailable_errors():
    from ..compiler.lanes.codegen import CodegenError
    from ..compiler.schema.patterns import NoClosedForm
    from ..dsl.errors import SpecError

    return (NoClosedForm, SpecError, CodegenError, ValueError)


def _symbolic(engine, text: str):
    import sympy as sp

    return sp.sympify(engine.evaluate_text(text, "<site>", symbolic_ok=True).value)


def _layout_forms(engine, spec, choices: dict, points: list[dict], sizes: list, out: _Exported) -> tuple[dict, dict]:
    """The capacity and time formulas of one option combination at each layout of `points`,
    for every format: {slot: function index or None}, and the links each collective formula
    needs. Slots: "<variant>#b_max|<format>|<layout>" (likewise short, short_tpot, short_ttft),
    "<variant>#compute_<step>|<format>|<tp, dp, ep>" and "<variant>#comm_<step>|<layout>|<node size>"."""
    errors = _unavailable_errors()
    model = engine.model(dict(choices))
    vkey = variant_key(choices)
    forms, needs = {}, {}

    def put(slot, make):
        try:
            forms[slot] = out.formula_of(make())
        except errors as exc:
            forms[slot] = None
            out.why(slot, exc)

    done_stages = set()
    # the knobs' variants (KNOB_CHOICES) beside the default options: b_max, the fit rules and the
    # compute of a step change with weights= and kv=; collectives do not
    knobbed = [{}] + (knob_variants(declared("b_max")) if choices == _variants(spec)[0] else [])
    for point in points:
        lkey = layout_key(point)
        pairs = [(knobs, fmt) for knobs in (knobbed if point == TRIVIAL or KNOB_LAYOUTS else [{}])
                 for fmt in knob_formats(spec, knobs)]
        for knobs, fmt in pairs:
            kkey = variant_key({**choices, **knobs})
            try:
                cap = capacity_forms(engine, model, point, fmt, knobs)
            except errors as exc:
                cap = exc
            for what in ("short", "short_tpot", "short_ttft", "b_max"):
                made = cap if isinstance(cap, Exception) else cap[what]
                put(f"{kkey}#{what}|{fmt}|{lkey}", lambda: _raise(made) if isinstance(made, Exception) else made)
            if (stage_key(point), fmt, kkey) not in done_stages:
                done_stages.add((stage_key(point), fmt, kkey))
                try:
                    compute = compute_forms(engine, model, point, fmt, knobs)
                except errors as exc:
                    compute = exc
                for step in _steps():
                    put(f"{kkey}#compute_{step}|{fmt}|{stage_key(point)}",
                        lambda: _raise(compute) if isinstance(compute, Exception) else compute[step])
        alone = None          # on nodes at least as large as the deployment no group spans nodes
        for size in sizes:
            if alone is not None and size is not None and size >= point["tp"] * point["pp"] * point["dp"]:
                comm = alone
            else:
                try:
                    comm = comm_forms(engine, model, point, size)
                except errors as exc:
                    comm = exc
            if size is None:
                alone = comm
            for step in _steps():
                slot = f"{vkey}#comm_{step}|{lkey}|{node_key(size)}"
                put(slot, lambda: _raise(comm) if isinstance(comm, Exception) else comm[step][0])
                if not isinstance(comm, Exception) and comm[step][1]:
                    needs[slot] = ",".join(comm[step][1])
    return forms, needs


def _raise(exc):
    raise exc


def _parts(path: str) -> list:
    """The export of one spec in independent pieces (so that worker processes share a
    big spec): "base", then the default options' layouts one tp at a time."""
    from ..compiler.query.queries import QueryEngine
    from ..compiler.schema.spec import load_spec

    spec = load_spec(path)
    model = QueryEngine.shared(spec).model({})
    layouts = spec_layouts(model)
    # a rough cost (ops times the formulas of the part), so the workers start with the longest
    cost = len(model.ops) * len(spec.formats)
    return [((path, "base"), cost * 4)] + [((path, tp), cost * sum(1 for p in layouts if p["tp"] == tp))
                                           for tp in LAYOUT_DEGREES["tp"] if any(p["tp"] == tp for p in layouts)]


def export_part(task) -> dict:
    """One piece of a spec's export (see _parts); export_spec joins them."""
    path, part = task
    from ..compiler.query.queries import QueryEngine
    from ..compiler.schema.spec import load_spec

    spec = load_spec(path)
    engine = QueryEngine.shared(spec)
    all_variants = _variants(spec)
    layouts = spec_layouts(engine.model({}))
    sizes = node_sizes(device_files(path))
    out = _Exported()
    if part == "base":
        data = _export_base(path, spec, engine, all_variants, layouts, out)
        data["forms"], data["needs"] = {}, {}
        for choices in all_variants:          # every option combination on one device
            forms, needs = _layout_forms(engine, spec, choices, [TRIVIAL], sizes, out)
            data["forms"].update(forms)
            data["needs"].update(needs)
        data["deployed"] = {}
    else:
        points = [p for p in layouts if p["tp"] == part and p != TRIVIAL]
        data = {}
        data["forms"], data["needs"] = _layout_forms(engine, spec, all_variants[0], points, sizes, out)
        data["deployed"] = _deployed(engine, spec, all_variants[0], points, out)
    data["_out"] = out
    return data


def join_parts(parts: list[dict]) -> dict:
    """The parts of one spec's export as one data dict (functions renumbered)."""
    out = _Exported()
    data = None
    for part in sorted(parts, key=lambda part: "name" not in part):      # the base part first
        fmap = out.absorb(part.pop("_out"))
        remap = lambda table: {slot: None if i is None else fmap[i] for slot, i in table.items()}  # noqa: E731
        if "variants" in part:
            part["variants"] = {k: remap(table) for k, table in part["variants"].items()}
        if data is None:
            data = {**part, "forms": {}, "needs": {}, "deployed": {}}
        data["forms"].update(remap(part["forms"]))
        data["needs"].update(part["needs"])
        data["deployed"].update(remap(part["deployed"]))
    data.update(unavailable=out.unavailable, messages=out.messages, functions=out.functions)
    return data


def _cached_parts(path: str, key: str | None) -> list:
    """_parts(path), from the cache while the spec and every file it read are unchanged."""
    from . import site_cache

    name = None if key is None else site_cache.name(key, "parts")
    found = None if name is None else site_cache.load(name, "parts")
    if found is not None:
        return [((path, part), cost) for part, cost in found]
    parts = _parts(path)
    if name is not None:
        site_cache.store(name, "parts", site_cache.dependencies(path), [[task[1], cost] for task, cost in parts])
    return parts


def export_part_cached(job) -> tuple:
    """export_part(task) as plain data (what join_parts reads: a worker hands back no sympy
    expression, which unpickling would rebuild, proofs and all, one part at a time in the
    parent), stored under the entry name `name` (None: not cached); (plain, seconds, the
    files it read or None). with_deps: return the files it read even when not stored."""
    import time

    from . import site_cache

    task, name, with_deps = job
    start = time.perf_counter()
    data = export_part(task)
    plain = {"data": {k: v for k, v in data.items() if k != "_out"}, "out": data["_out"].plain()}
    deps = site_cache.dependencies(task[0]) if name is not None or with_deps else None
    if name is not None:
        site_cache.store(name, "part", deps, plain)
    return plain, time.perf_counter() - start, deps if with_deps else None


def _from_plain(plain: dict) -> dict:
    return {**plain["data"], "_out": _Exported.from_plain(plain["out"])}


def export_parts(spec_paths: list[str], jobs: int = 2, progress=None, cached: bool = True,
                 record: dict | None = None) -> list:
    """[(task, data)] for every part of every spec, the longest first (the order join_parts
    numbers functions in): parts cached by content (render/site_cache.py) or shipped with the
    package (render/shipped_site.py) are read, the others exported on `jobs` worker processes
    and stored. cached=False reads and stores nothing; `record` then receives {task: (plain
    data, files read, cost)} of each part (what render/shipped_site.py ships). progress(event,
    **facts) hears "spec" (done, total, path) as each spec's parts are known, "planned"
    (specs, parts, cached, shipped, to_export, jobs), then "part" (done, total, path, part,
    seconds) as each exported part finishes."""
    from concurrent.futures import ProcessPoolExecutor, as_completed

    from . import shipped_site, site_cache

    report = progress or (lambda event, **facts: None)
    sizes = {path: node_sizes(device_files(path)) for path in spec_paths}
    keys, costed, shipped = {}, [], {}
    for count, path in enumerate(spec_paths, 1):
        keys[path] = site_cache.spec_key(path, public_path(path)) if cached else None
        found = shipped_site.load(path, public_path(path), sizes[path]) if cached else None
        if found is not None:
            shipped[path] = {part: plain for part, (plain, _) in found.items()}
            costed += [((path, part), cost) for part, (_, cost) in found.items()]
        else:
            costed += _cached_parts(path, keys[path])
        report("spec", done=count, total=len(spec_paths), path=path)
    costs = dict(costed)
    tasks = [task for _, task in sorted(((-cost, task) for task, cost in costed), key=lambda t: t[0])]
    names, done = [], []
    for path, part in tasks:
        name = None if keys[path] is None else site_cache.name(keys[path], "part", part, sizes[path])
        found = shipped[path][part] if path in shipped else None if name is None else site_cache.load(name, "part")
        names.append(name)
        done.append(None if found is None else _from_plain(found))
    todo = [i for i, data in enumerate(done) if data is None]
    workers = max(1, min(jobs, len(todo)))
    from_package = sum(1 for path, _ in tasks if path in shipped)
    report("planned", specs=len(spec_paths), parts=len(tasks), cached=len(tasks) - len(todo) - from_package,
           shipped=from_package, to_export=len(todo), jobs=workers)

    def finished(count, i, plain, seconds, deps):
        done[i] = _from_plain(plain)
        if record is not None:
            record[tasks[i]] = (plain, deps, costs[tasks[i]])
        report("part", done=count, total=len(todo), path=tasks[i][0], part=tasks[i][1], seconds=seconds)

    jobs_of = {i: (tasks[i], names[i], record is not None) for i in todo}
    if workers > 1:
        with ProcessPoolExecutor(workers) as pool:
            futures = {pool.submit(export_part_cached, jobs_of[i]): i for i in todo}
            for count, future in enumerate(as_completed(futures), 1):
                finished(count, futures[future], *future.result())
    else:
        for count, i in enumerate(todo, 1):
            finished(count, i, *export_part_cached(jobs_of[i]))
    return list(zip(tasks, done))


def export_spec(path: str) -> dict:
    """Everything the page needs about one spec."""
    return join_parts([export_part(task) for task, _ in _parts(path)])


def _deployed(engine, spec, choices, points, out: _Exported) -> dict:
    """The per-device figures (DEPLOYED) at each layout of `points`."""
    errors = _unavailable_errors()
    deployed = {}
    vkey = variant_key(choices)
    for point in points:
        for fig in DEPLOYED:
            # the knobs' variants (KNOB_LAYOUTS) are slots "<knobs>#<figure>|<format>|<layout>"
            knobbed = [{}] + (knob_variants(declared(fig.query)) if KNOB_LAYOUTS else [])
            for knobs, fmt in [(k, f) for k in knobbed for f in (knob_formats(spec, k) if fig.formatted else [None])]:
                extra = {**deployment_args(point), **({"format": fmt} if fmt else {}), **knobs}
                slot = f"{fig.id}|{fmt}|{layout_key(point)}" if fmt else f"{fig.id}|{layout_key(point)}"
                slot = f"{variant_key(knobs)}#{slot}" if knobs else slot
                try:
                    deployed[slot] = out.function_of(_symbolic(engine, query_text(fig, None, extra)))
                except errors as exc:
                    deployed[slot] = None
                    out.why(f"{vkey}#{slot}", exc)
    return deployed


def _export_base(path, spec, engine, all_variants, layouts, out: _Exported) -> dict:
    """The figures of every option combination and the claims."""
    from ..verify.claims import verify_spec
    from ..verify.output import as_json

    for name in spec.options:
        if name in STATE_KEYS:
            raise ValueError(f"{path}: option '{name}' would collide with the page state key of that name")
    errors = _unavailable_errors()
    variants = {}
    def export_figure(table, key, fig, formats, choices, knobs=None):
        """fig's closed form under the options `choices` and `knobs`, at each format of
        `formats` (when it takes one), into table[slot]."""
        for fmt in (formats if fig.formatted else [None]):
            extra = {**choices, **({"format": fmt} if fmt is not None else {}), **(knobs or {})}
            slot = fig.id if fmt is None else f"{fig.id}|{fmt}"
            try:
                table[slot] = out.function_of(_symbolic(engine, query_text(fig, None, extra)))
            except errors as exc:
                table[slot] = None
                out.why(f"{key}#{slot}", exc)

    for choices in all_variants:
        key = variant_key(choices)
        table = {}
        for fig in FIGURES:
            export_figure(table, key, fig, spec.formats, dict(choices))
        variants[key] = table
    # the knob-dependent figures under the knobs (KNOB_CHOICES) at the default options: a table
    # per combination of the knobs some figure declares, holding only the figures that take them
    for fig in FIGURES:
        for knobs in knob_variants(declared(fig.query)):
            key = variant_key({**all_variants[0], **knobs})
            export_figure(variants.setdefault(key, {}), key, fig, knob_formats(spec, knobs), all_variants[0], knobs)
    model = engine.model({})
    results = verify_spec(spec)
    claims = json.loads(as_json(results))
    from ..verify import sources as S

    for record, result in zip(claims["claims"], results):      # the page shows sources and quotes in English
        record["spec"] = public_path(record["spec"])
        record["source_name"], record["gloss"] = S.source_name(result.claim.source), S.gloss(result.claim)
    return {
        "name": Path(path).stem, "model": spec.model, "path": public_path(path),
        "max_context": None if model.max_context is None else int(model.max_context),
        "options": [{"name": n, "default": o.default, "choices": list(o.choices), "doc": o.doc or ""}
                    for n, o in spec.options.items()],
        "formats": [{"name": f, "default": f == spec.default_format, "doc": getattr(spec.formats[f], "doc", "") or "",
                     **_format_schemes(spec.formats[f])} for f in spec.formats],
        "has_state": any(True for _ in spec.stores), "layouts": [layout_key(p) for p in layouts],
        "variants": variants, "claims": claims["claims"], "summary": claims["summary"],
    }


def _format_schemes(fdef) -> dict:
    """The weight and KV schemes a spec format names itself (scheme:, kv:), and the weight scheme's
    math type: the page's time figures follow it as the engine does when no knob overrides it."""
    from ..compiler.deploy.schemes import weight_scheme

    scheme = getattr(fdef, "scheme", None)
    return {"scheme": None if scheme is None else str(scheme), "kv": getattr(fdef, "kv", None) and str(fdef.kv),
            "scheme_compute": None if scheme is None else weight_scheme(str(scheme), None).compute}


def knob_table() -> dict:
    """The knobs the page offers (KNOB_CHOICES, COMPUTE_CHOICES) with each scheme's doc and, for
    weights, the math type a time query follows by default (schemes.yaml's compute:)."""
    from ..compiler.deploy.schemes import kv_scheme, weight_scheme

    return {"weights": [{"name": n, "compute": weight_scheme(n, None).compute, "doc": weight_scheme(n, None).doc}
                        for n in KNOB_CHOICES.get("weights", ())],
            "kv": [{"name": n, "doc": kv_scheme(n, None).doc} for n in KNOB_CHOICES.get("kv", ())],
            "compute": list(COMPUTE_CHOICES)}


def _compute_types() -> dict:
    """One weight scheme of each math type the schemes table names (type -> scheme)."""
    from ..compiler.deploy.schemes import table

    found = {}
    for scheme in table()[0].values():
        found.setdefault(scheme.compute, scheme)
    return found


def _spec_js(data: dict) -> str:
    """A data file the page loads with a <script> tag: the closed forms as real
    JavaScript functions (nothing is eval-ed in the page), the rest as JSON."""
    functions = data.pop("functions")
    body = ",\n".join(src.rstrip() for src in functions)
    return f"SPECC.register({json.dumps(data, ensure_ascii=False, sort_keys=True)},\n[\n{body}\n]);\n"


def _query_names() -> set:
    """The engine's query names: the page shows a derived figure (h_max) only when
    the engine can answer its query, so the figure's data-query always evaluates."""
    from ..compiler.query.queries import QUERIES

    return set(QUERIES)


def _byte_units() -> dict:
    """The byte unit words of dsl/units.py (exact factors), for the page's memory and workspace fields."""
    from ..dsl.units import BYTES, UNITS

    return {word: str(factor) for word, (factor, dims) in UNITS.items() if dims == BYTES}


def write_site(out_dir: Path, spec_paths: list[str], docs_dir: Path | None = None, jobs: int = 2,
               progress=None, plan: bool = False) -> list[Path]:
    """Write the explorer, its data files and (when given) a copy of the docs; with `plan`,
    the plan view's data too (render/plan_site.py). progress(event, **facts): see export_parts."""
    from ..compiler.lanes import codegen
    from ..compiler.query.queries import QueryEngine
    from ..compiler.schema.spec import load_spec

    from .output_tree import previous_files, relative_files, safe_stem, write_files

    out_dir = Path(out_dir)
    spec_paths = sorted(spec_paths)
    for path in spec_paths:
        safe_stem(path)                       # names data files and links: checked before any work
    # refused before any work: a folder specc did not make is never written into or cleaned
    previous = previous_files(out_dir, "site")
    done = export_parts(spec_paths, jobs, progress)
    exported = [join_parts([data for task, data in done if task[0] == p]) for p in spec_paths]
    files: dict = {}
    index = []
    for data in exported:
        index.append({"name": data["name"], "model": data["model"], "claims": data["summary"]})
        files[f"data/{data['name']}.js"] = _spec_js(data)
    engine = QueryEngine.shared(load_spec(spec_paths[0]))
    site = {"specs": index, "devices": export_devices(engine, device_files(spec_paths[0])),
            "figures": [asdict(f) for f in FIGURES], "byte_units": _byte_units(),
            "deployed_figures": [asdict(f) for f in DEPLOYED], "deployment_grid": DEPLOYMENT_GRID,
            "time_figures": [asdict(f) for f in TIME_FIGURES],
            "formula_args": list(FORMULA_ARGS), "collective_kinds": list(_collective_kinds()),
            "max_stage_devices": MAX_STAGE_DEVICES, "knobs": knob_table(),
            # the parameters of the queries the page shows: a knob appears in a query that declares it
            "query_params": {q: list(declared(q)) for q in sorted({f.query for f in FIGURES + DEPLOYED + TIME_FIGURES}
                                                                  | {"b_max", "h_max"})},
            # the page offers deployment controls only when some spec answers some layout past one device
            "deployment": any(i is not None for d in exported for i in d["deployed"].values()),
            "docs": docs_dir is not None, "queries": sorted(_query_names())}
    files["data/site.js"] = "var SPECC_SITE = " + json.dumps(site, ensure_ascii=False, indent=1) + ";\n"
    files["data/exact.js"] = codegen.prelude("javascript") + helper_functions() + context_functions()
    if plan:
        from .plan_site import plan_files

        files.update(plan_files(spec_paths, jobs))
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
