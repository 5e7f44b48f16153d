"""First-run cost (empty cache) of this tree against an earlier revision
(a benchmark, not a test).

A first run must build everything a warm run reads from the cache: parse
the spec and its library, compile the model, evaluate the claims, write the
caches. This script installs REV (default 9381aad, the tree before compiled
queries) and the working tree side by side, each editable in its own
throw-away venv over the same site-packages, and times the same commands
with an empty SPECC_CACHE_DIR, interleaved so load on a shared machine hits
both alike:

* cold eval    — `specc eval specs/deepseek_v41.yaml 'flops(P=8192)'`
* cold verify  — `specc verify specs/*.yaml` (each tree's own specs and claims)

It prints the median wall and CPU seconds and the ratio of this tree to REV.
With --instructions it also counts the instructions of one run of each
under valgrind (exact and repeatable whatever else the machine is doing;
about a minute for eval and several for verify).

    python bench/bench_cold.py [--rev 9381aad] [--runs 7] [--instructions] [--only eval|verify]
"""

from __future__ import annotations

import argparse
import glob
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def install(tree: Path, venv: Path) -> Path:
    """An editable install of `tree` in a venv that shares this interpreter's packages."""
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-deps", "-e", str(tree)],
                   check=True, capture_output=True)
    return venv / "bin" / "python"


def command(python: Path, tree: Path, what: str) -> list[str]:
    launcher = [str(python), "-c", "import sys; sys.argv[0] = 'specc'; from specc.cli import main; main()"]
    if what == "eval":
        return launcher + ["eval", "specs/deepseek_v41.yaml", "flops(P=8192)"]
    return launcher + ["verify", *sorted(glob.glob(str(tree / "specs" / "*.yaml")))]


def environment(cache: Path) -> dict:
    env = dict(os.environ, SPECC_CACHE_DIR=str(cache))
    env.pop("PYTHONDONTWRITEBYTECODE", None)      # as an installed package runs: from .pyc files
    return env


def cold(cmd, tree: Path, cache: Path) -> tuple[float, float]:
    shutil.rmtree(cache, ignore_errors=True)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    out = subprocess.run(cmd, cwd=tree, env=environment(cache), capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode not in (0, 1):
        sys.exit(f"failed in {tree}: {' '.join(cmd[3:])}\n{out.stderr}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def instructions(cmd, tree: Path, cache: Path) -> int | None:
    if shutil.which("valgrind") is None:
        return None
    shutil.rmtree(cache, ignore_errors=True)
    out = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *cmd], cwd=tree,
                         env=environment(cache), capture_output=True, text=True)
    found = re.search(r"Collected : (\d+)", out.stderr)
    return int(found.group(1)) if found else None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rev", default="9381aad", help="the earlier revision to compare with")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--instructions", action="store_true", help="also count instructions under valgrind")
    parser.add_argument("--only", choices=("eval", "verify"), help="time one of the two commands")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        base_tree = tmp / "base"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(base_tree), args.rev],
                       check=True, capture_output=True)
        try:
            trees = {args.rev: base_tree, "this tree": ROOT}
            pythons = {name: install(tree, tmp / f"venv-{i}") for i, (name, tree) in enumerate(trees.items())}
            print(f"median of {args.runs} interleaved cold runs, {os.cpu_count()} cores, "
                  f"load average {os.getloadavg()[0]:.1f}")
            for what in [args.only] if args.only else ("eval", "verify"):
                cmds = {name: command(pythons[name], trees[name], what) for name in trees}
                for name in trees:              # once each, so every .pyc exists before timing
                    cold(cmds[name], trees[name], tmp / "cache")
                times = {name: [] for name in trees}
                for _ in range(args.runs):
                    for name in trees:
                        times[name].append(cold(cmds[name], trees[name], tmp / f"cache-{len(times[name])}"))
                wall = {n: statistics.median(t[0] for t in times[n]) for n in trees}
                cpu = {n: statistics.median(t[1] for t in times[n]) for n in trees}
                line = "  ".join(f"{n}: {wall[n]:.3f} s wall, {cpu[n]:.3f} s CPU" for n in trees)
                print(f"cold {what:<6}  {line}  ->  ratio {cpu['this tree'] / cpu[args.rev]:.3f} (CPU), "
                      f"{wall['this tree'] / wall[args.rev]:.3f} (wall)")
                if args.instructions:
                    counts = {n: instructions(cmds[n], trees[n], tmp / "cache-i") for n in trees}
                    if None not in counts.values():
                        print(f"            instructions: " + "  ".join(f"{n}: {c:,}" for n, c in counts.items())
                              + f"  ->  ratio {counts['this tree'] / counts[args.rev]:.3f}")
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(base_tree)],
                           capture_output=True)


if __name__ == "__main__":
    main()
