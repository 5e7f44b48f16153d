"""Qwen3.6-35B-A3B (and the Qwen3.5-397B-A17B hybrid state): the exact integers of
FACTS.md §3, §7 and §8 reproduced by the query engine, the counting rules of the
Gated DeltaNet, gated-attention and shared-expert MoE library blocks checked
against brute force, and the claim files verified.

Every expected integer is copied from specs/sources/FACTS.md (§3, §7, §8)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import sympy as sp
import yaml

from specc.dsl.errors import SpecError
from specc.dsl.units import BYTES, FLOPS, PARAMS

from conftest import shipped_engine

REPO = Path(__file__).resolve().parents[1]
Q36 = REPO / "specs" / "qwen36_35b_a3b.yaml"
Q35 = REPO / "specs" / "qwen35_397b_a17b.yaml"
NOT_COMPUTABLE = REPO / "specs" / "claims" / "not_computable_qwen36.yaml"
CATALOG = REPO / "specs" / "catalog" / "000.yaml"


@pytest.fixture(scope="module")
def q36():
    return shipped_engine(Q36.stem)


@pytest.fixture(scope="module")
def q35():
    return shipped_engine(Q35.stem)


def value(engine, query: str, **kwargs) -> int:
    result = engine.evaluate_text(query, **kwargs)
    assert isinstance(result.value, sp.Integer), f"{query} gave a non-integer {result.value!r}"
    return int(result.value)


def G(r, i, o):
    return 2 * r * i * o


# ================================================================== parameters (FACTS §3, §8.1, §8.2)
TOTAL = 34_660_610_688
GROUPS = {
    "embedding_head": 1_017_118_720,
    "attention_projection": 1_283_194_880,
    "dense_shared_ffn": 125_829_120,
    "routed_experts": 32_212_254_720,
    "engram": 0,
    "other": 22_213_248,
}


def test_total_params(q36):
    result = q36.evaluate_text("params()")
    assert result.value == TOTAL
    assert result.dims == PARAMS


@pytest.mark.parametrize("group, expected", list(GROUPS.items()))
def test_param_groups(q36, group, expected):
    assert value(q36, f"params(group={group})") == expected


def test_param_groups_sum_to_total(q36):
    assert sum(GROUPS.values()) == TOTAL
    assert sum(value(q36, f"params(group={g})") for g in GROUPS) == TOTAL


def test_param_group_formulas():
    V, d = 248320, 2048
    assert GROUPS["embedding_head"] == 2 * V * d
    full = d * 8192 + 2 * d * 512 + 4096 * d
    linear = d * 8192 + d * 4096 + 2 * d * 32 + 4096 * d
    assert GROUPS["attention_projection"] == 10 * full + 30 * linear
    assert GROUPS["dense_shared_ffn"] == 40 * 3 * d * 512
    assert GROUPS["routed_experts"] == 40 * 256 * 3 * d * 512
    per_layer = 2 * d + 256 * d + d                       # norms, router, shared gate
    per_linear = 8192 * 4 + 32 + 32 + 128                 # conv1d, A_log, dt_bias, gated norm
    per_full = 256 + 256                                  # q_norm, k_norm
    assert GROUPS["other"] == 40 * per_layer + 30 * per_linear + 10 * per_full + d


def test_weight_bytes_uniform_bf16(q36):
    result = q36.evaluate_text("weight_bytes()")
    assert result.value == 2 * TOTAL == 69_321_221_376
    assert result.dims == BYTES


def test_selected_routed_expert_bytes_per_token(q36):
    # FACTS §7: 2 · 40 · 8 · 3 · 2048 · 512
    assert value(q36, "weight_bytes(group=routed_experts) * dim(k) / dim(E)") == 2_013_265_920
    assert 2 * 40 * 8 * 3 * 2048 * 512 == 2_013_265_920


def test_weight_read_touches_min_of_experts_and_routings(q36):
    # B = 1 decode touches 8 experts per layer, B = 64 touches all 256 (512 routings ≥ 256)
    diff = value(q36, "weight_read_bytes(B=64) - weight_read_bytes(B=1)")
    assert diff == 40 * (256 - 8) * 3 * 2048 * 512 * 2


# ================================================================== one call (FACTS §3, §8.1)
PREFILL_8K = 52_094_951_358_464
DECODE_8K = 7_331_184_832


def test_prefill_8k(q36):
    result = q36.evaluate_text("flops(B=1, S=0, P=8192)")
    assert result.value == PREFILL_8K
    assert result.dims == FLOPS
    assert value(q36, "flops(P=8192)") == PREFILL_8K


def test_decode_8k(q36):
    assert value(q36, "flops(B=1, S=8192, P=1)") == DECODE_8K


def _chunked(P, B=1):
    return B * 32 * math.ceil(P / 64) * 9_437_184


def _conv_slots(S, P, B=1):
    if S > 0 and P == 1:
        q_out = 2
    elif S == 0:
        q_out = max(4, P) + 3
    else:
        q_out = P + 7
    return 2 * B * 8192 * 4 * q_out


def facts_flops(S, P, B=1, eager=True, head_rows=None):
    """FACTS §3 'Matrix FLOPs of one call', written out independently of the spec."""
    M, n = B * P, S + P
    rect, pairs = B * P * n, B * (P * S + P * (P + 1) // 2)
    full = G(M, 2048, 8192) + 2 * G(M, 2048, 512) + G(M, 4096, 2048) + 4 * 16 * 256 * (rect if eager else pairs)
    core = 3 * 2 * B * 32 * 128 * 128 if (S > 0 and P == 1) else _chunked(P, B)
    linear = G(M, 2048, 8192) + G(M, 2048, 4096) + 2 * G(M, 2048, 32) + G(M, 4096, 2048) + _conv_slots(S, P, B) + core
    moe = G(M, 2048, 256) + 6 * (M * 8) * 2048 * 512 + G(M, 2048, 1024) + G(M, 512, 2048) + G(M, 2048, 1)
    rope = 2 * 3 * M * 32
    head = G(B if head_rows is None else head_rows, 2048, 248320)
    return 10 * full + 30 * linear + 40 * moe + rope + head


def test_facts_formula_reproduces_reference_integers():
    assert facts_flops(0, 8192) == PREFILL_8K
    assert facts_flops(8192, 1) == DECODE_8K


@pytest.mark.parametrize("B, S, P", [(1, 0, 1), (1, 0, 5), (1, 0, 64), (1, 0, 65), (2, 0, 300), (1, 3, 1),
                                     (3, 17, 1), (1, 17, 2), (2, 1000, 129), (1, 262143, 1)])
def test_call_flops_match_facts_formula(q36, B, S, P):
    assert value(q36, f"flops(B={B}, S={S}, P={P})") == facts_flops(S, P, B)


def test_symbolic_flops_substitutes(q36):
    expr = q36.evaluate_text("flops(B=B, S=S, P=P)", symbolic_ok=True).value
    for point, expected in [({"B": 1, "S": 0, "P": 8192}, PREFILL_8K), ({"B": 1, "S": 8192, "P": 1}, DECODE_8K)]:
        assert expr.subs({s: point[s.name] for s in expr.free_symbols}) == expected


# ------------------------------------------------------------------ the library blocks' counting rules
@pytest.mark.parametrize("B, S, P", [(1, 0, 1), (1, 0, 3), (1, 0, 4), (1, 0, 8192), (2, 0, 10), (1, 5, 1),
                                     (4, 9, 1), (1, 9, 2), (3, 100, 77)])
def test_short_conv_dense_slots(q36, B, S, P):
    assert value(q36, f"flops(B={B}, S={S}, P={P}, layer=0, component=short_conv)") == _conv_slots(S, P, B)


@pytest.mark.parametrize("B, S, P", [(1, 0, 1), (1, 0, 2), (1, 0, 9), (2, 1, 1), (1, 2, 5), (3, 50, 20)])
def test_short_conv_valid_taps_option_is_brute_force(q36, B, S, P):
    taps = sum(min(4, S + i + 1) for i in range(P))
    got = value(q36, f"flops(B={B}, S={S}, P={P}, layer=0, component=short_conv, conv=taps)")
    assert got == 2 * B * 8192 * taps


@pytest.mark.parametrize("B, S, P", [(1, 0, 1), (1, 0, 63), (1, 0, 64), (1, 0, 65), (2, 0, 8192), (1, 7, 2),
                                     (2, 7, 130)])
def test_delta_rule_chunked(q36, B, S, P):
    # chunked for prefill and for any P > 1; the last chunk is padded to 64
    assert value(q36, f"flops(B={B}, S={S}, P={P}, layer=0, component=linear_attention)") == _chunked(P, B)


@pytest.mark.parametrize("B, S", [(1, 1), (1, 8192), (5, 300)])
def test_delta_rule_recurrent_single_token_decode(q36, B, S):
    assert value(q36, f"flops(B={B}, S={S}, P=1, layer=0, component=linear_attention)") == 6 * B * 32 * 128 * 128


def test_delta_rule_options(q36):
    assert value(q36, "flops(S=8192, P=1, layer=0, component=linear_attention, linear_core=chunked)") == _chunked(1)
    assert value(q36, "flops(P=100, layer=0, component=linear_attention, linear_core=recurrent)") == \
        6 * 100 * 32 * 128 * 128


@pytest.mark.parametrize("B, S, P", [(1, 0, 8192), (2, 10, 7), (1, 8192, 1)])
def test_full_attention_eager_vs_causal(q36, B, S, P):
    eager = value(q36, f"flops(B={B}, S={S}, P={P}, component=attention_interaction)")
    causal = value(q36, f"flops(B={B}, S={S}, P={P}, component=attention_interaction, attention=effective)")
    rect = B * sum(S + P for _ in range(P))
    valid = B * sum(S + i + 1 for i in range(P))
    assert eager == 10 * 4 * 16 * 256 * rect
    assert causal == 10 * 4 * 16 * 256 * valid
    assert value(q36, f"flops(B={B}, S={S}, P={P}, attention=effective)") == facts_flops(S, P, B, eager=False)


def test_rope_frequencies_once_per_call(q36):
    assert value(q36, "op_count(op=rope_freqs)") == 1
    assert value(q36, "flops(B=3, P=100, component=rope)") == 2 * 3 * 300 * 32


@pytest.mark.parametrize("choice, rows", [("last", 1), ("all", 8192), ("none", 0)])
def test_head_options(q36, choice, rows):
    assert value(q36, f"flops(P=8192, head={choice})") == facts_flops(0, 8192, head_rows=rows)


def test_layer_kinds(q36):
    assert value(q36, "op_count(op=attn)") == 10
    assert value(q36, "op_count(op=core)") == 30
    assert value(q36, "op_count(op=router)") == 40
    for layer in range(40):
        full = layer % 4 == 3
        assert value(q36, f"params(op=mixer.q, layer={layer})") == (2048 * 8192 if full else 0)
        assert value(q36, f"params(op=mixer.qkv, layer={layer})") == (0 if full else 2048 * 8192)
        assert value(q36, f"flops(S=8192, P=1, layer={layer}, component=attention_interaction)") == \
            (4 * 16 * 256 * 8193 if layer % 4 == 3 else 0)


# ================================================================== state and access (FACTS §3, §7, §8.1, §8.5)
FIXED = 64_880_640
LENGTHS = [8192 * 2**k for k in range(8)]
RESIDENT = [232_652_800, 400_424_960, 735_969_280, 1_407_057_920, 2_749_235_200, 5_433_589_760,
            10_802_298_880, 21_539_717_120]
ACCESS = [293_601_280, 461_373_440, 796_917_760, 1_468_006_400, 2_810_183_680, 5_494_538_240,
          10_863_247_360, 21_600_665_600]


def test_state_8k(q36):
    result = q36.evaluate_text("state_bytes(H=8192)")
    assert result.value == 232_652_800
    assert result.dims == BYTES


def test_fixed_state(q36):
    assert value(q36, "state_bytes(H=0)") == FIXED
    assert value(q36, "state_bytes(H=8192, component=fixed)") == FIXED
    assert value(q36, "state_bytes(H=8192, component=recurrent)") == 30 * 32 * 128 * 128 * 4 == 62_914_560
    assert value(q36, "state_bytes(H=8192, component=conv)") == 30 * 8192 * 4 * 2 == 1_966_080
    assert 62_914_560 + 1_966_080 == FIXED


def test_kv_bytes_per_token(q36):
    assert value(q36, "kv_bytes_per_token()") == 10 * 2 * 2 * 256 * 2 == 20_480


def test_access_8k(q36):
    assert value(q36, "decode_read_bytes(H=8192, component=state)") == 293_601_280
    assert value(q36, "decode_read_bytes(H=8192, component=kv)") == 167_772_160
    assert value(q36, "decode_read_bytes(H=8192, component=recurrent)") == 125_829_120 == 120 * 2**20
    assert value(q36, "decode_read_bytes(H=8192, component=conv)") == 0


def test_state_with_batch(q36):
    assert value(q36, "state_bytes(H=8192, B=3)") == 3 * 232_652_800


@pytest.mark.parametrize("H, resident, access", list(zip(LENGTHS, RESIDENT, ACCESS)))
def test_state_curves(q36, H, resident, access):
    beyond = H > 262_144
    extra = ", extrapolate=true" if beyond else ""
    r = q36.evaluate_text(f"state_bytes(H={H}{extra})")
    a = q36.evaluate_text(f"decode_read_bytes(H={H}, component=state{extra})")
    assert (r.value, a.value) == (resident, access)
    assert r.value == 20480 * H + FIXED
    assert a.value == 20480 * H + 120 * 2**20
    assert r.extrapolated is beyond and a.extrapolated is beyond


def test_state_beyond_limit_needs_extrapolate(q36):
    assert value(q36, "state_bytes(H=262144)") == 5_433_589_760
    with pytest.raises(SpecError) as info:
        q36.evaluate_text("state_bytes(H=262145)")
    assert "262144" in info.value.message


# ================================================================== long context (FACTS §7, §8.3)
LONG = {  # S: (matrix FLOPs, interaction, other, state at S)
    8192: (7_331_184_832, 1_342_341_120, 5_988_843_712, 232_652_800),
    204_800: (39_543_439_552, 33_554_595_840, 5_988_843_712, 4_259_184_640),
    1_048_575: (177_787_535_552, 171_798_691_840, 5_988_843_712, 21_539_696_640),
}


@pytest.mark.parametrize("S", list(LONG))
def test_long_context_row(q36, S):
    total, inter, other, state = LONG[S]
    beyond = S + 1 > 262_144
    extra = ", extrapolate=true" if beyond else ""
    t = q36.evaluate_text(f"flops(B=1, S={S}, P=1{extra})")
    i = q36.evaluate_text(f"flops(B=1, S={S}, P=1, component=attention_interaction{extra})")
    o = q36.evaluate_text(f"flops(B=1, S={S}, P=1{extra}) - flops(B=1, S={S}, P=1, component=attention_interaction{extra})")
    s = q36.evaluate_text(f"state_bytes(H={S}{extra})")
    assert (t.value, i.value, o.value, s.value) == (total, inter, other, state)
    assert t.extrapolated is beyond and s.extrapolated is beyond
    # FACTS §7: interaction 10·4·16·256·(S+1); beyond the limit decode-8K + slope·(S − 8192)
    assert inter == 10 * 4 * 16 * 256 * (S + 1)
    assert total == DECODE_8K + 10 * 4 * 16 * 256 * (S - 8192)
    assert state == 232_652_800 + 20480 * (S - 8192)


def test_context_limit(q36):
    assert value(q36, "flops(S=262143, P=1)") == facts_flops(262143, 1)
    with pytest.raises(SpecError) as info:
        q36.evaluate_text("flops(S=1048575, P=1)")
    assert "maximum" in info.value.message and "262144" in info.value.message
    assert value(q36, "dim(max_context)") == 262_144


# ================================================================== request scenario (FACTS §7, §8.4)
CALLS = {"flops(P=128)": 645_876_310_016, "flops(S=128, P=1)": 6_009_979_072,
         "flops(S=129, P=1)": 6_010_142_912, "flops(S=130, P=1)": 6_010_306_752}
REQUEST = 663_906_738_752


def test_request_calls(q36):
    for query, expected in CALLS.items():
        assert value(q36, query) == expected
    assert sum(CALLS.values()) == REQUEST


def test_request_flops(q36):
    assert value(q36, "request_flops(B=1, S=0, P=128, G=4)") == REQUEST


@pytest.mark.parametrize("B, S, P, Gn", [(1, 0, 1, 3), (2, 0, 7, 5), (1, 100, 3, 4), (3, 5, 1, 6)])
def test_request_flops_is_sum_of_calls(q36, B, S, P, Gn):
    expected = facts_flops(S, P, B) + sum(facts_flops(S + P + j, 1, B) for j in range(Gn - 1))
    assert value(q36, f"request_flops(B={B}, S={S}, P={P}, G={Gn})") == expected


# ================================================================== Qwen3.5-397B-A17B hybrid state
def test_qwen35_state(q35):
    assert value(q35, "kv_bytes_per_token()") == 15 * 2 * 2 * 256 * 2 == 30_720
    assert value(q35, "state_bytes(H=8192, component=kv)") == 30_720 * 8192 == 240 * 2**20
    assert value(q35, "decode_read_bytes(H=8192, component=kv)") == 240 * 2**20
    fixed = 45 * (64 * 128 * 128 * 4 + (2 * 16 * 128 + 64 * 128) * 4 * 2)
    assert value(q35, "state_bytes(H=0)") == fixed == 193_167_360
    assert value(q35, "op_count(op=attn)") == 15 and value(q35, "op_count(op=core)") == 45


# ================================================================== claims
@pytest.mark.parametrize("path", [Q36, Q35])
def test_claims_all_pass(path):
    from specc.compiler.schema.spec import load_spec
    from specc.verify.claims import verify_spec

    results = verify_spec(load_spec(path))
    assert results
    bad = [(r.claim.id, r.verdict, r.message) for r in results if r.verdict != "PASS"]
    assert not bad


def test_catalog_coverage():
    from specc.compiler.schema.spec import load_spec
    from specc.verify.claims import load_claims

    catalog = yaml.safe_load(CATALOG.read_text(encoding="utf-8"))
    for path, model in [(Q36, "qwen3.6-35b-a3b"), (Q35, "qwen3.5-397b-a17b")]:
        want = {e["id"] for e in catalog if e["model"] == model}
        claimed = {c.id for c in load_claims(load_spec(path))}
        skipped = {e["id"] for e in yaml.safe_load(NOT_COMPUTABLE.read_text(encoding="utf-8"))} \
            if model == "qwen3.6-35b-a3b" else set()
        assert not claimed & skipped
        assert claimed | skipped == want


# ================================================================== cross-check with Hugging Face (optional)
HF_CONFIGS = {  # Qwen3_5MoeTextConfig arguments; Qwen3.6's are the class defaults (the 35B-A3B layout)
    "qwen36": (Q36, {}),
    "qwen35": (Q35, dict(hidden_size=4096, num_hidden_layers=60, num_attention_heads=32, linear_num_value_heads=64,
                         num_experts=512, num_experts_per_tok=10, moe_intermediate_size=1024,
                         shared_expert_intermediate_size=1024)),
}


@pytest.mark.parametrize("name", list(HF_CONFIGS))
def test_params_match_hugging_face_module(name):
    """The parameter count of the spec equals that of transformers' own Qwen3.5-MoE
    text model built (on the meta device, no weights) from the same configuration."""
    torch = pytest.importorskip("torch")
    config_mod = pytest.importorskip("transformers.models.qwen3_5_moe.configuration_qwen3_5_moe")
    from transformers import AutoModelForCausalLM

    from specc.compiler.query.queries import QueryEngine
    from specc.compiler.schema.spec import load_spec

    path, kwargs = HF_CONFIGS[name]
    config = config_mod.Qwen3_5MoeTextConfig(**kwargs)
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config)
    hf_total = sum(p.numel() for p in model.parameters())
    hf_routed = sum(p.numel() for n, p in model.named_parameters() if ".mlp.experts." in n)
    engine = QueryEngine(load_spec(path))
    assert value(engine, "params()") == hf_total
    assert value(engine, "params(group=routed_experts)") == hf_routed
    if name == "qwen36":
        assert hf_total == TOTAL
