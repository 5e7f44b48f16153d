"""The one declaration of every query: its name, family, typed parameters, result
unit and how the rest of specc shows it.

Plain data only. This module imports nothing but the standard library (no sympy,
lark, yaml or networkx), so `specc eval --help`, the README's query table, the
Python API's keyword methods (real signatures and docstrings), the "unknown
argument" check, the fact-check classification of claims, the report's closed
forms, the compare table's default columns, the plots and the explorer's figure
list are all generated from it without loading the engine.

A query is this declaration plus one function: the method `q_<name>` of the
query-family module named by its family (compiler/q_<family>.py, training.py for
`training`); QueryEngine checks at import time that the two agree, and the
engine refuses to read a parameter a query does not declare (an engine bug, not a
user error).

Every query also takes, without declaring them: `spec=NAME` (ask a sibling spec),
`<option>=CHOICE` (one of the spec's options), `DIM=N` (a what-if variant with a
dimension changed) and `extrapolate=true` (answer beyond the spec's max_context by
formula, flagged)."""

from __future__ import annotations

from dataclasses import dataclass

from .query_value import SCENARIO_NAMES  # noqa: F401  (the scenario symbols, re-exported)

REQUIRED = "<required>"      # a parameter's default when the query needs it

# kind -> what a value of that kind is (the help text says it once)
KINDS = {
    "scenario": "a non-negative integer scenario value (a bare symbol with --symbolic)",
    "count": "a positive integer",
    "number": "an exact number",
    "quantity": "a number with a unit, e.g. 2 GiB",
    "fraction": "an efficiency estimate in (0, 1], e.g. 0.5",
    "flag": "true or false",
    "choice": "one of the listed names",
    "name": "a name (a format, a device, a store, an op, ...)",
}
# accepted by every query (see the module doc); a spec dimension of these names cannot be overridden
UNIVERSAL = ("spec", "extrapolate")


@dataclass(frozen=True)
class Param:
    """One parameter of a query. default: REQUIRED, None (absent: the query's own
    default, said in doc) or the value as users write it (int or name)."""
    name: str
    kind: str
    default: object = None
    unit: str = ""
    doc: str = ""
    choices: tuple = ()
    positional: bool = False     # dim(NAME), dtype_bytes(NAME): the one bare argument

    def __post_init__(self):
        assert self.kind in KINDS, (self.name, self.kind)

    @property
    def required(self) -> bool:
        return self.default == REQUIRED

    def __str__(self) -> str:
        """As the signature shows it: P (required), B=1 (a default), format= (optional)."""
        if self.positional or self.required:
            return self.name
        if self.default is None:
            return f"{self.name}=" + ("|".join(self.choices) if self.choices else "")
        return f"{self.name}={self.default}"


@dataclass(frozen=True)
class Figure:
    """One figure of the explorer (render/site.py): `query(args)` with args bound to page
    state. args: (query argument, page-state variable or integer literal) pairs, e.g.
    ("S", "H") asks flops at S = the page's H. context: the query arguments whose sum
    (plus context_offset) the engine checks against max_context. group: "model" (one
    device, every option), "deployed" (per device at each deployment point) or "time"
    (roofline figures). order: the figure's place in its group on the page."""
    id: str
    label: str
    unit: str                # "bytes", "FLOPs", "parameters", "bytes per token", "requests"
    args: tuple = ()
    formatted: bool = False  # takes format=
    context: tuple = ()
    context_offset: int = 0
    doc: str = ""
    group: str = "model"
    order: int = 0


@dataclass(frozen=True)
class Column:
    """A default column of `specc table --kind compare`: the query at args, shown in unit."""
    label: str
    args: tuple              # (name, value) pairs
    unit: str
    digits: int = 3


@dataclass(frozen=True)
class Query:
    name: str
    family: str
    params: tuple
    unit: str                # exactly as results print it (a test evaluates every query and compares)
    doc: str
    reads_model: bool = True     # False: a look-up in a table of the tool (devices, storage types)
    closed_form: tuple = ()      # scenario parameters the report prints its closed form in
    figures: tuple = ()          # Figure, on the explorer
    columns: tuple = ()          # Column, the compare table's defaults
    plot: int = 0                # > 0: `specc plot` draws it (its place in the list)
    plot_on_request: bool = False    # drawn only when asked (not in the docs' charts)
    example: tuple = ()          # (name, value) pairs of a call the tests evaluate

    @property
    def special(self) -> bool:
        """dim(NAME), dtype_bytes(NAME): answered by the evaluator itself."""
        return any(p.positional for p in self.params)

    @property
    def signature(self) -> str:
        return f"{self.name}({', '.join(str(p) for p in self.params)})"

    def param(self, name: str) -> Param | None:
        return next((p for p in self.params if p.name == name), None)

    @property
    def names(self) -> tuple:
        """Every keyword this query declares."""
        return tuple(p.name for p in self.params if not p.positional)

    def __str__(self) -> str:
        return f"{self.signature} — {self.doc}"


# ------------------------------------------------------------------ shared parameters
def _scenario(name, default, doc):
    return Param(name, "scenario", default, "tokens" if name in "SPGH" else "requests", doc)


B1 = _scenario("B", 1, "requests in the batch")
S0 = _scenario("S", 0, "tokens already cached before the call")
P_ = _scenario("P", REQUIRED, "new tokens of the call")
G_ = _scenario("G", REQUIRED, "tokens generated (the prefill's first and G−1 decode steps)")
H_ = _scenario("H", REQUIRED, "context length (tokens held)")
FORMAT = Param("format", "name", doc="storage format of the spec (default: its first)")
FILTERS = (Param("stage", "name", doc="only ops of this stage"),
           Param("component", "name", doc="only ops of this component"),
           Param("op", "name", doc="only ops whose path contains this name"),
           Param("layer", "count", doc="only this layer index (one instance)"),
           Param("group", "name", doc="only weights of this parameter group"))
TP = Param("tp", "count", 1, doc="tensor-parallel degree")
PP = Param("pp", "count", 1, doc="pipeline-parallel degree")
EP = Param("ep", "count", 1, doc="ranks the routed experts are spread over (divides tp·dp; the rest of tp·dp/ep "
                                  "splits each expert)")
DP = Param("dp", "count", 1, doc="data-parallel degree (each dp rank serves its own requests: DP attention)")
PER_DEVICE = Param("per_device", "flag", "false", doc="the most loaded device's share instead of the whole")
PER_DEVICE_ALWAYS = Param("per_device", "flag", "false", doc="ignored: the answer is per device already")
DEPLOY = (TP, PP, EP, DP, PER_DEVICE)
DEVICE = Param("device", "name", REQUIRED, doc="a device file of specs/hardware/ (or beside the spec)")
MEMORY = Param("memory", "quantity", unit="bytes", doc="a document's device memory instead of the datasheet's")
WORKSPACE = Param("workspace", "quantity", "0 B", "bytes", "memory per device kept for activations and buffers")
BLOCK = Param("block", "count", doc="paged allocation: entries round up to whole blocks of this many")
ACT_BYTES = Param("act_bytes", "number", 2, "bytes", "bytes per activation element (2 BF16, 1 FP8)")
STORE = Param("component", "name", doc="only this state store or store tag")
# deployment formats as knobs (specs/formats/schemes.yaml, compiler/deploy/schemes.py)
WEIGHTS = Param("weights", "name", doc="a weight scheme of specs/formats/schemes.yaml (fp8, fp8_block128, int8, "
                                       "int4_g128, mxfp4, nvfp4, ...), overriding the format's")
KV = Param("kv", "name", doc="a KV-cache scheme (fp8, fp8_e5m2, int8, fp8_ds_mla), overriding the format's")
COMPUTE = Param("compute", "name", doc="the math type of the peak rate (default: the weight scheme's, else bf16)")
# vLLM's paged pool (compiler/query/allocator.py)
ALLOCATOR = Param("allocator", "choice", choices=("vllm",),
                  doc="vllm: vLLM's paged KV pool (block size, null block, sliding-window reservation, hybrid pages)")
KV_MEMORY = Param("kv_memory", "quantity", unit="bytes",
                  doc="the state budget per device (vLLM's --kv-cache-memory-bytes) instead of memory less weights")
IN_FLIGHT = Param("max_num_batched_tokens", "count", 8192, "tokens",
                  doc="tokens in flight a sliding-window layer reserves for (allocator=vllm; vLLM's default)")
POOL = (ALLOCATOR, KV_MEMORY, IN_FLIGHT)
TIME = (DEVICE, Param("dtype", "name", doc="the data type of the peak rate (default bf16, else fp16)"), COMPUTE,
        FORMAT, WEIGHTS, KV, TP, PP, EP, DP, PER_DEVICE_ALWAYS,
        Param("mfu", "fraction", 1, doc="fraction of the peak FLOP/s reached"),
        Param("mbu", "fraction", 1, doc="fraction of the memory bandwidth reached"),
        Param("efficiency", "choice", "peak", choices=("peak", "measured"),
              doc="the datasheet's peak rates, or the device file's measured ones (cited there)"),
        Param("overlap", "flag", "false", doc="communication overlaps compute (max instead of sum)"),
        Param("activations", "flag", "false", doc="count each op's input and output tensors as traffic"),
        ACT_BYTES,
        Param("flops", "quantity", unit="FLOPs/s", doc="a document's peak FLOP/s instead of the datasheet's"),
        Param("bandwidth", "quantity", unit="bytes/s", doc="a document's memory bandwidth instead of the datasheet's"),
        Param("link_bandwidth", "quantity", unit="bytes/s",
              doc="a document's per-direction scale-up link bandwidth instead of the datasheet's"),
        Param("scale_out_bandwidth", "quantity", unit="bytes/s",
              doc="a per-direction scale-out (NIC) bandwidth per GPU instead of the device file's"),
        Param("latency", "quantity", unit="s", doc="every collective's fixed cost instead of the device file's"),
        MEMORY, WORKSPACE,
        Param("ignore_fit", "flag", "false", doc="time a deployment whose memory does not fit anyway"))
NAME = Param("NAME", "name", REQUIRED, positional=True)


def _fig(id, label, unit, args=(), formatted=False, context=(), offset=0, doc="", group="model", order=0):
    return Figure(id, label, unit, args, formatted, context, offset, doc, group, order)


# ------------------------------------------------------------------ the declarations
# Families are also the module names; their order is the order of the README table and of `eval --help`.
QUERY_LIST = (
    # ---------------------------------------------------------------- memory
    Query("params", "memory", (FILTERS[4], FILTERS[2], FILTERS[3], FILTERS[0], FILTERS[1], *DEPLOY), "params",
          "parameter count (groups: embedding_head, attention_projection, dense_shared_ffn, routed_experts, "
          "engram, other)",
          figures=(_fig("params", "Parameters", "parameters", doc="every stored parameter", order=0),),
          columns=(Column("Params (billion)", (), "billion params", 2),)),
    Query("active_params", "memory", (), "params",
          "parameters one token uses: all weights, but of routed experts only the top-k of E one token reaches"),
    Query("weight_bytes", "memory", (FORMAT, WEIGHTS, Param("group", "name", doc="only weights of this parameter group"),
                                     *DEPLOY), "B",
          "bytes of stored weights in a storage format",
          figures=(_fig("weight_bytes", "Weights", "bytes", formatted=True, doc="bytes of stored weights", order=1),
                   _fig("weights_device", "Weights per device", "bytes", formatted=True, group="deployed", order=0,
                        doc="the most loaded device's weights")),
          columns=(Column("Weights (GB, default format)", (), "GB", 2),)),
    Query("weight_read_bytes", "memory", (B1, FORMAT, WEIGHTS, *DEPLOY), "B",
          "weight bytes one decode step reads (only the experts B rows can touch; lookup tables excluded)",
          example=(("B", 4),)),
    # ---------------------------------------------------------------- compute
    Query("flops", "compute", (B1, S0, P_, *FILTERS), "FLOPs", "matrix FLOPs of one call",
          closed_form=("B", "S", "P"),
          figures=(_fig("prefill_flops", "Prefill FLOPs", "FLOPs", (("B", "B"), ("S", "S"), ("P", "P")), False,
                        ("S", "P"), doc="matrix FLOPs of one call adding P tokens to S cached ones, for B requests",
                        order=5),
                   _fig("decode_flops", "Decode step FLOPs", "FLOPs", (("B", "B"), ("S", "H"), ("P", 1)), False,
                        ("S", "P"), doc="matrix FLOPs of one decode step with H cached tokens", order=6)),
          columns=(Column("Prefill 8K (TFLOPs)", (("B", 1), ("S", 0), ("P", 8192)), "TFLOPs", 2),
                   Column("Decode at 8K (GFLOPs)", (("B", 1), ("S", 8192), ("P", 1)), "GFLOPs", 2)),
          plot=2, example=(("P", 128),)),
    Query("scalar_work", "compute", (B1, S0, P_, *FILTERS), "FLOPs", "declared non-matrix work of one call",
          closed_form=("B", "S", "P"), example=(("P", 128),)),
    Query("request_flops", "compute", (B1, S0, P_, G_, *FILTERS), "FLOPs",
          "prefill plus G−1 decode calls, summed in closed form",
          figures=(_fig("request_flops", "Request FLOPs", "FLOPs", (("B", "B"), ("S", "S"), ("P", "P"), ("G", "G")),
                        False, ("S", "P", "G"), -1, doc="the prefill call plus its G−1 decode steps", order=7),),
          columns=(Column("Request 128+4 (TFLOPs)", (("B", 1), ("S", 0), ("P", 128), ("G", 4)), "TFLOPs", 2),),
          example=(("P", 128), ("G", 4))),
    Query("pairs", "compute", (B1, S0, P_), "", "valid causal query–key pairs of a call",
          closed_form=("B", "S", "P"), example=(("P", 128),)),
    Query("rows", "compute", (B1, S0, P_, *FILTERS), "",
          "rows (positions × requests) an op processes in one call (op= required)",
          example=(("P", 128), ("op", "q"))),
    # ---------------------------------------------------------------- state
    Query("kv_bytes_per_token", "state", (FORMAT, KV, STORE, *DEPLOY), "bytes/token",
          "average growth of the kv-tagged state per token",
          figures=(_fig("kv_bytes_per_token", "State growth per token", "bytes per token", formatted=True,
                        doc="average context-state bytes added per token", order=2),)),
    Query("state_bytes", "state", (H_, B1, FORMAT, KV, STORE, ALLOCATOR, BLOCK, IN_FLIGHT, *DEPLOY), "B",
          "resident state at context length H (allocator=vllm: the pool pages vLLM holds for it)",
          closed_form=("B", "H"),
          figures=(_fig("state_request", "State per request", "bytes", (("H", "H"),), True, ("H",),
                        doc="resident state of one request at context H", order=3),
                   _fig("state_batch", "State of the batch", "bytes", (("H", "H"), ("B", "B")), True, ("H",),
                        doc="resident state of B requests at context H", order=4),
                   _fig("state_device", "State per request per device", "bytes", (("H", "H"),), True, ("H",),
                        group="deployed", order=1,
                        doc="the most loaded device's share of one request's state at context H")),
          columns=(Column("State 8K (GiB)", (("H", 8192),), "GiB", 3),
                   Column("State 1M (GiB)", (("H", 1048576), ("extrapolate", "true")), "GiB", 3)),
          plot=1, example=(("H", 1024),)),
    Query("decode_read_bytes", "state", (H_, B1, FORMAT, WEIGHTS, KV,
                                         Param("component", "name",
                                               doc="weights, lookup, or a state store or store tag"), *DEPLOY), "B",
          "bytes one decode step reads (component weights, lookup, a store or a tag)",
          closed_form=("B", "H"),
          figures=(_fig("decode_read_bytes", "Bytes read per decode step", "bytes", (("H", "H"), ("B", "B")), True,
                        ("H",), doc="weights and state one decode step at context H reads", order=8),),
          example=(("H", 1024),)),
    Query("decode_write_bytes", "state", (H_, B1, FORMAT, KV, STORE), "B",
          "bytes the step from H to H+1 tokens writes (writes: declarations; else the state's growth)",
          example=(("H", 1024),)),
    Query("request_read_bytes", "state", (S0, P_, G_, B1, FORMAT, KV, STORE), "B",
          "state bytes read by the G−1 decode steps", example=(("P", 128), ("G", 4))),
    # ---------------------------------------------------------------- capacity
    Query("b_max", "capacity", (DEVICE, H_, WORKSPACE, FORMAT, WEIGHTS, KV, MEMORY, BLOCK, *POOL, TP, PP, EP, DP,
                                PER_DEVICE_ALWAYS), "",
          "requests that fit on the deployment (workspace= and memory= per device; kv_memory= the state budget per "
          "device; allocator=vllm: vLLM's paged pool)",
          plot=3, example=(("device", "h100_sxm"), ("H", 1024))),
    Query("h_max", "capacity", (DEVICE, B1, WORKSPACE, FORMAT, WEIGHTS, KV, MEMORY, BLOCK, *POOL, TP, PP, EP, DP,
                                PER_DEVICE_ALWAYS),
          "tokens", "the longest context at which B requests fit (block=: entries round up to whole blocks); at most "
          "max_context unless extrapolate=true",
          example=(("device", "h100_sxm"),)),
    # ---------------------------------------------------------------- device
    Query("device_memory", "device", (DEVICE, MEMORY), "B",
          "memory of a device in specs/hardware/ (bytes as the device reports them; memory= a document's figure)",
          reads_model=False, example=(("device", "h100_sxm"),)),
    Query("device_flops", "device", (DEVICE, Param("dtype", "name", doc="the data type of the rate (default bf16, else fp16)"),
                                     Param("flops", "quantity", unit="FLOPs/s", doc="a document's figure instead")),
          "FLOPs/s", "a device's peak dense matrix FLOP/s for a data type (bf16, else fp16 where it has no bf16)",
          reads_model=False, example=(("device", "h100_sxm"),)),
    Query("device_bandwidth", "device", (DEVICE, Param("bandwidth", "quantity", unit="bytes/s",
                                                       doc="a document's figure instead")), "bytes/s",
          "a device's memory bandwidth", reads_model=False, example=(("device", "h100_sxm"),)),
    Query("device_link", "device", (DEVICE, Param("link", "choice", "scale_up",
                                                  choices=("scale_up", "scale_out", "host", "nvlink"),
                                                  doc="scale_up (NVLink, xGMI, ICI; nvlink is the same), scale_out "
                                                      "(the NIC, per GPU) or host (PCIe)")), "bytes/s",
          "a device's link rate per direction: scale-up (the default), scale-out or host",
          reads_model=False, example=(("device", "h100_sxm"),)),
    # ---------------------------------------------------------------- deployment
    Query("comm_bytes", "deployment", (B1, S0, P_, TP, PP, EP, DP, PER_DEVICE,
                                       Param("component", "choice", choices=("tp", "ep", "pp"),
                                             doc="only this parallelism's collectives"), ACT_BYTES), "B",
          "bytes of one call's collectives on the most loaded device, per phase the larger of sent and received "
          "(ring all-reduce, all-gather, expert all-to-all, pipeline sends)",
          example=(("P", 128), ("tp", 2))),
    # ---------------------------------------------------------------- time
    Query("call_time", "time", (B1, S0, P_, *TIME), "s",
          "roofline time of one call on the busiest device: Σ ops max(FLOPs/(peak·mfu), bytes/(bandwidth·mbu)) "
          "+ Σ collectives (latency + bytes/link per direction); none for a deployment that does not fit",
          example=(("P", 128), ("device", "h100_sxm"))),
    Query("ttft", "time", (P_, _scenario("B", 0, "other requests decoding beside it"),
                           Param("H", "scenario", None, "tokens", "context of the requests decoding beside it (B > 0)"),
                           Param("max_num_batched_tokens", "count", None, "tokens",
                                 "the per-step token budget of chunked prefill (none: the whole prompt in one step)"),
                           *TIME), "s",
          "one request's time to first token beside B requests decoding at context H (chunked prefill: "
          "chunks of max_num_batched_tokens − ceil(B/dp) tokens; the whole prompt in one step without it)",
          figures=(_fig("ttft", "Time to first token (TTFT)", "seconds", (("P", "P"), ("B", "B"), ("H", "H")), True,
                        ("P",), doc="one request's prefill of P tokens, in one engine step beside B requests "
                                    "decoding at context H, roofline time", group="time", order=0),),
          example=(("P", 128), ("device", "h100_sxm"))),
    Query("tpot", "time", (H_, B1, *TIME), "s", "time per output token: one decode step at context H (S = H, P = 1)",
          figures=(_fig("tpot", "Time per output token (TPOT)", "seconds", (("H", "H"), ("B", "B")), True, ("H",), 1,
                        doc="one decode step of B requests at context H (S = H, P = 1), roofline time", group="time",
                        order=1),),
          plot=4, plot_on_request=True, example=(("H", 1024), ("device", "h100_sxm"))),
    Query("throughput", "time", (H_, _scenario("B", REQUIRED, "requests in the batch"), *TIME), "tokens/s",
          "decode tokens per second of B requests at context H",
          figures=(_fig("throughput", "Decode throughput", "tokens per second", (("H", "H"), ("B", "B")), True,
                        ("H",), 1, doc="B requests' decode tokens per second at context H (B / TPOT)", group="time",
                        order=2),),
          example=(("H", 1024), ("B", 8), ("device", "h100_sxm"))),
    # ---------------------------------------------------------------- training
    Query("train_memory", "training",
          (B1, Param("P", "scenario", None, "tokens", "sequence length (needed for activations)"),
           Param("precision", "name", "mixed", doc="precision recipe: mixed, mixed_fp16, bf16, fp32 or the spec's"),
           Param("optimizer", "name", "adam", doc="optimizer recipe: adam, adamw, momentum, sgd or the spec's"),
           Param("component", "name", doc="weights, gradients, master, an optimizer state, moments, optimizer, "
                                          "static or activations"),
           Param("checkpointing", "name", doc="activation checkpointing policy of the spec (default: its first)"),
           Param("convention", "choice", choices=("megatron", "deepspeed"),
                 doc="a peer's formulas: megatron (18 B/param; 6 + 12/dp with zero=1) or deepspeed (its ZeRO estimators)"),
           TP, PP, DP, Param("zero", "count", 0, doc="ZeRO stage: 1 optimizer states, 2 + gradients, 3 + weights"),
           PER_DEVICE), "B",
          "training memory; component weights|gradients|master|<optimizer state>|moments|optimizer|static|"
          "activations; zero=1|2|3 partitions optimizer states, + gradients, + weights over dp (ZeRO-3 adds the "
          "largest layer gathered)",
          example=(("component", "static"),)),
    Query("train_flops", "training", (B1, P_, Param("checkpointing", "name", doc="activation checkpointing policy"),
                                      Param("backward", "number", 2, doc="forward passes a backward pass costs"),
                                      *FILTERS), "FLOPs",
          "matrix FLOPs of one training step: (1 + backward + recompute) forward passes", example=(("P", 128),)),
    # ---------------------------------------------------------------- structure
    Query("op_count", "structure", FILTERS, "", "layer instances that contain an op (op= required)",
          example=(("op", "q"),)),
    Query("dim", "structure", (NAME,), "", "a dimension of the spec", example=(("NAME", "d"),)),
    Query("dtype_bytes", "structure", (NAME,), "B", "bytes per element of a storage type (fp4 = 0.5 B, bf16 = 2 B, ...)",
          reads_model=False, example=(("NAME", "bf16"),)),
)

REGISTRY: dict[str, Query] = {q.name: q for q in QUERY_LIST}
FAMILIES: dict[str, list[Query]] = {}
for _q in QUERY_LIST:
    FAMILIES.setdefault(_q.family, []).append(_q)
del _q
# queries the evaluator answers itself (their argument is a bare name, not a keyword)
SPECIAL_FORMS = {q.name for q in QUERY_LIST if q.special}
# every keyword some query declares, and the universal ones: a spec dimension of such a name is an argument
ARGUMENT_NAMES = frozenset(UNIVERSAL) | {n for q in QUERY_LIST for n in q.names}


# ------------------------------------------------------------------ lookups other modules make
def figures(group: str) -> tuple:
    """The explorer's figures of a group ("model", "deployed", "time"), in page order, as (query name, Figure)."""
    found = [(f.order, q.name, f) for q in QUERY_LIST for f in q.figures if f.group == group]
    return tuple((name, f) for _, name, f in sorted(found, key=lambda t: t[0]))


def default_columns() -> tuple:
    """The compare table's default columns, in registry order, as (query name, Column)."""
    return tuple((q.name, c) for q in QUERY_LIST for c in q.columns)


def plotted(on_request: bool = False) -> tuple:
    """The quantities `specc plot` draws (the docs' charts), or those drawn only on request."""
    return tuple(q.name for q in sorted((q for q in QUERY_LIST if q.plot), key=lambda q: q.plot)
                 if q.plot_on_request == on_request)


def unknown_argument_hint(query: str, key: str) -> str | None:
    """The declared parameter of `query` the user most likely meant by `key`: the same
    name in another case first, then the closest spelling."""
    import difflib

    known = list(REGISTRY[query].names)
    close = [k for k in known if k.lower() == key.lower()] or difflib.get_close_matches(key, known, n=1)
    return close[0] if close else None


# ------------------------------------------------------------------ printed from the declarations
UNIVERSAL_HELP = ("Every query also takes spec=NAME (a sibling spec), <option>=CHOICE (the spec's options), "
                  "DIM=N (a dimension changed) and extrapolate=true (beyond max_context, flagged).")


def help_lines() -> list[str]:
    """`specc eval --help`'s query list: each family, then each query's signature."""
    out = []
    for family, queries in FAMILIES.items():
        out.append(f"{family}:")
        out.extend(f"  {q.signature}" for q in queries)
    out.append(UNIVERSAL_HELP)
    return out


def docstring(q: Query) -> str:
    """The Python API method's docstring: what it answers, then each parameter."""
    lines = [f"{q.doc} [{q.unit or 'a count'}]", "", "Parameters (query text values: ints, Fractions, names, "
                                                         "'2 GiB'):"]
    for p in q.params:
        default = "required" if p.required else ("optional" if p.default is None else f"default {p.default}")
        unit = f", {p.unit}" if p.unit else ""
        choices = f" ({' | '.join(p.choices)})" if p.choices else ""
        lines.append(f"    {p.name}: {p.kind}{unit}, {default}{choices} — {p.doc or KINDS[p.kind]}")
    lines += ["", UNIVERSAL_HELP, "symbolic=True allows scenario symbols as values (P='P') and returns the closed form."]
    return "\n".join(lines)


def markdown_table() -> str:
    """The README's query table (between the markers README_BEGIN / README_END)."""
    lines = ["| query | family | unit | what it answers |", "|---|---|---|---|"]
    for info in REGISTRY.values():
        cells = (f"`{info.signature}`", info.family, info.unit or "—", info.doc)
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines)


README_BEGIN = "<!-- query table: generated from compiler/query/query_registry.py by `python -m specc.compiler.query.query_registry README.md`; do not edit -->"
README_END = "<!-- end of query table -->"


def update_readme(path: str) -> bool:
    """Rewrite the marked query table of a README from the registry; True if it changed.
    Run `python -m specc.compiler.query.query_registry README.md` after changing the table above."""
    from ...dsl.marked_section import replace_marked

    return replace_marked(path, README_BEGIN, README_END, markdown_table())


if __name__ == "__main__":  # pragma: no cover
    import sys

    for readme in sys.argv[1:] or ["README.md"]:
        print(f"{readme}: {'updated' if update_readme(readme) else 'up to date'}")
