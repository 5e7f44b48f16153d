"""A plan written out: text, JSON, CSV or Markdown. Every figure in JSON carries
`query`, the `specc eval` expression whose exact value is `exact`."""

from __future__ import annotations

import json

from . import engines
from .serving import UNITS


def _ms(fig) -> str:
    return f"{float(fig.value) * 1000:,.1f} ms"


def _gib(fig) -> str:
    return f"{float(fig.value) / 2**30:,.1f} GiB"


def describe(dep) -> str:
    lay = dep.layout
    deg = lay.degrees() or "tp=1"
    if dep.mode == "aggregated":
        head = f"{dep.gpus}× {lay.device}: {dep.replicas} × ({deg}) aggregated"
    else:
        head = f"{dep.gpus}× {lay.device}: {dep.prefill_replicas} prefill + {dep.replicas} decode × ({deg}) disaggregated"
    return f"{head}, {lay.format_name()}"


def deployment_json(plan, ev) -> dict:
    dep = ev.deployment
    lay = dep.layout
    n_fit = int(ev.figures["requests_that_fit"].value)
    return {
        "device": lay.device, "tp": lay.tp, "pp": lay.pp, "dp": lay.dp, "ep": lay.ep,
        "gpus_per_instance": lay.gpus, "replicas": dep.replicas,
        "prefill_replicas": dep.prefill_replicas, "mode": dep.mode, "format": dict(lay.fmt), "gpus": dep.gpus,
        "cost_per_hour": None if plan.cost(dep) is None else float(plan.cost(dep)), "running_batch": ev.batch, "binding_limit": ev.binding,
        "limits": {k: (float(v) if v != float("inf") else None) for k, v in ev.ratios.items()},
        "figures": {name: fig.to_json(UNITS.get(name, "")) for name, fig in ev.figures.items()},
        "simulated": ev.simulated,
        "engines": {"vllm": engines.vllm(dep, plan.traffic, plan.rules, n_fit),
                    "sglang": engines.sglang(dep, plan.traffic, plan.rules, n_fit)},
    }


def to_json(plan) -> str:
    t = plan.traffic
    out = {
        "spec": plan.spec,
        "traffic": {"rate": str(t.rate), "isl": t.isl, "osl": t.osl, "arrivals": t.arrivals,
                    "mix": [{"share": str(p), "isl": i, "osl": g} for p, i, g in t.mix] or None},
        "targets": {"ttft_s": str(plan.targets.ttft) if plan.targets.ttft is not None else None,
                    "tpot_s": str(plan.targets.tpot) if plan.targets.tpot is not None else None,
                    "statistic": _statistic(plan)},
        "engine": {"max_num_batched_tokens": plan.rules.chunk,
                   "memory_fraction": str(plan.rules.memory_fraction),
                   "max_loop_gain": str(plan.rules.max_loop_gain)},
        "searched": {"devices": list(plan.space.devices), "max_gpus": plan.space.max_gpus,
                     "formats": [dict(f) for f in plan.space.formats], "modes": list(plan.space.modes),
                     "layouts": plan.layouts, "deployments": plan.candidates, "seconds": plan.seconds},
        "chosen": deployment_json(plan, plan.chosen) if plan.chosen else None,
        "front": [deployment_json(plan, ev) for ev in plan.front],
        "best_per_device": {d: deployment_json(plan, ev) for d, ev in plan.best_per_device.items()},
        "closest": deployment_json(plan, plan.closest) if plan.closest else None,
        "message": no_fit_message(plan) if plan.chosen is None else None,
        "notes": plan.notes,
    }
    return json.dumps(out, indent=2)


def _statistic(plan) -> str:
    ev = plan.chosen or plan.closest
    if ev is not None and ev.simulated is not None:
        return f"p{ev.simulated['percentile']:g} (simulated)"
    return "mean"


def no_fit_message(plan) -> str:
    if plan.closest is None:
        return (f"no deployment within --max-gpus {plan.space.max_gpus} can be formed "
                "(no layout of the searched devices and degrees holds the model)")
    ev = plan.closest
    parts = []
    for limit in ("memory", "TPOT", "TTFT", "stability"):
        r = ev.ratios.get(limit)
        if r is None:
            continue
        parts.append(f"{limit} {'unbounded' if r == float('inf') else f'{float(r):.2f}×'} of its bound")
    what = ev.binding
    detail = ""
    if ev.simulated is not None and ev.feasible:
        s = ev.simulated
        return (f"nothing within --max-gpus {plan.space.max_gpus} meets the targets at the p{s['percentile']:g} "
                f"(simulated, {s['requests']:,} requests, seed {s['seed']}); the closest, {describe(ev.deployment)}, "
                f"has TTFT p{s['percentile']:g} {s['ttft'] * 1000:,.1f} ms and TPOT p{s['percentile']:g} "
                f"{s['tpot'] * 1000:,.2f} ms ({s['worst']:.2f}× the tighter target).")
    if what == "TPOT" and "tpot" in ev.figures and plan.targets.tpot is not None:
        detail = f": TPOT {_ms(ev.figures['tpot'])} against {float(plan.targets.tpot) * 1000:g} ms"
    elif what == "TTFT" and "ttft" in ev.figures and plan.targets.ttft is not None:
        detail = f": TTFT {_ms(ev.figures['ttft'])} against {float(plan.targets.ttft) * 1000:g} ms"
    elif what == "stability" and "decode_loop_gain" in ev.figures:
        detail = (f": the decode loop gain is {float(ev.figures['decode_loop_gain'].value):.2f}, above "
                  f"{plan.rules.max_loop_gain} (the running batch would fluctuate too much for the steady-state figures)")
    elif what == "memory":
        detail = f": {ev.note or 'the running requests need more KV than fits'}"
    elif ev.note:
        detail = f": {ev.note}"
    return (f"nothing within --max-gpus {plan.space.max_gpus} meets the targets; the binding limit is {what}"
            f"{detail}. The closest deployment, {describe(ev.deployment)}, is at " + ", ".join(parts) + ".")


def to_text(plan) -> str:
    t = plan.traffic
    shape = (f"ISL {t.isl}, OSL {t.osl}" if not t.mix else
             "mix " + ", ".join(f"{float(p):.0%} ISL {i} OSL {g}" for p, i, g in t.mix))
    lines = [f"plan for {plan.spec}: {t.rate} req/s ({t.arrivals}), {shape}; targets "
             f"TTFT {_target(plan.targets.ttft)}, TPOT {_target(plan.targets.tpot)} ({_statistic(plan)})",
             f"searched {plan.candidates:,} deployments over {plan.layouts} layouts in {plan.seconds:.2f} s",
             *[f"  note: {n}" for n in plan.notes]]
    if plan.chosen is None:
        lines.append(no_fit_message(plan))
        return "\n".join(lines) + "\n"
    ev = plan.chosen
    f = ev.figures
    lines += ["", f"chosen: {describe(ev.deployment)}" + _cost(plan, ev),
              f"  TTFT {_ms(f['ttft'])}, TPOT {_ms(f['tpot'])}, running batch {ev.batch} per decode instance, "
              f"{float(f['throughput'].value):,.0f} tokens/s ({float(f['throughput_per_gpu'].value):,.0f} per GPU)",
              *([f"  simulated p{ev.simulated['percentile']:g}: TTFT {ev.simulated['ttft'] * 1000:,.1f} ms, "
                 f"TPOT {ev.simulated['tpot'] * 1000:,.2f} ms ({ev.simulated['requests']:,} requests, "
                 f"seed {ev.simulated['seed']})"] if ev.simulated else []),
              f"  memory per device: weights {_gib(f['weights_per_device'])}, KV {_gib(f['kv_per_device'])}, "
              f"workspace {_gib(f['workspace_per_device'])}, free {_gib(f['free_per_device'])}",
              *["  " + line for line in engines.vllm(ev.deployment, plan.traffic, plan.rules,
                                                     int(f['requests_that_fit'].value))],
              "", "Pareto front (cost, TTFT, TPOT):"]
    for e in plan.front:
        lines.append(f"  {describe(e.deployment)}{_cost(plan, e)}: TTFT {_ms(e.figures['ttft'])}, "
                     f"TPOT {_ms(e.figures['tpot'])}")
    lines.append("")
    lines.append("best per device:")
    for d, e in plan.best_per_device.items():
        lines.append(f"  {describe(e.deployment)}{_cost(plan, e)}")
    lines.append("(every figure's specc eval expression: --format json)")
    return "\n".join(lines) + "\n"


def _target(v):
    return "—" if v is None else f"{float(v) * 1000:g} ms"


def _cost(plan, ev):
    c = plan.cost(ev.deployment)
    return "" if c is None else f", ${float(c):,.2f}/h"


_COLUMNS = ("device", "mode", "tp", "pp", "dp", "ep", "replicas", "prefill_replicas", "format", "gpus", "cost_per_hour",
            "running_batch", "ttft_s", "tpot_s", "tokens_per_s_per_gpu", "weights_B", "kv_B", "free_B")


def _row(plan, ev) -> list:
    d = deployment_json(plan, ev)
    f = d["figures"]
    return [d["device"], d["mode"], d["tp"], d["pp"], d["dp"], d["ep"], d["replicas"], d["prefill_replicas"],
            ev.deployment.layout.format_name(), d["gpus"], d["cost_per_hour"] or "", d["running_batch"],
            f"{f['ttft']['value']:.6g}", f"{f['tpot']['value']:.6g}", f"{f['throughput_per_gpu']['value']:.6g}",
            f["weights_per_device"]["exact"], f["kv_per_device"]["exact"], f["free_per_device"]["exact"]]


def to_csv(plan) -> str:
    import csv
    import io

    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(("rank",) + _COLUMNS)
    for i, ev in enumerate(plan.front):
        w.writerow([i + 1] + _row(plan, ev))
    return buf.getvalue()


def to_md(plan) -> str:
    lines = ["| " + " | ".join(_COLUMNS) + " |", "|" + "---|" * len(_COLUMNS)]
    for ev in plan.front:
        lines.append("| " + " | ".join(str(c) for c in _row(plan, ev)) + " |")
    if plan.chosen is None:
        lines.append("")
        lines.append(no_fit_message(plan))
    return "\n".join(lines) + "\n"
