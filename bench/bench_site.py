"""Wall time of `specc site` for every shipped spec (a benchmark, not a test).

Times whole processes against `python -c pass` (the baseline, measured in the
same run: the ratios say how far a run is from the cost of starting Python at
all, so they stay comparable on a loaded or a faster machine):

* cold          — an empty cache (parses, YAML trees, models, export parts): every
                  part of every spec is exported, on --jobs worker processes;
* warm          — nothing changed since: every part is read from the cache
                  (the issue's goal: at most 10 s on a 2-core machine);
* one spec edit — one spec's bytes changed (a comment appended): its parts are
                  exported again, and those of specs whose claims ask it;
* first after install — the shipped specs themselves (specs/*.yaml, run beside
                  specs/) with an empty cache: their exports ship with the package
                  (specs/compiled/site/, render/shipped_site.py), as a fresh install
                  has them.

The specs of the first three are copied to a temporary folder (the edit never
touches the repository; the copy's devices, libraries and schemes are the shipped
ones), so no shipped export answers for them; every cache is a temporary folder.

    python bench/bench_site.py [--runs 3] [--jobs 2] [--no-cold]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SPECC = [sys.executable, "-c", "import sys; from specc.cli import main; sys.argv[0] = 'specc'; main()"]
EDITED = "llama2_7b.yaml"


def timed(cmd, env) -> tuple[float, str]:
    t0 = time.perf_counter()
    out = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - t0
    if out.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{out.stderr}")
    return elapsed, out.stderr


def exported(stderr: str) -> str:
    """The run's own count of cached and exported parts (its first progress line)."""
    found = re.search(r"(\d+) export parts: (\d+) cached, (?:(\d+) shipped with specc, )?(\d+) to export", stderr)
    if not found:
        return ""
    shipped = f", {found.group(3)} read from the package" if found.group(3) else ""
    return f"{found.group(4)} of {found.group(1)} parts exported{shipped}"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3, help="runs of the baseline and of the warm build (median)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--no-cold", action="store_true", help="skip the cold build (minutes); warm starts from "
                        "whatever the temporary cache holds, so this fills it first without timing it")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        specs = tmp / "specs"
        shutil.copytree(ROOT / "specs", specs)
        env = dict(os.environ, SPECC_CACHE_DIR=str(tmp / "cache"))
        site = SPECC + ["site", "-o", str(tmp / "site"), "--specs", str(specs / "*.yaml"),
                        "--jobs", str(args.jobs)]
        base = statistics.median(timed([sys.executable, "-c", "pass"], env)[0] for _ in range(args.runs))
        rows = [("python -c pass", base, "")]
        cold, err = timed(site, env)
        if not args.no_cold:
            rows.append(("cold (empty cache)", cold, exported(err)))
        warm = [timed(site, env) for _ in range(args.runs)]
        rows.append((f"warm (median of {args.runs})", statistics.median(t for t, _ in warm), exported(warm[-1][1])))
        with open(specs / EDITED, "a", encoding="utf-8") as fh:
            fh.write("\n# edited by bench/bench_site.py\n")
        edit, err = timed(site, env)
        rows.append((f"one spec edited ({EDITED})", edit, exported(err)))
        fresh = dict(env, SPECC_CACHE_DIR=str(tmp / "fresh-cache"))
        first, err = timed(SPECC + ["site", "-o", str(tmp / "site-first"), "--jobs", str(args.jobs)], fresh)
        rows.append(("first after install (empty cache)", first, exported(err)))
    width = max(len(name) for name, _, _ in rows)
    print(f"specc site, every shipped spec; {os.cpu_count()} cores, --jobs {args.jobs}, "
          f"load average {os.getloadavg()[0]:.1f}")
    for name, seconds, note in rows:
        print(f"{name:<{width}}  {seconds:8.2f} s  {seconds / base:8.1f}× python -c pass  {note}")


if __name__ == "__main__":
    main()
