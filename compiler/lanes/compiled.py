"""Compiled queries: answering from printed closed forms, without sympy.

A query such as `flops(B=1, S=0, P=8192)` is *normalized*: its non-zero literal
scenario arguments become parameters (`flops(B=B, S=0, P=P)` with B=1,
P=8192), so one closed form serves every scenario. compiler/lanes/compile_queries.py
builds that closed form once with the symbolic engine, prints it as plain
Python (compiler/lanes/codegen.py) and stores it here; this module only reads the
store and runs the printed code, so a warm process imports neither sympy nor
yaml nor lark.

One store file per spec, in the content-keyed cache (cache/disk_cache). Its
manifest lists every file the answers depend on (the spec, its imports, sibling
specs it asks, hardware files, claim files) with a SHA-256 of their bytes, plus
a hash of the engine's own source; a process validates the store by hashing
those files and drops it on any difference.

Entries:
* templates: normalized text -> Template (the printed function, the unit, and
  the context checks the engine would make: beyond a spec's max_context the
  answer is extrapolated, or — without extrapolate=true — an error, which the
  fast path leaves to the symbolic path to report with its location);
* literals: query text -> exact answer, for queries with no closed form in
  their arguments (the exact value at those literal arguments);
* verify: per set of claim files, the claims with their expected values and
  tolerances (verify/fast_claims.py recomputes verdicts from them).

Values are ints and fractions.Fraction only."""

from __future__ import annotations

import hashlib
import os
import time
from fractions import Fraction
from pathlib import Path

from ...cache import disk_cache

FORMAT = 1          # bump when the store's layout changes
_ROOT = Path(__file__).resolve().parent.parent


class _Record:
    """A plain record (dataclasses would cost the fast path the import of inspect)."""

    __slots__ = ()
    _defaults: dict = {}

    def __init__(self, *args, **kwargs):
        names = self.__slots__
        values = dict(self._defaults)
        values.update(zip(names, args))
        values.update(kwargs)
        for name in names:
            setattr(self, name, values[name] if name in values else _fresh(name))

    def __getstate__(self):
        return {name: getattr(self, name) for name in self.__slots__}

    def __setstate__(self, state):
        for name, value in state.items():
            setattr(self, name, value)

    def __eq__(self, other):
        return type(other) is type(self) and self.__getstate__() == other.__getstate__()

    def __repr__(self):
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in self.__getstate__().items())})"


def _fresh(name):
    return {}


class Template(_Record):
    """A printed closed form: args (parameter names, in call order), source (the
    function `q(*args)`, codegen's python target), dims, unit, checks ((printed
    context function `c`, max_context, extrapolate allowed), ...), extrapolated
    (already so at its literal arguments), vector (the same, printed for numpy grids), note
    (the convention the answer used, e.g. "compute fp8: weights=fp8", the same at every point)."""

    __slots__ = ("args", "source", "dims", "unit", "checks", "extrapolated", "vector", "note")
    # vector: (value, (context, ...)) printed for numpy grids, made on a sweep's first use
    _defaults = {"checks": (), "extrapolated": False, "vector": None, "note": ""}


class Answer(_Record):
    """value (int or Fraction), dims, unit, extrapolated, note (a convention the answer used,
    e.g. "compute fp8: weights=fp8", printed after it)."""

    __slots__ = ("value", "dims", "unit", "extrapolated", "note")
    _defaults = {"extrapolated": False, "note": ""}


class Store(_Record):
    """engine (hash), deps (path -> sha256 of its bytes), templates (normalized
    text -> Template, or None: no closed form), literals (text -> Answer), verify
    (claim-files key -> claim records), seen (normalized texts asked once, not
    compiled yet -> count)."""

    __slots__ = ("engine", "deps", "templates", "literals", "verify", "seen", "format")
    _defaults = {"format": FORMAT}


# ------------------------------------------------------------------ the engine's identity
def engine_hash() -> str:
    """A hash of every source file whose code decides an answer or a verdict: the one
    engine fingerprint every cache uses (cache/disk_cache)."""
    return disk_cache.engine_fingerprint()


def file_hash(path) -> str | None:
    """SHA-256 of a file's bytes (None when it cannot be read), remembered for the
    process only while the file's (mtime, size, inode) are unchanged and its mtime
    is older than _SETTLED: a file rewritten within one clock tick keeps its mtime
    (the "racily clean" case git knows), so a recently written file is re-hashed."""
    try:
        stat = os.stat(path)
        key = (str(path), stat.st_mtime_ns, stat.st_size, stat.st_ino)
        found = _HASHES.get(key)
        if found is not None:
            return found
        digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return None
    if time.time_ns() - stat.st_mtime_ns > _SETTLED:
        _HASHES[key] = digest
    return digest


_HASHES: dict = {}
_SETTLED = 2_000_000_000        # ns: far above any file system's timestamp granularity


# ------------------------------------------------------------------ normalization
def normalize(text: str) -> tuple[str, dict]:
    """(template, bindings): non-zero literal scenario arguments become parameters.

    A name bound to two different values keeps its literals (one closed form
    cannot be both); zero stays literal, because P = 0 and G = 0 are errors the
    symbolic engine must see, and S = 0 simplifies the closed form. A text that
    uses a scenario letter any other way, or that compiler/query/query_value.py cannot
    read, is not templated at all. The template is printed by the one query printer."""
    from ..query.query_value import Expr, Name, substitute, scenario_literals, uses_scenario_names

    expr = Expr.parse(text)
    if expr is None or uses_scenario_names(expr):
        return text, {}
    bind = {k: next(iter(v)) for k, v in scenario_literals(expr).items() if len(v) == 1 and 0 not in v}
    if not bind:
        return text, {}
    return substitute(expr, {k: Name(k) for k in bind}).text(), bind


# ------------------------------------------------------------------ running printed code
_PRELUDE_NS: dict | None = None
_FUNCTIONS: dict = {}


def _namespace() -> dict:
    global _PRELUDE_NS
    if _PRELUDE_NS is None:
        from .codegen_prelude import PYTHON_PRELUDE

        _PRELUDE_NS = {}
        exec(PYTHON_PRELUDE, _PRELUDE_NS)  # noqa: S102 - the project's own support code
    return _PRELUDE_NS


def function(source: str, name: str = "q"):
    """The function printed in `source` (compiled once per process)."""
    fn = _FUNCTIONS.get(source)
    if fn is None:
        ns = dict(_namespace())
        exec(source, ns)  # noqa: S102 - code printed by codegen from the engine's own closed forms
        fn = _FUNCTIONS[source] = ns[name]
    return fn


def run(template: Template, bind: dict) -> Answer | None:
    """The template's answer at `bind`, or None when the fast path must not answer
    (a context beyond max_context without extrapolate=true, an invalid pattern
    argument, a division by zero, ...): the symbolic path then reports it."""
    args = [bind[a] for a in template.args]
    extrapolated = template.extrapolated
    try:
        for source, limit, allowed in template.checks:
            if function(source, "c")(*args) > limit:
                if not allowed:
                    return None
                extrapolated = True
        value = function(template.source)(*args)
    except (ValueError, ZeroDivisionError, TypeError, ArithmeticError):
        return None
    if not isinstance(value, (int, Fraction)):
        return None
    return Answer(value, template.dims, template.unit, extrapolated, template.note)


# ------------------------------------------------------------------ the stores
STORES: dict = {}


def store_key(spec_path) -> str:
    """A store per spec and search path: the same name may resolve to other files
    under another --path or SPECC_PATH (dsl/search_path.py)."""
    from ...dsl.search_path import roots_signature

    return str(Path(spec_path).resolve()) + "\0" + roots_signature()


def _store_path(spec_path) -> Path | None:
    if building_shipped:
        return None
    folder = disk_cache.cache_dir("compiled")
    if folder is None:
        return None
    key = hashlib.sha256(store_key(spec_path).encode()).hexdigest()[:24]
    return folder / f"{key}.json"


def _valid(store) -> bool:
    if not isinstance(store, Store) or store.format != FORMAT or store.engine != engine_hash():
        return False
    return deps_current(store.deps)


def load(spec_path) -> Store | None:
    """The spec's validated store, or None (missing, damaged, or any dependency changed).
    A store already in memory is re-validated by hashing its dependencies (small files,
    microseconds each): a file rewritten within the same clock tick keeps its mtime and size."""
    key = store_key(spec_path)
    store = STORES.get(key)
    if store is not None and deps_current(store.deps):
        return store
    path = _store_path(spec_path)
    store = disk_cache.load(path) if path is not None else None
    store = store if _valid(store) else shipped(spec_path)
    STORES[key] = store
    return store


# ------------------------------------------------------------------ the shipped forms
# The shipped specs' stores, generated by `specc ship-compiled` into specs/compiled/ (one
# file per spec) and installed with the package, so a first `specc verify specs/*.yaml`
# reads them instead of compiling. They are part of the package and trusted as its code
# is (no signature: not the user's cache, whose rules stay those of cache/disk_cache), and
# used only as the cache's own stores are: when the cache has no valid store for the spec,
# for a spec of the shipped folder itself, under no --path/SPECC_PATH, with this engine's
# fingerprint and every dependency's bytes (recorded relative to specs/) as they were when
# generated. Anything else is ignored, so they are never stale; SPECC_CACHE_DIR= (caching
# off) ignores them too. Format: SHIPPED_MAGIC, the SHA-256 of the payload, a newline, the
# payload (cache/codec's plain data; sorted, no absolute path, no timestamp).
SHIPPED_FORMS = "compiled"
SHIPPED_MAGIC = b"specc-shipped 1\n"
building_shipped = False           # set while generating them: neither the cache nor the shipped forms are read


def shipped_spec(spec_path) -> Path | None:
    """The shipped spec file `spec_path` names, or None when no shipped file (compiled form,
    site export) may answer for it: while generating them, with caching off, under another
    search path (it may resolve the spec's names to other files), or for any other spec."""
    if building_shipped or disk_cache.root() is None:
        return None
    from ...dsl.search_path import SHIPPED, user_roots

    if user_roots():
        return None
    try:
        spec = Path(spec_path).resolve()
    except OSError:
        return None
    return spec if spec.suffix == ".yaml" and spec.parent == SHIPPED else None


def shipped_path(spec_path) -> Path | None:
    """Where the shipped form of this spec would be, or None when none may answer for it."""
    from ...dsl.search_path import SHIPPED

    spec = shipped_spec(spec_path)
    return None if spec is None else SHIPPED / SHIPPED_FORMS / f"{spec.stem}.json"


def shipped(spec_path) -> Store | None:
    """The spec's shipped store when it stands for the files as they are now, else None."""
    path = shipped_path(spec_path)
    data = disk_cache.read_package_file(path) if path is not None else None
    store = decode_shipped(data, path.parent.parent) if data else None
    return store if _valid(store) else None


def framed(magic: bytes, payload: bytes) -> bytes:
    """A shipped file's bytes: its magic line, the SHA-256 of the payload, a newline, the payload."""
    return magic + hashlib.sha256(payload).hexdigest().encode() + b"\n" + payload


def unframed(magic: bytes, data: bytes | None) -> bytes | None:
    """The payload of framed() bytes whose hash matches, else None."""
    head = len(magic) + 64
    if data is None or not data.startswith(magic) or data[head:head + 1] != b"\n":
        return None
    payload = data[head + 1:]
    return payload if data[len(magic):head] == hashlib.sha256(payload).hexdigest().encode() else None


def relative_deps(deps: dict, folder: Path) -> dict:
    """{absolute path: sha256} as paths relative to `folder` (the shipped specs), sorted;
    ValueError for a file read outside it (a shipped file cannot stand for a file it does not ship)."""
    import posixpath

    out = {}
    for path, digest in deps.items():
        relative = Path(os.path.relpath(path, folder)).as_posix()
        if digest is not None and (relative == ".." or relative.startswith("../")):
            raise ValueError(f"an answer depends on {relative}, outside the shipped specs")
        out[posixpath.normpath(relative)] = digest
    return dict(sorted(out.items()))


def absolute_deps(deps, folder: Path) -> dict | None:
    """relative_deps() undone under `folder`; None for anything but relative paths."""
    if not isinstance(deps, dict) or not all(isinstance(p, str) and not os.path.isabs(p) for p in deps):
        return None
    return {os.path.normpath(os.path.join(folder, p)): digest for p, digest in deps.items()}


def deps_current(deps: dict) -> bool:
    """Every file of {path: sha256} still hashes the same."""
    return all(file_hash(path) == digest for path, digest in deps.items())


def encode_shipped(store: Store, folder: Path) -> bytes:
    """The bytes of a shipped form: dependencies relative to `folder` (the shipped specs),
    every table sorted, nothing counted in `seen`. ValueError when an answer depends on a
    file outside `folder` (a shipped form cannot stand for a file it does not ship)."""
    from ...cache import codec as cache_codec

    canonical = Store(store.engine, relative_deps(store.deps, folder), dict(sorted(store.templates.items())),
                      dict(sorted(store.literals.items())), dict(sorted(store.verify.items())), {}, store.format)
    return framed(SHIPPED_MAGIC, cache_codec.dumps(canonical))


def decode_shipped(data: bytes, folder: Path) -> Store | None:
    """The store in a shipped form's bytes, its dependencies made absolute under `folder`;
    None for bytes whose hash does not match or that are not a store."""
    payload = unframed(SHIPPED_MAGIC, data)
    if payload is None:
        return None
    from ...cache import codec as cache_codec

    try:
        store = cache_codec.loads(payload)
    except cache_codec.CacheFormatError:
        return None
    deps = absolute_deps(store.deps, folder) if isinstance(store, Store) else None
    if deps is None:
        return None
    store.deps = deps
    return store


def save(spec_path, store: Store) -> None:
    STORES[store_key(spec_path)] = store
    path = _store_path(spec_path)
    if path is not None:
        disk_cache.store(path, store)


def lookup(spec_path, text: str, store: Store | None = None) -> Answer | None:
    """The answer to one query from the (given, or the spec's validated) store
    alone, or None on any miss."""
    store = store if store is not None else load(spec_path)
    if store is None:
        return None
    if text in store.literals:
        return store.literals[text]
    template, bind = normalize(text)
    entry = store.templates.get(template)
    if entry is None:
        return None
    return run(entry, bind)
