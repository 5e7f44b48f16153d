"""`specc sweep`: one query over a grid of scenario values (compiler/lanes/sweep.py)."""

from __future__ import annotations

import sys

import click

from .cli_spec import SPEC


@click.command()
@click.argument("spec", type=SPEC)
@click.argument("query")
@click.option("--over", "overs", multiple=True, required=True,
              help="A swept scenario value: NAME=FIRST..LAST (inclusive, ..LAST:STEP for a stride) "
                   "or NAME=V1,V2,...; repeat for a grid.")
@click.option("--format", "fmt", type=click.Choice(["csv", "json"]), default="csv", show_default=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), default=None,
              help="Write the table here (default: standard output).")
@click.option("--no-fast", is_flag=True, help="Compute every point exactly, one by one (the reference).")
def sweep(spec, query, overs, fmt, output, no_fast):
    """Evaluate QUERY at every point of a grid and write a table.

    The query names each swept value as NAME=NAME. Values are exact; the grid
    runs as int64 arrays where that is proven not to overflow. Points beyond
    the spec's maximum context are refused as `specc eval` refuses them (no
    value, a note column says so, a warning counts them) unless the query says
    extrapolate=true.

    \b
    specc sweep specs/<model>.yaml 'flops(P=P)' --over P=1..1000000 -o flops.csv
    specc sweep specs/<model>.yaml 'state_bytes(H=H, B=B)' --over H=1024..131072:1024 --over B=1,2,4,8
    """
    import time

    from .compiler.lanes import sweep as sweeping
    from .dsl.errors import SpecError

    start = time.perf_counter()
    over = {}
    for text in overs:
        name, values = sweeping.parse_over(text)
        if name in over:
            raise SpecError(f"--over {name} is given twice", None, expected="one --over per name")
        over[name] = values
    table = sweeping.sweep(spec, query, over, fast=not no_fast)
    text = sweeping.to_csv(table) if fmt == "csv" else sweeping.to_json(table, spec, query) + "\n"
    if output:
        with open(output, "w", encoding="utf-8") as fh:
            fh.write(text)
    else:
        sys.stdout.write(text)
    seconds = time.perf_counter() - start
    click.echo(f"{len(table):,} points in {seconds:.3f} s, table written ({len(table) / seconds:,.0f} points/s; "
               f"evaluation alone {table.seconds:.3f} s, {table.mode})", err=True)
    if table.refused is not None:
        click.echo(f"warning: {int(table.refused.sum()):,} points have no value, as specc eval refuses them "
                   f"(first: {table.refusal}); their note says '{sweeping.REFUSED}'. Add extrapolate=true to "
                   "the query to compute them by formula, marked extrapolated.", err=True)
