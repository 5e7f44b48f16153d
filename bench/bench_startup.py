"""Start-up and throughput of whole `specc` processes (a benchmark, not a test).

Times, as the median of N runs, each against `python -c pass` in the same
interpreter:

* first verify — `specc verify specs/*.yaml` as after a fresh install: an empty
                SPECC_CACHE_DIR (every cache: parses, YAML, models, compiled queries),
                the .pyc files present (pip compiles them when it installs; each
                command is run once before timing); the shipped compiled forms
                (specs/compiled/) are what it reads. Timed interleaved with the
                warm verify below (and cold eval with warm eval), so a changing
                load hits both alike. Also without any .pyc
                (PYTHONPYCACHEPREFIX set to a new empty folder for every run);
* cold eval   — `specc eval specs/deepseek_v41.yaml 'flops(P=8192)'` with an
                empty cache (a declared query's shape: in the shipped forms), and
                `flops(P=8192, B=3)` (a shape they do not hold: compiled there);
* warm eval   — the same with the cache filled by the run before, and with a
                value never asked (answered by the compiled closed form);
* warm verify — `specc verify specs/*.yaml` (every shipped claim) a second time
                (it reads the shipped forms again: the first run had nothing to
                store), and with every store in the user's cache (signed), as a
                run without shipped forms leaves it: the ratio's baseline;
* sweep       — `specc sweep specs/qwen3_8b.yaml 'flops(P=P, extrapolate=true)'
                --over P=1..1000000 --format csv -o <tmp>`, cache filled;

and the symbolic path (`--no-fast`) of eval and verify for comparison. It ends
with the ratios issue 17 sets goals for: first verify / warm verify (≤ 1.5×) and
cold eval / warm eval.

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


# copies each shipped spec's store into the user's cache (signed with its key), as a first
# run that had to compile them would have left it: the warm verify the ratio is taken against
# (a tree without them, run for a before/after comparison: its first run filled the cache)
FILL = ("import sys; from specc.compiler.lanes import compiled\n"
        "if not hasattr(compiled, 'shipped'): sys.exit(0)\n"
        "for path in sys.argv[1:]:\n"
        "    store = compiled.shipped(path)\n"
        "    assert store is not None, path + ': no current shipped form (specc ship-compiled)'\n"
        "    compiled.save(path, store)\n")


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
        verify = SPECC + ["verify", *specs]
        timed(verify, env)                       # every .pyc written, as pip install leaves them
        # first and warm verify interleaved, so a load that changes during the run hits both alike
        firsts, warms = [], []
        for _ in range(runs):
            empty()
            firsts.append(timed(verify, env))
            subprocess.run([sys.executable, "-c", FILL, *specs], cwd=ROOT, env=env, check=True)
            warms.append(timed(verify, env))
        first, warm = statistics.median(firsts), statistics.median(warms)
        rows.append((f"first verify ({len(specs)} specs, empty cache, .pyc present)", first))
        rows.append((f"warm verify ({len(specs)} specs; stores in the user's cache)", warm))
        no_pyc = []
        for i in range(runs):
            empty()
            no_pyc.append(timed(verify, dict(env, PYTHONPYCACHEPREFIX=str(Path(tmp) / f"pyc-{i}"))))
        rows.append(("first verify, no .pyc either", statistics.median(no_pyc)))
        colds, warm_evals = [], []              # interleaved too
        for _ in range(runs):
            empty()
            colds.append(timed(SPECC + EVAL, env))
            warm_evals.append(timed(SPECC + EVAL, env))
        cold, warm_eval = statistics.median(colds), statistics.median(warm_evals)
        rows.append(("cold eval (empty cache)", cold))
        rows.append(("warm eval (same query, a second time)", warm_eval))
        rows.append(("cold eval, a shape not shipped (flops(P=8192, B=3))",
                     median(SPECC + ["eval", "specs/deepseek_v41.yaml", "flops(P=8192, B=3)"], env, runs,
                            before=empty)))
        # two other values of the same shape compile its closed form; a third value is then
        # answered by the printed code alone
        timed(SPECC + ["eval", "specs/deepseek_v41.yaml", "flops(P=4096)"], env)
        timed(SPECC + ["eval", "specs/deepseek_v41.yaml", "flops(P=2048)"], env)
        fresh = iter(range(9000, 9000 + runs))
        rows.append(("warm eval (a new value: compiled closed form)",
                     median_each(lambda: SPECC + ["eval", "specs/deepseek_v41.yaml", f"flops(P={next(fresh)})"],
                                 env, runs)))
        rows.append(("warm eval --no-fast", median(SPECC + EVAL + ["--no-fast"], env, runs)))
        timed(verify, env)
        rows.append((f"warm verify ({len(specs)} specs; the shipped forms again)", median(verify, env, runs)))
        rows.append(("warm verify --no-fast", median(SPECC + ["verify", *specs, "--no-fast"], env, runs)))
        timed(SPECC + SWEEP + [csv], env)
        rows.append(("sweep 10^6 points to CSV", median(SPECC + SWEEP + [csv], env, runs)))
    width = max(len(name) for name, _ in rows)
    print(f"median of {runs} runs, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")
    for name, seconds in rows:
        print(f"{name:<{width}}  {seconds:7.3f} s  {seconds / base:6.1f}× python -c pass")
    print(f"first verify / warm verify: {first / warm:.2f}× (goal ≤ 1.5×)")
    print(f"cold eval / warm eval:      {cold / warm_eval:.2f}×")


if __name__ == "__main__":
    main()
