"""Commands that draw: graph (and later table, report, plot)."""

from __future__ import annotations

import click

from .cli import _load, main


@main.command()
@click.argument("spec", type=click.Path(exists=True, dir_okay=False))
@click.option("--format", "fmt", type=click.Choice(["json", "dot"]), default="dot", show_default=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None, help="Write here instead of stdout.")
@click.option("--option", "options", multiple=True, metavar="NAME=CHOICE",
              help="Choose a spec option, e.g. --option mode=reference.")
def graph(spec, fmt, output, options):
    """Print the compiled op graph of SPEC as node-link JSON or DOT text.

    \b
    specc graph specs/<model>.yaml --format json -o graph.json
    specc graph specs/<model>.yaml --option mode=reference --format dot
    """
    from .compiler.build import compile_spec
    from .render.graph_export import to_dot, to_json

    choices = {}
    for item in options:
        if "=" not in item:
            raise click.BadParameter(f"'{item}' is not NAME=CHOICE", param_hint="--option")
        key, value = item.split("=", 1)
        choices[key.strip()] = value.strip()
    model = compile_spec(_load(spec), **choices)
    text = to_json(model) if fmt == "json" else to_dot(model)
    if output:
        with open(output, "w", encoding="utf-8") as fh:
            fh.write(text + "\n")
    else:
        click.echo(text)
