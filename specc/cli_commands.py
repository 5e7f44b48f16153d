"""The `specc` commands verify, eval and check (specc/cli_group.py's command table
names them; each is a plain click command that knows nothing of the group)."""

from __future__ import annotations

import inspect
import json
import sys

import click

from .cli_spec import SPEC
from .cli_support import fail, load_spec_file
from .dsl.errors import SpecError


@click.command()
@click.argument("specs", nargs=-1, required=True, type=SPEC)
@click.option("--claims", "claim_files", multiple=True, type=click.Path(exists=True, dir_okay=False),
              help="Extra claim files (YAML with a 'claims:' list), checked against every SPEC.")
@click.option("--format", "fmt", type=click.Choice(["text", "table", "json", "junit", "md"]), default="text",
              show_default=True,
              help="Output format: text is one line per spec plus the details of what fails; "
                   "table lists every claim (as --verbose).")
@click.option("-v", "--verbose", is_flag=True, help="List every claim: verdict, id, source, query, computed and "
                                                    "expected values (the text format's long form).")
@click.option("--only", default=None, help="Only claims whose id contains this text.")
@click.option("--no-fast", is_flag=True, help="Evaluate every claim with the symbolic engine (no compiled queries).")
def verify(specs, claim_files, fmt, verbose, only, no_fast):
    """Check every claim of each SPEC: PASS / FAIL / XFAIL / XPASS / ERROR.

    Each claim is a number a source document prints, with the query that
    recomputes it; the printed digits set the tolerance. Exit status: 0 when every
    claim is PASS or XFAIL, 1 when any is FAIL or XPASS, 2 on a spec or usage
    error or a claim that cannot be evaluated (ERROR).

    \b
    specc verify specs/*.yaml                      one line per spec, then the totals
    specc verify specs/<model>.yaml --verbose      every claim with its values
    specc verify specs/*.yaml --format json > results.json
    specc verify specs/<model>.yaml --only prefill
    """
    from .verify.output import render

    groups, every = [], []
    for path in specs:
        if no_fast:
            from .verify.claims import verify_spec

            found = verify_spec(load_spec_file(path), claim_files)
        else:
            from .verify.fast_claims import verify_path

            found = verify_path(path, claim_files)
        every.extend(found)
        groups.append((path, [r for r in found if not only or only in r.claim.id]))
    results = [r for _, found in groups for r in found]
    if only and not results:
        from .dsl.errors import did_you_mean

        fail(SpecError(f"--only '{only}' matches no claim id of {', '.join(specs)}",
                       expected="text contained in a claim id: " + did_you_mean(
                           only, sorted({r.claim.id for r in every}))))
    click.echo(render(groups, fmt, verbose, keep_empty=not only))
    # an ERROR is a mistake in a claim (its query or its units): a usage error, like a spec error
    if any(r.verdict == "ERROR" for r in results):
        sys.exit(2)
    bad = [r for r in results if r.verdict in ("FAIL", "XPASS")]
    sys.exit(1 if bad else 0)


@click.command("eval")
@click.argument("spec", type=SPEC)
@click.argument("queries", nargs=-1, required=True)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list: query, value, float, unit, extrapolated.")
@click.option("--exact", is_flag=True,
              help="Print times as exact fractions of seconds too (by default a time is shown rounded, "
                   "in s, ms, µs or ns; --json always has the exact value).")
@click.option("--symbolic", is_flag=True,
              help="Allow scenario symbols as arguments (e.g. P=P) and print the expression.")
@click.option("--no-fast", is_flag=True, help="Evaluate with the symbolic engine (no compiled queries).")
def eval_(spec, queries, as_json, exact, symbolic, no_fast):
    """Evaluate QUERIES against SPEC and print exact results.

    \b
    Scenario arguments: B requests (default 1), S cached tokens (default 0),
    P new tokens, G generated tokens, H context length.
    \b
    specc eval specs/<model>.yaml 'flops(B=1, S=0, P=8192)'
    specc eval specs/<model>.yaml 'params(group=dense_shared_ffn) / params()'
    specc eval specs/<model>.yaml 'state_bytes(H=8192)' 'b_max(device=rtx_4090, H=8192, workspace=2 GiB)'
    specc eval specs/<model>.yaml --symbolic 'flops(B=B, S=S, P=P)'
    specc eval <model> 'params()'           (a spec shipped with specc, by name, from any folder)
    \b
    Combine queries with + - * / // floor ceil min max. Each query is answered on
    its own: one that fails prints its located error, the others still print, and
    the exit status is 2.
    """
    # each query is answered on its own: a failing one prints its located error (stderr)
    # and the others still print; the exit status is 2 when any failed
    if no_fast or symbolic:
        from .api import Model

        model = Model(load_spec_file(spec))
        answers = []
        for text in queries:
            try:
                answers.append(model.eval(text, symbolic=symbolic))
            except SpecError as exc:
                answers.append(exc)
        rows = [a.to_json() if not isinstance(a, SpecError) else a for a in answers]
    else:
        # compiled queries (compiler/lanes/compiled.py): the same exact values, printed by the fast lane's formatter
        from .cli_fast import compiled_answers, eval_rows, value_notes

        answers = compiled_answers(spec, queries, keep_going=True)
        rows = eval_rows(queries, answers, value_notes(spec, queries, answers))
    from .cli_fast import render_eval

    if _print_eval(queries, rows, as_json, exact, render_eval):
        sys.exit(2)


def _print_eval(queries, rows, as_json: bool, exact: bool, render_eval) -> bool:
    """Print each answer (stdout) or located error (stderr) in order; True when any failed.
    With --json the list has {"query", "error"} in place of a failed answer."""
    failed = False
    if as_json:
        for row in rows:
            if isinstance(row, SpecError):
                click.echo(row.render(), err=True)
        click.echo(render_eval([{"query": text, "error": r.message} if isinstance(r, SpecError) else r
                                for text, r in zip(queries, rows)], True))
        return any(isinstance(r, SpecError) for r in rows)
    for row in rows:
        if isinstance(row, SpecError):
            failed = True
            click.echo(row.render(), err=True)
        else:
            click.echo(render_eval([row], False, exact))
    return failed


# the query list of `eval --help` comes from the one registration table (stdlib-only import)
from .compiler.query.query_registry import help_lines as _query_help_lines  # noqa: E402

# (the docstring is dedented first: click dedents help at print time, and unindented lines appended
# to an indented docstring would keep all of it indented)
eval_.help = inspect.cleandoc(eval_.help) + "\n\n\b\nQueries, by family (the README's query table says what each " \
    "answers):\n" + "\n".join(_query_help_lines())


@click.command()
@click.argument("specs", nargs=-1, required=True, type=SPEC)
@click.option("--allow-dead-ends", is_flag=True,
              help="Report a tensor nothing consumes as a warning (exit 0) instead of an error: "
                   "for a spec still being written.")
@click.option("--strict", is_flag=True, hidden=True, help="The default now; kept so older scripts still run.")
def check(specs, allow_dead_ends, strict):
    """Parse, compile and shape-check each SPEC without evaluating claims.

    An op whose tensors nothing consumes (other than a block's outputs) is a dead
    end in the graph, which in a finished spec means a miswired block: an error
    with its location (exit 2), a warning with --allow-dead-ends. Weight matrices
    and stores of the spec's own file that declare no sharding are warned about
    (at tp > 1 every device would keep all of them); the exit status stays 0.

    \b
    specc check specs/*.yaml
    specc check --allow-dead-ends my_draft.yaml
    """
    from .compiler.graph.build import compile_spec
    from .verify.claims import load_claims

    dead_total = 0
    for path in specs:
        spec = load_spec_file(path)
        model = compile_spec(spec)
        claims = load_claims(spec)
        seen = set()
        for op in model.dead_ops():
            if op.stmt.loc in seen:
                continue
            seen.add(op.stmt.loc)
            dead_total += 1
            click.echo(SpecError(f"{'warning' if allow_dead_ends else 'error'}: '{op.stmt.targets[0]}' is computed "
                                 "but nothing consumes it", op.stmt.loc, span=len(op.stmt.targets[0]),
                                 expected="wire it into the op that uses it, or make it a block output").render(),
                       err=True)
        for warning in unsharded(spec, model):
            click.echo(warning.render(), err=True)
        click.echo(f"{path}: {'ok' if allow_dead_ends or not seen else 'error'} — {len(model.ops)} op nodes, "
                   f"{len(model.graph.edges)} tensor edges, {len(spec.stores)} state stores, {len(claims)} claims"
                   + (f", {len(seen)} dead-end op(s)" if seen else ""))
    if dead_total and not allow_dead_ends:
        sys.exit(2)


def unsharded(spec, model) -> list:
    """Warnings (SpecErrors to render) for what this spec's own file could split over tp but
    declares no sharding for: weight matrices of `@` ops without shard= (at tp > 1 every
    device would hold and compute all of them) and stores without shard: (every device
    would keep every entry). Library blocks declare their own; shard=replicated or
    `shard: replicated` says that replication is meant and silences the warning."""
    from pathlib import Path

    own = Path(spec.path).resolve()

    def mine(loc) -> bool:
        return loc is not None and Path(str(loc.file)).resolve() == own

    out, seen = [], set()
    ops = []
    for op in model.ops:
        if (op.kind == "matmul" and op.weights and op.experts == 1 and op.shard is None and mine(op.stmt.loc)
                and op.stmt.loc not in seen):
            seen.add(op.stmt.loc)
            ops.append(op)
    if ops:
        names = ", ".join(dict.fromkeys(op.short for op in ops))
        out.append(SpecError(
            f"warning: {len(ops)} weight matri{'ces' if len(ops) > 1 else 'x'} declare{'' if len(ops) > 1 else 's'} "
            f"no sharding ({names}): at tp > 1 every device holds and computes all of "
            f"{'them' if len(ops) > 1 else 'it'}", ops[0].stmt.loc, span=len(ops[0].stmt.targets[0]),
            expected="shard=column (output width split), row (input width split, all-reduced), heads, vocab, "
                     "or shard=replicated when every device should keep it (docs/writing-specs.md, 'Sharding')"))
    stores = [store for store in spec.stores.values() if store.shard is None and mine(store.loc)]
    if stores:
        out.append(SpecError(
            f"warning: store{'s' if len(stores) > 1 else ''} {', '.join(st.name for st in stores)} declare"
            f"{'' if len(stores) > 1 else 's'} no shard: at tp > 1 every device keeps every entry",
            stores[0].loc, span=len(stores[0].name),
            expected="shard: n_kv (entries split into that many pieces, e.g. KV heads), or shard: replicated"))
    return out

