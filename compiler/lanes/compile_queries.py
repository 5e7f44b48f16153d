"""Building compiled queries (the miss path of compiler/lanes/compiled.py).

A normalized query is evaluated once by the symbolic engine with its
parameters left as scenario symbols, the closed form is printed as Python
(compiler/lanes/codegen.py) and stored. The answer the caller gets on a miss is
computed by that printed code too, so cold and warm runs print the same bits;
the tests compare both against the symbolic path (`--no-fast`).

Where a query has no closed form in its arguments (request sums whose
decode-step conditions need concrete bounds, validations that need concrete
values, ...), the literal query is evaluated by the symbolic engine and its
exact value is stored for that text alone. Errors are never stored: they are
raised by the symbolic path, with their locations. Any other exception while
building a closed form is a bug and is raised, not taken for "no closed form".

A closed form's side conditions are data the engine returns with it
(Quantity.conditions: each context limit as an expression in the parameters);
the printed query checks them at its concrete arguments (compiled.run)."""

from __future__ import annotations

import os
from fractions import Fraction
from pathlib import Path

import sympy as sp

from ...dsl.errors import SpecError
from ...dsl.units import DISPLAY, dims_name
from . import compiled
from .compiled import Answer, Store, Template
from ..schema.patterns import NoClosedForm
from ..query.queries import QueryEngine
from ..query.query_base import ContextLimit
from ..deploy.schemes import SCHEMES_FILE


def _exact(value):
    """A sympy number as int/Fraction, or None when it is not rational."""
    value = sp.sympify(value)
    if not value.is_Rational:
        return None
    return int(value) if value.is_Integer else Fraction(int(value.p), int(value.q))


_ABSENT = object()      # a candidate tried before a match: it must stay absent


def _dependencies(engine: QueryEngine) -> dict:
    """Every file the engine's answers can depend on, {path: the SHA-256 of the bytes
    that were parsed (None: hash it now), or _ABSENT}: the spec and its imports, the
    sibling specs it asked (and theirs), the hardware files it can see, and every
    file a name resolved to (devices and claims files from --path, SPECC_PATH or the
    shipped data included) with the candidates tried before it (dsl/search_path.py)."""
    from ...dsl.search_path import resolutions

    files: dict = {}
    seen, todo = set(), [engine]
    while todo:
        eng = todo.pop()
        if id(eng) in seen:
            continue
        seen.add(id(eng))
        spec = eng.spec
        sources = [str(Path(s).resolve()) for s in (spec.sources or [spec.path])]
        hashes = getattr(spec, "source_hashes", None) or {}
        for source, original in zip(sources, spec.sources or [spec.path]):
            files[source] = hashes.get(str(original))
        for path in _own_files(eng):
            files.setdefault(path, None)
        for path, found in resolutions(sources).items():
            files.setdefault(path, None if found else _ABSENT)
        todo.extend(eng.siblings.values())
    return files


_OWN_FILES: dict = {}


def _own_files(engine: QueryEngine) -> frozenset:
    """The hardware files the spec can see and the schemes table, listed once per spec and
    sources per process (a verify of a thousand claims asked per claim)."""
    key = (engine.spec.path, tuple(engine.spec.sources or ()))
    found = _OWN_FILES.get(key)
    if found is None:
        # weights=/kv= and a format's scheme: read the schemes table
        found = _OWN_FILES[key] = _hardware_near(str(Path(engine.spec.path).resolve().parent)) | {
            str(SCHEMES_FILE.resolve())}
    return found


_HARDWARE: dict = {}


def _hardware_near(folder: str) -> frozenset:
    """The device files a spec in `folder` can name (hardware/ in it and three parents),
    listed once per folder per process."""
    found = _HARDWARE.get(folder)
    if found is None:
        files = set()
        here = Path(folder)
        for place in [here, *here.parents][:4]:
            files.update(str(p.resolve()) for p in (place / "hardware").glob("*.yaml"))
            if place.name == "hardware":
                files.update(str(p.resolve()) for p in place.glob("*.yaml"))
        found = _HARDWARE[folder] = frozenset(files)
    return found


def store_for(engine: QueryEngine) -> Store:
    """The spec's store (valid, or a fresh one)."""
    store = compiled.load(engine.spec.path)
    if store is None:
        store = Store(compiled.engine_hash())
        compiled.STORES[compiled.store_key(engine.spec.path)] = store
        note_dependencies(engine, store)
    return store


def note_dependencies(engine: QueryEngine, store: Store, extra=()) -> None:
    from ...dsl.yamlload import READ_HASHES

    deps = _dependencies(engine)
    for path in extra:
        deps.setdefault(str(Path(path).resolve()), None)
    for path, known in sorted(deps.items(), key=lambda item: item[0]):
        if path not in store.deps:
            # the hash of the bytes read (taken then), else of the file now; None: must stay absent
            store.deps[path] = None if known is _ABSENT else (
                known or READ_HASHES.get(path) or compiled.file_hash(path))
    # within this process too, a later change of any of them retires the store (compiled.load re-hashes)


def _undecided_by_sympy(exc: Exception) -> bool:
    """Whether sympy itself raised: a relational whose truth it cannot decide in symbols
    (`if batch < 1` at a symbolic B), a sum or a division it cannot do symbolically."""
    import traceback

    frames = traceback.extract_tb(exc.__traceback__)
    return bool(frames) and f"{os.sep}sympy{os.sep}" in frames[-1].filename


def _template(engine: QueryEngine, template: str, bind, vector: bool = False) -> Template | None:
    """The closed form of a normalized query in the parameters `bind` (names),
    printed; None when it has none. With vector=True, printed for numpy too."""
    from . import codegen   # only a compile needs the printer

    try:
        result = engine.evaluate_text(template, "<query>", symbolic_ok=True)
        names = sorted(bind)
        value = sp.sympify(result.value)
        if not {s.name for s in value.free_symbols} <= set(names):
            return None
        checks = [c for c in result.conditions if isinstance(c, ContextLimit)]
        source = codegen.emit(value, names, "python", name="q")
        printed = tuple((codegen.emit(c.context, names, "python", name="c"), c.limit, c.allowed) for c in checks)
        grid = None
        if vector:
            grid = (codegen.emit(value, names, "vector", name="q"),
                    tuple(codegen.emit(c.context, names, "vector", name="c") for c in checks))
    except (SpecError, codegen.CodegenError, NoClosedForm):
        # a check that needs concrete values (G >= 1, a name), a sum over decode steps with no
        # closed form in symbols (patterns.range_sum), or a form codegen cannot print
        return None
    except (TypeError, ValueError, ZeroDivisionError) as exc:
        if not _undecided_by_sympy(exc):
            raise     # a bug of specc, not a query without a closed form: never hidden by the slow lane
        return None   # sympy cannot decide a comparison or a sum in symbols: answered exactly at the literals
    return Template(tuple(names), source, tuple(result.dims), DISPLAY.get(result.dims, dims_name(result.dims)),
                    tuple(printed), bool(result.extrapolated), grid, result.note)


def grid_template(engine: QueryEngine, text: str, names) -> Template | None:
    """The template of `text` (parameters `names`) with its numpy printing, stored."""
    store = store_for(engine)
    entry = store.templates.get(text)
    if entry is None or entry.vector is None:
        entry = _template(engine, text, names, vector=True)
        if entry is not None:
            store.templates[text] = entry
            note_dependencies(engine, store)
            dirty_stores.add(engine.spec.path)
    return entry


def answer(engine: QueryEngine, text: str, extra_deps=(), eager: bool = False) -> Answer:
    """The answer to one query, compiling (and storing) it on a miss. Errors are
    raised by the symbolic engine as located SpecErrors.

    A query shape is compiled the second time it is asked with other values
    (or at once with eager=True): compiling a closed form in symbols costs a
    few times one evaluation at literal values, so a first run is no slower
    than the symbolic path, and the literal answer is stored either way."""
    spec_path = engine.spec.path
    store = store_for(engine)
    if not eager and text in store.literals:
        return store.literals[text]
    template, bind = compiled.normalize(text)
    if bind:
        if template not in store.templates and (eager or template in store.seen):
            store.templates[template] = _template(engine, template, bind)
            note_dependencies(engine, store, extra_deps)
            dirty_stores.add(spec_path)
        entry = store.templates.get(template)
        if entry is not None:
            found = compiled.run(entry, bind)
            if found is not None:
                return found
        if template not in store.templates:
            store.seen[template] = store.seen.get(template, 0) + 1
    # the symbolic path: the reference, and the only one that reports errors
    result = engine.evaluate_text(text, "<query>")
    found = remember(engine, store, text, result)
    if found is None:
        return Answer(result.value, tuple(result.dims), DISPLAY.get(result.dims, dims_name(result.dims)),
                      bool(result.extrapolated), result.note)
    note_dependencies(engine, store, extra_deps)
    return found


def remember(engine: QueryEngine, store: Store, text: str, result) -> Answer | None:
    """Store the exact value the symbolic engine gave for the literal query `text`
    (a Quantity), so a later process answers it without sympy; None when it is not
    an exact number. The caller notes the store's dependencies."""
    value = _exact(result.value)
    if value is None:
        return None
    found = Answer(value, tuple(result.dims), DISPLAY.get(result.dims, dims_name(result.dims)),
                   bool(result.extrapolated), result.note)
    store.literals[text] = found
    dirty_stores.add(engine.spec.path)
    return found


dirty_stores: set = set()


def flush() -> None:
    """Write every store this process changed."""
    for spec_path in sorted(dirty_stores):
        store = compiled.STORES.get(compiled.store_key(spec_path))
        if store is not None:
            compiled.save(spec_path, store)
    dirty_stores.clear()
