"""Commands that work with Hugging Face configurations: import-hf, crosscheck."""

from __future__ import annotations

import sys

import click

from .cli_support import load_spec_file
from .cli_spec import SPEC


@click.command("import-hf")
@click.argument("config", type=click.Path(exists=True, dir_okay=True))
@click.option("-o", "--output", "output", required=True, type=click.Path(dir_okay=False),
              help="Where to write the spec (e.g. specs/NAME.yaml); imports point at specs/lib.")
@click.option("--name", default=None, help="Model name (default: _name_or_path or the config's folder).")
def import_hf(config, output, name):
    """Write a spec from a Hugging Face CONFIG (a config.json, or a model folder
    such as a local snapshot that holds one).

    Supported model types are those of specs/hf/families.yaml (an unknown one is
    an error that lists them). Every config value becomes a named dimension; the
    layers use the blocks of specs/lib/hf_families.yaml (with core.yaml, mla.yaml,
    hf_ssm.yaml). A quantization_config (GPTQ, AWQ, bitsandbytes, FP8) becomes the
    spec's default storage format. An unknown model_type or a field value the
    blocks cannot model is an error located in CONFIG (exit 2).

    \b
    specc import-hf path/to/config.json -o specs/my_model.yaml --name My-Model-7B
    specc import-hf ~/.cache/huggingface/hub/models--org--name/snapshots/abc123 -o specs/m.yaml
    specc eval specs/my_model.yaml 'params()'
    """
    from .compiler.graph.build import compile_spec
    from .hf.importer import write_spec

    write_spec(config, output, name)
    compile_spec(load_spec_file(output))   # the written spec must compile; a failure here is a bug, reported located
    click.echo(f"wrote {output}")


@click.command()
@click.argument("spec", type=SPEC)
@click.option("--hf-config", "hf_config", required=True, type=click.Path(exists=True, dir_okay=False),
              help="The Hugging Face config.json the spec describes.")
@click.option("--batch", "batch", default=1, show_default=True, type=click.IntRange(min=1), help="B: requests.")
@click.option("--tokens", "tokens", default=16, show_default=True, type=click.IntRange(min=1),
              help="P: new tokens per request (no cache, S = 0).")
@click.option("--device", type=click.Choice(["auto", "meta", "cpu"]), default="auto", show_default=True,
              help="Where the forward for FLOP counting runs: meta (no memory; dense models), cpu "
                   "(needed for MoE routing; small configs only), auto: meta, else cpu if small.")
def crosscheck(spec, hf_config, batch, tokens, device):
    """Compare SPEC's parameters and matrix FLOPs with PyTorch's count of the
    Hugging Face model built from --hf-config (no weights, no network).

    Needs the optional extra: pip install -e '.[crosscheck]' (torch, transformers).
    Parameters are compared by group; FLOPs of a forward of B×P tokens (S = 0) by
    component, with FlopCounterMode's conventions: the head runs on all P
    positions (specc head=all) and attention computes full P×(S+P) rectangles
    (specc attention=rectangle). Exit 1 when a compared row differs.

    \b
    specc crosscheck specs/my_model.yaml --hf-config path/to/config.json --batch 1 --tokens 32
    """
    from .verify.crosscheck import CrosscheckUnavailable, crosscheck as run

    try:
        report = run(load_spec_file(spec), hf_config, batch=batch, tokens=tokens, device=device)
    except CrosscheckUnavailable as exc:
        click.echo(f"specc crosscheck: {exc}", err=True)
        sys.exit(2)
    click.echo(report.render())
    sys.exit(0 if report.ok else 1)
