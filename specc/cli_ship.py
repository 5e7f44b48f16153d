"""`specc ship-compiled`: regenerate (or check) the shipped specs' compiled forms."""

from __future__ import annotations

import sys
from pathlib import Path

import click


@click.command("ship-compiled")
@click.option("--check", is_flag=True,
              help="write nothing; exit 1 when the committed forms differ from a fresh build")
@click.option("-o", "--output", "out_dir", type=click.Path(file_okay=False), default=None,
              help="the folder to write (default: specs/compiled/ beside the shipped specs)")
def ship_compiled(check, out_dir):
    """Regenerate the shipped specs' compiled forms (specs/compiled/, committed).

    Every claim of every shipped spec, and each declared query's example call
    (a typical `specc eval`), is evaluated afresh by the symbolic engine (neither
    the cache nor the committed forms are read), and the spec's store, which a
    warm `verify` and `eval` read, is written as plain data: deterministic bytes,
    no absolute path. They ship with the package, so the first `specc verify
    specs/*.yaml` after an install reads them instead of compiling; they answer
    only while the engine and every file they depend on are byte for byte as
    they were here. Run it after changing compiler/, dsl/, verify/ or specs/,
    and commit the result (a test fails while they are stale).

    \b
    specc ship-compiled            # regenerate specs/compiled/
    specc ship-compiled --check    # exit 1 if specs/compiled/ is stale
    """
    from .verify import shipped_forms

    where = Path(out_dir) if out_dir else shipped_forms.folder()
    fresh = shipped_forms.build()
    if check:
        changed, obsolete = shipped_forms.differences(fresh, where)
        if changed or obsolete:
            click.echo(f"stale compiled forms in {out_dir or 'specs/compiled'}: changed or missing "
                       f"{', '.join(changed) or 'none'}; obsolete {', '.join(obsolete) or 'none'} "
                       "(regenerate with `specc ship-compiled` and commit)", err=True)
            sys.exit(1)
        click.echo(f"{len(fresh)} compiled forms are current")
        return
    changed, obsolete = shipped_forms.write(fresh, where)
    size = sum(len(data) for data in fresh.values())
    click.echo(f"{len(fresh)} compiled forms ({size:,} bytes): {len(changed)} written, {len(obsolete)} removed")
