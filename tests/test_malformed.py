"""The malformed-input corpus (tests/malformed/cases.yaml): every hostile or
careless input ends in a located message, exit status 2 (1 only for a FAIL
verdict), no traceback, within 10 s; the resource cases run in a subprocess
capped at 500 MB of address space.

Most cases run in this process through click's CliRunner (fast); only the
`isolate: true` ones pay for a subprocess."""

from __future__ import annotations

import os
import re
import resource
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

HERE = Path(__file__).resolve().parent / "malformed"
REPO = HERE.parents[1]
CASES = yaml.safe_load((HERE / "cases.yaml").read_text(encoding="utf-8"))
LOCATED = re.compile(r"(^|\n)\s*[^\s:]+:\d+:\d+: ")
SECONDS = 10
MEMORY = 500 * 2**20


def test_corpus_size():
    assert len(CASES) >= 150
    assert len({c["id"] for c in CASES}) == len(CASES), "case ids are unique"


def _base_text() -> str:
    return (HERE / "base.yaml").read_text(encoding="utf-8")


def _generated(spec: dict) -> bytes:
    if spec["generate"] == "huge":      # a file over the file_bytes limit, made here (not committed)
        return _base_text().encode() + b"# " + b"x" * (9 * 2**20) + b"\n"
    raise KeyError(spec["generate"])


def _spec_bytes(spec: dict) -> bytes:
    if "file" in spec:
        return (HERE / spec["file"]).read_bytes()
    if "text" in spec:
        return spec["text"].encode()
    if "generate" in spec:
        return _generated(spec)
    text = _base_text()
    for old, new in spec.get("replace", []):
        assert old in text, f"case replaces text that base.yaml does not have: {old!r}"
        text = text.replace(old, new, 1)
    return text.encode()


def _query(query) -> str:
    if isinstance(query, dict) and query.get("generate") == "terms":
        return "+".join(["1"] * query["n"])
    return query


def _prepare(case: dict, tmp: Path) -> list:
    """Write the case's files into `tmp` and return the specc command line."""
    for name in ("lib", "hardware"):
        os.symlink(REPO / "specs" / name, tmp / name)
    spec = tmp / "spec.yaml"
    spec.write_bytes(_spec_bytes(case.get("spec", {})))
    for name, source in case.get("extra_files", {}).items():
        (tmp / name).write_bytes((HERE / source).read_bytes())
    fill = {"{spec}": str(spec), "{tmp}": str(tmp)}
    if "cmd" in case:
        return [fill.get(a, a) for a in case["cmd"]]
    if "query" in case:
        return ["eval", str(spec), _query(case["query"])]
    if "claims" in case:
        claims = tmp / "claims.yaml"
        body = case["claims"]
        claims.write_bytes((HERE / body["file"]).read_bytes() if isinstance(body, dict) else body.encode())
        return ["verify", str(spec), "--claims", str(claims)]
    if "cli" in case:
        return [a.replace("{spec}", str(spec)).replace("{tmp}", str(tmp)) for a in case["cli"]]
    if "config" in case:
        return ["import-hf", str(HERE / case["config"]), "-o", str(tmp / "out.yaml")]
    return ["check", str(spec)]


def _run_inline(args) -> tuple[int, str]:
    from click.testing import CliRunner

    from specc.cli import main

    result = CliRunner().invoke(main, args)
    output = result.output
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        import traceback

        output += "".join(traceback.format_exception(*result.exc_info))
    return result.exit_code, output


_CAPPED = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, ({mem}, {mem}))
resource.setrlimit(resource.RLIMIT_CPU, ({seconds}, {seconds}))
from specc.cli import main
sys.argv = ["specc"] + sys.argv[1:]
main()
"""


def _run_isolated(args) -> tuple[int, str]:
    proc = subprocess.run([sys.executable, "-c", _CAPPED.format(mem=MEMORY, seconds=SECONDS), *args], capture_output=True,
                          text=True, timeout=SECONDS * 3, cwd=REPO, errors="replace")
    return proc.returncode, proc.stdout + proc.stderr


def _cpu() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_malformed_input(case, tmp_path):
    args = _prepare(case, tmp_path)
    # CPU seconds, not wall time: CI machines are shared (a subprocess is also capped by RLIMIT_CPU)
    started = _cpu()
    code, output = (_run_isolated if case.get("isolate") else _run_inline)(args)
    elapsed = _cpu() - started
    assert "Traceback" not in output, output[-3000:]
    assert "MemoryError" not in output and "RecursionError" not in output, output[-3000:]
    assert code == case.get("exit", 2), f"exit {code}, expected {case.get('exit', 2)}:\n{output[-3000:]}"
    if case.get("located", True):
        assert LOCATED.search(output), f"no file:line:col in:\n{output[:2000]}"
    if "message" in case:
        assert case["message"] in output, output[:2000]
    if "forbid" in case:
        assert case["forbid"] not in output, "the error echoes a file it must not read"
    assert elapsed < SECONDS, f"{elapsed:.1f} s"
