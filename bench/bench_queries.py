"""Query cost vs context length (a benchmark, not a test).

Prints, for each spec, the time of `flops(P=...)` at growing P in one process
after compiling, and the wall time of a cold `specc eval` process. Query cost
must stay flat in the context length: sums over positions are closed forms.

    python bench/bench_queries.py [specs/<model>.yaml ...]
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from specc.compiler.query.queries import QueryEngine
from specc.compiler.schema.spec import load_spec

ROOT = Path(__file__).resolve().parents[1]
CONTEXTS = (8192, 131072, 1048576)


def in_process(path: Path) -> None:
    t0 = time.perf_counter()
    engine = QueryEngine(load_spec(path))
    engine.evaluate_text("flops(P=1)")
    print(f"{path.name}: load + compile + first query {time.perf_counter() - t0:.3f} s")
    # extrapolate=true: the largest contexts exceed some specs' declared maximum
    for query in ("flops(B=1, S=0, P={n}, extrapolate=true)", "flops(B=1, S={n}, P=1, extrapolate=true)",
                  "state_bytes(H={n}, extrapolate=true)", "request_flops(P={n}, G=1025, extrapolate=true)"):
        cells = []
        for n in CONTEXTS:
            text = query.format(n=n - (1 if "S=" in query and "S=0" not in query else 0))
            t0 = time.perf_counter()
            for _ in range(20):
                engine.evaluate_text(text)
            cells.append(f"{n:>8}: {(time.perf_counter() - t0) / 20 * 1e3:6.2f} ms")
        print(f"  {query:<48} " + "  ".join(cells))


def cold(path: Path) -> None:
    for n in (8192, 1048576):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "specc", "eval", str(path), f"flops(B=1, S=0, P={n}, extrapolate=true)"],
                       check=True, capture_output=True)
        print(f"  cold process, flops(P={n}): {time.perf_counter() - t0:.3f} s")
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import sympy"], check=True)
    print(f"  (of which a bare `import sympy` process: {time.perf_counter() - t0:.3f} s)")


if __name__ == "__main__":
    paths = [Path(p) for p in sys.argv[1:]] or sorted((ROOT / "specs").glob("*.yaml"))
    for spec_path in paths:
        in_process(spec_path)
        cold(spec_path)
