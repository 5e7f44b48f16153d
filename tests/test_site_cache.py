"""`specc site` exports by content: each export part is cached (render/site_cache.py) and
read back byte-identical while nothing it was computed from changed."""

from __future__ import annotations

import shutil

import pytest

from specc.compiler.compiled import file_hash
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


def test_a_rebuild_reads_every_part_and_an_edit_exports_the_spec_again(spec):
    first, js, events = _export([spec])
    assert first["cached"] == 0 and first["to_export"] == first["parts"] > 1
    assert sum(1 for event, _ in events if event == "part") == first["parts"]
    again, js_again, events = _export([spec])
    assert again["cached"] == again["parts"] == first["parts"] and again["to_export"] == 0
    assert not any(event == "part" for event, _ in events)
    assert js_again == js                                         # byte for byte
    original = open(spec, "rb").read()
    with open(spec, "ab") as fh:
        fh.write(b"\n# an edit\n")
    edited, js_edited, _ = _export([spec])
    assert edited["cached"] == 0 and edited["to_export"] == first["parts"]
    assert js_edited == js                                        # a comment changes no figure
    with open(spec, "wb") as fh:
        fh.write(original)
    restored, js_restored, _ = _export([spec])                   # by content: the old entries answer again
    assert restored["cached"] == restored["parts"] and js_restored == js


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
