"""The coverage command: which catalog ids the shipped claims encode."""

from __future__ import annotations

import glob
import sys

import click



@click.command()
@click.argument("catalogs", nargs=-1, type=click.Path(exists=True, dir_okay=False))
@click.option("--specs", "spec_glob", default="specs/*.yaml", show_default=True,
              help="Specs whose claims count as encoded (a glob).")
@click.option("--not-computable", "nc_glob", default="specs/claims/not_computable*.yaml", show_default=True,
              help="Lists of {id, reason} for entries that cannot be computed (a glob).")
@click.option("--by-model", is_flag=True, help="Break each catalog down by model.")
@click.option("--missing", "show_missing", is_flag=True, help="List every id that is neither encoded nor listed.")
@click.option("--min-percent", type=float, default=None,
              help="Exit 1 unless every catalog has at least this share of its computable ids (non-config, "
                   "not listed as not computable) encoded as claims.")
def coverage(catalogs, spec_glob, nc_glob, by_model, show_missing, min_percent):
    """How many ids of each claim catalog the shipped specs encode.

    A catalog lists every number a source document prints. Each non-config id
    is ENCODED (some spec carries a claim with that id), NOT COMPUTABLE (a
    not-computable list says why) or MISSING. Config ids are architecture facts
    the specs encode; those also checked by a claim are counted. The % column is
    ENCODED over the computable ids (non-config minus NOT COMPUTABLE).

    \b
    specc coverage                                   every catalog in specs/catalog/
    specc coverage specs/catalog/000.yaml --by-model
    specc coverage --missing --min-percent 95        fail CI below 95 %
    """
    from .verify.coverage import catalog_coverage, encoded_ids, load_not_computable

    catalogs = catalogs or tuple(sorted(glob.glob("specs/catalog/*.yaml")))
    if not catalogs:
        raise click.UsageError("no catalogs given and none found in specs/catalog/")
    encoded = encoded_ids(sorted(glob.glob(spec_glob)))
    not_computable = load_not_computable(sorted(glob.glob(nc_glob)))
    failed = False
    click.echo(f"{'catalog':<28} {'non-config':>10} {'encoded':>8} {'%':>6} {'not comp.':>9} {'missing':>8}"
               f" {'config checked':>15}")
    for path in catalogs:
        cov = catalog_coverage(path, encoded, not_computable)
        click.echo(f"{path:<28} {cov.total:>10} {cov.encoded:>8} {cov.percent_encoded:>5.1f}% "
                   f"{cov.not_computable:>9} {len(cov.missing):>8} {cov.config_checked:>6}/{cov.config_total:<8}")
        if by_model:
            for model, c in sorted(cov.by_model.items()):
                left = c["total"] - c["encoded"] - c["not_computable"]
                computable = c["total"] - c["not_computable"]
                share = 100.0 * c["encoded"] / computable if computable else 100.0
                click.echo(f"  {model:<26} {c['total']:>10} {c['encoded']:>8} "
                           f"{share:>5.1f}% {c['not_computable']:>9} {left:>8}")
        if show_missing:
            for cid, model, line in cov.missing:
                click.echo(f"  missing: {cid}  ({model}, line {line})")
        if min_percent is not None and cov.percent_encoded < min_percent:
            failed = True
    if failed:
        click.echo(f"coverage below {min_percent:g} %", err=True)
        sys.exit(1)
