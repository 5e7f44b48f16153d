"""Start-up and throughput of whole `specc` processes (a benchmark, not a test).

Times, as the median of N runs, each against `python -c pass` in the same
interpreter:

* cold eval   — `specc eval specs/deepseek_v41.yaml 'flops(P=8192)'` with an
                empty cache (every cache: parses, YAML, models, compiled queries);
* warm eval   — the same with the cache filled by the run before, and with a
                value never asked (answered by the compiled closed form);
* warm verify — `specc verify specs/*.yaml` (every shipped claim), cache filled;
* sweep       — `specc sweep specs/qwen3_8b.yaml 'flops(P=P, extrapolate=true)'
                --over P=1..1000000 --format csv -o <tmp>`, cache filled;

and the symbolic path (`--no-fast`) of eval and verify for comparison.

    python bench/bench_startup.py [--runs 5]
"""

from __future__ import annotations

import argparse
import glob
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SPECC = [sys.executable, "-c", "import sys; from specc.cli import main; sys.argv[0] = 'specc'; main()"]
EVAL = ["eval", "specs/deepseek_v41.yaml", "flops(P=8192)"]
SWEEP = ["sweep", "specs/qwen3_8b.yaml", "flops(P=P, extrapolate=true)", "--over", "P=1..1000000",
         "--format", "csv", "-o"]


def timed(cmd, env) -> float:
    t0 = time.perf_counter()
    out = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - t0
    if out.returncode not in (0, 1):
        sys.exit(f"failed: {' '.join(cmd)}\n{out.stderr}")
    return elapsed


def median(cmd, env, runs, before=None) -> float:
    times = []
    for _ in range(runs):
        if before:
            before()
        times.append(timed(cmd, env))
    return statistics.median(times)


def median_each(make_cmd, env, runs) -> float:
    return statistics.median(timed(make_cmd(), env) for _ in range(runs))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    specs = sorted(glob.glob(str(ROOT / "specs" / "*.yaml")))
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp) / "cache"
        env = dict(os.environ, SPECC_CACHE_DIR=str(cache))
        csv = str(Path(tmp) / "f.csv")

        def empty():
            subprocess.run(["rm", "-rf", str(cache)])

        base = median([sys.executable, "-c", "pass"], env, runs)
        rows = [("python -c pass", base)]
        rows.append(("cold eval (empty cache)", median(SPECC + EVAL, env, runs, before=empty)))
        timed(SPECC + EVAL, env)
        rows.append(("warm eval (same query: its stored value)", median(SPECC + EVAL, env, runs)))
        # two other values of the same shape compile its closed form; a third value is then
        # answered by the printed code alone
        timed(SPECC + ["eval", "specs/deepseek_v41.yaml", "flops(P=4096)"], env)
        timed(SPECC + ["eval", "specs/deepseek_v41.yaml", "flops(P=2048)"], env)
        fresh = iter(range(9000, 9000 + runs))
        rows.append(("warm eval (a new value: compiled closed form)",
                     median_each(lambda: SPECC + ["eval", "specs/deepseek_v41.yaml", f"flops(P={next(fresh)})"],
                                 env, runs)))
        rows.append(("warm eval --no-fast", median(SPECC + EVAL + ["--no-fast"], env, runs)))
        timed(SPECC + ["verify", *specs], env)
        rows.append((f"warm verify ({len(specs)} specs)", median(SPECC + ["verify", *specs], env, runs)))
        rows.append(("warm verify --no-fast", median(SPECC + ["verify", *specs, "--no-fast"], env, runs)))
        timed(SPECC + SWEEP + [csv], env)
        rows.append(("sweep 10^6 points to CSV", median(SPECC + SWEEP + [csv], env, runs)))
    width = max(len(name) for name, _ in rows)
    print(f"median of {runs} runs, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")
    for name, seconds in rows:
        print(f"{name:<{width}}  {seconds:7.3f} s  {seconds / base:6.1f}× python -c pass")


if __name__ == "__main__":
    main()
