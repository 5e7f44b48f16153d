"""Generated folders (render/output_tree.py): `specc docs -o` and `specc site -o`
delete only what their previous run listed, refuse a non-empty folder they did
not make, write nothing outside -o; spec names that would escape a folder or
become a live link are refused; index links are relative and percent-encoded."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from specc.cli import main
from specc.render import output_tree
from specc.render.views import RenderError

REPO = Path(__file__).resolve().parents[1]
TOY = REPO / "specs" / "toy_moe.yaml"


def _snapshot(folder: Path) -> dict:
    return {p.relative_to(folder).as_posix(): (p.read_bytes() if p.is_file() else None)
            for p in sorted(folder.rglob("*"))}


def _project(tmp_path: Path) -> Path:
    """A folder that looks like somebody's project: sources, specs, a .git."""
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    (project / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (project / "src").mkdir()
    (project / "src" / "main.py").write_text("print('mine')\n")
    (project / "specs").mkdir()
    shutil.copy(TOY, project / "specs" / "toy_moe.yaml")
    for name in ("lib", "hardware"):
        os.symlink(REPO / "specs" / name, project / "specs" / name)
    return project


@pytest.mark.parametrize("command", ["docs", "site"])
def test_docs_or_site_into_a_folder_of_other_files_refuses_and_deletes_nothing(tmp_path, monkeypatch, command):
    project = _project(tmp_path)
    before = _snapshot(project)
    monkeypatch.chdir(project)
    result = CliRunner().invoke(main, [command, "-o", ".", "--specs", "specs/*.yaml"])
    assert result.exit_code == 2, result.output
    assert "refusing to write there" in result.output and "nothing was deleted" in result.output
    assert "Traceback" not in result.output
    assert _snapshot(project) == before


def test_a_rerun_deletes_only_what_the_last_run_listed(tmp_path):
    out = tmp_path / "out"
    output_tree.write_files(out, {"a/one.md": "1", "a/two.md": "2", "top.md": "t"}, "docs",
                            output_tree.previous_files(out, "docs"))
    (out / "a" / "mine.txt").write_text("the user's own file")
    (out / "notes.md").write_text("also the user's")
    output_tree.write_files(out, {"a/one.md": "1!", "b/three.md": "3"}, "docs",
                            output_tree.previous_files(out, "docs"))
    assert sorted(_snapshot(out)) == sorted([".specc-manifest.json", "a", "a/mine.txt", "a/one.md",
                                             "b", "b/three.md", "notes.md"])
    assert (out / "a" / "one.md").read_text() == "1!"


def test_a_manifest_naming_paths_outside_is_never_followed(tmp_path):
    out = tmp_path / "out"
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    output_tree.write_files(out, {"x.md": "x"}, "docs", set())
    (out / output_tree.MANIFEST).write_text('{"kind": "docs", "files": ["../victim.txt", "%s"]}' % victim)
    output_tree.write_files(out, {"x.md": "x"}, "docs", output_tree.previous_files(out, "docs"))
    assert victim.read_text() == "keep me"


def test_no_written_path_leaves_the_folder(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    os.symlink(outside, out / "link")
    for rel in ("../escape.md", "/etc/passwd", "link/x.md", "a/../../b.md", ""):
        with pytest.raises(RenderError):
            output_tree.write_files(out, {rel: "x"}, "docs", None)
    assert not any(outside.iterdir()) and not (tmp_path / "escape.md").exists()


@pytest.mark.parametrize("name", ["javascript:alert(1).yaml", "...yaml", "..yaml", "a b.yaml", ".hidden.yaml",
                                  "x<img src=x>.yaml", "-rf.yaml"])
def test_a_spec_whose_name_cannot_be_a_folder_or_link_is_refused(tmp_path, monkeypatch, name):
    folder = tmp_path / "specs"
    folder.mkdir()
    for link in ("lib", "hardware"):
        os.symlink(REPO / "specs" / link, folder / link)
    spec = folder / name
    shutil.copy(TOY, spec)
    out = tmp_path / "reports"
    result = CliRunner().invoke(main, ["report", str(spec), "-o", str(out)])
    assert result.exit_code == 2, result.output
    assert "cannot name an output folder or a link" in result.output
    assert "Traceback" not in result.output
    assert not out.exists() or not any(out.iterdir())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["reports", "specs"] or \
        sorted(p.name for p in tmp_path.iterdir()) == ["specs"]


def test_index_links_are_relative_and_percent_encoded():
    from specc.render import report

    assert output_tree.link("javascript:alert(1)/report.html") == "javascript%3Aalert%281%29/report.html"
    assert output_tree.link("/etc/passwd") == "etc/passwd"
    counts = {"PASS": 1}
    html = report.index_html([("M", "specs/m.yaml", counts, "javascript:x/report.html")])
    assert 'href="javascript%3Ax/report.html"' in html
    md = report.index_markdown([("M", "specs/m.yaml", counts, "javascript:x/README.md")])
    assert "(javascript%3Ax/README.md)" in md
