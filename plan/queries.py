"""The one place the planner asks the engine: every query it uses, with the
arguments it passes, is written here.

A deployment is a `Layout` (device, tp, pp, dp, ep and a format, i.e. the extra
query arguments that pick a storage scheme) replicated `replicas` times. An
instance is tp·pp·dp devices, as the engine's deployment model counts them
(compiler/deploy/sharding.py): attention and dense layers tensor-parallel over tp, dp
data-parallel attention ranks each serving its own requests, pp stages, and the
routed experts spread over ep ranks, ep = 1 or a divisor of tp·dp (vLLM's
--enable-expert-parallel is ep = tp·dp; the rest of tp·dp/ep is expert tensor
parallelism). B in every query counts the requests of the whole instance (each
dp rank serves ceil(B/dp)). The replicas of an instance are independent and each
gets 1/replicas of the traffic, so only per-instance questions are asked:

  call_time(B=, S=, P=, device=, tp=, pp=, dp=, ep=, <format>)  one call: a decode step
                                                           (P = 1) or a prefill chunk,
                                                           written tpot(H=, B=, ...) and
                                                           ttft(P=, ...) where those equal it
  b_max(device=, H=, workspace=, tp=, pp=, dp=, ep=, <format>)  requests that fit at H
  weight_bytes(tp=, pp=, dp=, ep=, <format>, per_device=true)  the memory plan
  state_bytes(H=, B=, tp=, pp=, dp=, ep=, <format>, per_device=true)
  device_memory(device=)
  params(group=routed_experts)                             whether dp and ep are searched
  device_link(device=, link=scale_out)                     the KV transfer link of the
                                                           disaggregated mode (the NIC)
  gpus_per_node of the device file                         tp stays within a node

Time queries refuse a deployment that does not fit (the engine's fit check). The
planner times a decode step beyond what fits only to locate the fixed point and
its slope (those deployments fail the memory limit anyway): such a query says
ignore_fit=true in its text. A layout whose every query is refused (a split the
spec cannot make, a model that does not fit) is no candidate.

A format is a plain tuple of (argument, value) pairs, passed through: format=NAME
(a format the spec declares, e.g. its released checkpoint) and the knobs
weights=SCHEME, kv=SCHEME, compute=DTYPE.

Two lanes answer the same texts:
  * `Asker.exact(text)`: the exact value `specc eval` prints (int or Fraction),
    through the compiled fast lane (compiler/lanes/compile_queries.py);
  * `Asker.call_time_grid(layout)`: the closed form of call_time in B, S, P,
    printed for numpy (codegen's vector target) and run in float64 here. Only
    the search uses it; every reported figure is recomputed exactly."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

from ..dsl.errors import SpecError


@dataclass(frozen=True)
class Layout:
    """One model instance: tp·pp·dp devices of one kind, one format; the routed
    experts over ep of each stage's tp·dp ranks (ep = 1 or a divisor of tp·dp)."""

    device: str
    tp: int = 1
    pp: int = 1
    ep: int = 1
    fmt: tuple = ()          # ((argument, value), ...), e.g. (("format", "int8"),)
    dp: int = 1              # data-parallel attention ranks inside the instance

    @property
    def gpus(self) -> int:
        return self.tp * self.pp * self.dp

    @property
    def well_formed(self) -> bool:
        """ep spreads experts over ranks of tp·dp (the engine refuses anything else)."""
        return min(self.tp, self.pp, self.dp, self.ep) >= 1 and (self.tp * self.dp) % self.ep == 0

    def degree_args(self) -> list:
        """The layout's degrees other than 1, as query arguments in the planner's order."""
        return [(k, v) for k, v in (("tp", self.tp), ("pp", self.pp), ("dp", self.dp), ("ep", self.ep)) if v != 1]

    def degrees(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self.degree_args())

    def format_pairs(self, query: str | None = None) -> list:
        """The format's arguments as `query` takes them: a knob the query does not declare
        (kv= to weight_bytes, weights= to state_bytes) is left out, since the engine refuses
        an argument a query does not take and the knob does not change its answer."""
        return [(k, v) for k, v in self.fmt if _takes(query, k)]

    def format_name(self) -> str:
        return ",".join(f"{k}={v}" for k, v in self.fmt) or "default"


@lru_cache(maxsize=None)
def _declared(query: str) -> frozenset | None:
    """The parameters a query declares (compiler/query/query_registry.py), or None where the
    registry does not list them as data (every argument is then passed)."""
    from ..compiler.query.query_registry import REGISTRY

    params = getattr(REGISTRY.get(query), "params", None)
    return None if params is None else frozenset(p.name for p in params)


@lru_cache(maxsize=None)
def _takes(query: str | None, key: str) -> bool:
    """Whether to pass key= to query: always, unless the query does not declare it while
    another query does (a spec's options and what-if dimensions are taken by every query)."""
    if query is None:
        return True
    mine = _declared(query)
    if mine is None or key in mine:
        return True
    from ..compiler.query.query_registry import REGISTRY

    return not any(key in (_declared(name) or ()) for name in REGISTRY)


def _call(name: str, *groups) -> str:
    """A query's text from groups of (argument, value) pairs, printed by the one query printer."""
    from ..compiler.query.query_value import make_call

    return make_call(name, [pair for group in groups for pair in group]).text()


class Queries:
    """The query texts (one method per query the planner uses). `extra` is appended
    to every scenario query (extrapolate=true when the user allows contexts beyond
    the spec's max_context)."""

    def __init__(self, extra: bool = False):
        self.extra = [("extrapolate", "true")] if extra else []

    def call_time(self, lay: Layout, B, S, P) -> str:
        return _call("call_time", [("B", B), ("S", S), ("P", P), ("device", lay.device)], lay.degree_args(),
                     lay.format_pairs("call_time"), self.extra)

    def decode_step(self, lay: Layout, B, H, beyond_fit: bool = False) -> str:
        """One decode step of B requests at context H: tpot(H, B) = call_time(B, S=H, P=1),
        the shorter text (expressions that repeat it stay within specc's input limits).
        beyond_fit: B requests do not fit; the step is timed anyway (ignore_fit=true)
        only to find where the fixed point and its slope lie."""
        fit = [("ignore_fit", "true")] if beyond_fit else []
        return _call("tpot", [("H", H), ("B", B), ("device", lay.device)], lay.degree_args(),
                     lay.format_pairs("tpot"), self.extra, fit)

    def prefill_chunk(self, lay: Layout, S, P) -> str:
        """One request's prefill chunk of P tokens after S: ttft(P) = call_time(B=1, S=0, P)
        for the first chunk, call_time(B=1, S, P) for the others."""
        if S == 0:
            return _call("ttft", [("P", P), ("device", lay.device)], lay.degree_args(), lay.format_pairs("ttft"),
                         self.extra)
        return self.call_time(lay, 1, S, P)

    def call_time_template(self, lay: Layout) -> str:
        """The same query with B, S, P left as parameters (a sweep template)."""
        return self.call_time(lay, "B", "S", "P")

    def b_max(self, lay: Layout, H, workspace: int) -> str:
        return _call("b_max", [("device", lay.device), ("H", H), ("workspace", f"{workspace} B")],
                     lay.degree_args(), lay.format_pairs("b_max"), self.extra)

    def weight_bytes(self, lay: Layout) -> str:
        return _call("weight_bytes", lay.degree_args(), lay.format_pairs("weight_bytes"), [("per_device", "true")])

    def state_bytes(self, lay: Layout, H, B) -> str:
        return _call("state_bytes", [("H", H), ("B", B)], lay.degree_args(), lay.format_pairs("state_bytes"),
                     [("per_device", "true")], self.extra)

    def routed_params(self) -> str:
        """Whether the spec has routed experts (dp attention and ep are searched only then:
        for a dense model dp ranks inside an instance are replicas that wait for each other)."""
        return _call("params", [("group", "routed_experts")])

    def device_memory(self, lay: Layout) -> str:
        return _call("device_memory", [("device", lay.device)])

    def kv_link(self, lay: Layout) -> str:
        """The link a disaggregated deployment's KV crosses between a prefill and a decode
        instance (per device, every device of the instance sending its share at once): the
        per-GPU scale-out NIC, per direction."""
        return _call("device_link", [("device", lay.device), ("link", "scale_out")])


# ------------------------------------------------------------------ answering
def _float_namespace():
    import numpy as np

    def q(n, d):
        return np.true_divide(n, d)

    def rat(p, r):
        return p / r

    return {"_where": np.where, "_min": np.minimum, "_max": np.maximum, "_and": np.logical_and,
            "_or": np.logical_or, "_not": np.logical_not, "_abs": np.abs, "_q": q, "_rat": rat,
            "_n": lambda x: x, "np": np}


_BASE: dict = {}
_FLOAT_FUNCTIONS: dict = {}


def float_function(source: str, name: str = "q"):
    """A printed closed form (codegen's vector target) run on float64 arrays
    (made once per source per process)."""
    fn = _FLOAT_FUNCTIONS.get((source, name))
    if fn is None:
        if not _BASE:
            from ..compiler.lanes.codegen_prelude import PYTHON_PRELUDE, VECTOR_PRELUDE

            exec(PYTHON_PRELUDE + VECTOR_PRELUDE, _BASE)  # noqa: S102 - the project's own support code
            _BASE.update(_float_namespace())
        ns = dict(_BASE)
        exec(source, ns)  # noqa: S102 - printed by codegen from the engine's own closed forms
        fn = _FLOAT_FUNCTIONS[(source, name)] = ns[name]
    return fn


class Asker:
    """Answers the planner's queries for one spec, exactly or as float grids."""

    def __init__(self, spec_path, queries: Queries | None = None):
        from ..compiler.query.queries import QueryEngine
        from ..compiler.schema.spec import load_spec

        self.spec_path = str(spec_path)
        self.spec = load_spec(self.spec_path)
        self.engine = QueryEngine.shared(self.spec)
        self.q = queries or Queries()
        self._exact: dict = {}
        self._grids: dict = {}
        self._store = None

    def store(self):
        """The spec's compiled store, validated once per Asker (a plan is one moment)."""
        if self._store is None:
            from ..compiler.lanes import compiled

            self._store = compiled.load(self.spec_path)
        return self._store

    def exact(self, text: str):
        """The exact answer (int or Fraction) `specc eval` gives for `text`; a
        SpecError when the engine refuses it (a layout the spec cannot split)."""
        found = self._exact.get(text)
        if found is None:
            from ..compiler.lanes import compile_queries, compiled

            store = self.store()
            answer = compiled.lookup(self.spec_path, text, store=store) if store is not None else None
            if answer is None:
                answer = compile_queries.answer(self.engine, text, eager=True)
            value = answer.value
            found = self._exact[text] = Fraction(value) if not isinstance(value, int) else value
        return found

    def gpus_per_node(self, device: str) -> int | None:
        """The device file's gpus_per_node (None where it declares none)."""
        from ..dsl.units import NONE

        found = self.engine._optional_field(device, "gpus_per_node", NONE, None, "8")
        return None if found is None else int(found)

    def try_exact(self, text: str):
        try:
            return self.exact(text)
        except SpecError:
            return None

    def call_time_grid(self, lay: Layout):
        """call_time of the layout as a float function f(B, P, S) of numpy arrays, or
        None when the spec cannot be split this way (the engine's error is kept)."""
        key = self.q.call_time_template(lay)
        if key in self._grids:
            return self._grids[key]
        from ..compiler.lanes import compile_queries, compiled

        fn = None
        store = self.store()
        template = store.templates.get(key) if store is not None else None
        if template is None or template.vector is None:
            try:
                template = compile_queries.grid_template(self.engine, key, ["B", "P", "S"])
            except SpecError:
                template = None
        if template is not None and template.vector is not None:
            order = template.args                  # sorted names: ('B', 'P', 'S')
            raw = float_function(template.vector[0])

            def fn(B, S, P, _raw=raw, _order=order):
                given = {"B": B, "S": S, "P": P}
                return _raw(*[given[a] for a in _order])
        self._grids[key] = fn
        return fn

    def flush(self) -> None:
        """Write the compiled templates this process made (the next plan is warm)."""
        from ..compiler.lanes import compile_queries

        compile_queries.flush()
