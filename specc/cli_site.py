"""`specc site`: the static explorer (render/site.py) plus the generated docs."""

from __future__ import annotations

import glob
import sys
import time
from pathlib import Path

import click



@click.command()
@click.option("-o", "--output", "out_dir", type=click.Path(file_okay=False), required=True,
              help="Folder to write explorer.html, its assets and data into.")
@click.option("--specs", "spec_glob", default="specs/*.yaml", show_default=True,
              help="Which specs the explorer offers (devices come from the hardware/ folder next to them).")
@click.option("--docs", "docs_dir", default="docs", show_default=True, type=click.Path(file_okay=False),
              help="Generated docs (specc docs) to copy under DIR/docs; skipped when the folder is absent.")
@click.option("--jobs", default=2, show_default=True, help="Worker processes for the export.")
@click.option("--plan", "with_plan", is_flag=True,
              help="Add the plan view (plan.html: specc plan in the browser), exporting each spec's call_time, "
                   "b_max and state_bytes per device layout of the page's space (seconds per spec).")
def site(out_dir, spec_glob, docs_dir, jobs, with_plan):
    """Write a static site: the interactive explorer and the claims reports/docs.

    Every figure of the explorer is computed in the browser from the spec's
    closed forms printed to JavaScript (exact BigInt/rational arithmetic), and
    carries the specc query that reproduces it. Nothing is fetched at view
    time: open DIR/explorer.html from disk or serve the folder. The shipped
    specs' exports ship with specc (specs/compiled/site/), so run beside specs/
    the first build reads them; exporting other specs' closed forms (each
    layout, option, and the capacity, fit and time formulas of every layout)
    takes seconds per spec on two cores. Each part is cached by content (in
    the per-user cache, see SPECC_CACHE_DIR), so a rebuild exports only the
    parts of specs, libraries or devices that changed. Progress goes to
    standard error.

    \b
    specc site -o site/
    specc site -o /tmp/site --specs 'specs/<family>_*.yaml'
    specc site -o /tmp/site --specs 'specs/<family>_*.yaml' --plan
    """
    paths = sorted(glob.glob(spec_glob))
    if not paths:
        click.echo(f"error: no spec matches '{spec_glob}'", err=True)
        sys.exit(2)
    docs = Path(docs_dir) if docs_dir and Path(docs_dir).is_dir() else None
    start = time.perf_counter()
    tty = sys.stderr.isatty()

    def say(text, rewrite=False):
        # a terminal rewrites one status line; a log gets whole lines
        if tty:
            click.echo(f"\r\033[K{text}", err=True, nl=not rewrite)
        elif not rewrite:
            click.echo(text, err=True)

    def progress(event, **facts):
        elapsed = f"{time.perf_counter() - start:.0f} s"
        if event == "spec":
            say(f"reading specs: {facts['done']}/{facts['total']} ({Path(facts['path']).stem}), {elapsed}",
                rewrite=True)
        elif event == "planned":
            say(f"{facts['specs']} specs, {facts['parts']} export parts: {facts['cached']} cached, "
                + (f"{facts['shipped']} shipped with specc, " if facts.get("shipped") else "") +
                f"{facts['to_export']} to export" + (f" on {facts['jobs']} worker process"
                                                     + ("es" if facts["jobs"] > 1 else "") + ", the longest first"
                                                     if facts["to_export"] else "") + f" ({elapsed})")
        elif event == "part":
            part = "base" if facts["part"] == "base" else f"tp={facts['part']}"
            say(f"exported {facts['done']}/{facts['total']}: {Path(facts['path']).stem} {part} "
                f"in {facts['seconds']:.1f} s ({elapsed})", rewrite=tty and facts["done"] < facts["total"])

    say(f"specc site: {len(paths)} specs from {spec_glob}, writing {out_dir}")
    from .render.site import write_site
    from .render.views import RenderError

    try:
        written = write_site(Path(out_dir), paths, docs, jobs=jobs, progress=progress, plan=with_plan)
    except RenderError as exc:          # a folder specc did not make, a spec name that cannot be a link
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    click.echo(f"wrote {len(written)} files to {out_dir} in {time.perf_counter() - start:.0f} s: "
               f"open {Path(out_dir) / 'explorer.html'}")
