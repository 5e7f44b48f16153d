"""Verdicts from compiled queries: `specc verify` without sympy when warm.

For every claim the store of its spec (compiler/lanes/compiled.py) keeps what the
verdict is made of — the query text (answered by its compiled closed form),
the expected value, the accepted interval, the unit it is printed in, and
whether it is a known erratum — and `cached_results` recomputes each verdict
from them with exact Fractions, exactly as verify/claims.py does.

Claims whose verdict needs the symbolic engine (an `expect_formula:` compared
by simplification, a claim that cannot be evaluated, a unit mismatch) keep the
verdict and text the engine gave them: those depend on nothing but the files
the store's manifest hashes. A claim whose compiled answer ever differed from
the symbolic one would be kept the same way (and the tests compare both
lanes on every shipped claim)."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

from ..compiler.lanes import compiled
from ..dsl.human import exact_text
from .verdicts import interval_verdict, show_scaled


class _Claim:
    """The parts of a claim the output formats print."""

    __slots__ = ("id", "spec", "source", "eval", "expect", "expect_formula", "erratum", "note", "fact_check")

    def __init__(self, **fields):
        for name in self.__slots__:
            setattr(self, name, fields.get(name))


class FastResult:
    """A verdict recomputed from a cached record; prints like verify.claims.Result."""

    def __init__(self, record: dict, value=None, spec=None):
        # the spec as this command names it, as the symbolic path's Claim.spec (spec.path) is
        self.claim = _Claim(**dict(record["claim"], spec=spec))
        self.low, self.high = record.get("low"), record.get("high")
        self.unit_label = record.get("unit_label", "")
        self.unit_factor = record.get("unit_factor", Fraction(1))
        self.decimals = record.get("decimals", 0)
        if "verdict" in record:            # kept as the symbolic engine decided it
            self.verdict, self.message = record["verdict"], record["message"]
            self._exact, self._display = record["exact"], record["display"]
            return
        self.value = value
        self._exact = exact_text(value)
        self._display = self._show(value)
        self.verdict, self.message = interval_verdict(value, self.low, self.high, self._display, self.unit_factor,
                                                      self.unit_label, self.claim.erratum)

    def _show(self, value) -> str:
        return show_scaled(Fraction(value) / self.unit_factor, self.decimals, self.unit_label)

    def computed_exact(self) -> str:
        return self._exact

    def computed_display(self) -> str:
        return self._display


def _key(claim_files) -> str:
    return "\0".join(str(Path(f).resolve()) for f in claim_files)


def cached_results(spec_path, claim_files=()) -> list | None:
    """Every claim's result from the store alone, or None on any miss."""
    store = compiled.load(spec_path)
    if store is None:
        return None
    records = store.verify.get(_key(claim_files))
    if records is None:
        return None
    results = []
    for record in records:
        if "verdict" in record:
            results.append(FastResult(record, spec=str(spec_path)))
            continue
        found = compiled.lookup(spec_path, record["claim"]["eval"], store)
        if found is None or found.dims != record["dims"]:
            return None
        results.append(FastResult(record, found.value, str(spec_path)))
    return results


# ------------------------------------------------------------------ building (needs the engine)
def _fraction(x) -> Fraction:
    return Fraction(int(x.p), int(x.q))


def _record(result, engine, store) -> dict:
    from ..compiler.lanes import compile_queries

    c = result.claim
    # not the spec's path: a later command may name the spec otherwise (and a shipped
    # form names no path of the machine that made it); cached_results fills it in
    claim = {"id": c.id, "spec": None, "source": c.source, "eval": str(c.eval),
             "expect": None if c.expect is None else str(c.expect),
             "expect_formula": None if c.expect_formula is None else str(c.expect_formula),
             "erratum": c.erratum, "note": c.note, "fact_check": c.fact_check}
    record = {"claim": claim, "unit_label": result.unit_label, "unit_factor": Fraction(result.unit_factor),
              "decimals": result.decimals,
              "low": None if result.low is None else _fraction(result.low),
              "high": None if result.high is None else _fraction(result.high)}
    value = None if result.computed is None else result.computed.value
    # an inequality claim keeps the engine's verdict (its bound is not an interval of printed digits)
    dynamic = (c.expect_formula is None and result.bound is None and result.verdict in ("PASS", "FAIL", "XFAIL", "XPASS")
               and value is not None and value.is_Rational and result.low is not None)
    if dynamic:
        # the symbolic engine's exact value, kept as the query's literal answer: a first
        # run evaluates each claim once (a closed form is compiled when a query is asked
        # at other values, by specc eval or a sweep)
        found = compile_queries.remember(engine, store, str(c.eval), result.computed)
        record.update(expected=_fraction(result.expected), dims=found.dims)
        return record
    record.update(verdict=result.verdict, message=result.message, exact=result.computed_exact(),
                  display=result.computed_display(), bound=result.bound)
    return record


def verify_path(spec_path, claim_files=()) -> list:
    """The claims' results: from the store when it has them, else by the symbolic
    engine (whose results are returned, and from which the store is filled)."""
    found = cached_results(spec_path, claim_files)
    if found is not None:
        return found
    from ..compiler.lanes import compile_queries
    from ..compiler.query.queries import QueryEngine
    from ..compiler.schema.spec import load_spec
    from .claims import verify_spec

    spec = load_spec(spec_path)
    results = verify_spec(spec, claim_files)
    engine = QueryEngine.shared(spec)
    store = compile_queries.store_for(engine)
    # where each claims file was really found (beside the spec, a parent, the search path)
    from .claims import claims_file

    files = [claims_file(spec, f) for f in spec.claims_files] + [Path(f) for f in claim_files]
    try:
        store.verify[_key(claim_files)] = [_record(r, engine, store) for r in results]
        compile_queries.note_dependencies(engine, store, files)
        compile_queries.dirty_stores.add(spec.path)
    finally:
        compile_queries.flush()
    return results
