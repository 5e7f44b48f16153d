"""The exact integers of FACTS.md §8, reproduced by the query engine.

Every expected value here is copied from specs/sources/FACTS.md (§2, §6, §7, §8);
the engine must give them to the integer, with the right unit."""

from __future__ import annotations

import time

import pytest
import sympy as sp

from specc.dsl.errors import SpecError
from specc.dsl.units import BYTES, FLOPS, PARAMS


def value(engine, query: str, **kwargs):
    result = engine.evaluate_text(query, **kwargs)
    assert isinstance(result.value, sp.Integer), f"{query} gave a non-integer {result.value!r}"
    return int(result.value)


def quantity(engine, query: str, **kwargs):
    return engine.evaluate_text(query, **kwargs)


# ================================================================== Qwen3-8B (FACTS §2, §8)
QWEN_GROUPS = {
    "embedding_head": 1_244_659_712,
    "attention_projection": 1_509_949_440,
    "dense_shared_ffn": 5_435_817_984,
    "routed_experts": 0,
    "other": 308_224,
}


def test_qwen_total_params(qwen_engine):
    result = quantity(qwen_engine, "params()")
    assert result.value == 8_190_735_360
    assert result.dims == PARAMS
    assert result.extrapolated is False


@pytest.mark.parametrize("group, expected", sorted(QWEN_GROUPS.items()))
def test_qwen_param_groups(qwen_engine, group, expected):
    assert value(qwen_engine, f"params(group={group})") == expected


def test_qwen_param_groups_sum_to_total(qwen_engine):
    total = sum(value(qwen_engine, f"params(group={g})") for g in QWEN_GROUPS)
    total += value(qwen_engine, "params(group=engram)")
    assert total == value(qwen_engine, "params()") == 8_190_735_360


def test_qwen_prefill_8k(qwen_engine):
    result = quantity(qwen_engine, "flops(B=1, S=0, P=8192)")
    assert result.value == 133_594_323_353_600
    assert result.dims == FLOPS
    # B, S default to 1 and 0
    assert value(qwen_engine, "flops(P=8192)") == 133_594_323_353_600


def test_qwen_decode_8k(qwen_engine):
    assert value(qwen_engine, "flops(S=8192, P=1)") == 19_968_622_592


def test_qwen_state_8k(qwen_engine):
    result = quantity(qwen_engine, "state_bytes(H=8192)")
    assert result.value == 1_207_959_552
    assert result.dims == BYTES


def test_qwen_kv_bytes_per_token(qwen_engine):
    # 2 (K, V) · 36 layers · 8 heads · 128 · 2 B
    assert value(qwen_engine, "kv_bytes_per_token()") == 147_456 == 2 * 36 * 8 * 128 * 2


REQUEST_CALLS = ["flops(P=128)", "flops(S=128, P=1)", "flops(S=129, P=1)", "flops(S=130, P=1)"]


@pytest.mark.parametrize("engine_name, total, parts", [
    ("qwen_engine", 1_829_869_322_240, [1_784_230_707_200, 15_212_281_856, 15_212_871_680, 15_213_461_504]),
    ("v41_engine", 4_136_447_803_392, [4_036_154_621_952, 33_426_677_760, 33_432_117_248, 33_434_386_432]),
])
def test_request_flops_is_prefill_plus_decodes(request, engine_name, total, parts):
    """request_flops(P=128, G=4) is the closed-form sum of the prefill and three decode calls."""
    engine = request.getfixturevalue(engine_name)
    assert value(engine, "request_flops(P=128, G=4)") == total
    got = [value(engine, c) for c in REQUEST_CALLS]
    assert got == parts
    assert sum(got) == total


def test_qwen_weight_bytes(qwen_engine):
    result = quantity(qwen_engine, "weight_bytes()")
    assert result.value == 16_381_470_720 == 2 * 8_190_735_360
    assert result.dims == BYTES


def test_qwen_symbolic_flops_substitutes_to_prefill(qwen_engine):
    result = qwen_engine.evaluate_text("flops(B=B, S=S, P=P)", symbolic_ok=True)
    expr = result.value
    names = {s.name for s in expr.free_symbols}
    assert {"B", "P", "S"} <= names
    subs = {s: {"B": 1, "S": 0, "P": 8192}[s.name] for s in expr.free_symbols}
    assert sp.Integer(expr.subs(subs)) == 133_594_323_353_600
    # and the decode-8K point of the same expression
    subs = {s: {"B": 1, "S": 8192, "P": 1}[s.name] for s in expr.free_symbols}
    assert expr.subs(subs) == 19_968_622_592


def test_qwen_symbolic_needs_symbolic_ok(qwen_engine):
    with pytest.raises(SpecError):
        qwen_engine.evaluate_text("flops(B=B, S=S, P=P)")


def test_qwen_context_limit(qwen_engine):
    with pytest.raises(SpecError) as info:
        qwen_engine.evaluate_text("flops(P=50000)")
    assert "maximum" in info.value.message
    assert "40960" in info.value.message
    assert info.value.render().startswith("<query>:1:")


def test_qwen_context_limit_edge(qwen_engine):
    # n = S + P = 40960 is allowed, 40961 is not
    assert value(qwen_engine, "flops(S=40959, P=1)") > 0
    with pytest.raises(SpecError):
        qwen_engine.evaluate_text("flops(S=40960, P=1)")


def test_qwen_extrapolate(qwen_engine):
    result = qwen_engine.evaluate_text("flops(P=50000, extrapolate=true)")
    assert result.extrapolated is True
    assert result.value > value(qwen_engine, "flops(P=40960)")
    # within the limit, extrapolate=true changes nothing and flags nothing
    within = qwen_engine.evaluate_text("flops(P=8192, extrapolate=true)")
    assert within.extrapolated is False
    assert within.value == 133_594_323_353_600


@pytest.mark.parametrize("S, expected", [(204_800, 135_932_739_584), (1_048_575, 633_611_485_184)])
def test_qwen_long_context_extrapolation(qwen_engine, S, expected):
    # FACTS §7 / §8.3: decode-8K FLOPs + 36·4·32·128·(S − 8192)
    result = qwen_engine.evaluate_text(f"flops(S={S}, P=1, extrapolate=true)")
    assert result.extrapolated is True
    assert result.value == expected == 19_968_622_592 + 36 * 4 * 32 * 128 * (S - 8192)


def test_qwen_extrapolated_flag_propagates(qwen_engine):
    result = qwen_engine.evaluate_text("flops(S=204800, P=1, extrapolate=true) - flops(S=8192, P=1)")
    assert result.extrapolated is True
    assert result.value == 36 * 4 * 32 * 128 * (204_800 - 8192)


# ================================================================== DeepSeek V4.1 Flash (FACTS §6, §8)
V41_GROUPS = {
    "embedding_head": 1_323_827_200,
    "attention_projection": 5_126_488_064,
    "dense_shared_ffn": 1_415_577_600,
    "routed_experts": 543_581_798_400,
    "engram": 196_928_504_320,
    "other": 118_489_200,
}

V41_STAGES = {  # stage: (ced, reference)
    "encoder": (141_726_572_347_392, 142_138_889_207_808),
    "decoder_kv": (44_023_414_784, 44_023_414_784),
    "decoder": (2_174_707_302_400, 140_201_993_175_040),
    "head": (1_323_827_200, 1_323_827_200),
}

V41_COMPONENTS = {  # component: (ced, reference)
    "hyper_connections": (327_155_712_000, 644_245_094_400),
    "attention_projection": (42_137_655_705_600, 82_978_768_158_720),
    "attention_interaction": (12_198_042_664_960, 25_384_263_352_320),
    "router": (654_311_424_000, 1_288_490_188_800),
    "shared_expert": (11_777_605_632_000, 23_192_823_398_400),
    "routed_expert": (70_665_633_792_000, 139_156_940_390_400),
    "engram": (5_153_960_755_200, 5_153_960_755_200),
    "compressor": (300_647_710_720, 300_647_710_720),
    "index_projection": (275_356_057_600, 711_353_958_400),
    "index_interaction": (454_933_610_496, 3_573_412_790_272),
    "vocabulary_head": (1_323_827_200, 1_323_827_200),
}
V41_TOTAL = {"ced": 143_946_626_891_776, "reference": 282_386_229_624_832}
MODES = {"ced": 0, "reference": 1}

LENGTHS = [8192 * 2**k for k in range(8)]
V41_RESIDENT = [31_547_392, 57_827_328, 110_387_200, 215_506_944, 425_746_432, 846_225_408,
                1_687_183_360, 3_369_099_264]
V41_ACCESS = [38_797_312, 52_428_800, 62_914_560, 83_886_080, 125_829_120, 209_715_200, 377_487_360,
              713_031_680]


def test_v41_total_params(v41_engine):
    result = quantity(v41_engine, "params()")
    assert result.value == 748_494_684_784
    assert result.dims == PARAMS


@pytest.mark.parametrize("group, expected", list(V41_GROUPS.items()))
def test_v41_param_groups(v41_engine, group, expected):
    assert value(v41_engine, f"params(group={group})") == expected


def test_v41_param_groups_sum_to_total(v41_engine):
    assert sum(value(v41_engine, f"params(group={g})") for g in V41_GROUPS) == 748_494_684_784


def test_v41_prefill_8k_default_is_ced(v41_engine):
    assert value(v41_engine, "flops(P=8192)") == V41_TOTAL["ced"]
    assert value(v41_engine, "flops(B=1, S=0, P=8192, mode=ced)") == V41_TOTAL["ced"]


def test_v41_prefill_8k_reference(v41_engine):
    assert value(v41_engine, "flops(P=8192, mode=reference)") == V41_TOTAL["reference"]


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("stage", list(V41_STAGES))
def test_v41_prefill_by_stage(v41_engine, stage, mode):
    expected = V41_STAGES[stage][MODES[mode]]
    assert value(v41_engine, f"flops(P=8192, mode={mode}, stage={stage})") == expected


@pytest.mark.parametrize("mode", list(MODES))
def test_v41_stages_sum_to_total(v41_engine, mode):
    assert sum(v[MODES[mode]] for v in V41_STAGES.values()) == V41_TOTAL[mode]
    total = sum(value(v41_engine, f"flops(P=8192, mode={mode}, stage={s})") for s in V41_STAGES)
    assert total == value(v41_engine, f"flops(P=8192, mode={mode})")


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("component", list(V41_COMPONENTS))
def test_v41_prefill_by_component(v41_engine, component, mode):
    expected = V41_COMPONENTS[component][MODES[mode]]
    assert value(v41_engine, f"flops(P=8192, mode={mode}, component={component})") == expected


@pytest.mark.parametrize("mode", list(MODES))
def test_v41_components_sum_to_total(v41_engine, mode):
    assert sum(v[MODES[mode]] for v in V41_COMPONENTS.values()) == V41_TOTAL[mode]
    total = sum(value(v41_engine, f"flops(P=8192, mode={mode}, component={c})") for c in V41_COMPONENTS)
    assert total == value(v41_engine, f"flops(P=8192, mode={mode})") == V41_TOTAL[mode]


@pytest.mark.parametrize("S, expected", [(8192, 35_917_045_760), (204_800, 40_211_980_288),
                                         (1_048_575, 57_492_897_792)])
def test_v41_long_context_decode(v41_engine, S, expected):
    result = quantity(v41_engine, f"flops(S={S}, P=1)")
    assert result.value == expected
    assert result.extrapolated is False  # 1,048,576 positions is exactly V4.1's limit


def test_v41_context_limit(v41_engine):
    with pytest.raises(SpecError) as info:
        v41_engine.evaluate_text("flops(S=1048576, P=1)")
    assert "maximum" in info.value.message


def test_v41_kv_bytes_per_token_production(v41_engine):
    # (3/2 + 1) · (288 + 68) at even lengths
    result = quantity(v41_engine, "kv_bytes_per_token(format=production)")
    assert result.value == 890


def test_v41_state_8k(v41_engine):
    result = quantity(v41_engine, "state_bytes(H=8192)")
    assert result.value == 31_547_392
    assert result.dims == BYTES


@pytest.mark.parametrize("H, expected", list(zip(LENGTHS, V41_RESIDENT)))
def test_v41_state_curve(v41_engine, H, expected):
    assert value(v41_engine, f"state_bytes(H={H})") == expected


def test_v41_state_8k_production(v41_engine):
    # global main 5,898,240 + index 1,392,640 + window 2,703,360 + compressor 24,576 + token ids 65,536
    assert value(v41_engine, "state_bytes(H=8192, format=production)") == 10_084_352
    assert 5_898_240 + 1_392_640 + 2_703_360 + 24_576 + 65_536 == 10_084_352


def test_v41_production_decode_read_8k(v41_engine):
    query = ("decode_read_bytes(H=8192, format=production, component=window)"
             " + decode_read_bytes(H=8192, format=production, component=kv)")
    result = quantity(v41_engine, query)
    assert result.value == 11_927_552
    assert result.dims == BYTES


def _access(H, extra=""):
    return f"decode_read_bytes(H={H}, component=window{extra}) + decode_read_bytes(H={H}, component=kv{extra})"


@pytest.mark.parametrize("H, expected", [
    pytest.param(h, e) for h, e in zip(LENGTHS, V41_ACCESS)])
def test_v41_bf16_access_curve(v41_engine, H, expected):
    result = quantity(v41_engine, _access(H))
    assert result.value == expected
    assert result.extrapolated is False


def test_v41_bf16_access_at_1m_with_extrapolate(v41_engine):
    # the value itself is right once the limit check is waived
    assert quantity(v41_engine, _access(1_048_576, ", extrapolate=true")).value == 713_031_680


def test_v41_query_time_flat(v41_engine):
    """Costs are summed symbolically once, so a 1M-token call costs no more to
    query than an 8K one (generous bounds: not a benchmark)."""
    v41_engine.evaluate_text("flops(B=1, S=0, P=8192)")  # warm-up: compiles and sums
    t0 = time.perf_counter()
    big = v41_engine.evaluate_text("flops(B=1, S=0, P=1048576)")
    t1 = time.perf_counter()
    small = v41_engine.evaluate_text("flops(P=8192)")
    t2 = time.perf_counter()
    assert big.value > small.value == V41_TOTAL["ced"]
    assert t1 - t0 < 0.5, f"flops(P=1048576) took {t1 - t0:.3f} s"
    assert t2 - t1 < 0.5, f"flops(P=8192) took {t2 - t1:.3f} s"


# ================================================================== decode writes
def test_qwen_decode_write_is_the_kv_append(qwen_engine):
    # no writes declared: one step writes what the state grows by (FACTS §2: 147,456 B)
    assert value(qwen_engine, "decode_write_bytes(H=8192)") == 147_456
    assert value(qwen_engine, "decode_write_bytes(H=8192, B=3)") == 3 * 147_456


@pytest.mark.parametrize("H, expected", [(8192, 21_120 + 356 + 8), (8193, 21_120 + 1424 + 8)])
def test_v41_decode_writes_production(v41_engine, H, expected):
    # window ring buffers (40 x 528 B) + completed global records + one int64 token id
    assert value(v41_engine, f"decode_write_bytes(H={H}, format=production)") == expected


@pytest.mark.parametrize("lo, hi", [(0, 9), (5, 40), (126, 131), (8190, 8200)])
def test_v41_global_writes_add_up_to_global_growth(v41_engine, lo, hi):
    # global records are appended, never overwritten: summing the per-step writes
    # over [lo, hi) must give exactly the growth of the global history
    writes = sum(value(v41_engine, f"decode_write_bytes(H={h}, component=global)") for h in range(lo, hi))
    growth = value(v41_engine, f"state_bytes(H={hi}, component=global) - state_bytes(H={lo}, component=global)")
    assert writes == growth


# ================================================================== small queries
def test_dtype_bytes_is_exact(v41_engine):
    assert quantity(v41_engine, "dtype_bytes(fp4)").value == sp.Rational(1, 2)
    assert quantity(v41_engine, "dtype_bytes(fp4)").dims == BYTES


def test_rows_follow_the_execution_schedule(v41_engine, qwen_engine):
    assert value(qwen_engine, "rows(B=2, P=8192, op=q, layer=0)") == 2 * 8192
    assert value(v41_engine, "rows(P=8192, op=router, layer=3)") == 8192      # encoder: every position
    assert value(v41_engine, "rows(P=8192, op=router, layer=30)") == 128      # decoder: tail replay
    assert value(v41_engine, "rows(S=8192, P=1, op=router, layer=30)") == 1


def test_rows_needs_one_row_count(v41_engine):
    with pytest.raises(SpecError, match="different row counts"):
        quantity(v41_engine, "rows(P=8192, op=router)")


def test_cross_spec_query(v41_engine, qwen_engine):
    assert value(v41_engine, "kv_bytes_per_token(spec=qwen3_8b)") == value(qwen_engine, "kv_bytes_per_token()")
    with pytest.raises(SpecError, match="no spec 'nope'"):
        quantity(v41_engine, "params(spec=nope)")


def test_device_memory(qwen_engine):
    # the datasheet: 24,564 MiB as nvidia-smi reports it; a document's figure is passed explicitly
    assert value(qwen_engine, "device_memory(device=rtx_4090)") == 24_564 * 2**20
    assert value(qwen_engine, "device_memory(device=rtx_4090, memory=24 GB)") == 24 * 10**9
    assert value(qwen_engine, "device_memory(device=a100_80gb)") == 80 * 2**30


# ================================================================== what-if dimension overrides
def test_dimension_override_is_a_variant(qwen_engine):
    # halving the KV heads halves the KV cache and removes half the K/V projections
    assert quantity(qwen_engine, "kv_bytes_per_token(n_kv=4) / kv_bytes_per_token()").value == sp.Rational(1, 2)
    assert value(qwen_engine, "params() - params(n_kv=4)") == 36 * 2 * 4096 * 4 * 128
    # the spec itself is untouched
    assert value(qwen_engine, "params()") == 8_190_735_360


def test_dimension_override_rejects_non_integers(qwen_engine):
    with pytest.raises(SpecError, match="non-negative integer"):
        quantity(qwen_engine, "params(d=2 GB)")


def test_device_rates_and_ridge_point(qwen_engine):
    ridge = quantity(qwen_engine, "device_flops(device=rtx_2080_ti) / device_bandwidth(device=rtx_2080_ti)")
    assert ridge.value == sp.Rational(53_800, 616)
    # a rate per data type: bf16 by default, fp16 where the device has no bf16 (Turing)
    assert value(qwen_engine, "device_flops(device=h100_sxm)") == 989_500 * 10**9
    assert value(qwen_engine, "device_flops(device=h100_sxm, dtype=fp8)") == 1_979 * 10**12
    assert value(qwen_engine, "device_flops(device=a100_80gb, flops=100 TFLOPs / 1 s)") == 10**14
    with pytest.raises(SpecError, match="gives no fp4 rate"):
        quantity(qwen_engine, "device_flops(device=h100_sxm, dtype=fp4)")
    with pytest.raises(SpecError, match="gives no 'scale_up_link:'"):
        quantity(qwen_engine, "device_link(device=rtx_4090)")


def test_b_max_needs_per_request_state(repo):
    from conftest import shipped_engine

    with pytest.raises(SpecError, match="no per-request state"):
        quantity(shipped_engine("toy_moe"), "b_max(device=h100_sxm, H=8)")
