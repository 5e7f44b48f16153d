"""A discrete-event simulation of the engine rules the planner assumes.

The same rules as serving.py, request by request instead of in the mean:
arrivals (Poisson with a seed, or fixed intervals); replicas draw requests
uniformly at random (Poisson) or in turn (fixed intervals); one request's
prefill at a time, in chunks of the budget, each chunk riding on a decode step;
admission only when the request's whole final context fits (N = b_max at
I + G); decode steps of every running request, whose durations come from the
same compiled call_time closed form as the planner's (run in float64).

The decode step of n requests at mean context S̄ costs a_n + b_n·(S̄ − I), the
chord of call_time(B=n, S, P=1) between S = I and S = I + G − 2 (the shortest and
the longest context a decode step has, over a mix of request classes): exact when
the step is affine in the contexts (full attention; the planner's t_d(B) at
H̄ is the same line), the chord otherwise. Stretches of decode steps with no
event (arrival, admission, finish) between them are advanced in one go (the
sum of an arithmetic series), which is what makes 10⁵ requests take seconds."""

from __future__ import annotations

import heapq
import math
from collections import deque
from dataclasses import dataclass, field

from .serving import AGGREGATED, Deployment, LayoutFacts, chunks


@dataclass
class Simulation:
    deployment: Deployment
    requests: int
    arrival: object          # numpy arrays, per request
    ttft: object
    tpot: object
    duration: float          # first arrival to last token
    tokens: int
    samples: list = field(default_factory=list)   # (time, waiting, running) of the first instance
    warmup: float = 0.05
    planned: object = None   # the planner's steady state of the same deployment (serving.Evaluation)

    def _kept(self, values):
        import numpy as np

        start = int(len(values) * self.warmup)
        return np.asarray(values[start:], dtype=float)

    @property
    def throughput(self) -> float:
        return self.tokens / self.duration if self.duration > 0 else float("inf")

    def mean(self, what: str) -> float:
        return float(self._kept(getattr(self, what)).mean())

    def percentile(self, what: str, p: float) -> float:
        import numpy as np

        return float(np.percentile(self._kept(getattr(self, what)), p))

    def summary(self) -> dict:
        out = {"requests": self.requests, "duration_s": self.duration, "throughput_tokens_per_s": self.throughput}
        for what in ("ttft", "tpot"):
            out[what] = {"mean": self.mean(what), **{f"p{p}": self.percentile(what, p) for p in (50, 90, 99)}}
        return out

    def plot(self, path: str) -> None:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        t = [s[0] for s in self.samples]
        fig, ax = plt.subplots(figsize=(8, 3.5))
        ax.step(t, [s[1] for s in self.samples], where="post", label="waiting (queue)")
        ax.step(t, [s[2] for s in self.samples], where="post", label="running (decode batch)")
        ax.set_xlabel("time (s)")
        ax.set_ylabel("requests (first instance)")
        ax.legend(loc="upper left")
        fig.tight_layout()
        fig.savefig(path)
        plt.close(fig)


class _Steps:
    """Float step times of one layout from the compiled call_time closed form."""

    def __init__(self, asker, facts: LayoutFacts):
        import numpy as np

        t = facts.t
        ct = asker.call_time_grid(facts.lay)
        n = max(int(facts.n_fit.value), 1)
        bs = np.arange(1, n + 1, dtype=np.float64)
        # the chord between the shortest and the longest context any decode step has
        self.ref = min(i for _, i, _ in t.classes)
        top = max(i + g - 2 for _, i, g in t.classes)
        lo = np.asarray(ct(bs, np.float64(self.ref), np.float64(1)), dtype=float)
        if top > self.ref:
            hi = np.asarray(ct(bs, np.float64(top), np.float64(1)), dtype=float)
            slope = (hi - lo) / (top - self.ref)
        else:
            slope = np.zeros_like(lo)
        self.a, self.b = [0.0] + lo.tolist(), [0.0] + slope.tolist()
        self.chunks = {i: [float(ct(np.float64(1), np.float64(s), np.float64(p))) for s, p in chunks(i, facts.rules.chunk)]
                       for _, i, _ in t.classes}
        self.facts = facts

    @property
    def kv(self) -> dict:
        """KV transfer seconds per prompt length (disaggregated only: a device file without a
        scale-out link cannot time it, and the engine's error says so)."""
        return {i: float(self.facts.kv_transfer_of(i).value) for _, i, _ in self.facts.t.classes}


def _arrivals(traffic, n, seed, rate_scale):
    import numpy as np

    rng = np.random.default_rng(seed)
    rate = float(traffic.rate) * rate_scale
    if traffic.arrivals == "poisson":
        return rng.exponential(1.0 / rate, n).cumsum(), rng
    return np.arange(n, dtype=float) / rate, rng


def _split(traffic, n, k, rng):
    import numpy as np

    if k == 1:
        return np.zeros(n, dtype=np.int64)
    if traffic.arrivals == "poisson":
        return rng.integers(0, k, n)
    return np.arange(n) % k


def _steps_until(c, b, dtime):
    """The smallest j ≥ 1 with j·c + b·j(j−1)/2 ≥ dtime (steps c, c+b, c+2b, ...)."""
    if dtime <= 0:
        return 1
    if abs(b) < 1e-18 * max(c, 1e-30):
        j = math.ceil(dtime / c)
    else:
        a2, a1 = b / 2, c - b / 2
        j = math.ceil((-a1 + math.sqrt(a1 * a1 + 4 * a2 * dtime)) / (2 * a2))
    j = max(1, j)
    while j * c + b * j * (j - 1) / 2 < dtime:
        j += 1
    while j > 1 and (j - 1) * c + b * (j - 1) * (j - 2) / 2 >= dtime:
        j -= 1
    return j


def _instance(steps: _Steps, arr, ids, n_fit, isl, osl, first, finish, prefill: bool, samples, skip: bool = True):
    """One instance's requests (arrival times `arr`, ids `ids`, in order; isl[id] and
    osl[id] their prompt and output tokens); fills first[id] (first-token time) and
    finish[id] (last-token time). skip=False takes every decode step on its own (the
    benchmark's baseline)."""
    ref = steps.ref
    a, bb = steps.a, steps.b
    n = len(arr)
    i, waiting, heap = 0, deque(), []
    cur, cur_chunks, cur_chunk = None, None, 0
    n_run, sum_ctx, step, t = 0, 0, 0, 0.0
    record = samples is not None
    while True:
        while i < n and arr[i] <= t:
            waiting.append(i)
            i += 1
        if prefill:
            if cur is None and waiting and n_run + 1 <= n_fit:
                cur, cur_chunk = waiting.popleft(), 0
                cur_chunks = steps.chunks[isl[ids[cur]]]
        else:
            while waiting and n_run + 1 <= n_fit:      # KV arrived: join the next step
                rid = ids[waiting.popleft()]
                heapq.heappush(heap, (step + osl[rid] - 2, rid))
                n_run += 1
                sum_ctx += isl[rid]
        if cur is None and n_run == 0:
            if i >= n:
                break
            t = max(t, arr[i])
            continue
        if cur is not None:                              # a step carrying a prefill chunk
            dt = cur_chunks[cur_chunk]
            if n_run:
                dt += a[n_run] + bb[n_run] * (sum_ctx / n_run - ref)
            t += dt
            m = 1
        else:                                            # decode steps until the next event
            c = a[n_run] + bb[n_run] * (sum_ctx / n_run - ref)
            m = heap[0][0] - step + 1 if skip else 1
            if i < n and (not waiting and n_run + 1 <= n_fit or not prefill and n_run + 1 <= n_fit):
                m = min(m, _steps_until(c, bb[n_run], arr[i] - t))
            t += m * c + bb[n_run] * m * (m - 1) / 2
        if n_run:
            sum_ctx += n_run * m
            last = step + m - 1
            while heap and heap[0][0] <= last:
                _, rid = heapq.heappop(heap)
                finish[rid] = t
                n_run -= 1
                sum_ctx -= isl[rid] + osl[rid] - 1
        if cur is not None:
            cur_chunk += 1
            if cur_chunk == len(cur_chunks):
                rid = ids[cur]
                first[rid] = t
                heapq.heappush(heap, (step + m + osl[rid] - 2, rid))
                n_run += 1
                sum_ctx += isl[rid]
                cur = None
        step += m
        if record:
            samples.append((t, len(waiting), n_run))


def simulate(asker, facts: LayoutFacts, dep: Deployment, requests: int = 10000, seed: int = 0,
             rate_scale: float = 1.0, skip: bool = True) -> Simulation:
    """Serve `requests` requests of the traffic (rate × rate_scale) on `dep`."""
    import numpy as np

    t = facts.t
    steps = _Steps(asker, facts)
    n_fit = int(facts.n_fit.value)
    arr, rng = _arrivals(t, requests, seed, rate_scale)
    # each request's class (drawn with the mix's shares, seeded)
    shares = np.array([float(p) for p, _, _ in t.classes])
    which = rng.choice(len(shares), size=requests, p=shares / shares.sum()) if len(shares) > 1 else \
        np.zeros(requests, dtype=np.int64)
    isl = np.array([i for _, i, _ in t.classes])[which].tolist()
    osl = np.array([g for _, _, g in t.classes])[which].tolist()
    first = np.full(requests, np.nan)
    finish = np.full(requests, np.nan)
    samples: list = []
    if n_fit < 1:
        raise ValueError("nothing fits: the deployment cannot hold one request")
    if dep.mode == AGGREGATED:
        where = _split(t, requests, dep.replicas, rng)
        for k in range(dep.replicas):
            ids = np.flatnonzero(where == k)
            _instance(steps, arr[ids].tolist(), ids.tolist(), n_fit, isl, osl, first, finish, True,
                      samples if k == 0 else None, skip)
    else:
        where = _split(t, requests, dep.prefill_replicas, rng)
        ready = np.empty(requests)
        t_p = {i: sum(c) for i, c in steps.chunks.items()}
        kv = steps.kv
        for k in range(dep.prefill_replicas):                  # FIFO prefill servers (Lindley)
            free = 0.0
            for rid in np.flatnonzero(where == k).tolist():
                free = max(free, arr[rid]) + t_p[isl[rid]]
                ready[rid] = free + kv[isl[rid]]
        order = np.argsort(ready, kind="stable")
        to = _split(t, requests, dep.replicas, rng)[order]
        for k in range(dep.replicas):
            ids = order[to == k]
            _instance(steps, ready[ids].tolist(), ids.tolist(), n_fit, isl, osl, first, finish, False,
                      samples if k == 0 else None, skip)
        first[:] = ready
    ttft = first - arr
    tpot = (finish - first) / (np.asarray(osl) - 1)
    duration = float(np.nanmax(finish) - arr[0])
    return Simulation(dep, requests, arr, ttft, tpot, duration, int(sum(osl)), samples[:: max(1, len(samples) // 5000)])
