"""Shared fixtures: the repository root, one QueryEngine per shipped spec, and a
helper that writes a throw-away spec next to a copy of the standard library."""

from __future__ import annotations

import os
import shutil
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SPECS = REPO / "specs"
QWEN = SPECS / "qwen3_8b.yaml"
V41 = SPECS / "deepseek_v41.yaml"


# ------------------------------------------------------------------ slow tests
# End-to-end regenerations (the explorer site with every spec in a browser, docs/, the
# reports of every spec) take most of the suite's time and re-derive what the faster
# tests check piece by piece. They are marked `slow` and run with --runslow or
# SPECC_SLOW=1; .ci/run passes --runslow, so CI still runs every test.
def pytest_addoption(parser):
    parser.addoption("--runslow", action="store_true", default=False,
                     help="also run the tests marked slow: end-to-end regenerations of the explorer site, "
                          "docs/ and the reports (SPECC_SLOW=1 does the same)")


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: an end-to-end regeneration; runs with --runslow or SPECC_SLOW=1")


def run_slow(config) -> bool:
    return config.getoption("--runslow") or os.environ.get("SPECC_SLOW", "") not in ("", "0")


def pytest_collection_modifyitems(config, items):
    if run_slow(config):
        return
    skip = pytest.mark.skip(reason="slow end-to-end regeneration: run with --runslow or SPECC_SLOW=1 (.ci/run does)")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


def shipped_engine(name: str):
    """The query engine of specs/<name>.yaml (one per spec in the test process)."""
    from specc.compiler.query.queries import QueryEngine
    from specc.compiler.schema.spec import load_spec

    return QueryEngine.shared(load_spec(SPECS / f"{name}.yaml"))


@pytest.fixture(scope="session")
def qwen_engine():
    return shipped_engine("qwen3_8b")


@pytest.fixture(scope="session")
def v41_engine():
    return shipped_engine("deepseek_v41")


@pytest.fixture(scope="session")
def cli():
    """cli(*args) -> click Result of `specc *args`, run in-process with CliRunner.
    Output written to stdout and stderr is in result.output (stderr alone in
    result.stderr). Fails the test if the command crashed with an exception
    other than the SystemExit a command ends with."""
    from click.testing import CliRunner

    from specc.cli import main

    runner = CliRunner()

    def run(*args):
        result = runner.invoke(main, [str(a) for a in args])
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            import traceback

            tb = "".join(traceback.format_exception(*result.exc_info))
            pytest.fail(f"specc {' '.join(map(str, args))} crashed:\n{tb}")
        return result

    return run


@pytest.fixture
def write_spec(tmp_path):
    """Write a throw-away spec and return its Path.

    Call it as write_spec(text) or write_spec(directory, text) (e.g.
    write_spec(tmp_path, text)); an optional name= picks the file name
    (default spec.yaml). specs/lib/ is copied beside the file so
    `imports: [lib/core.yaml]` resolves. The text is dedented, so tests may
    indent it freely."""

    def write(*args, name: str = "spec.yaml") -> Path:
        if len(args) == 1:
            directory, text = tmp_path, args[0]
        elif len(args) == 2:
            directory, text = Path(args[0]), args[1]
        else:
            raise TypeError("write_spec(text) or write_spec(directory, text)")
        directory.mkdir(parents=True, exist_ok=True)
        if not (directory / "lib").exists():
            shutil.copytree(SPECS / "lib", directory / "lib")
        path = directory / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
        return path

    return write
