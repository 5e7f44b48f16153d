"""A non-editable install works from any folder (tests/check_install.sh).

Slow (a fresh venv and `pip install .`, about two minutes), so it runs only when
SPECC_INSTALL_TEST=1:  SPECC_INSTALL_TEST=1 python -m pytest -q tests/test_install.py"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest

from conftest import REPO

pytestmark = pytest.mark.skipif(os.environ.get("SPECC_INSTALL_TEST") != "1",
                                reason="slow: set SPECC_INSTALL_TEST=1 to install specc into a fresh venv")


def test_installed_specc_works_from_an_empty_folder():
    if shutil.which("git") is None:
        pytest.skip("the script copies the tree with git ls-files")
    proc = subprocess.run(["sh", str(REPO / "tests" / "check_install.sh")], capture_output=True, text=True,
                          env={**os.environ, "PYTHON": sys.executable}, timeout=1200)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    installed = lines[0].removeprefix("installed: ")
    assert "site-packages" in installed and not installed.startswith(str(REPO)), installed
    # by shipped name, then a copy of the spec in the empty folder: the same numbers
    assert lines[1:5] == ["params() = 8,190,735,360 params",
                          "device_memory(device=rtx_4090) = 25,757,220,864 B"] * 2   # specs/hardware/rtx_4090.yaml
    assert lines[5].startswith("weight_bytes() / weight_bytes(spec=qwen3_32b) = ")   # a shipped sibling
    assert lines[6] == "api: int 8,190,735,360 params"
    assert re.fullmatch(r"\d+ pass(, \d+ xfail)? \(\d+ claims\)", lines[7]), lines[7]   # its claims are shipped too
    assert lines[8] == "first verify: shipped forms"          # specs/compiled/ is installed and current
