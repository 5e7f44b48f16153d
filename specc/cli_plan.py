"""`specc plan` and `specc simulate` (the planner lives in plan/, specc.plan)."""

from __future__ import annotations

import json
import sys

import click

from .cli_spec import SPEC

_TRAFFIC = [
    click.option("--rate", required=True, help="Requests per second (exact: 20, 2.5, 1/3)."),
    click.option("--isl", type=int, default=None, help="Prompt tokens per request (input sequence length)."),
    click.option("--osl", type=int, default=None, help="Output tokens per request (≥ 2)."),
    click.option("--mix", default=None,
                 help="A weighted list of request classes instead of --isl/--osl: ISL:OSL:WEIGHT,... "
                      "(e.g. 2000:300:3,8000:500:1)."),
    click.option("--arrivals", type=click.Choice(["poisson", "fixed"]), default="poisson", show_default=True),
    click.option("--max-num-batched-tokens", "chunk", type=int, default=8192, show_default=True,
                 help="Prefill tokens per step (the chunk budget, as vLLM's flag)."),
    click.option("--with", "fixed", multiple=True, help="A query argument every candidate takes, e.g. mla=compressed."),
    click.option("--extrapolate", is_flag=True, help="Allow ISL + OSL beyond the spec's max_context."),
]


def _traffic(fn):
    for opt in reversed(_TRAFFIC):
        fn = opt(fn)
    return fn


def _pairs(items, what):
    from .dsl.errors import Loc, SpecError

    out = {}
    for item in items:
        for part in item.split(","):
            if "=" not in part:
                raise SpecError(f"cannot read {what} '{part}'", Loc(what, 1, 1, source_text=part),
                                expected="NAME=VALUE")
            k, v = part.split("=", 1)
            out[k.strip()] = v.strip()
    return out


def _degrees(text, what) -> tuple:
    from .dsl.errors import Loc, SpecError

    try:
        out = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        out = ()
    if not out or min(out) < 1:
        raise SpecError(f"cannot read {what} '{text}'", Loc(what, 1, 1, source_text=text),
                        expected="positive whole numbers, comma-separated, e.g. 1,2")
    return out


@click.command("plan")
@click.argument("spec", type=SPEC)
@_traffic
@click.option("--ttft", default=None, help="Target mean time to first token ('1 s', '500 ms').")
@click.option("--tpot", default=None, help="Target mean time per output token ('50 ms').")
@click.option("--percentile", default=None,
              help="Targets at this percentile of requests (50 ≤ P < 100), checked by a seeded simulation "
                   "of each candidate the means admit.")
@click.option("--max-loop-gain", default="1/4", show_default=True,
              help="Trust bound of the steady state: the decode loop gain (README) above it is the 'stability' limit.")
@click.option("--sim-requests", type=int, default=4000, show_default=True,
              help="Requests per simulation when --percentile is given.")
@click.option("--devices", default="h100_sxm,h200,b200,mi300x,a100_80gb", show_default=True,
              help="Device files (specs/hardware/) to consider, comma-separated.")
@click.option("--max-gpus", type=int, default=8, show_default=True)
@click.option("--pp", "pp_degrees", default="1,2,4,8", show_default=True,
              help="Pipeline stages to consider, comma-separated (the explorer's plan view searches --pp 1).")
@click.option("--price", "prices", multiple=True, help="DEVICE=$/h per device (e.g. h100_sxm=2.50); cost replaces GPUs.")
@click.option("--formats", default=None,
              help="Formats to consider, comma-separated: a declared format name, or ARG=V+ARG=V such as "
                   "weights=fp8+kv=fp8 (default: the spec's default, its released formats, weights=fp8, "
                   "weights=fp8+kv=fp8).")
@click.option("--mode", type=click.Choice(["aggregated", "disaggregated", "both"]), default="both", show_default=True)
@click.option("--format", "fmt", type=click.Choice(["text", "json", "csv", "md"]), default="text", show_default=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), default=None)
@click.option("--quiet", is_flag=True, help="No progress on standard error.")
def plan_command(spec, rate, isl, osl, mix, arrivals, chunk, fixed, extrapolate, ttft, tpot, percentile, max_loop_gain,
                 sim_requests, devices, max_gpus, pp_degrees, prices, formats, mode, fmt, output, quiet):
    """The cheapest deployments that serve a traffic within its latency targets.

    Searches devices × tp (within a node) × pp × dp × ep (MoE specs: ep = 1 or
    tp·dp) × replicas × formats × modes (aggregated continuous
    batching with chunked prefill; disaggregated prefill and decode pools) with
    the declared serving model (README, "Planning a deployment"); every reported
    figure is exact and, in JSON, carries the `specc eval` expression that
    reproduces it. Exit status 1 when nothing meets the targets.

    \b
    specc plan specs/<model>.yaml --rate 20 --isl 2000 --osl 300 --ttft 1s --tpot 50ms
    specc plan specs/<model>.yaml --rate 5 --isl 4000 --osl 500 --tpot 30ms --devices h200 --max-gpus 16 --format json
    """
    from .plan import report
    from .plan.run import plan as run_plan

    found = run_plan(spec, rate, isl, osl, ttft, tpot, tuple(d.strip() for d in devices.split(",") if d.strip()),
                     max_gpus, formats.split(",") if formats else None, _pairs(fixed, "--with"), mode,
                     _pairs(prices, "--price"), arrivals, chunk, extrapolate, quiet=quiet, percentile=percentile,
                     sim_requests=sim_requests, max_loop_gain=max_loop_gain, mix=mix,
                     pp=_degrees(pp_degrees, "--pp"))
    text = {"text": report.to_text, "json": report.to_json, "csv": report.to_csv, "md": report.to_md}[fmt](found)
    if fmt == "json":
        text += "\n"
    if output:
        with open(output, "w", encoding="utf-8") as fh:
            fh.write(text)
    else:
        sys.stdout.write(text)
    if found.chosen is None:
        if fmt != "text":
            click.echo(report.no_fit_message(found), err=True)
        sys.exit(1)


@click.command("simulate")
@click.argument("spec", type=SPEC)
@_traffic
@click.option("--device", required=True)
@click.option("--tp", type=int, default=1)
@click.option("--pp", type=int, default=1)
@click.option("--dp", type=int, default=1, help="Data-parallel attention ranks inside one instance (tp·pp·dp GPUs).")
@click.option("--ep", type=int, default=1,
              help="Ranks the routed experts are spread over: 1 or a divisor of tp·dp (tp·dp: vLLM's --enable-expert-parallel).")
@click.option("--replicas", type=int, default=1, help="Instances (aggregated) or decode instances (disaggregated).")
@click.option("--prefill", "prefill_replicas", type=int, default=0, help="Prefill instances (disaggregated).")
@click.option("--mode", type=click.Choice(["aggregated", "disaggregated"]), default="aggregated", show_default=True)
@click.option("--scheme", "wfmt", default=None,
              help="The storage format: a declared format name or ARG=V+ARG=V (default: the spec's default).")
@click.option("--requests", type=int, default=10000, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--scale", default="1", show_default=True, help="Multiply the rate (what happens at 1.3×?).")
@click.option("--plot", type=click.Path(dir_okay=False, writable=True), default=None,
              help="Write the queue and running batch over time (first instance) as an image.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def simulate_command(spec, rate, isl, osl, mix, arrivals, chunk, fixed, extrapolate, device, tp, pp, dp, ep,
                     replicas, prefill_replicas, mode, wfmt, requests, seed, scale, plot, fmt):
    """Serve REQUESTS requests on one deployment, event by event, with the planner's engine rules.

    \b
    specc simulate specs/<model>.yaml --rate 10 --isl 2000 --osl 300 --device h200 --tp 8
    specc simulate specs/<model>.yaml --rate 10 --isl 2000 --osl 300 --device h200 --tp 8 --scale 1.3 --plot q.png
    specc simulate specs/<moe-model>.yaml --rate 4 --isl 2000 --osl 300 --device h200 --dp 8 --ep 8 --scheme fp8
    """
    from .plan.run import simulate as run_simulate

    sim = run_simulate(spec, rate, isl, osl, device, tp, pp, ep, replicas, prefill_replicas, wfmt,
                       _pairs(fixed, "--with"), mode, requests, seed, float(scale), arrivals, chunk, extrapolate,
                       mix=mix, dp=dp)
    summary = sim.summary()
    planned = sim.planned
    summary["planned"] = {k: float(planned.figures[k].value) for k in ("ttft", "tpot", "throughput")
                          if k in planned.figures}
    if fmt == "json":
        sys.stdout.write(json.dumps(summary, indent=2) + "\n")
    else:
        click.echo(f"{requests:,} requests over {summary['duration_s']:,.1f} s: "
                   f"{summary['throughput_tokens_per_s']:,.0f} tokens/s")
        for what in ("ttft", "tpot"):
            s = summary[what]
            click.echo(f"  {what.upper()}: mean {s['mean'] * 1000:,.2f} ms, p50 {s['p50'] * 1000:,.2f}, "
                       f"p90 {s['p90'] * 1000:,.2f}, p99 {s['p99'] * 1000:,.2f} ms")
        if summary["planned"]:
            p = summary["planned"]
            click.echo("  planned steady state (rate × 1): " + ", ".join(
                f"{k} {v * 1000:,.2f} ms" if k != "throughput" else f"{k} {v:,.0f} tokens/s" for k, v in p.items()))
    if plot:
        sim.plot(plot)
        click.echo(f"queue over time written to {plot}", err=True)
