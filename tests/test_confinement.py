"""Confinement of every file a spec names (dsl/search_path.py, hf/config.py):
devices, sibling specs, claims files and model folders resolve through the
allowed roots; a link leading out of them is refused with a located message
that never echoes the target's content."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from specc.cli import main

REPO = Path(__file__).resolve().parents[1]
BASE = (REPO / "tests" / "malformed" / "base.yaml").read_text(encoding="utf-8")
SECRET = "TOP-SECRET-LINE-4242"
LOCATED = re.compile(r"[^\s:]+:\d+:\d+: ")


@pytest.fixture
def world(tmp_path):
    model = tmp_path / "m"
    model.mkdir()
    (model / "spec.yaml").write_text(BASE)
    secret = tmp_path / "secret"
    secret.mkdir()
    # a file that would make a YAML or JSON error echo its line
    (secret / "f.yaml").write_text(f"name: x\nmemory: [{SECRET}\n")
    return model, secret / "f.yaml"


def _run(*args):
    result = CliRunner().invoke(main, [str(a) for a in args])
    return result.exit_code, result.output


def _refused(code, output):
    assert code == 2, output
    assert "leads outside" in output or "is outside" in output
    assert SECRET not in output
    assert "Traceback" not in output


def test_a_device_file_linking_outside_is_refused(world):
    model, secret = world
    (model / "hardware").mkdir()
    (model / "hardware" / "dev.yaml").symlink_to(secret)
    code, output = _run("eval", model / "spec.yaml", "b_max(device=dev, H=1)")
    _refused(code, output)
    assert LOCATED.search(output)


def test_a_sibling_spec_linking_outside_is_refused(world):
    model, secret = world
    (model / "other.yaml").symlink_to(secret)
    code, output = _run("eval", model / "spec.yaml", "params(spec=other)")
    _refused(code, output)
    assert LOCATED.search(output)


def test_a_claims_file_linking_outside_is_refused(world):
    model, secret = world
    (model / "claims").mkdir()
    (model / "claims" / "c.yaml").symlink_to(secret)
    spec = model / "spec.yaml"
    spec.write_text(BASE.replace("claims:\n", "claims_files: [claims/c.yaml]\nclaims:\n", 1))
    code, output = _run("verify", spec)
    _refused(code, output)


def test_links_within_the_allowed_roots_still_work(world):
    model, _ = world
    (model / "hardware").mkdir()
    (model / "hardware" / "dev.yaml").symlink_to(REPO / "specs" / "hardware" / "a100_40gb.yaml")
    (model / "sib.yaml").symlink_to(model / "spec.yaml")
    code, output = _run("eval", model / "spec.yaml", "b_max(device=dev, H=1)", "params(spec=sib)")
    assert code == 0, output


def test_a_model_folder_whose_config_links_outside_is_refused(tmp_path):
    folder = tmp_path / "model"
    folder.mkdir()
    secret = tmp_path / "secret.json"
    secret.write_text('{"model_type": "llama", "x": [' + SECRET + "\n")
    (folder / "config.json").symlink_to(secret)
    code, output = _run("import-hf", folder, "-o", tmp_path / "out.yaml")
    _refused(code, output)
    assert not (tmp_path / "out.yaml").exists()


def test_a_hugging_face_cache_snapshot_links_into_its_blobs(tmp_path):
    configs = sorted((REPO / "tests" / "data" / "hf").rglob("*.json"))
    config = next((c for c in configs if json.loads(c.read_text()).get("model_type") == "llama"), None)
    if config is None:
        pytest.skip("no llama config among the test data")
    repo = tmp_path / "models--org--name"
    (repo / "blobs").mkdir(parents=True)
    (repo / "snapshots" / "abc").mkdir(parents=True)
    shutil.copy(config, repo / "blobs" / "1234")
    os.symlink("../../blobs/1234", repo / "snapshots" / "abc" / "config.json")
    code, output = _run("import-hf", repo / "snapshots" / "abc", "-o", tmp_path / "out.yaml")
    assert code == 0, output
