"""Layouts as engines run them (compiler/deploy/sharding.py, q_deployment.py, collectives.py),
each rule against a brute-force enumeration that does not use those modules:

* collectives: rings simulated message by message, hierarchical ones phase by phase,
  counting what every rank sends and receives over which link;
* per-rank layouts of a toy MoE (dp groups of tp ranks, ep expert ranks of etp shards):
  the weights each rank holds, the FLOPs it does in a decode step (routing enumerated
  over every expert subset, equally likely), the expert all-to-all it sends and receives;
* the issue's must-show numbers and the fit / context rules of the time queries."""

from __future__ import annotations

import itertools
from fractions import Fraction

import pytest
import sympy as sp

from specc.compiler.deploy.collectives import Collective, Links, seconds, traffic
from specc.dsl.errors import SpecError

from test_deploy import D, DH, E, FE, K, NKV, NQ, TOY, TOY_MOE, V, engine_of, owned, val

# ------------------------------------------------------------------ collectives, simulated


def _ring(ranks, chunk, steps, node_of, tally):
    """`steps` rounds of a ring over `ranks`: each sends one chunk to the next."""
    for _ in range(steps):
        for i, src in enumerate(ranks):
            dst = ranks[(i + 1) % len(ranks)]
            link = "out" if node_of(src) != node_of(dst) else "up"
            tally[src][link] += chunk
            tally[dst]["recv"] += chunk


def simulate(kind, n, size, gpus_per_node):
    """Per-rank bytes {rank: {'up', 'out', 'recv'}} of a collective over ranks 0..n-1."""
    tally = {r: {"up": Fraction(0), "out": Fraction(0), "recv": Fraction(0)} for r in range(n)}
    g = gpus_per_node or n
    a = min(n, g)
    b = n // a

    def node_of(r):
        return r // g

    size = Fraction(size)
    if b == 1:
        ring = list(range(n))
        steps = {"all_reduce": 2 * (n - 1), "all_gather": n - 1, "reduce_scatter": n - 1}[kind]
        _ring(ring, size / n, steps, node_of, tally)
        return tally
    nodes = [list(range(k * a, (k + 1) * a)) for k in range(b)]
    peers = [[k * a + j for k in range(b)] for j in range(a)]     # same local index across nodes
    if kind == "all_reduce":
        for ring in nodes:                              # reduce-scatter in the node: S/a each
            _ring(ring, size / a, a - 1, node_of, tally)
        for ring in peers:                              # all-reduce of S/a across nodes
            _ring(ring, size / a / b, 2 * (b - 1), node_of, tally)
        for ring in nodes:                              # all-gather in the node
            _ring(ring, size / a, a - 1, node_of, tally)
    else:                                               # all-gather: across nodes first, then inside
        for ring in peers:
            _ring(ring, size / n, b - 1, node_of, tally)
        for ring in nodes:
            _ring(ring, size / a, a - 1, node_of, tally)
    return tally


@pytest.mark.parametrize("kind", ["all_reduce", "all_gather", "reduce_scatter"])
@pytest.mark.parametrize("n,gpn", [(2, None), (4, 8), (8, 8), (16, 8), (32, 8), (6, 2), (4, 1)])
def test_collectives_match_a_simulated_ring(kind, n, gpn):
    size = 3 * 5 * 7 * 64 * n
    sim = simulate(kind, n, size, gpn)
    up, out, _ = traffic(Collective("tp", kind, n, sp.Integer(size)), gpn, None)
    most = max(sim.values(), key=lambda t: t["up"] + t["out"])
    assert (up, out) == (most["up"], most["out"])
    # a ring receives what it sends: the larger of the two is the same
    assert all(t["up"] + t["out"] == t["recv"] for t in sim.values())


def test_collective_seconds_add_latency_per_phase():
    links = Links(sp.Integer(100), sp.Integer(10), 8, {k: sp.Rational(1, 1000) for k in
                                                       ("all_reduce", "reduce_scatter", "all_gather")},
                  {"all_reduce": sp.Rational(1, 100)})
    inside = Collective("tp", "all_reduce", 8, sp.Integer(800))
    assert seconds(inside, links, None) == sp.Rational(1, 1000) + sp.Rational(2 * 7 * 100, 100)
    across = Collective("tp", "all_reduce", 16, sp.Integer(1600))
    # RS and AG in the node (latency 1 ms each), AR across the 2 nodes of 1600/8 (latency 10 ms)
    assert seconds(across, links, None) == sp.Rational(2, 1000) + sp.Rational(1, 100) + \
        sp.Rational(2 * 7 * 200, 100) + sp.Rational(200, 10)
    with pytest.raises(SpecError, match="whole nodes"):
        seconds(Collective("tp", "all_reduce", 12, sp.Integer(12)), links, None)


# ------------------------------------------------------------------ per-rank layouts of the toy MoE
MOE_L = 2


def rank_layout(tp, dp, ep):
    """Per rank of a stage: (dp group, tp index, ep index, etp index)."""
    etp = tp * dp // ep
    return [(r // tp, r % tp, r // etp, r % etp) for r in range(tp * dp)]


def brute_moe_weights(tp, dp, ep):
    """The most loaded rank's BF16 weight bytes (pp = 1)."""
    etp = tp * dp // ep
    best = 0
    for _, t, x, s in rank_layout(tp, dp, ep):
        emb = V * D // V * len(owned(V, tp, t))                    # vocab rows this rank owns
        head = D * V // V * len(owned(V, tp, t))
        total = emb + D + head
        for _ in range(MOE_L):
            total += 2 * D                                         # two norms
            total += D * NQ * DH // NQ * len(owned(NQ, tp, t)) * 2  # Q and O
            total += D * NKV * DH // NKV * len(owned(NKV, tp, t)) * 2   # K and V
            total += D * E                                         # router, replicated
            local = E // ep                                        # experts x·E/ep .. (x+1)·E/ep
            total += local * 3 * D * FE // FE * len(owned(FE, etp, s))
        best = max(best, 2 * total)
    return best


LAYOUTS = [(1, 1, 1), (2, 1, 1), (2, 1, 2), (4, 1, 4), (4, 1, 2), (1, 2, 2), (1, 4, 4), (1, 2, 1),
           (2, 2, 4), (2, 2, 2), (1, 4, 2), (1, 3, 1)]


@pytest.mark.parametrize("tp,dp,ep", LAYOUTS)
def test_moe_weights_per_rank(write_spec, tp, dp, ep):
    e = engine_of(write_spec, TOY_MOE)
    assert val(e, f"weight_bytes(tp={tp}, dp={dp}, ep={ep}, per_device=true)") == brute_moe_weights(tp, dp, ep)


def _expected_expert_rows(rows, ep):
    """Per ep rank: the expected routed assignments of `rows` rows, every k-subset of the E
    experts equally likely (experts x·E/ep .. on rank x)."""
    subsets = list(itertools.combinations(range(E), K))
    per = [Fraction(0)] * ep
    for sub in subsets:
        for expert in sub:
            per[expert // (E // ep)] += Fraction(rows, len(subsets))
    return per


def brute_moe_decode_flops(tp, dp, ep, batch, cached):
    """The most loaded rank's matrix FLOPs in one decode step (P = 1, S = cached)."""
    etp = tp * dp // ep
    requests = [i % dp for i in range(batch)]                      # request i in group i mod dp
    expert_rows = _expected_expert_rows(batch, ep)                 # every row of the stage
    best = 0
    for g, t, x, s in rank_layout(tp, dp, ep):
        mine = requests.count(g)
        q = len(owned(NQ, tp, t))
        kv = len(owned(NKV, tp, t))
        per_layer = mine * (2 * D * DH * q * 2 + 2 * D * DH * kv * 2        # Q, O; K, V
                            + 4 * q * DH * (cached + 1)                     # attention pairs S+1
                            + 2 * D * E)                                    # router
        per_layer += expert_rows[x] * 6 * D * FE * Fraction(len(owned(FE, etp, s)), FE)
        head = mine * 2 * D * V * Fraction(len(owned(V, tp, t)), V)
        best = max(best, MOE_L * per_layer + head)
    return best


@pytest.mark.parametrize("tp,dp,ep", LAYOUTS)
@pytest.mark.parametrize("batch", [1, 3, 4])
def test_moe_decode_flops_per_rank(write_spec, tp, dp, ep, batch):
    e = engine_of(write_spec, TOY_MOE)
    e.evaluate_text(f"call_time(B={batch}, S=5, P=1, device=toy, tp={tp}, dp={dp}, ep={ep})")
    rows, _, _ = e.last_roofline
    assert sum(r.flops for r in rows) == brute_moe_decode_flops(tp, dp, ep, batch, 5)


def test_the_device_holding_a_request_does_all_its_non_expert_work(write_spec):
    e = engine_of(write_spec, TOY_MOE)
    alone = e.evaluate_text("call_time(B=1, S=0, P=8, device=toy)").value
    rows1, _, _ = e.last_roofline
    e.evaluate_text("call_time(B=1, S=0, P=8, device=toy, dp=4, ep=4)")
    rows4, _, _ = e.last_roofline
    experts = {op.name for op in e.model({}).ops if op.experts != 1}
    dense = lambda rows: sum(r.flops for r in rows if r.name not in experts)     # noqa: E731
    assert dense(rows4) == dense(rows1) > 0
    routed = lambda rows: sum(r.flops for r in rows if r.name in experts)        # noqa: E731
    assert routed(rows4) * 4 == routed(rows1)
    assert alone > 0


def brute_all_to_all(tp, dp, ep, batch):
    """Per phase, the largest of what any rank sends or receives (rows of width d), when each
    row's k experts fall on min(k, ep) distinct ep ranks, every such set equally likely; a row
    goes once to every rank (each etp shard) of a chosen ep rank outside its group, its group's
    tp ranks sharing the sending."""
    layout = rank_layout(tp, dp, ep)
    requests = [i % dp for i in range(batch)]
    hit = min(K, ep)
    sets = list(itertools.combinations(range(ep), hit))
    sent = [Fraction(0)] * len(layout)
    recv = [Fraction(0)] * len(layout)
    for g in requests:
        for chosen in sets:
            for r, (rg, _, x, _) in enumerate(layout):
                if x in chosen and rg != g:
                    recv[r] += Fraction(1, len(sets))
                    for s_rank, (sg, _, _, _) in enumerate(layout):
                        if sg == g:
                            sent[s_rank] += Fraction(1, len(sets) * tp)
    return max(max(sent), max(recv))


@pytest.mark.parametrize("tp,dp,ep", [(1, 2, 2), (1, 4, 4), (1, 4, 2), (2, 2, 4), (2, 2, 2), (1, 2, 1), (1, 3, 1), (2, 1, 2)])
@pytest.mark.parametrize("batch", [1, 3, 4])
def test_expert_all_to_all_per_rank(write_spec, tp, dp, ep, batch):
    e = engine_of(write_spec, TOY_MOE)
    phase = brute_all_to_all(tp, dp, ep, batch) * D * 2
    got = val(e, f"comm_bytes(B={batch}, S=3, P=1, tp={tp}, dp={dp}, ep={ep}, per_device=true, component=ep)")
    assert got == MOE_L * 2 * phase                    # dispatch and combine, every MoE layer


def test_no_all_to_all_when_every_rank_holds_the_rows(write_spec):
    e = engine_of(write_spec, TOY_MOE)
    # tp=4, ep=4: attention over 4 ranks that all hold the rows; the experts' partial sums join
    # the layer's all-reduce: two all-reduces of [B, d] per layer, the embedding's and the head's gather
    b = 3
    allreduce = 2 * sp.Rational(3, 4) * b * D * 2
    assert val(e, f"comm_bytes(B={b}, S=3, P=1, tp=4, ep=4, per_device=true, component=ep)") == 0
    assert val(e, f"comm_bytes(B={b}, S=3, P=1, tp=4, ep=4, per_device=true)") == \
        (2 * MOE_L + 1) * allreduce + sp.Rational(3, 4) * b * V * 2


# ------------------------------------------------------------------ must-show numbers
@pytest.fixture(scope="module")
def shipped():
    from conftest import shipped_engine

    return shipped_engine


def test_moe_under_tp_reduces_once_per_layer(shipped):
    mixtral = shipped("mixtral_8x7b")
    rows = 8 * 4096 * 2
    expected = 32 * 2 * rows + rows + 8 * 32000 * 2 // 2
    assert expected == 4_515_840
    assert val(mixtral, "comm_bytes(B=8, S=2047, P=1, tp=2, per_device=true)") == expected
    v3 = shipped("deepseek_v3")
    row = 7168 * 2
    expected = 61 * 2 * 2 * sp.Rational(7, 8) * row + 2 * sp.Rational(7, 8) * row + sp.Rational(7, 8) * 129280 * 2
    assert expected == 3_312_064
    assert val(v3, "comm_bytes(B=1, S=4095, P=1, tp=8, per_device=true)") == expected


def test_expert_all_to_all_of_the_device_holding_the_request(shipped):
    v3 = shipped("deepseek_v3")
    assert val(v3, "comm_bytes(B=1, S=32767, P=1, dp=8, ep=8, per_device=true)") == 2 * 7 * 7168 * 2 * 58 \
        == 11_640_832


def test_links_are_per_direction(shipped):
    e = shipped("llama2_70b")
    assert val(e, "device_link(device=h100_sxm)") == 450 * 10 ** 9
    assert val(e, "device_link(device=h100_sxm, link=scale_out)") == 50 * 10 ** 9
    assert val(e, "device_link(device=h100_sxm, link=host)") == 64 * 10 ** 9
    bare = e.evaluate_text("ttft(P=4096, device=h100_sxm, tp=8, latency=0 s)").value
    assert round(float(bare) * 1000, 2) == 115.67
    ttft = e.evaluate_text("ttft(P=4096, device=h100_sxm, tp=8)").value
    # 161 all-reduces (160 layers' and the embedding's) and the head's all-gather, 3.6 µs each
    assert ttft - bare == 162 * sp.Rational(36, 10 ** 7)


def test_a_legacy_link_is_both_directions(write_spec):
    e = engine_of(write_spec, TOY)
    from pathlib import Path

    path = Path(e.spec.path).parent / "hardware" / "old.yaml"
    path.write_text("name: old\nmemory: 100000 B\nbandwidth: 1000 B/s\nflops: {bf16: 4000 FLOPs/s}\n"
                    "link: 10 B/s\n", encoding="utf-8")
    assert val(e, "device_link(device=old)") == 5


def test_groups_spanning_nodes_use_the_scale_out_link(shipped):
    e = shipped("deepseek_r1_distill_llama_70b")       # the Llama-3.1/3.3-70B architecture
    lat = sp.Rational(36, 10 ** 7)
    up, out = 450 * 10 ** 9, 50 * 10 ** 9
    e.evaluate_text("tpot(H=4096, B=8, device=h100_sxm, tp=8, pp=2)")
    two_nodes = e.last_roofline[1]
    e.evaluate_text("tpot(H=4096, B=8, device=h100_sxm, tp=8)")
    one_node = e.last_roofline[1]
    stream = 8 * 8192 * 2                                   # the [B, d] rows entering stage 2
    # pp=2 on two 8-GPU nodes: the layers' collectives stay in the node, the boundary crosses the NIC
    assert two_nodes - one_node == sp.Rational(stream, out) + lat
    assert one_node == 161 * (lat + sp.Rational(2 * 7 * stream, 8 * up)) + \
        lat + sp.Rational(7 * 8 * 128256 * 2, 8 * up)
    # tp=16 spans the two nodes: each all-reduce is reduce-scatter and all-gather in the node
    # around an all-reduce of 1/8 of the rows across the nodes
    e.evaluate_text("tpot(H=4096, B=8, device=h100_sxm, tp=16)")
    hier = e.last_roofline[1]
    allreduce = 3 * lat + sp.Rational(2 * 7 * stream, 8 * up) + sp.Rational(2 * stream, 2 * 8 * out)
    logits = 8 * 128256 * 2
    gather = 2 * lat + sp.Rational(7 * logits, 8 * up) + sp.Rational(logits, 2 * 8 * out)
    assert hier == 161 * allreduce + gather


def test_dp_attention_ttft_is_at_least_the_requests_non_expert_work(shipped):
    v3 = shipped("deepseek_v3")
    v3.evaluate_text("ttft(P=8192, device=h200, dp=8, ep=8, ignore_fit=true)")
    rows, _, _ = v3.last_roofline
    non_expert = sum(r.flops for r in rows if ".routed." not in r.name)
    assert non_expert == val(v3, "flops(P=8192)") - val(v3, "flops(P=8192, component=routed_expert)")
    ttft = v3.evaluate_text("ttft(P=8192, device=h200, dp=8, ep=8, ignore_fit=true)").value
    assert ttft >= sp.Rational(non_expert, 989_500 * 10 ** 9)


def test_tp_ep_weights_are_the_8_gpu_share(shipped):
    v3 = shipped("deepseek_v3")
    experts = val(v3, "weight_bytes(group=routed_experts)")
    rest = val(v3, "weight_bytes(tp=8, per_device=true)") - experts // 8
    # tp=8 alone splits each expert 8 ways; tp=8, ep=8 gives each GPU 32 whole experts: the same bytes
    assert val(v3, "weight_bytes(tp=8, ep=8, per_device=true)") == rest + experts // 8
    assert val(v3, "weight_bytes(tp=8, ep=8)") == 8 * val(v3, "weight_bytes(tp=8, ep=8, per_device=true)")


# ------------------------------------------------------------------ fit and context rules
def test_a_deployment_that_does_not_fit_gets_no_time(shipped):
    v3 = shipped("deepseek_v3")
    with pytest.raises(SpecError, match=r"does not fit.* ([\d,]+) B short") as err:
        v3.evaluate_text("tpot(H=4096, device=h200, dp=8, ep=8)")
    need = val(v3, "weight_bytes(dp=8, ep=8, per_device=true)") + val(v3, "state_bytes(H=4097)")
    short = int(need - val(v3, "device_memory(device=h200)"))
    assert f"{short:,} B short" in str(err.value)
    assert v3.evaluate_text("tpot(H=4096, device=h200, dp=8, ep=8, ignore_fit=true)").value > 0


def test_one_context_rule_for_time_queries(shipped):
    e = shipped("llama2_70b")
    for q in ("tpot(H=4096, device=h100_sxm, tp=8)", "call_time(B=1, S=4096, P=1, device=h100_sxm, tp=8)"):
        with pytest.raises(SpecError, match="exceeds"):
            e.evaluate_text(q)
    assert e.evaluate_text("tpot(H=4095, device=h100_sxm, tp=8)").value == \
        e.evaluate_text("call_time(B=1, S=4095, P=1, device=h100_sxm, tp=8)").value


def test_h_max_stops_at_the_maximum_context(shipped):
    e = shipped("qwen3_8b")
    top = val(e, "dim(max_context)")
    assert val(e, "h_max(device=h200, B=1)") == top
    far = e.evaluate_text("h_max(device=h200, B=1, extrapolate=true)")
    assert far.value > top and far.extrapolated


def test_activation_traffic_per_device(shipped):
    e = shipped("llama2_70b")
    e.evaluate_text("call_time(B=1, S=0, P=4096, device=h100_sxm, tp=8, activations=true)")
    rows = {r.name: r for r in e.last_roofline[0]}
    # SwiGLU's activation reads gate and up and writes its product, each 1/8 of [4096, 28672]
    assert rows["layers.ffn.act"].bytes == 80 * 3 * 4096 * 28672 // 8 * 2 == 7_046_430_720
    # RoPE on the device's 8 query heads and 1 KV head
    assert rows["layers.attn_out.q_rot"].bytes == 80 * 2 * 4096 * 8192 // 8 * 2
    assert rows["layers.attn_out.k_rot"].bytes == 80 * 2 * 4096 * 128 * 2


def test_view_ops_are_free(write_spec):
    e = engine_of(write_spec, TOY)          # qk_norm: 0 makes q_norm and k_norm views
    e.evaluate_text("call_time(B=1, S=0, P=4, device=toy, activations=true)")
    assert not [r for r in e.last_roofline[0] if r.kind == "view"]


# ------------------------------------------------------------------ serving times
def test_ttft_alone_is_the_prefill_call(write_spec):
    e = engine_of(write_spec, TOY)
    assert e.evaluate_text("ttft(P=9, device=toy)").value == e.evaluate_text("call_time(B=1, S=0, P=9, device=toy)").value


def test_ttft_chunks_the_prompt_by_the_token_budget(write_spec):
    e = engine_of(write_spec, TOY)
    # a budget of 4 tokens: chunks of 4, 4 and 1 after 0, 4 and 8 cached tokens
    chunks = sum(e.evaluate_text(f"call_time(B=1, S={s}, P={p}, device=toy)").value for s, p in ((0, 4), (4, 4), (8, 1)))
    assert e.evaluate_text("ttft(P=9, device=toy, max_num_batched_tokens=4)").value == chunks
    with pytest.raises(SpecError, match="leaves no room"):
        e.evaluate_text("ttft(P=9, B=4, H=3, device=toy, max_num_batched_tokens=4)")


def test_ttft_beside_decoding_requests_shares_each_step(write_spec):
    e = engine_of(write_spec, TOY)
    mixed = e.evaluate_text("ttft(P=6, B=3, H=5, device=toy)").value
    rows, _, _ = e.last_roofline
    e.evaluate_text("call_time(B=1, S=0, P=6, device=toy)")
    prefill = {r.name: r for r in e.last_roofline[0]}
    e.evaluate_text("call_time(B=3, S=5, P=1, device=toy)")
    decode = {r.name: r for r in e.last_roofline[0]}
    for r in rows:            # FLOPs add; weights are read once for both
        assert r.flops == prefill[r.name].flops + decode[r.name].flops
        assert r.bytes <= prefill[r.name].bytes + decode[r.name].bytes
    alone = e.evaluate_text("ttft(P=6, device=toy)").value
    assert alone < mixed < alone + e.evaluate_text("tpot(H=5, B=3, device=toy)").value
    # with a budget of 5 tokens, 3 go to the decode rows: chunks of 2
    chunked = e.evaluate_text("ttft(P=6, B=3, H=5, device=toy, max_num_batched_tokens=5)").value
    assert chunked > mixed


def test_measured_efficiency_is_selectable(shipped):
    e = shipped("llama2_70b")
    peak = e.evaluate_text("ttft(P=4096, device=h200, tp=8, latency=0 s)").value
    rows_peak = e.last_roofline[0]
    measured = e.evaluate_text("ttft(P=4096, device=h200, tp=8, latency=0 s, efficiency=measured)").value
    rows = e.last_roofline[0]
    assert measured > peak
    for fast, slow in zip(rows_peak, rows):
        assert slow.compute_s == fast.compute_s * sp.Rational(989_500, 788_000)
        assert slow.memory_s == fast.memory_s * sp.Rational(48, 43)
    with pytest.raises(SpecError, match="gives no measured flops"):
        e.evaluate_text("ttft(P=4096, device=h100_sxm, tp=8, efficiency=measured)")
    with pytest.raises(SpecError, match="no efficiency 'best'"):
        e.evaluate_text("ttft(P=4096, device=h200, tp=8, efficiency=best)")


def test_b_max_counts_requests_per_dp_group(write_spec):
    e = engine_of(write_spec, TOY_MOE)
    weights = val(e, "weight_bytes(dp=4, ep=4, per_device=true)")
    per_request = 2 * 2 * NKV * DH * 2 * 64           # two layers' K and V at H = 64
    # each of the 4 DP-attention devices holds its own requests; ep spreads experts, not requests
    assert val(e, "b_max(device=toy, H=64, dp=4, ep=4)") == 4 * ((100000 - weights) // per_request)
    assert val(e, "state_bytes(H=64, B=9, dp=4, ep=4, per_device=true)") == 3 * per_request


# ------------------------------------------------------------------ partial sums and stage boundaries
TOY_SHARED = f"""
model: Toy-Shared-MoE
imports: [lib/core.yaml, lib/moe.yaml]
dims: {{d: {D}, L: 2, n_q: {NQ}, n_kv: {NKV}, d_h: {DH}, f_e: {FE}, E: {E}, k: {K}, V: {V}}}
formats:
  bf16: {{default: true, weights: {{default: 2}}}}
stores:
  kv: {{tags: [kv], bytes: {{default: 2*n_kv*d_h*2}}, shard: n_kv}}
blocks:
  layer:
    params: {{}}
    inputs: {{x: d}}
    outputs: [x2]
    ops:
      - n1 = rmsnorm(x, norm1[d])
      - a = gqa_attention(n1; d=d, n_q=n_q, n_kv=n_kv, d_h=d_h, pairs=B*causal_pairs(S, P), qk_norm=0)
      - x1 = add(x, a)
      - n2 = rmsnorm(x1, norm2[d])
      - moe = shared_expert_moe(n2; d=d, E=E, k=k, f=f_e)
      - x2 = add(x1, moe)
stack:
  - {{name: embed, block: token_embedding, with: {{V: V, d: d}}}}
  - name: layers
    layers: 0..L-1
    block: layer
    state: [{{store: kv, entries: H}}]
  - {{name: head, block: lm_head, with: {{d: d, V: V, rows: B}}}}
"""


@pytest.mark.parametrize("tp,ep", [(2, 1), (2, 2)])
def test_routed_and_shared_experts_reduce_once_per_layer(write_spec, tp, ep):
    e = engine_of(write_spec, TOY_SHARED)
    b = 3
    # the routed combine, the gated shared expert and their sum stay partial sums; the add to
    # the residual all-reduces them once: per layer the attention's and the MoE's, plus the
    # embedding's, and the head's all-gather
    allreduce = 2 * sp.Rational(tp - 1, tp) * b * D * 2
    expected = (2 * 2 + 1) * allreduce + sp.Rational(tp - 1, tp) * b * V * 2
    assert val(e, f"comm_bytes(B={b}, S=3, P=1, tp={tp}, ep={ep}, per_device=true)") == expected


LINKS_DEVICE = """
name: toy_node
memory: 100000 B
bandwidth: 1000 B/s
flops: {bf16: 4000 FLOPs/s}
scale_up_link: 10 B/s
scale_out_link: 1 B/s
gpus_per_node: 8
collective_latency: {send: 2 s, all_reduce: 3 s, all_gather: 5 s, reduce_scatter: 7 s, all_to_all: 11 s}
"""


@pytest.mark.parametrize("tp,pp", [(2, 4), (4, 4), (4, 2), (8, 2), (1, 5)])
def test_stage_boundaries_cross_nodes_by_rank(write_spec, tp, pp):
    from pathlib import Path

    e = engine_of(write_spec, TOY)
    (Path(e.spec.path).parent / "hardware" / "toy_node.yaml").write_text(LINKS_DEVICE.lstrip(), encoding="utf-8")
    b = 2
    e.evaluate_text(f"call_time(B={b}, S=3, P=1, device=toy_node, tp={tp}, pp={pp})")
    comm = e.last_roofline[1]
    e.evaluate_text(f"call_time(B={b}, S=3, P=1, device=toy_node, tp={tp})")
    without_pp = e.last_roofline[1]
    # brute force: boundary s sends rank r of stage s-1 to rank r + tp of stage s; it crosses
    # nodes when any such pair sits on two nodes (the slowest pair sets the step)
    sends = 0
    for s in range(1, pp):
        crosses = any(r // 8 != (r + tp) // 8 for r in range((s - 1) * tp, s * tp))
        sends += 2 + sp.Rational(b * D * 2, 1 if crosses else 10)
    assert comm - without_pp == sends


# ------------------------------------------------------------------ activation traffic per rank
def brute_activation_bytes(tp, rows):
    """Per op of TOY, the most loaded rank's activation bytes (inputs read + outputs written,
    BF16) from the slices each rank holds: Q/K/V, their rotations and attention by head,
    the FFN's gate/up/act by column; norms, adds and the row-parallel outputs whole."""
    from test_deploy import F, L

    def share(units, t):
        return Fraction(len(owned(units, tp, t)), units)

    out = {}
    for t in range(tp):
        q, kv, f = NQ * DH * share(NQ, t), NKV * DH * share(NKV, t), F * share(F, t)
        per_op = {
            "layers.norm1": rows * (D + D),
            "layers.attn_out.q": rows * (D + q), "layers.attn_out.k": rows * (D + kv),
            "layers.attn_out.v": rows * (D + kv),
            "layers.attn_out.q_rot": rows * 2 * q, "layers.attn_out.k_rot": rows * 2 * kv,
            "layers.attn_out.o": rows * (q + D),
            "layers.ffn.gate": rows * (D + f), "layers.ffn.up": rows * (D + f),
            "layers.ffn.act": rows * 3 * f, "layers.ffn.down": rows * (f + D),
        }
        for name, elements in per_op.items():
            out[name] = max(out.get(name, 0), L * elements * 2)
    return out


@pytest.mark.parametrize("tp", [1, 2, 4, 8])
def test_activation_traffic_per_rank(write_spec, tp):
    e = engine_of(write_spec, TOY)
    call = f"call_time(B=3, S=0, P=4, device=toy, tp={tp}"
    e.evaluate_text(call + ")")
    plain = {r.name: r.bytes for r in e.last_roofline[0]}
    e.evaluate_text(call + ", activations=true)")
    with_acts = {r.name: r.bytes for r in e.last_roofline[0]}
    for name, expected in brute_activation_bytes(tp, 3 * 4).items():
        assert with_acts[name] - plain.get(name, 0) == expected, name


def test_each_dp_group_budgets_its_own_decode_rows(write_spec):
    e = engine_of(write_spec, TOY)
    # 6 others over dp=3: 2 beside the prompt; a budget of 4 leaves chunks of 2
    chunked = e.evaluate_text("ttft(P=6, B=6, H=5, device=toy, dp=3, max_num_batched_tokens=4)").value
    steps = [(0, 2), (2, 2), (4, 2)]
    total = 0
    for cached, new in steps:
        total += e._step_seconds(e.model({}), _args(e, "device=toy, dp=3"), [(sp.Integer(1), sp.Integer(cached),
                                                                                sp.Integer(new)),
                                                                               (sp.Integer(6), sp.Integer(5), sp.Integer(1))])
    assert chunked == total


def _args(engine, text):
    """The checked arguments of a query, as a time query's helpers take them."""
    from specc.compiler.query.query_base import QueryArgs
    from specc.dsl.parser import parse_expr

    node = parse_expr(f"ttft({text})", "<test>")
    values = {kw.name: (kw.value.id if hasattr(kw.value, "id") else sp.Integer(int(kw.value.value)))
              for kw in node.kwargs}
    return QueryArgs(values, node.loc, engine, {}, {kw.name: kw.value for kw in node.kwargs})


def test_expert_all_to_all_over_two_nodes_by_rank(write_spec):
    """dp=16, ep=16 on nodes of 8: each device's dispatch and combine go partly over the NIC;
    the seconds come from enumerating every destination of the most loaded device."""
    from pathlib import Path

    experts, width = 16, 8
    text = TOY_MOE.replace(f"E: {E}", f"E: {experts}").replace(f"f_e: {FE}", f"f_e: {width}")
    e = engine_of(write_spec, text)
    (Path(e.spec.path).parent / "hardware" / "toy_node.yaml").write_text(LINKS_DEVICE.lstrip(), encoding="utf-8")
    dp = ep = 16
    batch = 16                                            # one request per device
    e.evaluate_text(f"call_time(B={batch}, S=3, P=1, device=toy_node, dp={dp}, ep={ep}, ignore_fit=true)")
    comm = e.last_roofline[1]
    # brute force: a row's k=2 experts fall on 2 of the 16 ranks, every pair equally likely; the
    # device sends it to each chosen rank but itself, and receives as much from the others
    pairs = list(itertools.combinations(range(ep), K))
    up = out = Fraction(0)
    me = 0
    for chosen in pairs:
        for dst in chosen:
            if dst != me:
                if dst // 8 == me // 8:
                    up += Fraction(1, len(pairs))
                else:
                    out += Fraction(1, len(pairs))
    row = D * 2
    phase = 11 + up * row / 10 + out * row / 1           # latency, NVLink share, NIC share
    assert comm == 2 * 2 * phase                          # two MoE layers, dispatch and combine


@pytest.mark.parametrize("order", [(None, 2, 4, 8), (8, 4, 2, None)])
def test_one_engine_answers_each_node_size_as_a_fresh_one(write_spec, order):
    """call_collectives keeps a call's tp and ep collectives across pp and node sizes (a site
    export asks the same call at each): the all-to-all's off-node share and the stage sends
    are still the node size's own, in whatever order the sizes are asked."""
    from specc.compiler.deploy.sharding import Deployment
    from specc.compiler.schema.symbols import B, P, S

    shared = engine_of(write_spec, TOY_MOE)
    scenario = {B: sp.Integer(5), S: sp.Integer(3), P: sp.Integer(1)}
    for gpn in order:
        for pp in (1, 2):
            dep = Deployment(2, pp, 4, 2, per_device=True)
            got = shared.call_collectives(shared.model({}), dep, scenario, sp.Integer(2), None, gpn)
            fresh = engine_of(write_spec, TOY_MOE)
            want = fresh.call_collectives(fresh.model({}), dep, scenario, sp.Integer(2), None, gpn)
            assert got == want, (gpn, pp)
            assert any(c.component == "ep" for c in got)


def test_the_engine_keeps_only_its_most_recently_used_work(write_spec):
    """QueryEngine.remembered is bounded (numeric queries make new keys without end) and keeps
    what was used last: a site export reuses an entry within a layout."""
    from specc.compiler.query.queries import _REMEMBERED

    e = engine_of(write_spec, TOY_MOE)
    made = []

    def ask(key):
        return e.remembered(("test", key), lambda: made.append(key) or key)

    for key in range(_REMEMBERED):
        ask(key)
    ask(0)                                   # used again: now the most recent
    for key in range(_REMEMBERED, _REMEMBERED + _REMEMBERED // 2):
        ask(key)
    made.clear()
    assert ask(0) == 0 and ask(_REMEMBERED + 1) == _REMEMBERED + 1 and made == []
    assert ask(1) == 1 and made == [1]       # pushed out, made again
