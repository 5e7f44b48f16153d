"""Writing a generated folder (`specc docs -o`, `specc site -o`, `specc report -o`)
without touching anything else.

A folder is only ever cleaned of files that specc itself wrote there: each run
records what it wrote in MANIFEST, and the next run deletes only those of them it
no longer writes. A non-empty folder without a manifest is someone else's
(a project, a home folder, `.`): it is refused, and nothing in it is deleted.
Every path written or deleted is checked to stay inside the folder (no `..`, no
absolute path, no symbolic link leading out), and spec stems, which name
sub-folders and links, are confined to a safe alphabet."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from urllib.parse import quote

from .views import RenderError

MANIFEST = ".specc-manifest.json"
SAFE_STEM = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]{0,127}")


def safe_stem(path) -> str:
    """A spec file's stem, which names its folder and links, or a RenderError when it
    holds anything but letters, digits and `_ . + -` (not first), or ends in a dot."""
    stem = Path(path).stem
    if not SAFE_STEM.fullmatch(stem) or stem.endswith("."):
        raise RenderError(f"{path}: the spec's file name {stem!r} cannot name an output folder or a link "
                          "(expected letters, digits, '_', '.', '+', '-', starting with a letter, digit "
                          "or '_'; rename the file)")
    return stem


def link(rel: str) -> str:
    """A relative, percent-encoded link to `rel`: a `:` is encoded, so no file name
    ever reads as a scheme (javascript:), and `/` never leads (no absolute link)."""
    return quote(rel.lstrip("/"), safe="/")


def _inside(out_dir: Path, rel: str) -> Path:
    """out_dir/rel, refused unless it stays inside out_dir (links followed)."""
    parts = Path(rel).parts
    if not rel or Path(rel).is_absolute() or ".." in parts or "\\" in rel or "\0" in rel:
        raise RenderError(f"refusing to write {rel!r}: not a path inside {out_dir}")
    target = out_dir / rel
    root = out_dir.resolve()
    resolved = target.resolve()
    if resolved != root and root not in resolved.parents:
        raise RenderError(f"refusing to write {out_dir / rel}: it leads outside {out_dir} (a symbolic link?)")
    return target


def previous_files(out_dir: Path, kind: str, keep: frozenset = frozenset()) -> set:
    """The files the last `kind` run wrote into out_dir (set() for a new or empty
    folder); RenderError for a non-empty folder specc did not make (files named in
    `keep`, hand-written inputs such as docs.yaml, do not count)."""
    if not out_dir.exists():
        return set()
    if not out_dir.is_dir():
        raise RenderError(f"{out_dir} is not a folder")
    manifest = out_dir / MANIFEST
    if manifest.is_file() and not manifest.is_symlink():
        try:
            data = json.loads(manifest.read_text(encoding="utf-8"))
            files = data["files"]
            if data.get("kind") != kind or not all(isinstance(f, str) for f in files):
                raise ValueError(kind)
            return set(files)
        except (OSError, ValueError, KeyError, TypeError):
            raise RenderError(f"{manifest} is not a manifest that `specc {kind}` wrote; refusing to write "
                              f"into {out_dir} (choose a new or empty folder)") from None
    others = sorted(p.name for p in out_dir.iterdir() if p.name not in keep)
    if others:
        shown = ", ".join(others[:5]) + (", ..." if len(others) > 5 else "")
        raise RenderError(f"{out_dir} is not empty ({shown}) and specc did not make it (no {MANIFEST}); "
                          f"refusing to write there, and nothing was deleted (choose a new or empty folder)")
    return set()


def write_files(out_dir: Path, files: dict, kind: str, previous: set | None = None) -> None:
    """Write {relative path: text or bytes} into out_dir; delete the files of
    `previous` (the last run's manifest) that this run no longer writes; record the
    manifest. previous=None: delete nothing and keep no manifest (`specc report`)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    targets = {rel: _inside(out_dir, rel) for rel in files}         # every path checked before any write
    if previous is not None:
        for rel in sorted(previous - set(files), reverse=True):
            try:
                path = _inside(out_dir, rel)
            except RenderError:
                continue                     # a manifest entry leading out is never followed
            if path.is_symlink() or path.is_file():
                path.unlink()
                _prune(out_dir, path.parent)
    for rel, text in sorted(files.items()):
        target = targets[rel]
        target.parent.mkdir(parents=True, exist_ok=True)
        _inside(out_dir, rel)                # a folder made just now cannot be a link out, but check
        data = text if isinstance(text, bytes) else text.encode("utf-8")
        if target.is_symlink():
            target.unlink()
        if not target.exists() or target.read_bytes() != data:
            target.write_bytes(data)
    if previous is not None:
        (out_dir / MANIFEST).write_text(json.dumps({"kind": kind, "files": sorted(files)}, indent=0) + "\n",
                                        encoding="utf-8")


def _prune(out_dir: Path, folder: Path) -> None:
    """Remove folders left empty by a deletion, up to (not including) out_dir."""
    root = out_dir.resolve()
    while folder.resolve() != root and root in folder.resolve().parents:
        try:
            folder.rmdir()
        except OSError:
            return
        folder = folder.parent


def relative_files(out_dir: Path) -> dict:
    """{relative path: bytes} of every regular file under out_dir (links not followed)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(out_dir):
        for name in filenames:
            path = Path(dirpath) / name
            if not path.is_symlink():
                out[path.relative_to(out_dir).as_posix()] = path.read_bytes()
    return out


def public_path(path) -> str:
    """A path as the published site shows it: relative to the folder specc ran in, or
    the file's name alone (never the build machine's absolute paths)."""
    import os

    text = str(path)
    if not os.path.isabs(text):
        return text
    try:
        return Path(text).resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return Path(text).name
