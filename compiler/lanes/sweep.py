"""Sweeps: one query over a grid of scenario values.

`sweep(spec, "flops(P=P)", {"P": range(1, 10**6 + 1)})` evaluates the query's
compiled closed form at every point of the grid. Where interval arithmetic
proves that no intermediate value leaves int64 (compiler/lanes/vector.py), the grid
runs as numpy int64 arrays; otherwise — or when a value is not an integer —
every point is computed with exact Python ints and Fractions. Each point's
value is the one `specc eval` prints for the literal query:

* points with a zero coordinate are answered through the eval path itself
  (P = 0 and G = 0 are errors there, and a zero can change which checks apply);
* the context checks are made on the whole grid: beyond the spec's maximum
  context a point is flagged extrapolated, or — without extrapolate=true —
  refused, as `specc eval` refuses it: the point has no value and the table
  says why (Table.refused, Table.refusal: eval's error for the first such
  point), so a grid that runs past a model's context still shows where it ends;
* a sample of points (ends included) is recomputed exactly and must agree,
  else the whole grid is computed exactly."""

from __future__ import annotations

import re
import time

from ...dsl.errors import BeyondContext, Loc, SpecError
from ...dsl.human import exact_text
from ...dsl.limits import limit, limit_error
from . import compiled

_OVER = re.compile(r"^\s*([BSPGH])\s*=\s*(.+?)\s*$")
_RANGE = re.compile(r"^(\d+)\s*\.\.\s*(\d+)(?:\s*:\s*(\d+))?$")
_SAMPLE = 64


class Table:
    """The sweep's result: one column per swept name, then value and extrapolated.
    refused marks the points `specc eval` refuses (beyond max_context without
    extrapolate=true): they have no value, and refusal is eval's message for the
    first of them (None when no point is refused)."""

    def __init__(self, names, columns, values, extrapolated, unit, mode, seconds, refused=None, refusal=None):
        self.names, self.columns, self.values, self.extrapolated = names, columns, values, extrapolated
        self.unit, self.mode, self.seconds = unit, mode, seconds
        self.refused, self.refusal = refused, refusal

    def __len__(self):
        return len(self.values)

    @property
    def points_per_second(self) -> float:
        return len(self) / self.seconds if self.seconds > 0 else float("inf")


def _query_loc(query: str) -> Loc:
    return Loc("<query>", 1, 1, source_text=query)


def parse_over(text: str, where: str = "--over") -> tuple[str, object]:
    """'P=1..1000000' (inclusive; '..N:STEP' for a stride) or 'B=1,2,4' -> (name, values)."""
    m = _OVER.match(text)
    loc = Loc(where, 1, 1, source_text=text)
    if not m:
        raise SpecError(f"cannot read the grid '{text}'", loc,
                        expected="NAME=FIRST..LAST or NAME=V1,V2,... with NAME one of B, S, P, G, H")
    name, spec = m.groups()
    r = _RANGE.match(spec)
    if r:
        first, last, step = int(r.group(1)), int(r.group(2)), int(r.group(3) or 1)
        if last < first or step < 1:
            raise SpecError(f"empty range '{spec}'", loc, expected="FIRST <= LAST and STEP >= 1")
        return name, range(first, last + 1, step)
    values = []
    for part in spec.split(","):
        part = part.strip()
        if not part.isdigit():
            raise SpecError(f"'{name}=' takes non-negative integers, got '{part}'", loc,
                            expected="NAME=1,2,4 or NAME=1..1000")
        values.append(int(part))
    return name, values


def _grid(names, over):
    import numpy as np

    axes = []
    for name in names:
        values = over[name]
        if isinstance(values, range):
            axes.append(np.arange(values.start, values.stop, values.step, dtype=object
                                  if values.stop > compiled_limit() else np.int64))
        else:
            axes.append(np.array(values, dtype=object if max(values) > compiled_limit() else np.int64))
    if len(axes) == 1:
        return [axes[0]]
    mesh = np.meshgrid(*axes, indexing="ij")
    return [m.reshape(-1) for m in mesh]


def _axis_text(values) -> str:
    if isinstance(values, range):
        return f"{values.start}..{values[-1]}" + (f":{values.step}" if values.step != 1 else "") if len(values) else "(empty)"
    return ",".join(map(str, values[:8])) + (",..." if len(values) > 8 else "")


def compiled_limit() -> int:
    from .vector import LIMIT

    return LIMIT


def _literal(query, point: dict) -> str:
    """The text of the query (an Expr, or text) at one grid point: each swept NAME=NAME given its value."""
    from ..query.query_value import Expr, bind_symbols

    expr = Expr.parse(query) if isinstance(query, str) else query
    return bind_symbols(expr, {k: int(v) for k, v in point.items()}).text()


class _Engine:
    """The symbolic engine, loaded only when a point or a template needs it."""

    def __init__(self, spec_path):
        self.spec_path, self.engine = spec_path, None

    def get(self):
        if self.engine is None:
            from ..query.queries import QueryEngine
            from ..schema.spec import load_spec

            self.engine = QueryEngine.shared(load_spec(self.spec_path))
        return self.engine

    def answer(self, query, point) -> compiled.Answer:
        text = _literal(query, point)
        found = compiled.lookup(self.spec_path, text)
        if found is None:
            from . import compile_queries

            found = compile_queries.answer(self.get(), text)
        return found


def sweep(spec_path, query: str, over: dict, fast: bool = True) -> Table:
    """Evaluate `query` (which names each swept variable as NAME=NAME) at every
    point of the grid `over` = {name: values}; see the module docstring."""
    import numpy as np

    from . import vector

    from ..query.query_value import Expr, symbols_used

    start = time.perf_counter()
    parsed = Expr.parse(query)
    if parsed is None:
        from ...dsl.parser import parse_expr

        parse_expr(query, "<query>")      # the engine's parser reports the mistake with its location
        raise SpecError("cannot read the query", _query_loc(query), expected="e.g. flops(P=P)")
    text, query = query, parsed     # from here on a value, printed only to ask the engine and as a template key
    used = symbols_used(query)
    names = list(over)
    if used != set(names):
        missing, extra = sorted(used - set(names)), sorted(set(names) - used)
        what = (f"the query uses {', '.join(f'{n}={n}' for n in missing)} but the grid gives no values for it "
                f"(--over {missing[0]}=... on the command line)" if missing else
                f"the grid's {', '.join(extra)} is not used by the query (write {extra[0]}={extra[0]} in it)")
        raise SpecError(what, _query_loc(text), expected="e.g. flops(P=P) with --over P=1..1000")
    points = 1
    for name in names:
        points *= len(over[name])           # counted before any axis is built
    if points > limit("sweep_points"):
        grid = " ".join(f"{n}={_axis_text(over[n])}" for n in names)
        raise limit_error("sweep_points", Loc("--over", 1, 1, source_text=grid), found=f"{points:,} points")
    engine = _Engine(spec_path)
    columns = _grid(names, over)
    n = len(columns[0])
    params = sorted(names)
    order = [names.index(p) for p in params]

    template = None
    if fast:
        store = compiled.load(spec_path)
        template = store.templates.get(query.text()) if store is not None else None
        if template is None or template.vector is None:
            from . import compile_queries

            try:
                template = compile_queries.grid_template(engine.get(), query.text(), params)
            finally:
                compile_queries.flush()

    values = _Values(n)
    extrapolated = np.zeros(n, dtype=bool)
    refused = np.zeros(n, dtype=bool)
    zero = np.zeros(n, dtype=bool)
    for col in columns:
        zero |= col == 0
    mode = "exact"
    if template is not None and columns[0].dtype == np.int64 and all(c.dtype == np.int64 for c in columns):
        mode = _vectorized(template, columns, order, ~zero, values, extrapolated, refused, engine, query, names)
        if mode == "int64" and not zero.any():
            return _table(names, columns, values.int64, extrapolated, template.unit, mode, start,
                          refused, engine, query)
    unit = template.unit if template is not None else None
    todo = np.flatnonzero((values.objects == None) & ~refused) if mode != "exact" else range(n)  # noqa: E711
    for i in todo:
        point = {name: int(col[i]) for name, col in zip(names, columns)}
        found = compiled.run(template, point) if template is not None and not zero[i] else None
        if found is None:
            if template is not None and not zero[i] and _beyond_context(template, point):
                refused[i] = True
                continue
            try:
                found = engine.answer(query, point)
            except BeyondContext:
                refused[i] = True
                continue
        values.objects[i], extrapolated[i], unit = found.value, found.extrapolated, found.unit
    return _table(names, columns, values.objects, extrapolated, unit or "", mode, start, refused, engine, query)


def _beyond_context(template, point) -> bool:
    """Whether a context check refuses the point (max_context exceeded, extrapolate not allowed)."""
    args = [point[a] for a in template.args]
    return any(not allowed and compiled.function(src, "c")(*args) > limit for src, limit, allowed in template.checks)


def _table(names, columns, values, extrapolated, unit, mode, start, refused, engine, query) -> Table:
    import numpy as np

    refusal = None
    if refused.any():
        first = int(np.flatnonzero(refused)[0])
        point = {name: int(col[first]) for name, col in zip(names, columns)}
        try:
            engine.answer(query, point)
        except BeyondContext as exc:    # eval's own words for that point
            refusal = exc.message
        else:                           # pragma: no cover - a refusal eval does not make is a bug
            raise AssertionError(f"the sweep refused {point}, which specc eval answers")
        if values.dtype != object:      # a refused point has no value (None), not its extrapolation
            values = values.astype(object)
        values[refused] = None
    return Table(names, columns, values, extrapolated, unit, mode, time.perf_counter() - start,
                 refused if refused.any() else None, refusal)


class _Values:
    """Per-point values: an object array (exact ints/Fractions), or — when the
    int64 run covers every point — that int64 array itself."""

    def __init__(self, n):
        import numpy as np

        self.objects = np.empty(n, dtype=object)
        self.int64 = None

    def __setitem__(self, key, value):
        self.objects[key] = value


def _vectorized(template, columns, order, live, values, extrapolated, refused, engine, query, names) -> str:
    """Fill the live (non-zero) points with int64 arithmetic when that is proven
    safe; returns the mode used ('int64', or 'exact' to leave them to the caller)."""
    import numpy as np

    from . import vector

    if not live.any():
        return "int64"
    args = [columns[j][live] for j in order]
    ranges = [(int(a.min()), int(a.max())) for a in args]
    source, check_sources = template.vector
    try:
        for src in (source, *check_sources):
            name = "q" if src is source else "c"
            _, largest = vector.bounds(src, ranges, name)
            if largest >= vector.LIMIT:
                return "exact"
        result = vector.run(source, args)
        flags = np.zeros(len(args[0]), dtype=bool)
        refuse = np.zeros(len(args[0]), dtype=bool)
        for src, (_, limit, allowed) in zip(check_sources, template.checks):
            beyond = vector.run(src, args, "c") > limit
            if allowed:
                flags |= beyond
            else:
                refuse |= beyond
    except (vector.NotInt64, FloatingPointError, OverflowError, ZeroDivisionError):
        return "exact"
    flags &= ~refuse
    # a sample, ends included, recomputed exactly (pattern-sum arguments are not
    # validated element-wise, so the exact path is the judge); a refused point's
    # sample is the exact lane's refusal
    idx = np.unique(np.concatenate([np.linspace(0, len(result) - 1, _SAMPLE).astype(np.int64)]))
    for k in idx:
        point = {p: int(a[k]) for p, a in zip(sorted(names), args)}
        found = compiled.run(template, point)
        if found is None:
            if refuse[k] and _beyond_context(template, point):
                continue
            try:
                found = engine.answer(query, point)
            except BeyondContext:
                return "exact"           # the vector check and eval disagree: the exact lane decides
        if refuse[k] or found.value != int(result[k]) or found.extrapolated != bool(flags[k]):
            return "exact"
    if live.all():
        values.int64 = result          # the whole grid: kept as one int64 array
    else:
        values[live] = result.astype(object)
    extrapolated[live] = flags
    refused[live] = refuse
    return "int64"


# ------------------------------------------------------------------ writing
def _text(value) -> str:
    return exact_text(value)


def _cells(table: Table, blank) -> list:
    """The table's columns as lists of cell values (ints, 'p/q' strings, true/false);
    a refused point's value is `blank`, and a last column says why (only when some
    point is refused)."""
    import numpy as np

    cols = [c.tolist() for c in table.columns]
    vals = table.values.tolist() if table.values.dtype == np.int64 else [
        v if type(v) is int or v is None else _text(v) for v in table.values]
    cells = cols + [vals, table.extrapolated.tolist()]
    if table.refused is not None:
        for i in np.flatnonzero(table.refused).tolist():
            vals[i] = blank
        cells.append(np.where(table.refused, REFUSED, "").tolist())
    return cells


# the note of a refused point (beyond max_context without extrapolate=true), as in eval
REFUSED = "beyond max_context"


def columns(table: Table) -> list:
    return table.names + ["value", "extrapolated"] + (["note"] if table.refused is not None else [])


def to_csv(table: Table) -> str:
    cells = _cells(table, "")
    cells[len(table.names) + 1] = ["true" if e else "false" for e in cells[len(table.names) + 1]]
    row = ",".join(["%s"] * len(cells))
    lines = [",".join(columns(table))]
    lines.extend([row % r for r in zip(*cells)])
    return "\n".join(lines) + "\n"


def to_json(table: Table, spec: str, query: str) -> str:
    import json

    rows = [list(r) for r in zip(*_cells(table, None))]
    return json.dumps({"spec": str(spec), "query": query, "unit": table.unit, "columns": columns(table),
                       "refusal": table.refusal, "rows": rows})

