"""The on-disk caches' common ground: where they live and how an entry is read
and written.

Every cache (parse trees, YAML trees, compiled models) is keyed by content, so
an entry can never be stale; a missing, damaged or unwritable entry only costs
time. They live under $SPECC_CACHE_DIR (default ~/.cache/specc); an empty
SPECC_CACHE_DIR turns them all off."""

from __future__ import annotations

import os
import pickle
from pathlib import Path


def cache_dir(name: str) -> Path | None:
    """The folder of one cache, or None when caching is off."""
    root = os.environ.get("SPECC_CACHE_DIR")
    if root == "":
        return None
    return (Path(root) if root else Path.home() / ".cache" / "specc") / name


def load(path: Path):
    """The pickled entry at `path`, or None if it is missing or unreadable."""
    try:
        with open(path, "rb") as fh:
            return pickle.load(fh)
    except FileNotFoundError:
        return None
    except Exception:  # noqa: BLE001 - a damaged entry is rebuilt by the caller
        return None


def store(path: Path, value) -> None:
    """Write an entry atomically (readers never see half a file); failures are ignored."""
    import tempfile   # only writers need it

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "wb") as fh:
            pickle.dump(value, fh, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)
    except (OSError, pickle.PicklingError, TypeError, AttributeError):
        pass
