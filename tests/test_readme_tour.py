"""The README's "A five-minute tour" runs, command by command.

The commands are read from the README itself (the first fenced block under the
heading), so the test follows edits to the tour. They run in a scratch folder
holding a copy of specs/, so the commands that write (`-o`, `>`, `specc docs`,
`specc blocks -o specs/lib/README.md`) never touch the repository."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
HEADING = "## A five-minute tour"


def tour_commands(readme: str) -> list[str]:
    after = readme.split(HEADING, 1)[1]
    block = re.search(r"```[a-z]*\n(.*?)```", after, re.S).group(1)
    commands = []
    for line in block.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        cut = _comment_start(line)          # a trailing comment, outside quotes
        kept = line[:cut].rstrip() if cut is not None else line
        commands.append(kept)
    return commands


def _comment_start(line: str) -> int | None:
    quote = None
    for i, ch in enumerate(line):
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            return i
    return None


COMMANDS = tour_commands((REPO / "README.md").read_text(encoding="utf-8"))


def test_the_tour_is_found():
    assert len(COMMANDS) >= 10
    assert all(c.startswith("specc ") for c in COMMANDS), COMMANDS


# What each tour command must print or write, by a text the command starts with: regular
# expressions its standard output must match ("out"), files it must write with what they
# must hold ("files": path -> regular expression, or None for a binary file's magic bytes).
# A tour command without an entry fails the test, so a new command brings its check.
EXPECT = {
    "specc verify specs/qwen3_8b.yaml specs/deepseek_v41.yaml": {
        "out": [r"(?m)^specs/qwen3_8b\.yaml\s+\d+ pass$", r"(?m)^specs/deepseek_v41\.yaml\s+\d+ pass$",
                r"(?m)^\d+ pass \(\d+ claims\)$"]},
    "specc verify specs/qwen3_8b.yaml --only total-params --verbose": {
        "out": [r"(?m)^PASS\s+qwen3-8b\.total-params\s+000_f4a9f3652d679e1f\.txt:49$",
                r"params\(\)  =  8190735360", r"expected 8\.19 billion params"]},
    "specc verify specs/deepseek_v41.yaml --only b2d --format md": {
        "out": [r"\| verdict \| claim \|", r"\| PASS \| `v41-flash\.b2d-", r"\*\*Summary:\*\* PASS \d+, FAIL 0"]},
    "specc verify specs/*.yaml --format json": {
        "files": {"results.json": r'"verdict": "PASS"'}},
    "specc eval specs/qwen3_8b.yaml 'flops(B=1, S=0, P=8192)'": {
        "out": [r"^flops\(B=1, S=0, P=8192\) = 133,594,323,353,600 FLOPs$"]},
    "specc eval specs/deepseek_v41.yaml 'flops(P=8192)' 'flops(P=8192, mode=reference)'": {
        "out": [r"(?m)^flops\(P=8192\) = [\d,]+ FLOPs$", r"(?m)^flops\(P=8192, mode=reference\) = [\d,]+ FLOPs$"]},
    "specc eval specs/deepseek_v41.yaml 'kv_bytes_per_token(format=production)'": {
        "out": [r"= 890 bytes/token$"]},
    "specc eval specs/qwen3_8b.yaml 'b_max(device=rtx_4090, H=8192, workspace=2 GiB)'": {"out": [r"\) = 5$"]},
    "specc eval specs/qwen3_8b.yaml 'params(group=dense_shared_ffn) / params()'": {
        "out": [r"= 1769472/2666255 +≈ 0\.663654$"]},
    "specc eval specs/qwen3_8b.yaml --json 'state_bytes(H=8192)'": {
        "out": [r'"value": 1207959552,', r'"unit": "B"']},
    "specc eval specs/qwen3_8b.yaml --symbolic": {
        "out": [r"= 13891534848\*B\*P \+ 589824\*B\*\(P\*S \+ P\*\(P \+ 1\)/2\) \+ 1244659712\*B FLOPs$"]},
    "specc eval specs/llama2_70b.yaml 'tpot(": {"out": [r"^tpot\(H=4095, device=h100_sxm, tp=8\) ≈ \d+\.\d+ ms$"]},
    "specc eval specs/llama2_70b.yaml --json 'tpot(": {"out": [r'"value": "\d+/\d+"', r'"unit": "s"']},
    "specc eval specs/qwen3_8b.yaml 'kv_bytes_per_token(n_kv=4)": {"out": [r"= 1/2 +≈ 0\.5$"]},
    "specc eval specs/qwen36_35b_a3b.yaml": {"out": [r"= 90262007/21330040 +≈ 4\.23168$"]},
    "specc check specs/*.yaml": {"out": [r"(?m)^specs/qwen3_8b\.yaml: ok — \d+ op nodes",
                                         r"(?m)^specs/kimi_k3\.yaml: ok"]},
    "specc graph specs/kimi_k3.yaml": {"files": {"k3.svg": r"<svg"}},
    "specc graph specs/qwen3_8b.yaml": {"files": {"layer.png": None}},
    "specc graph specs/deepseek_v41.yaml": {"files": {"v41.json": r'"nodes"'}},
    "specc table specs/qwen3_8b.yaml --kind modules": {
        "out": [r"### Qwen3-8B: modules per layer", r"\| Module \| Role \|"]},
    "specc table specs/qwen3_8b.yaml specs/kimi_k3.yaml": {"out": [r"\| Model \| Params", r"Qwen3-8B", r"Kimi"]},
    "specc report": {"files": {"reports/qwen3_8b/report.html": r"Sources", "reports/qwen3_8b/README.md": r"## Claims"}},
    "specc plot": {"files": {"state.svg": r"<svg"}},
    "specc docs": {"files": {"docs/README.md": r"specc", "docs/qwen3_8b/README.md": r"## Claims"}},
    "specc coverage --by-model": {"out": [r"(?m)^specs/catalog/000\.yaml +\d+", r"qwen3-8b"]},
    "specc coverage --missing --min-percent 95": {"out": [r"(?m)^specs/catalog/004\.yaml +\d+ +\d+ +\d+\.\d%"]},
    "specc blocks -o specs/lib/README.md": {"files": {"specs/lib/README.md": r"pre_norm_decoder_layer"}},
}
# the end-to-end regenerations (every spec's reports and docs, the library reference, which
# tests/test_blocks.py also regenerates): run with --runslow (tests/conftest.py)
SLOW = ("specc report", "specc docs", "specc blocks")


def expectation(command: str) -> dict:
    found = [key for key in EXPECT if command.startswith(key)]
    assert found, f"the tour command {command!r} has no expected output in EXPECT"
    return EXPECT[max(found, key=len)]


@pytest.fixture(scope="session")
def scratch(tmp_path_factory):
    root = tmp_path_factory.mktemp("tour")
    shutil.copytree(REPO / "specs", root / "specs")
    return root


@pytest.mark.parametrize("command", [pytest.param(c, marks=pytest.mark.slow) if c.startswith(SLOW) else c
                                     for c in COMMANDS])
def test_tour_command(command, scratch):
    expect = expectation(command)
    if shutil.which("dot") is None and re.search(r"--format (svg|png)|specc (report|docs)", command):
        pytest.skip("needs Graphviz")
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    proc = subprocess.run(command, shell=True, cwd=scratch, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"{command}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
    assert "Traceback" not in proc.stderr
    for pattern in expect.get("out", []):
        assert re.search(pattern, proc.stdout.strip()), f"{command}: no {pattern!r} in\n{proc.stdout[-2000:]}"
    for name, pattern in expect.get("files", {}).items():
        path = scratch / name
        assert path.is_file(), f"{command} did not write {name}"
        if pattern is None:
            assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name
        else:
            assert re.search(pattern, path.read_text(encoding="utf-8")), f"{name} lacks {pattern!r}"


def test_every_tour_command_has_an_expected_output():
    for command in COMMANDS:
        expectation(command)
