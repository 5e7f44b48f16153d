"""Deployment sizing: each sharding rule on small specs against a brute-force
enumeration of what every device holds, the issue's must-show numbers, and
hand-derived roofline, capacity and communication values.

The brute force here does not use compiler/deploy/sharding.py: it lists every weight of
the toy model with the slices each rank owns (rank r of n owns pieces
[r·u/n, (r+1)·u/n) of a u-piece split, or piece r // (n/u) when n > u), assigns
layers to pipeline stages by array_split and takes the most loaded device."""

from __future__ import annotations

import pytest
import sympy as sp

from specc.compiler.query.queries import QueryEngine
from specc.compiler.schema.spec import load_spec
from specc.dsl.errors import SpecError

GiB = 2 ** 30

# d, heads, KV heads, head width, FFN width, vocabulary, layers
D, NQ, NKV, DH, F, V, L = 8, 4, 2, 2, 16, 16, 5

TOY = f"""
model: Toy-GQA
imports: [lib/core.yaml, lib/gqa_decoder_layer.yaml]
dims: {{d: {D}, L: {L}, n_q: {NQ}, n_kv: {NKV}, d_h: {DH}, f: {F}, V: {V}}}
formats:
  bf16: {{default: true, weights: {{default: 2}}}}
stores:
  kv:
    tags: [kv]
    bytes: {{default: 2*n_kv*d_h*2}}
    shard: n_kv
stack:
  - {{name: embed, block: token_embedding, with: {{V: V, d: d}}}}
  - name: layers
    layers: 0..L-1
    block: pre_norm_gqa_decoder_layer
    with: {{d: d, n_q: n_q, n_kv: n_kv, d_h: d_h, f: f, pairs: "B*causal_pairs(S, P)", qk_norm: 0}}
    state:
      - {{store: kv, entries: H}}
    reads:
      - {{store: kv, entries: H}}
  - {{name: head, block: lm_head, with: {{d: d, V: V, rows: B}}}}
"""

E, K, FE = 4, 2, 6
TOY_MOE = f"""
model: Toy-MoE
imports: [lib/core.yaml, lib/moe_decoder_layer.yaml]
dims: {{d: {D}, L: 2, n_q: {NQ}, n_kv: {NKV}, d_h: {DH}, f_e: {FE}, E: {E}, k: {K}, V: {V}}}
formats:
  bf16: {{default: true, weights: {{default: 2}}}}
stores:
  kv: {{tags: [kv], bytes: {{default: 2*n_kv*d_h*2}}, shard: n_kv}}
stack:
  - {{name: embed, block: token_embedding, with: {{V: V, d: d}}}}
  - name: layers
    layers: 0..L-1
    block: pre_norm_moe_decoder_layer
    with: {{d: d, n_q: n_q, n_kv: n_kv, d_h: d_h, f_e: f_e, E: E, k: k, pairs: "B*causal_pairs(S, P)", qk_norm: 0}}
    state: [{{store: kv, entries: H}}]
  - {{name: head, block: lm_head, with: {{d: d, V: V, rows: B}}}}
"""

DEVICE = """
name: toy
memory: 100000 B
bandwidth: 1000 B/s
flops: {bf16: 4000 FLOPs/s}
scale_up_link: 10 B/s
"""


def engine_of(write_spec, text):
    path = write_spec(text)
    (path.parent / "hardware").mkdir(exist_ok=True)
    (path.parent / "hardware" / "toy.yaml").write_text(DEVICE.lstrip(), encoding="utf-8")
    return QueryEngine(load_spec(path))


def val(engine, text):
    return engine.evaluate_text(text).value


# ------------------------------------------------------------------ brute force
def owned(units: int, n: int, rank: int) -> list:
    """The pieces of a u-piece dimension rank `rank` of n holds."""
    if units % n == 0:
        per = units // n
        return list(range(rank * per, (rank + 1) * per))
    assert n % units == 0
    return [rank // (n // units)]


def toy_weights():
    """(stage key, elements, split pieces or None, experts) of every weight of TOY."""
    out = [("embed", V * D, V, 1)]
    for layer in range(L):
        out += [(layer, D, None, 1), (layer, D * NQ * DH, NQ, 1), (layer, D * NKV * DH, NKV, 1),
                (layer, D * NKV * DH, NKV, 1), (layer, NQ * DH * D, NQ, 1), (layer, D, None, 1),
                (layer, D * F, F, 1), (layer, D * F, F, 1), (layer, F * D, F, 1)]
    out += [("head", D, None, 1), ("head", D * V, V, 1)]
    return out


def stage_of(key, pp):
    sizes = [L // pp + (1 if s < L % pp else 0) for s in range(pp)]
    bounds = [sum(sizes[:s]) for s in range(pp + 1)]
    if key == "embed":
        return 0
    if key == "head":
        return pp - 1
    return next(s for s in range(pp) if bounds[s] <= key < bounds[s + 1])


def brute_weight_bytes(tp, pp):
    best = 0
    for stage in range(pp):
        for rank in range(tp):
            total = 0
            for key, elements, units, _ in toy_weights():
                if stage_of(key, pp) != stage:
                    continue
                if units is None:
                    total += elements
                else:
                    total += elements // units * len(owned(units, tp, rank))
            best = max(best, 2 * total)
    return best


def brute_state_bytes(h, batch, tp, pp):
    per_head = 2 * DH * 2                           # K and V of one head, BF16, per token and layer
    best = 0
    for stage in range(pp):
        layers = [l for l in range(L) if stage_of(l, pp) == stage]
        for rank in range(tp):
            best = max(best, batch * h * len(layers) * per_head * len(owned(NKV, tp, rank)))
    return best


# ------------------------------------------------------------------ sharding rules vs brute force
@pytest.mark.parametrize("tp", [1, 2, 4, 8])
@pytest.mark.parametrize("pp", [1, 2, 5])
def test_weights_per_device_match_enumeration(write_spec, tp, pp):
    e = engine_of(write_spec, TOY)
    assert val(e, f"weight_bytes(tp={tp}, pp={pp}, per_device=true)") == brute_weight_bytes(tp, pp)


@pytest.mark.parametrize("tp", [1, 2, 4, 8])
@pytest.mark.parametrize("pp", [1, 2])
def test_kv_state_per_device_match_enumeration(write_spec, tp, pp):
    e = engine_of(write_spec, TOY)
    for h in (1, 7, 100):
        assert val(e, f"state_bytes(H={h}, B=3, tp={tp}, pp={pp}, per_device=true)") == brute_state_bytes(h, 3, tp, pp)
    # beyond n_kv = 2, each device keeps one KV head: the per-device state stops shrinking
    assert val(e, "state_bytes(H=10, tp=4, per_device=true)") == val(e, "state_bytes(H=10, tp=2, per_device=true)")


def test_whole_deployment_counts_replicas(write_spec):
    e = engine_of(write_spec, TOY)
    assert val(e, "weight_bytes(tp=4)") == 4 * val(e, "weight_bytes(tp=4, per_device=true)")
    assert val(e, "weight_bytes(dp=3)") == 3 * val(e, "weight_bytes()")
    assert val(e, "weight_bytes(tp=1, per_device=true)") == val(e, "weight_bytes()")


def test_dp_multiplies_capacity_not_memory(write_spec):
    e = engine_of(write_spec, TOY)
    assert val(e, "weight_bytes(dp=4, per_device=true)") == val(e, "weight_bytes()")
    one = val(e, "b_max(device=toy, H=64)")
    assert one > 0 and val(e, "b_max(device=toy, H=64, dp=4)") == 4 * one
    # B requests spread over dp replicas: each device holds ceil(B / dp) of them
    assert val(e, "state_bytes(H=8, B=5, dp=2, per_device=true)") == val(e, "state_bytes(H=8, B=3)")


def test_impossible_splits_are_located_errors(write_spec):
    e = engine_of(write_spec, TOY)
    with pytest.raises(SpecError, match="cannot split op") as err:
        e.evaluate_text("weight_bytes(tp=3, per_device=true)")
    assert "core.yaml" in str(err.value)
    with pytest.raises(SpecError, match="pp=6 exceeds the 5 layers"):
        e.evaluate_text("weight_bytes(pp=6, per_device=true)")
    with pytest.raises(SpecError, match="positive integer"):
        e.evaluate_text("weight_bytes(tp=0, per_device=true)")
    m = engine_of(write_spec, TOY_MOE)
    with pytest.raises(SpecError, match="ep=3 does not divide the 4 experts"):
        m.evaluate_text("weight_bytes(dp=3, ep=3, per_device=true)")
    # ep spreads the experts over the devices of a stage: it must divide tp·dp
    with pytest.raises(SpecError, match=r"ep=2 must divide tp·dp = 1"):
        m.evaluate_text("weight_bytes(ep=2, per_device=true)")


def test_shard_declarations_are_checked(write_spec):
    bad = TOY.replace("block: token_embedding, with: {V: V, d: d}",
                      "block: emb, with: {}").replace("stack:", """blocks:
  emb:
    inputs: {tokens: 1}
    outputs: [e]
    ops:
      - e = lookup(tokens, table[V, d]); shard=diagonal
stack:""")
    with pytest.raises(SpecError, match="unknown shard kind 'diagonal'"):
        engine_of(write_spec, bad).evaluate_text("params()")


@pytest.mark.parametrize("ep", [1, 2, 4])
def test_experts_split_over_ep(write_spec, ep):
    e = engine_of(write_spec, TOY_MOE)
    experts = 2 * E * 3 * D * FE                     # two layers of E SwiGLU experts
    rest = val(e, "params()") - experts              # replicated on every ep rank
    assert val(e, "params(group=routed_experts)") == experts
    # DP attention: every device holds the non-expert layers whole
    assert val(e, f"params(dp={ep}, ep={ep}, per_device=true)") == rest + experts // ep
    assert val(e, f"weight_bytes(dp={ep}, ep={ep}, per_device=true)") == 2 * (rest + experts // ep)


def test_norms_are_replicated(write_spec):
    e = engine_of(write_spec, TOY)
    norms = (2 * L + 1) * D
    big = val(e, "params(tp=8, per_device=true)")
    # every split weight shrinks, the norms do not; tp=8 exceeds both head counts, so each
    # device keeps one of the 4 query heads (Q, O) and one of the 2 KV heads (K, V)
    heads = 2 * L * D * NQ * DH + 2 * L * D * NKV * DH
    split = val(e, "params()") - norms - heads
    assert big == norms + split // 8 + 2 * L * D * DH + 2 * L * D * DH


# ------------------------------------------------------------------ communication
def test_comm_bytes_tp_by_hand(write_spec):
    e = engine_of(write_spec, TOY)
    act, b = 2, 3
    # decode step of B=3: per layer two row-parallel all-reduces of [B, d]; the embedding
    # all-reduce of [B, d]; the head all-gathers [B, V]
    allreduce = 2 * sp.Rational(1, 2) * b * D * act
    expected = 2 * L * allreduce + allreduce + sp.Rational(1, 2) * b * V * act
    assert val(e, f"comm_bytes(B={b}, S=9, P=1, tp=2, per_device=true)") == expected
    assert val(e, f"comm_bytes(B={b}, S=9, P=1, tp=2, per_device=true, component=tp)") == expected
    assert val(e, f"comm_bytes(B={b}, S=9, P=1, per_device=true)") == 0


def test_comm_bytes_pp_and_ep_by_hand(write_spec):
    e = engine_of(write_spec, TOY)
    # one boundary send of the [B·P, d] stream per device
    assert val(e, "comm_bytes(B=2, P=4, pp=2, per_device=true, component=pp)") == 2 * 4 * D * 2
    m = engine_of(write_spec, TOY_MOE)
    # B=4 over dp=2 groups, experts over ep=2: a device holds 2 rows; each row's k=2 experts fall
    # on min(k, ep) = 2 ranks, so each row goes once to the other device, and 2 rows come from
    # it: 2 rows of d in the dispatch and 2 in the combine, per MoE layer
    per_layer = 2 * 2 * D * 2
    assert val(m, "comm_bytes(B=4, P=1, dp=2, ep=2, per_device=true)") == 2 * per_layer


# ------------------------------------------------------------------ capacity
def test_h_max_is_the_largest_fitting_context(write_spec):
    e = engine_of(write_spec, TOY)
    per_token = L * 2 * NKV * DH * 2
    free = 100000 - val(e, "weight_bytes()") - 1000
    for batch in (1, 3):
        h = val(e, f"h_max(device=toy, B={batch}, workspace=1000 B, extrapolate=true)")
        assert h == free // (batch * per_token)                                   # by hand
        assert val(e, f"b_max(device=toy, H={h}, workspace=1000 B)") >= batch
        assert val(e, f"b_max(device=toy, H={h + 1}, workspace=1000 B)") < batch
    # paged allocation: whole blocks of 16 entries per request
    hb = val(e, "h_max(device=toy, B=3, workspace=1000 B, block=16)")
    assert hb % 16 == 0 and 3 * hb * per_token <= free < 3 * (hb + 16) * per_token
    # per device under tp=2 each device holds half the KV heads
    assert val(e, "h_max(device=toy, B=1, tp=2)") == (100000 - val(e, "weight_bytes(tp=2, per_device=true)")) \
        // (per_token // 2)


# ------------------------------------------------------------------ must-show numbers
@pytest.fixture(scope="module")
def shipped():
    from conftest import shipped_engine

    return shipped_engine


def test_llama2_70b_tp(shipped):
    e = shipped("llama2_70b")
    assert val(e, "weight_bytes(tp=8, per_device=true)") == 17_246_470_144
    assert val(e, "state_bytes(H=4096, tp=8, per_device=true)") == 167_772_160
    assert val(e, "state_bytes(H=4096, tp=16, per_device=true)") == 167_772_160
    # tp=16: Q, O, FFN, vocab split 16 ways; K and V one of the 8 heads per device; norms whole
    per_layer = 2 * 8192 * 8192 // 16 + 2 * 8192 * 128 + 3 * 8192 * 28672 // 16 + 2 * 8192
    assert val(e, "weight_bytes(tp=16, per_device=true)") == 2 * (80 * per_layer + 2 * 32000 * 8192 // 16 + 8192)
    comm = val(e, "comm_bytes(B=1, S=4095, P=1, tp=8, per_device=true)")
    layers = 160 * 2 * sp.Rational(7, 8) * 16384
    assert layers == 4_587_520
    # plus the embedding's all-reduce of one row and the head's all-gather of 32,000 logits
    assert comm == layers + 2 * sp.Rational(7, 8) * 16384 + sp.Rational(7, 8) * 32000 * 2 == 4_672_192


def test_deepseek_v3_latent_replicated(shipped):
    e = shipped("deepseek_v3")
    one = val(e, "state_bytes(H=4096, mla=compressed)")
    assert one == 61 * 576 * 2 * 4096 == 287_834_112
    assert val(e, "state_bytes(H=4096, tp=8, per_device=true, mla=compressed)") == one
    # the latent cache is the default (what engines keep)
    assert val(e, "state_bytes(H=4096)") == one
    # the expanded cache is per head, so it splits
    assert val(e, "state_bytes(H=4096, tp=8, per_device=true, mla=expanded)") * 8 == \
        val(e, "state_bytes(H=4096, mla=expanded)")


def test_mixtral_ep(shipped):
    # each device its 1 of the 8 experts and the whole of the rest (DP attention) ...
    assert val(shipped("mixtral_8x7b"), "weight_bytes(dp=8, ep=8, per_device=true)") == 14_485_561_344


def test_qwen3_h_max(shipped):
    e = shipped("qwen3_8b")
    assert val(e, "h_max(device=rtx_4090, B=4, workspace=2 GiB, memory=24 GB)") == 9275
    free = 24 * 10 ** 9 - val(e, "weight_bytes()") - 2 * GiB
    assert free // (4 * 147_456) == 9275


# ------------------------------------------------------------------ roofline
def test_tpot_is_bytes_over_bandwidth(shipped):
    e = shipped("llama2_7b")
    # the step at H = 4095 holds 4096 tokens when it ends: the model's maximum context
    tpot = e.evaluate_text("tpot(H=4095, device=a100_80gb)").value
    bw = 2_039 * 10 ** 9
    weights = val(e, "weight_read_bytes()") + 4096 * 2           # + the one embedding row gathered
    kv_read = val(e, "decode_read_bytes(H=4095, component=kv)")
    kv_write = val(e, "decode_write_bytes(H=4095)")
    assert tpot == sp.Rational(weights + kv_read + kv_write, bw)
    # the one token's KV write is the only difference from (weights + KV read) / bandwidth
    assert abs(tpot - sp.Rational(weights + kv_read, bw)) / tpot < sp.Rational(1, 3000)


def test_ttft_is_flops_over_peak_but_for_memory_bound_ops(shipped):
    e = shipped("llama2_7b")
    ttft = e.evaluate_text("ttft(P=4096, device=a100_80gb)").value
    rows, comm, _ = e.last_roofline
    peak = 312 * 10 ** 12
    assert comm == 0
    assert sum(r.flops for r in rows) == val(e, "flops(P=4096)")
    memory_bound = [r for r in rows if r.bound == "memory"]
    assert {r.kind for r in memory_bound} <= {"lookup", "elementwise", "matmul"}
    assert [r.name for r in memory_bound if r.kind == "matmul"] == ["head.logits"]   # one row of the head
    assert ttft == sp.Rational(val(e, "flops(P=4096)"), peak) + sum(r.memory_s - r.compute_s for r in memory_bound)
    # mfu=0.5 doubles every compute-bound op's time
    half = e.evaluate_text("ttft(P=4096, device=a100_80gb, mfu=0.5)").value
    slow = e.last_roofline[0]
    for fast_row, slow_row in zip(rows, slow):
        if fast_row.bound == "compute":
            assert slow_row.time == 2 * fast_row.time
    assert half > 2 * ttft * sp.Rational(99, 100)


def test_roofline_by_hand_on_a_toy_device(write_spec):
    e = engine_of(write_spec, TOY)
    t = e.evaluate_text("call_time(B=1, S=0, P=1, device=toy)").value
    rows, comm, _ = e.last_roofline
    for r in rows:
        assert r.compute_s == sp.Rational(r.flops, 4000) and r.memory_s == sp.Rational(r.bytes, 1000)
    assert t == sum(max(r.compute_s, r.memory_s) for r in rows)
    # tp=2 adds the collectives over the 10 B/s link, or overlaps them
    t2 = e.evaluate_text("call_time(B=1, S=0, P=1, device=toy, tp=2)").value
    comm2 = val(e, "comm_bytes(B=1, S=0, P=1, tp=2, per_device=true)")
    rows2, comm_s, _ = e.last_roofline
    assert comm_s == sp.Rational(comm2, 10) and t2 == sum(r.time for r in rows2) + comm_s
    t3 = e.evaluate_text("call_time(B=1, S=0, P=1, device=toy, tp=2, overlap=true)").value
    assert t3 == max(sum(r.time for r in rows2), comm_s)
    through = e.evaluate_text("throughput(H=10, B=2, device=toy)").value
    assert through == 2 / e.evaluate_text("tpot(H=10, B=2, device=toy)").value


def test_roofline_table_adds_up(shipped):
    from specc.render.tables import roofline_table

    table = roofline_table(shipped("llama2_7b"), "B=1, S=4096, P=1, device=a100_80gb")
    assert table.rows[-1][0] == "total" and all(d["bound"] in ("memory", "compute", "—") for d in table.data)


def test_tpot_plot_has_a_series_per_device(shipped):
    from specc.render.plots import make_plot

    p = make_plot("tpot", [shipped("llama2_7b")], contexts=[1024, 4096], device="a100_80gb,h100_sxm")
    assert [s.component for s in p.series] == ["a100_80gb", "h100_sxm"]
    assert p.series[0].ys[1] == shipped("llama2_7b").evaluate_text("tpot(H=4096, device=a100_80gb, extrapolate=true)").value


# ------------------------------------------------------------------ ZeRO
def test_zero_stages(shipped):
    e = shipped("llama2_7b")
    n = val(e, "params()")
    static = "train_memory(component=static, dp=8, zero={z}, per_device=true)"
    assert val(e, static.format(z=0)) == 16 * n
    assert val(e, static.format(z=1)) == 4 * n + 12 * sp.ceiling(sp.Rational(n, 8))
    assert val(e, static.format(z=2)) == 2 * n + 14 * sp.ceiling(sp.Rational(n, 8))
    # ZeRO-3 also holds the largest layer gathered, weights and gradients (BF16): the
    # 32,000 x 4,096 embedding
    assert val(e, static.format(z=3)) == 16 * sp.ceiling(sp.Rational(n, 8)) + (2 + 2) * 32000 * 4096
    with pytest.raises(SpecError, match="per_device=true"):
        e.evaluate_text("train_memory(component=static, dp=8, zero=1)")
    with pytest.raises(SpecError, match="ZeRO stage"):
        e.evaluate_text("train_memory(component=static, dp=8, zero=4, per_device=true)")


def test_training_conventions(shipped):
    e = shipped("llama2_7b")
    n = val(e, "params()")
    # Megatron-LM (theoretical_memory_usage.py): 18 B per parameter; with the distributed
    # optimizer 6 + 12/dp, the most loaded shard holding ceil(n/dp)
    assert val(e, "train_memory(component=static, convention=megatron)") == 18 * n == 121_291_481_088
    assert val(e, "train_memory(component=static, convention=megatron, dp=8, zero=1, per_device=true)") == \
        6 * n + 12 * sp.ceiling(sp.Rational(n, 8))
    # DeepSpeed's estimators (no offload): ZeRO-2 4n + int(16n/N); ZeRO-3 int(18n/N) + 4 x largest layer
    assert val(e, "train_memory(component=static, convention=deepspeed, dp=8, zero=2, per_device=true)") == \
        4 * n + 16 * n // 8
    assert val(e, "train_memory(component=static, convention=deepspeed, dp=8, zero=3, per_device=true)") == \
        18 * n // 8 + 4 * 32000 * 4096
    with pytest.raises(SpecError, match="no training convention 'nemo'"):
        e.evaluate_text("train_memory(component=static, convention=nemo)")
    with pytest.raises(SpecError, match="fixes the precision"):
        e.evaluate_text("train_memory(component=static, convention=megatron, precision=bf16)")
    with pytest.raises(SpecError, match="ZeRO stages 1 to 3"):
        e.evaluate_text("train_memory(component=static, convention=deepspeed)")


def test_training_keeps_experts_replicated_over_dp(shipped):
    # Megatron's default expert layout: experts split over tp (etp = tp), replicated over dp
    e = shipped("mixtral_8x7b")
    n = val(e, "params()")
    assert val(e, "train_memory(component=weights, dp=8, per_device=true)") == 2 * n


def test_readme_deployment_examples_are_true(shipped):
    """Every `specc eval` line of the README's Deployment section with an exact number in its
    comment evaluates to that number."""
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Deployment sizing"):text.index("## Claims")]
    checked = 0
    for spec, query, number in re.findall(r"specc eval specs/(\w+)\.yaml '([^']+)'\s+# ([\d,]+)(?![\d.])", section):
        assert val(shipped(spec), query) == int(number.replace(",", "")), query
        checked += 1
    assert checked >= 10
    # the times, to the digits printed
    timed = 0
    for spec, query, number, unit in re.findall(
            r"specc eval specs/(\w+)\.yaml '([^']+)'\s+# ≈ ([\d,.]+) (ms|tokens/s)", section):
        value = float(val(shipped(spec), query)) * (1000 if unit == "ms" else 1)
        digits = len(number.split(".")[1]) if "." in number else 0
        assert round(value, digits) == float(number.replace(",", "")), query
        timed += 1
    assert timed >= 6


def test_decode_reads_per_device(shipped):
    e = shipped("llama2_70b")
    weights = val(e, "decode_read_bytes(H=4096, tp=8, per_device=true, component=weights)")
    kv = val(e, "decode_read_bytes(H=4096, tp=8, per_device=true, component=kv)")
    assert kv == val(e, "state_bytes(H=4096, tp=8, per_device=true)")
    # every weight once on its device: the whole share minus the embedding table, which is gathered by row
    assert weights == val(e, "weight_bytes(tp=8, per_device=true)") - 2 * 32000 * 8192 // 8
    assert val(e, "decode_read_bytes(H=4096, tp=8, per_device=true)") == weights + kv + 8192 * 2


def test_deployment_errors_are_located(write_spec, shipped):
    e = engine_of(write_spec, TOY)
    with pytest.raises(SpecError, match="per_device=.*true or false"):
        e.evaluate_text("weight_bytes(tp=2, per_device=maybe)")
    with pytest.raises(SpecError, match="link_bandwidth="):
        shipped("llama2_7b").evaluate_text("tpot(H=16, device=rtx_4090, tp=2)")
    assert shipped("llama2_7b").evaluate_text(
        "tpot(H=16, device=rtx_4090, tp=2, link_bandwidth=32 GB / 1 s)").value > 0
    bad = TOY.replace("block: pre_norm_gqa_decoder_layer", "block: wrap").replace("stack:", """blocks:
  wrap:
    params: {d: null, n_q: null, n_kv: null, d_h: null, f: null, pairs: null, qk_norm: 1}
    inputs: {x: d}
    outputs: [y]
    ops:
      - y = pre_norm_gqa_decoder_layer(x; d=d, n_q=n_q, n_kv=n_kv, d_h=d_h, f=f, pairs=pairs, qk_norm=qk_norm, shard=row)
stack:""")
    with pytest.raises(SpecError, match="goes on the ops inside block"):
        engine_of(write_spec, bad).evaluate_text("params()")


def test_spec_declared_pipeline_split(write_spec):
    e = engine_of(write_spec, TOY + "pipeline: {2: [1, 4]}\n")
    # stage 0: the embedding and one layer; stage 1: four layers, the final norm and the head
    per_layer = 2 * (2 * D + D * NQ * DH * 2 + 2 * D * NKV * DH + 3 * D * F)
    assert val(e, "weight_bytes(pp=2, per_device=true)") == 4 * per_layer + 2 * (D + D * V)
    assert val(e, "weight_bytes(pp=5, per_device=true)") == brute_weight_bytes(1, 5)      # undeclared: even
    bad = engine_of(write_spec, TOY + "pipeline: {2: [2, 2]}\n")
    with pytest.raises(SpecError, match="adding up to 5"):
        bad.evaluate_text("weight_bytes(pp=2, per_device=true)")
