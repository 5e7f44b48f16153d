"""`specc ship-compiled`: regenerate (or check) the shipped specs' compiled forms."""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from pathlib import Path

import click


@click.command("ship-compiled")
@click.option("--check", is_flag=True,
              help="write nothing; exit 1 when the committed forms differ from a fresh build "
                   "or a site export does not match the engine and files")
@click.option("-o", "--output", "out_dir", type=click.Path(file_okay=False), default=None,
              help="the folder to write (default: specs/compiled/ beside the shipped specs)")
def ship_compiled(check, out_dir):
    """Regenerate the shipped specs' compiled forms and site exports (specs/compiled/, committed).

    Every claim of every shipped spec, and each declared query's example call
    (a typical `specc eval`), is evaluated afresh by the symbolic engine (neither
    the cache nor the committed forms are read), and the spec's store, which a
    warm `verify` and `eval` read, is written as plain data: deterministic bytes,
    no absolute path. They ship with the package, so the first `specc verify
    specs/*.yaml` after an install reads them instead of compiling; they answer
    only while the engine and every file they depend on are byte for byte as
    they were here. Then every shipped spec's explorer data is exported afresh
    into specs/compiled/site/ (render/shipped_site.py), which a first
    `specc site` reads under the same rules. Run it after changing compiler/,
    dsl/, verify/, cache/, render/site.py, render/site_cache.py or specs/,
    and commit the result (a test fails while they are stale).

    \b
    specc ship-compiled            # regenerate specs/compiled/ and specs/compiled/site/
    specc ship-compiled --check    # exit 1 if either is stale
    """
    from .verify import shipped_forms

    where = Path(out_dir) if out_dir else shipped_forms.folder()
    fresh = shipped_forms.build()
    if check:
        changed, obsolete = shipped_forms.differences(fresh, where)
        stale_sites = [] if out_dir else _stale_site_exports()
        if changed or obsolete or stale_sites:
            click.echo(f"stale compiled forms in {out_dir or 'specs/compiled'}: changed or missing "
                       f"{', '.join(changed) or 'none'}; obsolete {', '.join(obsolete) or 'none'}; "
                       f"site exports stale or missing {', '.join(stale_sites) or 'none'} "
                       "(regenerate with `specc ship-compiled` and commit)", err=True)
            sys.exit(1)
        click.echo(f"{len(fresh)} compiled forms and their site exports are current")
        return
    changed, obsolete = shipped_forms.write(fresh, where)
    size = sum(len(data) for data in fresh.values())
    click.echo(f"{len(fresh)} compiled forms ({size:,} bytes): {len(changed)} written, {len(obsolete)} removed")
    _ship_site_exports(where / "site")


def _shipped_spec_names() -> list[str]:
    """The shipped specs as `specc site` names them by default (specs/NAME.yaml, run beside specs/)."""
    from .dsl.search_path import SHIPPED

    return [f"{SHIPPED.name}/{p.name}" for p in sorted(SHIPPED.glob("*.yaml"))]


@contextmanager
def _beside_shipped_specs():
    """Run in the shipped specs' parent folder: the page prints each spec's path as named there."""
    from .dsl.search_path import SHIPPED

    here = os.getcwd()
    os.chdir(SHIPPED.parent)
    try:
        yield
    finally:
        os.chdir(here)


def _stale_site_exports() -> list[str]:
    from .dsl.search_path import device_files
    from .render import shipped_site
    from .render.site import node_sizes

    with _beside_shipped_specs():
        return [Path(name).stem for name in _shipped_spec_names()
                if shipped_site.load(name, name, node_sizes(device_files(name))) is None]


def _ship_site_exports(where: Path) -> None:
    """Export every shipped spec's explorer data afresh and write specs/compiled/site/ (see
    render/shipped_site.py): the first `specc site` after an install then reads it."""
    import time

    from .compiler.lanes import compiled
    from .dsl.search_path import device_files
    from .render import shipped_site
    from .render.site import export_parts, node_sizes
    from .verify import shipped_forms

    start = time.perf_counter()

    def progress(event, **facts):
        if event == "part" and (facts["done"] % 25 == 0 or facts["done"] == facts["total"]):
            click.echo(f"site exports: {facts['done']}/{facts['total']} parts ({time.perf_counter() - start:.0f} s)",
                       err=True)

    names = _shipped_spec_names()
    record: dict = {}
    before, compiled.building_shipped = compiled.building_shipped, True   # read no cache and no shipped file
    try:
        with _beside_shipped_specs():
            export_parts(names, progress=progress, cached=False, record=record)
            fresh = shipped_site.files(names, record, {name: node_sizes(device_files(name)) for name in names})
    finally:
        compiled.building_shipped = before
    changed, obsolete = shipped_forms.write(fresh, where, "*.xz", shipped_site.MAGIC)
    size = sum(len(data) for data in fresh.values())
    click.echo(f"{len(fresh)} site exports ({size:,} bytes): {len(changed)} written, {len(obsolete)} removed")
