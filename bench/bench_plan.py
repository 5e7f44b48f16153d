"""Speed of `specc plan` and `specc simulate` (a benchmark, not a test).

Each figure is a ratio to a baseline measured in the same run, on the same
machine, so load from other work affects both alike:

* search       — deployments screened per second by the vectorized search, against
                 the exact lane (serving.evaluate per deployment, warm compiled store);
* typical plan — one model, 5 device types, ≤ 64 GPUs, every layout, 3 formats (the
                 planner's default: the spec's default, weights=fp8,
                 weights=fp8+kv=fp8), both modes, warm (goal < 1 s); against the exact lane's estimated
                 time for the same deployments;
* simulator    — 10⁵ requests (goal < 10 s), against the same simulator taking every
                 decode step on its own (measured on 10⁴ requests, scaled per request).

    python bench/bench_plan.py [--spec specs/llama2_70b.yaml] [--requests 100000]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from fractions import Fraction
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--spec", default=str(ROOT / "specs" / "llama2_70b.yaml"))
    ap.add_argument("--formats", default="", help="comma-separated; default: the planner's default formats")
    ap.add_argument("--requests", type=int, default=100000)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()

    from specc.plan import serving
    from specc.plan.queries import Asker, Layout
    from specc.plan.run import formats_of, plan
    from specc.plan.simulate import simulate

    devices = ("h100_sxm", "h200", "b200", "mi300x", "a100_80gb")
    names = args.formats.split(",") if args.formats else None
    kw = dict(ttft="1 s", tpot="50 ms", devices=devices, max_gpus=64, formats=names)
    t0 = time.perf_counter()
    p = plan(args.spec, 20, 2000, 300, **kw)
    cold = time.perf_counter() - t0
    warm, search = [], []
    for _ in range(args.runs):
        t0 = time.perf_counter()
        p = plan(args.spec, 20, 2000, 300, **kw)
        warm.append(time.perf_counter() - t0)
        search.append(p.search_seconds)
    warm_s, search_s = statistics.median(warm), statistics.median(search)
    rate_vector = p.candidates / search_s

    # the exact lane on a sample of the same deployments
    asker = Asker(args.spec)
    traffic = serving.Traffic(Fraction(20), 2000, 300)
    rules = serving.EngineRules()
    targets = serving.Targets(Fraction(1), Fraction(1, 20))
    rng = random.Random(0)
    sample = []
    for fmt in formats_of(asker.spec, names):
        for device in devices:
            for tp in (1, 2, 4, 8):
                lay = Layout(device, tp, 1, 1, fmt)
                for dp in (1, 2, 4):
                    sample.append(serving.Deployment(lay, "aggregated", dp))
    rng.shuffle(sample)
    sample = sample[:100]
    facts = {}
    from specc.dsl.errors import SpecError

    kept = []
    for dep in sample:                                  # warm the exact lane (compile once)
        try:
            facts.setdefault(dep.layout, serving.LayoutFacts(asker, dep.layout, traffic, rules))
        except SpecError:                               # a format the spec refuses (the plan skips it too)
            continue
        serving.evaluate(facts[dep.layout], dep, targets)
        kept.append(dep)
    sample = kept
    asker.flush()
    asker = Asker(args.spec)                           # a fresh process-level memo, warm store
    t0 = time.perf_counter()
    for dep in sample:
        f = serving.LayoutFacts(asker, dep.layout, traffic, rules)
        serving.evaluate(f, dep, targets)
    exact_per = (time.perf_counter() - t0) / len(sample)
    rate_exact = 1 / exact_per

    print(f"search: {p.candidates:,} deployments over {p.layouts} layouts in {search_s:.3f} s = "
          f"{rate_vector:,.0f} deployments/s; exact lane {rate_exact:,.0f}/s; ratio {rate_vector / rate_exact:,.0f}×")
    print(f"typical plan (5 devices, ≤ 64 GPUs, {len(p.space.formats)} formats, both modes): cold {cold:.2f} s, warm {warm_s:.3f} s "
          f"(goal < 1 s); the exact lane would take ≈ {p.candidates * exact_per:,.0f} s "
          f"({p.candidates * exact_per / warm_s:,.0f}× the warm plan)")

    lay = Layout("h200", 8)
    facts = serving.LayoutFacts(Asker(args.spec), lay, serving.Traffic(Fraction(10), 2000, 300), rules)
    dep = serving.Deployment(lay, "aggregated", 1)
    t0 = time.perf_counter()
    sim = simulate(facts.asker, facts, dep, requests=args.requests, seed=0)
    fast = time.perf_counter() - t0
    base_n = max(1, args.requests // 10)
    t0 = time.perf_counter()
    simulate(facts.asker, facts, dep, requests=base_n, seed=0, skip=False)
    slow = (time.perf_counter() - t0) * args.requests / base_n
    print(f"simulator: {args.requests:,} requests in {fast:.2f} s (goal < 10 s; mean TTFT {sim.mean('ttft') * 1e3:.1f} ms, "
          f"TPOT {sim.mean('tpot') * 1e3:.2f} ms); step by step ≈ {slow:.1f} s ({slow / fast:.1f}× slower)")


if __name__ == "__main__":
    main()
