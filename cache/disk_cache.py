"""The on-disk caches' common ground: where they live, whom they trust, and how
an entry is read and written.

Every cache (parse trees, YAML trees, compiled models, compiled-query stores)
is keyed by content and by one engine fingerprint, so an entry can never be
stale; a missing, damaged or unwritable entry only costs time.

The cache is a trust boundary: its entries decide answers (a compiled store
holds printed Python that is run), and its folder may be one another user can
write (a shared /tmp, a CI cache restored across branches). So:

* it lives in a per-user private folder: $SPECC_CACHE_DIR, or
  ~/.cache/specc (or <tmp>/specc-<uid> when there is no home); created 0700;
  an empty SPECC_CACHE_DIR turns every cache off;
* a folder or entry that is not owned by this user, or that others can write,
  is refused with one warning on stderr, and specc answers uncached;
* entries are plain data (cache/codec: tagged JSON, never pickle), and
  each one carries an HMAC-SHA256 over its name and bytes with a key kept in
  the folder's `key` file (0600, this user's); an entry whose tag does not
  verify is ignored, so nothing read from disk runs unless this user's specc
  wrote it;
* entries are opened without following links and without blocking, and only
  regular files are read (a FIFO or device planted in the folder would hang
  or never end); a truncated or wrong-shaped entry fails its tag or its
  decoding and is ignored.

The shipped specs' compiled forms (specs/compiled/, compiler/lanes/compiled.py) are not
this cache: they are files of the installed package, trusted as its code is, and
read (read_package_file) only when the cache has no entry and they match the engine
and every file they depend on. Nothing here changes for them."""

from __future__ import annotations

import hashlib
import hmac
import os
import stat
import sys
from pathlib import Path


_MAGIC = b"specc-cache 2\n"
_KEY_BYTES = 32
MAX_ENTRY_BYTES = 512 * 2**20      # larger than any entry specc writes; a bigger file is not ours
_ROOT = Path(__file__).resolve().parent.parent

_checked: dict = {}                # folder -> trusted (bool), once per process
_warned: set = set()
_key_cache: dict = {}


# ------------------------------------------------------------------ the engine's identity
_FINGERPRINT: str | None = None


def engine_fingerprint() -> str:
    """A hash of every source file whose code decides a parse, a model, an answer or
    a verdict (and of the entry format): the one key every cache is filed under."""
    global _FINGERPRINT
    if _FINGERPRINT is None:
        digest = hashlib.sha256(_MAGIC)
        for path in _engine_files():
            digest.update(path.relative_to(_ROOT).as_posix().encode() + b"\0" + path.read_bytes())
        _FINGERPRINT = digest.hexdigest()
    return _FINGERPRINT


# the packages whose code decides answers (parsing, models, queries, verdicts, the caches'
# formats); searched recursively, so a package split into subpackages stays covered
ENGINE_PACKAGES = ("compiler", "dsl", "verify", "cache")


def _engine_files() -> list:
    """Every .py and .lark file of the engine's packages, subpackages included, in a fixed order."""
    files = []
    for folder in ENGINE_PACKAGES:
        for where, subfolders, names in os.walk(_ROOT / folder):
            subfolders[:] = [name for name in subfolders if name != "__pycache__"]
            files.extend(Path(where, name) for name in names if name.endswith((".py", ".lark")))
    return sorted(files, key=lambda path: path.relative_to(_ROOT).as_posix())


# ------------------------------------------------------------------ where
def _default_root() -> Path:
    home = os.path.expanduser("~")
    if home and home != "~" and os.path.isabs(home):
        return Path(home) / ".cache" / "specc"
    # no HOME and no passwd entry (a bare container): a per-user folder in the temp dir
    import tempfile

    return Path(tempfile.gettempdir()) / f"specc-{_uid() if _uid() is not None else 'user'}"


def root() -> Path | None:
    """The cache's top folder, or None when caching is off."""
    value = os.environ.get("SPECC_CACHE_DIR")
    if value == "":
        return None
    return Path(value) if value else _default_root()


def _warn(folder, why: str) -> None:
    if folder in _warned:
        return
    _warned.add(folder)
    print(f"specc: warning: not using the cache at {folder}: {why}; answering without the cache "
          "(set SPECC_CACHE_DIR to a folder only you can write, or to an empty string to turn "
          "caching off)", file=sys.stderr)


def _uid() -> int | None:
    return os.getuid() if hasattr(os, "getuid") else None      # None: no POSIX owners (Windows)


def _owned_private(st) -> str | None:
    """Why a folder or file with this stat must not be trusted, or None."""
    if _uid() is None:
        return None
    if st.st_uid != _uid():
        return f"it is owned by user id {st.st_uid}, not by you ({_uid()})"
    if st.st_mode & 0o022:
        return f"others can write it (mode {stat.S_IMODE(st.st_mode):04o})"
    return None


def _trusted_folder(folder: Path) -> bool:
    """Make `folder` (0700) if it is missing; True when it is a directory this user
    owns and no one else can write (checked once per process)."""
    key = str(folder)
    found = _checked.get(key)
    if found is not None:
        return found
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = os.lstat(folder)
        if stat.S_ISLNK(st.st_mode):
            why = _owned_private(st) or None
            st = os.stat(folder)
        else:
            why = None
        if not stat.S_ISDIR(st.st_mode):
            why = "it is not a folder"
        why = why or _owned_private(st)
    except OSError as exc:
        why = f"it cannot be made or read ({exc.strerror})"
    if why is not None:
        _warn(key, why)
    _checked[key] = why is None
    return why is None


def cache_dir(name: str) -> Path | None:
    """The folder of one cache (under the engine's fingerprint), or None when caching
    is off or the folder is not trusted."""
    top = root()
    if top is None or not _trusted_folder(top):
        return None
    folder = top / f"{name}-{engine_fingerprint()[:16]}"
    return folder if _trusted_folder(folder) else None


# ------------------------------------------------------------------ reading safely
def _read_regular(path: Path, refuse):
    """(bytes, size when opened) of a regular file, opened without following a link and without
    blocking (a FIFO never hangs); the reason when refuse(stat) names one (a file that is not
    regular is always refused); None when it cannot be opened or read."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        why = "it is not a regular file" if not stat.S_ISREG(st.st_mode) else refuse(st)
        if why is not None:
            return why
        chunks = []
        remaining = st.st_size + 1           # one more byte shows a file that grew
        while remaining > 0:
            chunk = os.read(fd, min(remaining, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
        return b"".join(chunks), st.st_size
    except OSError:
        return None
    finally:
        os.close(fd)


def _read_private(path: Path, limit: int, warn: bool = True) -> bytes | None:
    """The bytes of a regular file this user owns and others cannot write, or None."""
    def refuse(st):
        why = _owned_private(st)
        return f"it is larger than {limit:,} bytes" if why is None and st.st_size > limit else why

    found = _read_regular(path, refuse)
    if isinstance(found, str):
        if warn:
            _warn(str(path), found)
        return None
    return None if found is None else found[0]


def read_package_file(path: Path, limit: int = MAX_ENTRY_BYTES) -> bytes | None:
    """The bytes of a regular file installed with specc's package (a shipped compiled form),
    or None. Trusted as the package's code is, so no owner or signature is asked for; but
    opened as cache entries are: without following a link, without blocking, size-limited."""
    found = _read_regular(path, lambda st: "too large" if st.st_size > limit else None)
    if found is None or isinstance(found, str):
        return None
    data, size = found
    return data if len(data) == size else None


def _key(top: Path) -> bytes | None:
    """This user's signing key (made on first use: 32 random bytes, mode 0600)."""
    found = _key_cache.get(str(top))
    if found is not None:
        return found
    path = top / "key"
    data = _read_private(path, _KEY_BYTES)
    if data is None and not os.path.lexists(path):
        import tempfile

        try:
            fd, tmp = tempfile.mkstemp(dir=top, prefix=".key")    # 0600
            with os.fdopen(fd, "wb") as fh:
                fh.write(os.urandom(_KEY_BYTES))
            try:
                os.link(tmp, path)           # fails if another process made one first: use theirs
            except FileExistsError:
                pass
            finally:
                os.unlink(tmp)
        except OSError:
            return None
        data = _read_private(path, _KEY_BYTES)
    if data is None or len(data) != _KEY_BYTES or _owned_private(os.lstat(path)) is not None \
            or os.lstat(path).st_mode & 0o077:
        _warn(str(path), "the cache's key file is not a private 32-byte file of yours")
        return None
    _key_cache[str(top)] = data
    return data


def _tag(key: bytes, path: Path, payload: bytes) -> bytes:
    # the entry's own name is signed too: an entry cannot be moved to answer for another
    return hmac.new(key, path.name.encode() + b"\0" + payload, hashlib.sha256).hexdigest().encode()


# ------------------------------------------------------------------ entries
def load(path: Path):
    """The entry at `path`, or None if it is missing, foreign, damaged or not
    signed with this user's key."""
    top = root()
    if top is None:
        return None
    data = _read_private(path, MAX_ENTRY_BYTES)
    if data is None or not data.startswith(_MAGIC):
        return None
    key = _key(top)
    head = len(_MAGIC) + 64
    if key is None or len(data) < head + 1 or data[head:head + 1] != b"\n":
        return None
    payload = data[head + 1:]
    if not hmac.compare_digest(data[len(_MAGIC):head], _tag(key, path, payload)):
        return None
    from . import codec as cache_codec   # only a read entry needs the codec (and its dataclasses)

    try:
        return cache_codec.loads(payload)
    except cache_codec.CacheFormatError:
        return None


def store(path: Path, value) -> None:
    """Write an entry atomically (readers never see half a file); failures are ignored."""
    import tempfile   # only writers need it

    top = root()
    if top is None or not _trusted_folder(path.parent):
        return
    key = _key(top)
    if key is None:
        return
    from . import codec as cache_codec

    try:
        payload = cache_codec.dumps(value)
    except cache_codec.CacheFormatError:
        return
    if len(payload) > MAX_ENTRY_BYTES:
        return
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")   # 0600
        with os.fdopen(fd, "wb") as fh:
            fh.write(_MAGIC + _tag(key, path, payload) + b"\n" + payload)
        os.replace(tmp, path)
    except OSError:
        try:
            os.unlink(tmp)
        except (OSError, UnboundLocalError):
            pass
