"""DeepSeek V4-Flash and DeepSeek-V3: the exact integers of FACTS.md §4, §7 and §8.

Every V4-Flash expected value here is copied from specs/sources/FACTS.md; the engine must
reproduce them to the integer. DeepSeek-V3's total is the published 671,026,419,200
(including the 58×256 router score-correction biases). The MLA library block
(specs/lib/mla.yaml) is checked on V3 in both execution paths."""

from __future__ import annotations

from fractions import Fraction

import pytest
import sympy as sp

from specc.dsl.units import BYTES, FLOPS, PARAMS

from conftest import SPECS, shipped_engine

V4F = SPECS / "deepseek_v4_flash.yaml"
V3 = SPECS / "deepseek_v3.yaml"


@pytest.fixture(scope="module")
def v4f():
    return shipped_engine(V4F.stem)


@pytest.fixture(scope="module")
def v3():
    return shipped_engine(V3.stem)


def value(engine, query: str):
    result = engine.evaluate_text(query)
    assert isinstance(result.value, (sp.Integer, sp.Rational)), f"{query} gave {result.value!r}"
    return result.value


def integer(engine, query: str) -> int:
    v = value(engine, query)
    assert isinstance(v, sp.Integer), f"{query} gave a non-integer {v!r}"
    return int(v)


INTERACTION = ("flops(S={S}, P=1, component=attention_interaction)"
               " + flops(S={S}, P=1, component=index_interaction)")


# ------------------------------------------------------------------ §8.1 / §8.2 parameters
V4F_GROUPS = {
    "embedding_head": 1_059_061_760,
    "attention_projection": 5_084_807_168,
    "dense_shared_ffn": 1_082_130_432,
    "routed_experts": 277_025_390_592,
    "engram": 0,
    "other": 80_850_519,
}


def test_total_params(v4f):
    result = v4f.evaluate_text("params()")
    assert result.value == 284_332_240_471
    assert result.dims == PARAMS


@pytest.mark.parametrize("group, expected", sorted(V4F_GROUPS.items()))
def test_param_groups(v4f, group, expected):
    assert integer(v4f, f"params(group={group})") == expected


def test_groups_sum_to_total(v4f):
    assert sum(V4F_GROUPS.values()) == integer(v4f, "params()")


def test_mhc_params(v4f):
    # FACTS §4: 2·43·(24·16384 + 24 + 3) + 4·16384 + 4 + 1
    # (op=h.p matches every layer's attention-side h.p and the head's h.p: dotted suffix)
    assert integer(v4f, "params(component=hyper_connections) + params(op=h.p) + params(op=h2.p)") == 33_884_439


def test_selected_expert_bytes(v4f):
    assert integer(v4f, "weight_bytes(group=routed_experts) / dim(E) * dim(k)") == 12_985_565_184


def test_uniform_bf16_bytes(v4f):
    assert integer(v4f, "weight_bytes()") == 2 * 284_332_240_471


# ------------------------------------------------------------------ §8.1 calls
def test_prefill_8k(v4f):
    result = v4f.evaluate_text("flops(B=1, S=0, P=8192)")
    assert result.value == 231_125_253_357_568
    assert result.dims == FLOPS


def test_decode_8k(v4f):
    assert integer(v4f, "flops(S=8192, P=1)") == 29_539_565_568


def test_state_and_access_8k(v4f):
    result = v4f.evaluate_text("state_bytes(H=8192)")
    assert result.value == 74_203_136
    assert result.dims == BYTES
    assert integer(v4f, "decode_read_bytes(H=8192, component=context)") == 28_966_912
    assert integer(v4f, "state_bytes(H=8192, component=buffer)") == 12_206_080


# ------------------------------------------------------------------ §8.3 long context
LONG = [  # S, matrix FLOPs, interaction, other, state at S
    (8192, 29_539_565_568, 3_003_121_664, 26_536_443_904, 74_203_136),
    (204800, 50_477_531_136, 23_941_087_232, 26_536_443_904, 1_426_866_176),
    (1048575, 140_336_300_032, 113_799_856_128, 26_536_443_904, 7_231_997_696),
]


@pytest.mark.parametrize("S, total, inter, other, state", LONG)
def test_long_context(v4f, S, total, inter, other, state):
    got_total = integer(v4f, f"flops(S={S}, P=1)")
    got_inter = integer(v4f, INTERACTION.format(S=S))
    assert got_total == total
    assert got_inter == inter
    assert got_total - got_inter == other
    assert integer(v4f, f"state_bytes(H={S})") == state
    assert v4f.evaluate_text(f"flops(S={S}, P=1)").extrapolated is False


def test_hypothetical_full_attention_and_ratios(v4f):
    full = integer(v4f, "flops(S=1048575, P=1, attention=full, component=attention_interaction)")
    assert full == 5_909_874_999_296 == 43 * 4 * 64 * 512 * 1048576
    inter = integer(v4f, INTERACTION.format(S=1048575))
    assert float(Fraction(full, inter)) == 51.93218339967566
    ratio = Fraction(integer(v4f, "flops(S=1048575, P=1)"), integer(v4f, "flops(S=204800, P=1)"))
    assert float(ratio) == 2.7801736113815947
    # the query language gives the same ratio exactly
    assert value(v4f, "flops(S=1048575, P=1) / flops(S=204800, P=1)") == sp.Rational(ratio.numerator,
                                                                                       ratio.denominator)


# ------------------------------------------------------------------ §8.4 request scenario
def test_request_scenario(v4f):
    calls = [integer(v4f, q) for q in ("flops(P=128)", "flops(S=128, P=1)", "flops(S=129, P=1)",
                                       "flops(S=130, P=1)")]
    assert calls == [3_315_656_556_544, 27_359_576_064, 27_359_576_064, 27_359_576_064]
    assert integer(v4f, "request_flops(S=0, P=128, G=4)") == sum(calls) == 3_397_735_284_736


# ------------------------------------------------------------------ §8.5 state curves
RESIDENT = [74_203_136, 130_564_096, 243_286_016, 468_729_856, 919_617_536, 1_821_392_896,
            3_624_943_616, 7_232_045_056]
ACCESS = [28_966_912, 41_287_680, 65_929_216, 115_212_288, 213_778_432, 410_910_720, 805_175_296,
          1_593_704_448]


@pytest.mark.parametrize("k", range(8))
def test_state_curves(v4f, k):
    length = 8192 * 2 ** k
    assert integer(v4f, f"state_bytes(H={length})") == RESIDENT[k]
    assert integer(v4f, f"decode_read_bytes(H={length}, component=context)") == ACCESS[k]


# ------------------------------------------------------------------ production format (§4, §8)
def test_production_format(v4f):
    assert integer(v4f, "state_bytes(H=8192, format=production, component=kv)") == 28_788_736
    assert integer(v4f, "decode_read_bytes(H=8192, format=production, component=context)") == 13_165_568
    assert value(v4f, "kv_bytes_per_token(format=production)") == sp.Rational(14057, 4)   # 3514.25
    assert integer(v4f, "state_bytes(H=8192, format=production, component=window)") == 43 * 128 * 584


# ------------------------------------------------------------------ MTP stays out of the totals
def test_mtp_is_separate(v4f):
    assert integer(v4f, "flops(P=8192, mtp=on) - flops(P=8192, mtp=on, stage=mtp)") == 231_125_253_357_568
    assert integer(v4f, "flops(P=1, mtp=on, stage=mtp)") == 1_796_997_120
    assert integer(v4f, "flops(P=1, mtp=on, stage=mtp, component=vocabulary_head)") == 2 * 4096 * 129280
    assert integer(v4f, "flops(P=1, mtp=on) - flops(P=1, mtp=on, stage=mtp)") == integer(v4f, "flops(P=1)")
    assert integer(v4f, "params(mtp=on)") > integer(v4f, "params()") == 284_332_240_471


def test_layer_kinds(v4f):
    assert integer(v4f, "op_count(op=iscore)") == 21              # CSA
    assert integer(v4f, "op_count(op=ckv) - op_count(op=iscore)") == 20   # HCA
    assert integer(v4f, "flops(P=1, layer=42, component=index_interaction)") == 0   # nothing to scan yet
    assert integer(v4f, "flops(S=3, P=1, layer=42, component=index_interaction)") == 2 * 64 * 128


# ------------------------------------------------------------------ DeepSeek-V3 and the MLA block
def test_v3_total(v3):
    assert integer(v3, "params()") == 671_026_419_200
    # both MLA paths hold the same parameters
    assert integer(v3, "params(mla=compressed)") == 671_026_419_200
    assert integer(v3, "params(op=router_bias)") == 58 * 256


def test_v3_mla_paths(v3):
    pairs = 8192 * 8193 // 2
    proj = 2 * 8192 * (7168 * 1536 + 1536 * 24576 + 7168 * 576 + 16384 * 7168)
    expanded = integer(v3, "flops(P=8192, mla=expanded, component=attention_interaction)")
    compressed = integer(v3, "flops(P=8192, mla=compressed, component=attention_interaction)")
    assert expanded == 61 * 2 * 128 * (192 + 128) * pairs
    assert compressed == 61 * 2 * 128 * (576 + 512) * pairs
    exp_proj = integer(v3, "flops(P=8192, mla=expanded, component=attention_projection)")
    cmp_proj = integer(v3, "flops(P=8192, mla=compressed, component=attention_projection)")
    assert exp_proj == 61 * (proj + 2 * 8192 * 512 * 32768)
    assert cmp_proj == 61 * (proj + 2 * (128 * 8192) * 128 * 512 + 2 * (128 * 8192) * 512 * 128)
    assert integer(v3, "kv_bytes_per_token(mla=expanded)") == 61 * 128 * (192 + 128) * 2
    # the default is the latent cache engines keep
    assert integer(v3, "kv_bytes_per_token()") == 61 * (512 + 64) * 2
    assert integer(v3, "kv_bytes_per_token(mla=compressed)") == 61 * (512 + 64) * 2
