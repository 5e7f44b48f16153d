"""`plan` and `simulate` from Python values (the CLI and specc.api parse into these)."""

from __future__ import annotations

from fractions import Fraction

from ..dsl.errors import Loc, SpecError
from .queries import Asker, Layout, Queries
from .search import Percentile, Space, search
from .serving import (AGGREGATED, DISAGGREGATED, Deployment, EngineRules, LayoutFacts, Targets, Traffic,
                      final_context)

DEFAULT_DEVICES = ("h100_sxm", "h200", "b200", "mi300x", "a100_80gb")


def _fail(what, text, message, expected):
    raise SpecError(message, Loc(what, 1, 1, source_text=str(text)), expected=expected)


def exact_number(value, what: str) -> Fraction:
    """An int, a Fraction or decimal text ('2.5', '1/3') as a Fraction (floats refused: not exact)."""
    if isinstance(value, bool) or isinstance(value, float):
        _fail(what, value, f"{what} takes an exact number, got {value!r}", "an int, a Fraction or text such as '2.5'")
    try:
        return Fraction(value)
    except (ValueError, TypeError, ZeroDivisionError):
        _fail(what, value, f"cannot read {what} '{value}'", "a number such as 20, 2.5 or 1/3")


_TIME_UNITS = {"s": Fraction(1), "ms": Fraction(1, 1000), "us": Fraction(1, 10**6), "µs": Fraction(1, 10**6)}


def seconds(value, what: str) -> Fraction | None:
    """'50 ms', '1s', '0.05' (seconds), a Fraction or an int -> seconds."""
    if value is None:
        return None
    if isinstance(value, str):
        text = value.strip()
        for unit in sorted(_TIME_UNITS, key=len, reverse=True):
            if text.endswith(unit):
                return exact_number(text[: -len(unit)].strip(), what) * _TIME_UNITS[unit]
        return exact_number(text, what)
    return exact_number(value, what)


DEFAULT_KNOBS = ("weights=fp8", "weights=fp8+kv=fp8")


def default_formats(spec) -> list:
    """What a deployment is usually served in: the spec's default format, the formats
    it declares with a release scheme (the checkpoint as published, e.g. FP8 with 128×128
    block scales), and the knobs FP8 weights, FP8 weights with an FP8 KV cache."""
    released = [name for name, f in spec.formats.items() if f.scheme and name != spec.default_format]
    return [spec.default_format or None] + released + list(DEFAULT_KNOBS)


def formats_of(spec, names=None, fixed: dict | None = None) -> tuple:
    """Format candidates as data: each a tuple of (argument, value) pairs. A name is
    format=NAME; 'k=v+k2=v2' gives the arguments themselves (weights=, kv=, compute=,
    or any format argument). Default: default_formats. `fixed` arguments (e.g.
    mla=expanded) join every candidate."""
    fixed = dict(fixed or {})
    items = list(names) if names else default_formats(spec)
    out = []
    for item in items:
        pairs = []
        if item:
            for part in str(item).split("+"):
                if "=" in part:
                    k, v = part.split("=", 1)
                    pairs.append((k.strip(), v.strip()))
                else:
                    if spec.formats and part.strip() not in spec.formats:
                        _fail("--formats", item, f"the spec declares no format '{part.strip()}'",
                              "one of " + ", ".join(spec.formats))
                    pairs.append(("format", part.strip()))
        # the spec's default format is what a query without format= computes: left out,
        # so the expressions stay short
        pairs = [(k, v) for k, v in pairs if not (k == "format" and v == spec.default_format)]
        pairs += sorted(fixed.items())
        if tuple(pairs) not in out:
            out.append(tuple(pairs))
    return tuple(out)


def parse_mix(text) -> tuple:
    """'2000:300:3,8000:500:1' (ISL:OSL:WEIGHT, ...) or a list of (isl, osl, weight)
    -> ((share, isl, osl), ...) with exact shares summing to 1."""
    items = []
    parts = text.split(",") if isinstance(text, str) else list(text)
    for part in parts:
        fields = part.split(":") if isinstance(part, str) else list(part)
        if len(fields) not in (2, 3):
            _fail("--mix", text, f"cannot read the request class '{part}'", "ISL:OSL:WEIGHT, e.g. 2000:300:3,8000:500:1")
        try:
            isl, osl = int(fields[0]), int(fields[1])
        except (TypeError, ValueError):
            _fail("--mix", text, f"cannot read the request class '{part}'", "whole numbers of tokens: ISL:OSL:WEIGHT")
        weight = exact_number(fields[2], "--mix") if len(fields) == 3 else Fraction(1)
        if isl < 1 or osl < 2 or weight <= 0:
            _fail("--mix", text, f"the request class '{part}' needs ISL ≥ 1, OSL ≥ 2 and a positive weight",
                  "e.g. 2000:300:3")
        items.append((weight, isl, osl))
    if not items:
        _fail("--mix", text, "an empty mix", "ISL:OSL:WEIGHT, ...")
    total = sum(w for w, _, _ in items)
    merged: dict = {}
    for w, i, g in items:                       # the same class twice: one class
        merged[(i, g)] = merged.get((i, g), 0) + w / total
    return tuple((share, i, g) for (i, g), share in merged.items())


def build(spec_path, rate, isl, osl, ttft=None, tpot=None, arrivals="poisson", chunk=8192,
          memory_fraction=Fraction(9, 10), extrapolate=False, max_loop_gain=Fraction(1, 4), mix=None):
    classes = parse_mix(mix) if mix else ()
    if classes:
        isl, osl = max((i, g) for _, i, g in classes)
    if isl is None or osl is None:
        _fail("--isl", "", "the traffic needs --isl and --osl, or --mix", "--isl 2000 --osl 300")
    if len(classes) == 1:
        classes = ()
    if int(isl) < 1 or int(osl) < 2:
        _fail("--osl" if int(isl) >= 1 else "--isl", osl if int(isl) >= 1 else isl,
              "ISL must be at least 1 and OSL at least 2 (a TPOT needs one decode step)", "--isl 2000 --osl 300")
    r = exact_number(rate, "--rate")
    if r <= 0:
        _fail("--rate", rate, "the rate must be positive", "e.g. --rate 20 (requests per second)")
    if arrivals not in ("poisson", "fixed"):
        _fail("--arrivals", arrivals, f"unknown arrival process '{arrivals}'", "poisson or fixed")
    traffic = Traffic(r, int(isl), int(osl), arrivals, classes)
    targets = Targets(seconds(ttft, "--ttft"), seconds(tpot, "--tpot"))
    gain = exact_number(max_loop_gain, "--max-loop-gain")
    if not 0 < gain < 1:
        _fail("--max-loop-gain", max_loop_gain, "the loop gain bound must be between 0 and 1",
              "e.g. --max-loop-gain 1/4 (the default) or 1/2")
    if int(chunk) < 1:
        _fail("--max-num-batched-tokens", chunk, "the chunk budget must be at least 1 token", "e.g. 8192")
    rules = EngineRules(int(chunk), Fraction(memory_fraction), gain)
    queries = Queries(extra=bool(extrapolate))
    return traffic, targets, rules, queries


def _check_context(asker, traffic, extrapolate):
    limit = asker.spec.max_context
    if limit is not None and not extrapolate:
        top = int(limit.value) if hasattr(limit, "value") else int(limit)
        longest = final_context(traffic)
        if longest > top:
            _fail("--isl", traffic.isl, f"ISL + OSL = {longest} is beyond the spec's max_context {top}",
                  "shorter requests, or --extrapolate to compute by formula beyond it")


def plan(spec_path, rate, isl, osl, ttft=None, tpot=None, devices=DEFAULT_DEVICES, max_gpus=8, formats=None,
         fixed=None, mode="both", prices=None, arrivals="poisson", chunk=8192, extrapolate=False,
         quiet=True, tp=None, pp=(1, 2, 4, 8), dp=(1, 2, 4, 8), ep=None, percentile=None,
         sim_requests=4000, seed=0, max_loop_gain=Fraction(1, 4), mix=None):
    traffic, targets, rules, queries = build(spec_path, rate, isl, osl, ttft, tpot, arrivals, chunk,
                                             extrapolate=extrapolate, max_loop_gain=max_loop_gain, mix=mix)
    asker = Asker(spec_path, queries)
    _check_context(asker, traffic, extrapolate)
    modes = {"aggregated": (AGGREGATED,), "disaggregated": (DISAGGREGATED,), "both": (AGGREGATED, DISAGGREGATED)}
    if mode not in modes:
        _fail("--mode", mode, f"unknown mode '{mode}'", "aggregated, disaggregated or both")
    price = {d: exact_number(v, "--price") for d, v in (prices or {}).items()}
    missing = [d for d in devices if price and d not in price]
    if missing:
        _fail("--price", ",".join(missing), f"no price for {', '.join(missing)}",
              "a price for every searched device (e.g. --price h200=3.50), or none (GPUs are the cost)")
    for device in devices:           # a misspelt device is an error, not a silently empty search
        try:
            asker.exact(asker.q.device_memory(Layout(device)))
        except SpecError as exc:
            _fail("--devices", ",".join(devices), exc.message,
                  "device files of specs/hardware/, e.g. h100_sxm,h200,mi300x")
    space = Space(tuple(devices), int(max_gpus), formats_of(asker.spec, formats, fixed), modes[mode],
                  None if tp is None else tuple(tp), tuple(pp), tuple(dp), None if ep is None else tuple(ep), price)
    check = None
    if percentile is not None:
        p = exact_number(percentile, "--percentile")
        if not 50 <= p < 100:
            _fail("--percentile", percentile, f"a percentile must be in [50, 100), got {percentile}",
                  "e.g. --percentile 90 (targets at the 90th percentile of requests)")
        check = Percentile(float(p), int(sim_requests), int(seed))
    return search(spec_path, traffic, targets, space, rules, queries, quiet=quiet, percentile=check)


def simulate(spec_path, rate, isl, osl, device, tp=1, pp=1, ep=1, replicas=1, prefill_replicas=0, fmt=None, fixed=None,
             mode="aggregated", requests=10000, seed=0, rate_scale=1, arrivals="poisson", chunk=8192,
             extrapolate=False, mix=None, dp=1):
    """One deployment: `replicas` instances (decode instances when disaggregated, beside
    `prefill_replicas` prefill instances) of tp·pp·dp devices, the experts over ep."""
    from .simulate import simulate as run_simulation

    if not device:
        _fail("--device", "", "a simulation needs the deployment's device", "--device h200")
    traffic, _, rules, queries = build(spec_path, rate, isl, osl, arrivals=arrivals, chunk=chunk,
                                       extrapolate=extrapolate, mix=mix)
    asker = Asker(spec_path, queries)
    _check_context(asker, traffic, extrapolate)
    fmt_pairs = formats_of(asker.spec, [fmt] if fmt else [asker.spec.default_format or None], fixed)[0] \
        if (fmt or asker.spec.formats) else tuple(sorted((fixed or {}).items()))
    lay = Layout(device, int(tp), int(pp), int(ep), fmt_pairs, int(dp))
    if not lay.well_formed:
        _fail("--ep", ep, f"ep={ep} must divide tp·dp = {lay.tp * lay.dp} (experts are spread over "
              "the ranks of a stage)", "--ep 1, or --ep equal to tp·dp (vLLM's --enable-expert-parallel)")
    if mode == DISAGGREGATED and int(prefill_replicas) < 1:
        _fail("--prefill", prefill_replicas, "a disaggregated deployment needs prefill instances", "--prefill 1")
    dep = Deployment(lay, mode, int(replicas), int(prefill_replicas) if mode == DISAGGREGATED else 0)
    facts = LayoutFacts(asker, lay, traffic, rules)
    if int(facts.n_fit.value) < 1:
        _fail("--device", device, f"the model does not fit on {lay.gpus}× {device} with this layout "
              f"({facts.n_fit.text} = {facts.n_fit.value})", "more devices (tp, pp, dp) or a smaller format")
    from .serving import evaluate

    sim = run_simulation(asker, facts, dep, int(requests), int(seed), float(rate_scale))
    sim.planned = evaluate(facts, dep, Targets())
    asker.flush()
    return sim
