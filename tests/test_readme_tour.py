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


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    root = tmp_path_factory.mktemp("tour")
    shutil.copytree(REPO / "specs", root / "specs")
    return root


@pytest.mark.parametrize("command", COMMANDS)
def test_tour_command(command, scratch):
    if shutil.which("dot") is None and re.search(r"--format (svg|png)|specc (report|docs)", command):
        pytest.skip("needs Graphviz")
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    proc = subprocess.run(command, shell=True, cwd=scratch, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"{command}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
    assert "Traceback" not in proc.stderr
