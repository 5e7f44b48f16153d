"""Fuzzing the hostile kinds of issue 22: random spec file names never lead a
report outside -o nor into a live link, random option names and claim ids never
change a query's meaning nor reach the output unescaped, random cache bytes never
answer. Every outcome is a value or a located error (exit 2), never a traceback."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

from click.testing import CliRunner
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from specc.cli import main
from specc.cache import codec as cache_codec

REPO = Path(__file__).resolve().parents[1]
BASE = (REPO / "tests" / "malformed" / "base.yaml").read_text(encoding="utf-8")
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f\u2028\u2029]")
HOSTILE = st.lists(st.sampled_from(list("ab_.-:/\\%<>\"' \n\r\x1b\u2028é") + ["..", "::", "javascript:"]),
                   min_size=1, max_size=8).map("".join)


def _folder(tmp: Path) -> Path:
    folder = tmp / "specs"
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("lib", "hardware"):
        if not (folder / name).exists():
            os.symlink(REPO / "specs" / name, folder / name)
    return folder


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=HOSTILE)
@example(name="../")        # beside the folder: found on a fresh clone
def test_random_spec_names_stay_inside_the_report_folder(tmp_path_factory, name):
    tmp = tmp_path_factory.mktemp("names")
    folder = _folder(tmp)
    try:
        spec = folder / f"{name}.yaml"
        spec.write_text(BASE, encoding="utf-8")
    except (OSError, ValueError):
        return                                      # not a file name this system allows
    out = tmp / "out"
    result = CliRunner().invoke(main, ["report", str(spec), "-o", str(out)])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    assert result.exit_code in (0, 2), result.output
    written = [p for p in tmp.rglob("*") if p.is_file() and not p.is_symlink()]
    # the test's own spec file compares by its resolved path (a name like '../' puts it beside the folder)
    assert all(p.resolve() == spec.resolve() or out in p.parents
               for p in written if "lib" not in p.parts and "hardware" not in p.parts)
    if result.exit_code == 0:
        index = (out / "index.html").read_text(encoding="utf-8")
        assert "javascript:" not in index.lower()


@settings(max_examples=80, deadline=None)
@given(option=HOSTILE | st.sampled_from(["format", "tp", "spec", "per_device", "device", "overrides", "mfu",
                                         "B", "H", "symbolic", "stage", "layer"]))
def test_random_option_names_are_names_or_located_errors(option):
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        folder = _folder(Path(tmp))
        quoted = option.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r") \
            .replace("\x1b", "\\e").replace("\u2028", "\\L")
        spec = folder / "spec.yaml"
        spec.write_text(BASE.replace("  head: {default", f'  "{quoted}": {{default'), encoding="utf-8")
        result = CliRunner().invoke(main, ["eval", str(spec), "weight_bytes(format=fp8)"])
        assert result.exception is None or isinstance(result.exception, SystemExit), result.output
        assert not CONTROL.search(result.output), repr(result.output)
        if result.exit_code == 0:
            assert option.isidentifier() and option not in ("format",)
            assert "weight_bytes(format=fp8) = " in result.output
        else:
            assert result.exit_code == 2 and re.search(r":\d+:\d+: ", result.output), result.output


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=300) | st.text(max_size=200).map(str.encode))
def test_random_bytes_never_decode_to_a_value(data):
    try:
        cache_codec.loads(data)
    except cache_codec.CacheFormatError:
        return
    # only a well-formed entry decodes (bytes this codec could have written)
    assert data.lstrip().startswith(b'["specc-codec 2"')
