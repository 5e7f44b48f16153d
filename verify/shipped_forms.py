"""The shipped specs' compiled forms: what a warm `specc verify` reads from the cache
(compiler/lanes/compiled.py's store per spec: each claim's verdict inputs and the exact
answers of its queries) and what a typical `specc eval` reads (the closed form of
each declared query's example call), generated for every spec of the shipped folder and committed
in specs/compiled/, so the first `specc verify specs/*.yaml` after an install is as
fast as a warm one. `specc ship-compiled` writes them; `specc ship-compiled --check`
(and tests/test_shipped_forms.py) says whether the committed ones are current.

Generating reads neither the user's cache of compiled stores nor the committed forms:
every store is built afresh by the symbolic engine, in a process of its own (the CLI
command), so the bytes depend on the specs and the engine alone. How they are read,
and when they are ignored: compiler/lanes/compiled.py (`shipped`)."""

from __future__ import annotations

from pathlib import Path

from ..dsl.errors import SpecError


def folder() -> Path:
    """The committed forms' folder (specs/compiled/ beside the shipped specs)."""
    from ..compiler.lanes.compiled import SHIPPED_FORMS
    from ..dsl.search_path import SHIPPED

    return SHIPPED / SHIPPED_FORMS


def build() -> dict:
    """{file name: bytes} of every shipped spec's compiled form, built afresh."""
    from ..compiler.lanes import compiled
    from ..dsl.search_path import SHIPPED, user_roots
    from . import fast_claims

    if user_roots():
        raise SpecError("the shipped compiled forms are made without a search path",
                        expected="no --path and an empty SPECC_PATH (they answer only without one)")
    before = compiled.building_shipped
    compiled.building_shipped = True
    compiled.STORES.clear()
    try:
        files = {}
        examples = example_queries()
        for spec in sorted(SHIPPED.glob("*.yaml")):
            fast_claims.verify_path(spec)
            _compile_examples(spec, examples)
            store = compiled.STORES[compiled.store_key(spec)]
            try:
                data = compiled.encode_shipped(store, SHIPPED)
            except ValueError as exc:
                raise SpecError(f"no compiled form for {spec.name}: {exc}",
                                expected="specs whose every file lies in the shipped folder") from None
            if str(SHIPPED.parent).encode() in data:
                raise SpecError(f"the compiled form of {spec.name} holds an absolute path of this machine",
                                expected="answers and messages that name files relative to specs/")
            files[f"{spec.stem}.json"] = data
    finally:
        compiled.building_shipped = before
        compiled.STORES.clear()
    return files


def example_queries() -> list:
    """A typical `specc eval`: each declared query's example call (compiler/query/query_registry.py),
    whose closed form in its scenario arguments then answers it at any other values too."""
    from ..compiler.query.queries import QUERIES
    from ..compiler.query.query_value import make_call

    return [make_call(info.name, [(None if k == "NAME" else k, v) for k, v in info.example]).text()
            for info in QUERIES.values()]


def _compile_examples(spec: Path, examples) -> None:
    """Compile (eagerly) each example's closed form, or store its exact value, in the spec's
    store; a query the spec cannot answer (no op q, no state) is left out, as errors always are."""
    from ..compiler.lanes import compile_queries
    from ..compiler.query.queries import QueryEngine
    from ..compiler.schema.spec import load_spec

    engine = QueryEngine.shared(load_spec(spec))
    try:
        for text in examples:
            try:
                compile_queries.answer(engine, text, eager=True)
            except SpecError:
                pass
    finally:
        compile_queries.flush()


def _ours(path: Path, magic: bytes | None = None) -> bool:
    from ..compiler.lanes.compiled import SHIPPED_MAGIC

    magic = magic or SHIPPED_MAGIC
    try:
        with open(path, "rb") as fh:
            return fh.read(len(magic)) == magic
    except OSError:
        return False


def differences(fresh: dict, where: Path, pattern: str = "*.json", magic: bytes | None = None) -> tuple[list, list]:
    """(changed or missing, obsolete) file names of `where` against a fresh build (obsolete:
    files matching `pattern` that start with `magic`, the compiled forms' by default)."""
    changed = sorted(name for name, data in fresh.items()
                     if not (where / name).is_file() or (where / name).read_bytes() != data)
    obsolete = sorted(p.name for p in where.glob(pattern) if p.name not in fresh and _ours(p, magic))
    return changed, obsolete


def write(fresh: dict, where: Path, pattern: str = "*.json", magic: bytes | None = None) -> tuple[list, list]:
    """Write the changed files and remove obsolete ones (only files this module wrote:
    they start with the magic line). Returns what differed."""
    changed, obsolete = differences(fresh, where, pattern, magic)
    where.mkdir(parents=True, exist_ok=True)
    for name in changed:
        (where / name).write_bytes(fresh[name])
    for name in obsolete:
        (where / name).unlink()
    return changed, obsolete
