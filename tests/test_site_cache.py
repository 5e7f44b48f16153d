"""`specc site` exports by content: each export part is cached (render/site_cache.py) and
read back byte-identical while nothing it was computed from changed."""

from __future__ import annotations

import re
import shutil

import pytest
from click.testing import CliRunner

from specc.cli import main
from specc.compiler.lanes.compiled import file_hash
from specc.dsl.search_path import SHIPPED
from specc.render import site as S
from specc.render import site_cache


def _export(paths):
    events = []
    done = S.export_parts(paths, 1, lambda event, **facts: events.append((event, facts)))
    planned = next(facts for event, facts in events if event == "planned")
    js = {p: S._spec_js(S.join_parts([data for task, data in done if task[0] == p])) for p in paths}
    return planned, js, events


@pytest.fixture
def spec(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECC_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "mine.yaml"
    shutil.copy(SHIPPED / "shazeer2017_moe.yaml", path)
    return str(path)


def _site(spec, out):
    """`specc site` on one spec: (its stderr lines, the spec's data file)."""
    result = CliRunner().invoke(main, ["site", "-o", str(out), "--specs", spec, "--docs", str(out) + "-no-docs",
                                       "--jobs", "1"])
    assert result.exit_code == 0, result.output
    return result.stderr.splitlines(), (out / "data" / "mine.js").read_bytes()


def test_a_rebuild_reads_every_part_and_an_edit_exports_the_spec_again(spec, tmp_path):
    out = tmp_path / "site"
    lines, js = _site(spec, out)
    # what it does, before any work: the specs, then the parts and how many are cached, then each part
    assert lines[0].startswith("specc site: 1 specs from ")
    assert re.fullmatch(r"1 specs, (\d+) export parts: 0 cached, \1 to export on 1 worker process, "
                        r"the longest first \(\d+ s\)", lines[1]), lines[1]
    parts = int(lines[1].split()[2])
    assert parts > 1 and [re.match(r"exported (\d+)/(\d+): mine (base|tp=\d+) in ", line).group(1, 2)
                          for line in lines[2:]] == [(str(i), str(parts)) for i in range(1, parts + 1)]
    lines, js_again = _site(spec, out)
    assert lines[1] == f"1 specs, {parts} export parts: {parts} cached, 0 to export" + lines[1][lines[1].index(" ("):]
    assert len(lines) == 2 and js_again == js                      # byte for byte
    original = open(spec, "rb").read()
    with open(spec, "ab") as fh:
        fh.write(b"\n# an edit\n")
    lines, js_edited = _site(spec, out)
    assert f"0 cached, {parts} to export" in lines[1] and js_edited == js     # a comment changes no figure
    with open(spec, "wb") as fh:
        fh.write(original)
    lines, js_restored = _site(spec, out)                         # by content: the old entries answer again
    assert f"{parts} cached, 0 to export" in lines[1] and js_restored == js


def test_an_entry_is_used_only_while_every_file_it_read_is_unchanged(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECC_CACHE_DIR", str(tmp_path / "cache"))
    read = tmp_path / "lib.yaml"
    read.write_text("a: 1\n")
    absent = tmp_path / "closer.yaml"
    site_cache.store("entry", "part", {str(read): file_hash(read), str(absent): None}, {"functions": ["f"]})
    assert site_cache.load("entry", "part") == {"functions": ["f"]}
    assert site_cache.load("entry", "parts") is None              # another kind of entry
    absent.write_text("b: 2\n")                                   # a candidate that had to stay absent
    assert site_cache.load("entry", "part") is None
    absent.unlink()
    read.write_text("a: 2\n")                                     # same size, other bytes
    assert site_cache.load("entry", "part") is None


def test_no_cache_still_exports(spec, tmp_path, monkeypatch):
    monkeypatch.setenv("SPECC_CACHE_DIR", "")
    planned, js, _ = _export([spec])
    assert planned["cached"] == 0 and planned["to_export"] == planned["parts"]
    assert js[spec].startswith("SPECC.register(") and not (tmp_path / "cache").exists()
