"""The blocks command: the block library's reference, costs derived by the compiler."""

from __future__ import annotations

import glob
from pathlib import Path

import click



@click.command()
@click.argument("libs", nargs=-1, type=click.Path(exists=True, dir_okay=False))
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None, help="Write here instead of stdout.")
def blocks(libs, output):
    """Print the block library reference (Markdown): what each block models,
    its parameters and its costs, derived by instantiating it with symbols.

    \b
    specc blocks                          every file in specs/lib/
    specc blocks specs/lib/core.yaml
    specc blocks -o specs/lib/README.md   the committed reference
    """
    from .render.block_reference import library_markdown

    libs = libs or tuple(sorted(glob.glob("specs/lib/*.yaml")))
    if not libs:
        raise click.UsageError("no library files given and none found in specs/lib/")
    text = library_markdown(libs, Path.cwd())
    if output:
        Path(output).write_text(text, encoding="utf-8")
    else:
        click.echo(text, nl=False)
