"""The search: every deployment in a space, vectorized over the compiled formulas.

For each layout (device, tp, pp, dp, ep, format) the exact facts (memory, the
requests that fit, the weights) are asked once and call_time's closed form in
(B, S, P) is run in float64 over every running batch at once; the serving
model (serving.py) is then applied to whole arrays of replica counts
(aggregated) and of prefill × decode instance counts (disaggregated). Floats
only screen: every deployment the plan reports is recomputed exactly by
serving.evaluate, and a deployment the floats put within 1e-6 of a target is
re-checked exactly before a costlier one is chosen."""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from fractions import Fraction

from ..dsl.errors import SpecError
from . import formulas as F
from .queries import Asker, Layout, Queries
from .serving import (AGGREGATED, DISAGGREGATED, EXACT, Deployment, EngineRules, LayoutFacts, Targets, Traffic,
                      chunks, decode_steps, evaluate, mean_context)

_SLACK = 1e-6           # float ratios within this of 1 are decided exactly


@dataclass
class Space:
    """The searched deployments. tp=None: powers of two up to the device file's
    gpus_per_node (tensor parallelism within a node; 8 where a file declares none).
    dp (attention data-parallel ranks inside an instance) and ep are searched for
    specs with routed experts only; ep=None: 1 and tp·dp (experts tensor-parallel
    over the instance's ranks, or spread over all of them as vLLM's
    --enable-expert-parallel), else the listed values that divide tp·dp."""

    devices: tuple
    max_gpus: int
    formats: tuple = ((),)             # each a tuple of (argument, value) pairs
    modes: tuple = (AGGREGATED, DISAGGREGATED)
    tp: tuple | None = None
    pp: tuple = (1, 2, 4, 8)
    dp: tuple = (1, 2, 4, 8)
    ep: tuple | None = None
    prices: dict = field(default_factory=dict)     # device -> $ per device-hour


@dataclass
class Plan:
    spec: str
    traffic: Traffic
    targets: Targets
    rules: EngineRules
    space: Space
    chosen: object = None           # serving.Evaluation, or None
    front: list = field(default_factory=list)
    best_per_device: dict = field(default_factory=dict)
    closest: object = None          # the nearest miss when nothing fits
    candidates: int = 0
    layouts: int = 0
    notes: list = field(default_factory=list)     # what the search left out, and why
    seconds: float = 0.0
    search_seconds: float = 0.0

    def cost(self, dep: Deployment):
        price = self.space.prices.get(dep.layout.device)
        return None if price is None else price * dep.gpus


_FALLBACK_NODE = 8      # tp's bound on a device whose file declares no gpus_per_node


def tp_degrees(asker: Asker, space: Space, device: str) -> tuple:
    if space.tp is not None:
        return tuple(space.tp)
    node = asker.gpus_per_node(device) or _FALLBACK_NODE
    return tuple(1 << i for i in range(node.bit_length()) if 1 << i <= node)


def ep_degrees(space: Space, tp: int, dp: int) -> tuple:
    ranks = tp * dp
    if space.ep is None:
        return (1, ranks) if ranks > 1 else (1,)
    return tuple(sorted({e for e in space.ep if ranks % e == 0}))


def layouts(asker: Asker, space: Space) -> list:
    moe = asker.try_exact(asker.q.routed_params())
    dps = space.dp if moe else (1,)
    out = []
    for device in space.devices:
        tps = tp_degrees(asker, space, device)
        for fmt in space.formats:
            for tp in tps:
                for pp in space.pp:
                    for dp in dps:
                        for ep in (ep_degrees(space, tp, dp) if moe else (1,)):
                            lay = Layout(device, tp, pp, ep, tuple(fmt), dp)
                            if lay.well_formed and lay.gpus <= space.max_gpus:   # the adapter counts an instance
                                out.append(lay)
    return out


class _Columns:
    """Candidate deployments as parallel arrays (one append per layout and mode)."""

    names = ("layout", "mode", "replicas", "prefill", "gpus", "batch", "tpot", "ttft", "r_mem", "r_tpot", "r_ttft",
             "r_gain")

    def __init__(self):
        self.parts = {n: [] for n in self.names}

    def add(self, **cols):
        import numpy as np

        size = max(np.size(v) for v in cols.values())
        for n in self.names:
            self.parts[n].append(np.broadcast_to(np.asarray(cols[n]), (size,)))

    def finish(self):
        import numpy as np

        return {n: (np.concatenate(v) if v else np.zeros(0)) for n, v in self.parts.items()}


def _running_batch(k, td, bs):
    """Per k: the first b in bs with b ≥ k·t_d(b), i.e. b / t_d(b) ≥ k (0 when none).
    The first b where b / t_d(b) reaches k is the first where its running maximum
    does, and the running maximum is sorted: one binary search per k."""
    import numpy as np

    reach = np.maximum.accumulate(bs / td)
    at = np.searchsorted(reach, k, side="left")
    found = at < len(bs)
    return np.where(found, bs[np.minimum(at, len(bs) - 1)], 0)


def _screen(asker, facts, lay_index, t: Traffic, targets: Targets, space: Space, cols: _Columns) -> int:
    """Float steady states of every deployment of one layout; returns how many."""
    import numpy as np

    lay = facts.lay
    n_fit = int(facts.n_fit.value)
    if n_fit < 1:       # the model does not fit: one row says by how much (no time closed form needed)
        if lay.gpus <= space.max_gpus:
            cols.add(layout=lay_index, mode=0, replicas=1, prefill=0, gpus=lay.gpus, batch=0, tpot=np.inf,
                     ttft=np.inf, r_mem=float(facts.memory_ratio()), r_tpot=0.0, r_ttft=0.0, r_gain=0.0)
            return 1
        return 0
    ct = asker.call_time_grid(lay)
    if ct is None:
        return 0
    inf = np.inf
    ttft_target = float(targets.ttft) if targets.ttft is not None else None
    tpot_target = float(targets.tpot) if targets.tpot is not None else None
    per = lay.gpus
    most = F.max_instances(EXACT, space.max_gpus, per)
    if most < 1:
        return 0
    # per class of the traffic: share, prefill time, chunks
    cls = [(float(p), float(sum(ct(np.float64(1), np.float64(s), np.float64(c)) for s, c in chunks(i, facts.rules.chunk))),
            len(chunks(i, facts.rules.chunk))) for p, i, _ in t.classes]
    t_p = sum(p * tp_c for p, tp_c, _ in cls)
    t_p2 = sum(p * tp_c * tp_c for p, tp_c, _ in cls)
    b_top = int(min(max(2 * n_fit, 64), 1 << 15))
    bs = np.arange(1, b_top + 1, dtype=np.float64)
    td = np.asarray(ct(bs, np.float64(mean_context(t)), np.float64(1)), dtype=np.float64)
    g1 = float(decode_steps(t))
    rate = float(t.rate)
    poisson = t.arrivals == "poisson"
    count = 0

    gain_max = float(facts.rules.max_loop_gain)

    last = len(td) - 1

    d = lay.dp

    def gain(k, b):
        """serving.LayoutFacts.t_decode_slope in floats (td[i] = t_d(i + 1))."""
        i = np.clip(b - 1, 0, last - 1)
        w = np.maximum(1 + np.floor(np.sqrt(4 * np.maximum(b, 1))).astype(np.int64), d)
        ahead = np.minimum(i + w, last)
        step = np.minimum(i + d, last)
        slope = np.maximum((td[step] - td[i]) / np.maximum(step - i, 1),
                           (td[ahead] - td[i]) / np.maximum(ahead - i, 1))
        slope = np.where(b >= d + 1, np.maximum(slope, (td[i] - td[np.maximum(i - d, 0)]) / d), slope)
        return np.where(b > 0, k * slope / gain_max, inf)

    def ratios(b, tpot, ttft):
        r_mem = np.where(b > 0, (b + 1) / n_fit, inf)
        r_tpot = tpot / tpot_target if tpot_target else np.zeros(np.shape(tpot))
        r_ttft = ttft / ttft_target if ttft_target else np.zeros(np.shape(ttft))
        return r_mem, r_tpot, r_ttft

    def decode(lam_d, share):
        k = lam_d * g1 / share
        b = _running_batch(k, td, bs).astype(np.int64)
        step = np.where(b > 0, td[np.maximum(b, 1) - 1], inf)
        return b, step, gain(k, b)

    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if AGGREGATED in space.modes:
            dp = np.arange(1, most + 1, dtype=np.float64)
            lam = rate / dp
            u = lam * t_p
            share = np.where(u < 1, 1 - u, np.nan)
            b, step, r_gain = decode(lam, share)
            tpot = np.where(u < 1, step / share, inf)
            busy = np.minimum(1.0, lam * g1 / share * step)
            s = sum(p * (tp_c + n_c * busy * step) for p, tp_c, n_c in cls)
            s2 = sum(p * (tp_c + n_c * busy * step) ** 2 for p, tp_c, n_c in cls)
            rho = lam * s
            wait = lam * s2 / (2 * (1 - rho)) if poisson else 0.0
            ttft = np.where((rho < 1) & (b > 0), s + wait + (1 - rho) * busy * step / 2, inf)
            r_mem, r_tpot, r_ttft = ratios(b, tpot, ttft)
            cols.add(layout=lay_index, mode=0, replicas=dp.astype(np.int64), prefill=0,
                     gpus=(dp * per).astype(np.int64), batch=b, tpot=tpot, ttft=ttft,
                     r_mem=r_mem, r_tpot=r_tpot, r_ttft=r_ttft, r_gain=r_gain)
            count += most
        t_kv = None
        if DISAGGREGATED in space.modes and most >= 2:
            try:
                t_kv = float(facts.kv_transfer().value)
            except SpecError as exc:     # a device file without a scale-out link: no disaggregated candidates
                facts.kv_refused = exc.message
        if t_kv is not None:
            n = np.arange(1, most, dtype=np.float64)
            # every (prefill, decode) pair with prefill + decode ≤ most
            pp_, dd_ = np.meshgrid(n, n, indexing="ij")
            keep = (pp_ + dd_) <= most
            pp_, dd_ = pp_[keep], dd_[keep]
            lam_p = rate / n
            rho = lam_p * t_p
            wait = lam_p * t_p2 / (2 * (1 - rho)) if poisson else 0.0
            ttft_p = np.where(rho < 1, t_p + wait + t_kv, inf)
            b_d, step_d, gain_d = decode(rate / n, np.ones_like(n))
            ip, idd = pp_.astype(np.int64) - 1, dd_.astype(np.int64) - 1
            b, tpot, ttft, r_gain = b_d[idd], step_d[idd], ttft_p[ip], gain_d[idd]
            r_mem, r_tpot, r_ttft = ratios(b, tpot, ttft)
            cols.add(layout=lay_index, mode=1, replicas=dd_.astype(np.int64), prefill=pp_.astype(np.int64),
                     gpus=((pp_ + dd_) * per).astype(np.int64), batch=b, tpot=tpot, ttft=ttft,
                     r_mem=r_mem, r_tpot=r_tpot, r_ttft=r_ttft, r_gain=r_gain)
            count += len(pp_)
    return count


def _progress(start, quiet, text):
    if not quiet and time.perf_counter() - start > 1.0:
        sys.stderr.write(f"plan: {text} ({time.perf_counter() - start:.1f} s)\n")
        sys.stderr.flush()


def search(spec_path, traffic: Traffic, targets: Targets, space: Space, rules: EngineRules | None = None,
           queries: Queries | None = None, quiet: bool = False, front_size: int = 12,
           percentile: Percentile | None = None) -> Plan:
    """Every deployment of `space`; the cheapest that meets the targets (exact),
    the Pareto front (cost, TTFT, TPOT), the best per device, or the closest miss.
    With `percentile`, the targets apply at that percentile of a seeded simulation
    of each candidate the means admit (cheapest first)."""
    import numpy as np

    start = time.perf_counter()
    rules = rules or EngineRules()
    asker = Asker(spec_path, queries)
    plan = Plan(str(spec_path), traffic, targets, rules, space)
    lays = layouts(asker, space)
    facts_of: list = []
    cols = _Columns()
    screen_time = 0.0
    done_devices = []
    left_out: dict = {}                     # the engine's reason -> layouts it refused
    for i, lay in enumerate(lays):
        try:
            facts = LayoutFacts(asker, lay, traffic, rules)
        except SpecError as exc:            # a split or a format the spec refuses: not a candidate
            why = f"{lay.format_name()}: {exc.message.splitlines()[0]}"
            left_out[why] = left_out.get(why, 0) + 1
            facts_of.append(None)
            continue
        facts_of.append(facts)
        t0 = time.perf_counter()
        plan.candidates += _screen(asker, facts, i, traffic, targets, space, cols)
        screen_time += time.perf_counter() - t0
        refused = getattr(facts, "kv_refused", None)
        if refused:
            note = f"{lay.device}: no disaggregated deployments ({refused.splitlines()[0]})"
            if note not in plan.notes:
                plan.notes.append(note)
        plan.layouts += 1
        if i + 1 == len(lays) or lays[i + 1].device != lay.device:
            done_devices.append(lay.device)
            _progress(start, quiet, f"{lay.device} searched ({len(done_devices)}/{len(space.devices)} devices, "
                                    f"{plan.candidates:,} deployments)")
    asker.flush()
    plan.notes += [f"{n} layout{'s' if n > 1 else ''} left out, {why}" for why, n in left_out.items()]
    plan.search_seconds = screen_time
    c = cols.finish()
    if not len(c["gpus"]):
        plan.seconds = time.perf_counter() - start
        return plan
    price = np.array([space.prices.get(lay.device, 1.0) if space.prices else 1.0 for lay in lays])
    cost = price[c["layout"].astype(np.int64)] * c["gpus"]
    worst = np.maximum(np.maximum(np.maximum(c["r_mem"], c["r_tpot"]), c["r_ttft"]), c["r_gain"])
    c["cost"], c["worst"] = cost, worst

    def deployment(j) -> Deployment:
        lay = lays[int(c["layout"][j])]
        mode = AGGREGATED if c["mode"][j] == 0 else DISAGGREGATED
        return Deployment(lay, mode, int(c["replicas"][j]), int(c["prefill"][j]))

    cache: dict = {}

    def exact(j):
        dep = deployment(j)
        if dep not in cache:
            facts = facts_of[int(c["layout"][j])]
            guess = int(c["batch"][j]) or None
            cache[dep] = evaluate(facts, dep, targets, guess)
        return cache[dep]

    order = np.lexsort((worst, cost))
    near = order[worst[order] <= 1 + _SLACK]
    simulated = []

    def meets(ev) -> bool:
        if not ev.feasible:
            return False
        if percentile is None:
            return True
        if ev.simulated is None:
            if len(simulated) >= percentile.budget:
                return False
            ev.simulated = percentile.check(asker, facts_of[lays.index(ev.deployment.layout)], ev, targets)
            simulated.append(ev)
        return ev.simulated["meets"]

    def most_slack(pool, at):
        """pool[at] meets the targets and is the first in float (cost, worst) order that does;
        of the pool's candidates at the same cost whose float worst is within _SLACK of its,
        the one with the most slack *exactly* (the least exact worst ratio, then the first
        enumerated): floats differ in their last digits where two deployments nearly tie."""
        j0 = pool[at]
        band = [j for j in pool[at:] if cost[j] == cost[j0] and worst[j] <= worst[j0] + _SLACK]
        if len(band) == 1 or percentile is not None:
            return exact(j0)
        ok = [(max(exact(j).ratios.values()), j) for j in band if meets(exact(j))]
        return exact(min(ok)[1])

    for at, j in enumerate(near):        # cheapest first; the floats only screen
        ev = exact(j)
        if meets(ev):
            plan.chosen = most_slack(near, at)
            break
    if plan.chosen is None:
        if simulated:                    # the means admit some, the percentile none
            plan.closest = min(simulated, key=lambda e: e.simulated["worst"])
        else:
            plan.closest = exact(int(np.argmin(worst)))
    else:
        feasible = near[worst[near] <= 1]
        front = [exact(j) for j in _pareto(c, feasible)[:4 * front_size]]
        plan.front = [ev for ev in front if meets(ev)][:front_size]
        device_of = np.array([space.devices.index(lay.device) for lay in lays])[c["layout"][feasible].astype(np.int64)]
        for d, device in enumerate(space.devices):
            mine = feasible[device_of == d]
            if len(mine):
                for at, j in enumerate(mine[:8]):   # feasible is in (cost, worst) order
                    if meets(exact(j)):
                        plan.best_per_device[device] = most_slack(mine, at)
                        break
    plan.seconds = time.perf_counter() - start
    return plan


@dataclass
class Percentile:
    """Targets at the p-th percentile over requests, checked by simulation: the serving
    model is a mean-value model, so a percentile is measured, not derived. Candidates are
    screened by their means (a deployment whose mean misses a target is taken to miss
    it at any percentile ≥ 50) and simulated cheapest first, at most `budget` of them."""

    p: float
    requests: int = 4000
    seed: int = 0
    budget: int = 40

    def check(self, asker, facts, ev, targets) -> dict:
        from .simulate import simulate

        sim = simulate(asker, facts, ev.deployment, self.requests, self.seed)
        out = {"percentile": self.p, "requests": self.requests, "seed": self.seed,
               "ttft": sim.percentile("ttft", self.p), "tpot": sim.percentile("tpot", self.p)}
        ratios = [out[k] / float(getattr(targets, k)) for k in ("ttft", "tpot") if getattr(targets, k) is not None]
        out["worst"] = max(ratios, default=0.0)
        out["meets"] = out["worst"] <= 1
        return out


def _pareto(c, idx):
    """The deployments of `idx` (sorted by cost) not dominated in (cost, TTFT, TPOT)."""
    import numpy as np

    front_cost, front_ttft, front_tpot, out = [], [], [], []
    cost, ttft, tpot = c["cost"], c["ttft"], c["tpot"]
    # per cost value, the 2-D front of (TTFT, TPOT) first: few survive
    for value in np.unique(cost[idx]):
        group = idx[cost[idx] == value]
        group = group[np.lexsort((tpot[group], ttft[group]))]
        best = np.minimum.accumulate(tpot[group])
        keep = np.concatenate([[True], tpot[group][1:] < best[:-1]])
        for j in group[keep]:
            dominated = any(ft <= ttft[j] and fp <= tpot[j] for ft, fp in zip(front_ttft, front_tpot))
            if not dominated:
                out.append(j)
                front_cost.append(value)
                front_ttft.append(ttft[j])
                front_tpot.append(tpot[j])
    return out
