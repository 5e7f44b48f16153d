"""Kimi K3 (specs/kimi_k3.yaml): the exact integers of FACTS.md §5, §7 and §8, reproduced by
the query engine, plus brute-force checks of the closed forms the spec declares (KDA chunk
work with an exact partial chunk, AttnRes candidate counts, compact vs expanded MLA)."""

from __future__ import annotations

from pathlib import Path

import pytest
import sympy as sp

from specc.dsl.errors import SpecError
from specc.dsl.units import BYTES, FLOPS, PARAMS

from conftest import shipped_engine

K3 = Path(__file__).resolve().parents[1] / "specs" / "kimi_k3.yaml"


@pytest.fixture(scope="module")
def k3():
    return shipped_engine(K3.stem)


def value(engine, query: str) -> int:
    result = engine.evaluate_text(query)
    assert isinstance(result.value, sp.Integer), f"{query} gave a non-integer {result.value!r}"
    return int(result.value)


# ================================================================== parameters (FACTS §5, §8.1, §8.2)
TOTAL = 2_779_484_476_000
GROUPS = {
    "embedding_head": 2_348_810_240,
    "attention_projection": 36_179_705_856,
    "dense_shared_ffn": 12_881_756_160,
    "routed_experts": 2_722_740_830_208,
    "engram": 0,
    "other": 5_333_373_536,
}


def test_total_params(k3):
    result = k3.evaluate_text("params()")
    assert result.value == TOTAL
    assert result.dims == PARAMS


@pytest.mark.parametrize("group, expected", list(GROUPS.items()))
def test_param_groups(k3, group, expected):
    assert value(k3, f"params(group={group})") == expected


def test_param_groups_sum_to_total(k3):
    assert sum(GROUPS.values()) == TOTAL
    assert sum(value(k3, f"params(group={g})") for g in GROUPS) == TOTAL


def test_param_group_formulas(k3):
    # FACTS §5: attention_projection = 24 MLA layers + 69 KDA layers of 2-D projections
    mla = 7168 * 1536 + 1536 * 96 * 192 + 7168 * 576 + 512 * 96 * 256 + 2 * 7168 * 12288
    kda = 4 * 7168 * 12288 + 7168 * 128 + 128 * 12288 + 7168 * 96 + 12288 * 7168
    assert 24 * mla + 69 * kda == GROUPS["attention_projection"]
    assert 3 * 7168 * 33792 + 92 * 3 * 7168 * 6144 == GROUPS["dense_shared_ffn"]
    assert 92 * 896 * 3 * 3584 * 3072 == GROUPS["routed_experts"]
    other = (69 * (3 * 12288 * 4 + 128 + 96 + 12288) + 24 * (1536 + 512)
             + 92 * (896 * 7168 + 2 * 7168 * 3584 + 896 + 3584) + (4 * 93 + 2) * 7168 + (2 * 93 + 1) * 7168)
    assert other == GROUPS["other"]


def test_uniform_bf16_weight_bytes(k3):
    assert value(k3, "weight_bytes()") == 2 * TOTAL


def test_expanded_path_has_the_same_parameters(k3):
    assert value(k3, "params(mla=expanded)") == TOTAL
    assert value(k3, "params(mla=expanded, group=attention_projection)") == GROUPS["attention_projection"]


def test_selected_expert_bytes(k3):
    # FACTS §7/§8.2: 2 · 92·16·3·3584·3072 BF16 bytes per token
    assert value(k3, "weight_bytes(group=routed_experts) * dim(k) / dim(E)") == 97_240_743_936
    assert 2 * 92 * 16 * 3 * 3584 * 3072 == 97_240_743_936


def test_layer_kinds(k3):
    assert value(k3, "op_count(op=ckv)") == 24      # gated MLA
    assert value(k3, "op_count(op=core)") == 69     # KDA
    assert value(k3, "op_count(op=router)") == 92   # latent MoE
    assert value(k3, "op_count(op=ffn.gate)") == 1  # dense SwiGLU, layer 0
    model = k3.model({})
    assert model.sets["mla_layers"] == frozenset(list(range(3, 92, 4)) + [92])


# ================================================================== FLOPs of one call (FACTS §8.1, §8.3)
PREFILL_8K = 1_863_462_762_315_776
DECODE_8K = 249_438_187_520


def test_prefill_8k(k3):
    result = k3.evaluate_text("flops(B=1, S=0, P=8192)")
    assert result.value == PREFILL_8K
    assert result.dims == FLOPS
    assert value(k3, "flops(P=8192, head=last, mla=compact)") == PREFILL_8K


def test_decode_8k(k3):
    assert value(k3, "flops(S=8192, P=1)") == DECODE_8K


LONG = [  # S, matrix FLOPs, interaction, other, state at S
    (8192, 249_438_187_520, 41_075_638_272, 208_362_549_248, 680_951_808),
    (204_800, 1_235_133_181_952, 1_026_770_632_704, 208_362_549_248, 6_116_769_792),
    (1_048_575, 5_465_402_519_552, 5_257_039_970_304, 208_362_549_248, 29_445_460_992),
]


@pytest.mark.parametrize("S, total, interaction, other, state", LONG)
def test_long_context(k3, S, total, interaction, other, state):
    result = k3.evaluate_text(f"flops(S={S}, P=1)")
    assert result.value == total
    assert result.extrapolated is False          # 1,048,576 positions is K3's limit
    assert value(k3, f"flops(S={S}, P=1, component=attention_interaction)") == interaction
    assert interaction == 24 * 2 * 96 * (576 + 512) * (S + 1)
    assert total - interaction == other
    assert value(k3, f"state_bytes(H={S})") == state


def test_context_limit(k3):
    with pytest.raises(SpecError) as info:
        k3.evaluate_text("flops(S=1048576, P=1)")
    assert "maximum" in info.value.message
    assert k3.evaluate_text("flops(S=1048576, P=1, extrapolate=true)").extrapolated is True


REQUEST = [26_531_468_410_880, 209_009_291_264, 209_014_304_768, 209_019_318_272]


def test_request_scenario(k3):
    calls = ["flops(P=128)", "flops(S=128, P=1)", "flops(S=129, P=1)", "flops(S=130, P=1)"]
    assert [value(k3, c) for c in calls] == REQUEST
    assert value(k3, "request_flops(B=1, S=0, P=128, G=4)") == sum(REQUEST) == 27_158_511_325_184


def test_batch_scales_linearly_without_head_change(k3):
    # every term is proportional to B (rows, pairs, chunk groups, head rows)
    assert value(k3, "flops(B=3, S=8192, P=1)") == 3 * DECODE_8K
    assert value(k3, "flops(B=2, P=8192)") == 2 * PREFILL_8K


# ------------------------------------------------------------------ KDA chunk work vs brute force
def kda_chunk_brute(P: int, chunk: int = 64, dk: int = 128, dv: int = 128) -> int:
    """Per (request, head): sum over the chunks of P positions of the chunk algorithm's work,
    term by term (FACTS §5), looping over chunks and over positions inside a chunk."""
    total = 0
    for first in range(0, P, chunk):
        c = min(chunk, P - first)
        lo = sum(i for i in range(c))            # strictly-lower pairs: c(c-1)/2
        ca = sum(i + 1 for i in range(c))        # causal pairs incl. diagonal: c(c+1)/2
        total += 2 * lo * dk + 2 * lo * (dk + dv) + 3 * (2 * c * dk * dv) + 2 * ca * dk + 2 * ca * dv
    return total


def test_kda_chunk_w64():
    assert kda_chunk_brute(64) == 8_904_704


@pytest.mark.parametrize("P", [2, 3, 63, 64, 65, 127, 128, 129, 200, 1000, 8192, 8193])
def test_kda_chunk_work_matches_brute_force(k3, P):
    got = value(k3, f"flops(P={P}, component=linear_attention)")
    assert got == 69 * 96 * kda_chunk_brute(P)


@pytest.mark.parametrize("S", [0, 1, 8192])
def test_kda_single_position_is_recurrent(k3, S):
    # P = 1 selects the recurrent algorithm: no matrix FLOPs, scalar work 3·2·96·128·128 per layer
    assert value(k3, f"flops(S={S}, P=1, component=linear_attention)") == 0
    assert value(k3, f"scalar_work(S={S}, P=1, op=core)") == 69 * 6 * 96 * 128 * 128


def test_kda_chunk_ignores_history(k3):
    assert value(k3, "flops(S=5000, P=300, component=linear_attention)") == \
        value(k3, "flops(P=300, component=linear_attention)")


# ------------------------------------------------------------------ AttnRes and the head
def attnres_candidates(L: int = 93, block: int = 12) -> int:
    total = 0
    for layer in range(L):
        for cand in ((layer - 1) // block + 2, layer // block + 2):
            total += cand if cand > 1 else 0     # a single candidate passes through
    return total + L // block + 2                # final mix before the head


def test_attnres_weighted_sums(k3):
    assert attnres_candidates() == 1002
    for P in (1, 8192):
        assert value(k3, f"flops(P={P}, component=attnres)") == 2 * P * 7168 * 1002


def test_head_options(k3):
    last = value(k3, "flops(P=8192, component=vocabulary_head)")
    assert last == 2 * 7168 * 163840
    assert value(k3, "flops(P=8192, head=all, component=vocabulary_head)") == 8192 * last
    assert value(k3, "flops(P=8192, head=all)") == PREFILL_8K + 8191 * last


def test_mla_expanded_option(k3):
    # expanded path: the two per-head blocks become G(M,512,24576); attention 2·96·(192+128) per pair
    P, pairs = 8192, 8192 * 8193 // 2
    delta = 24 * (2 * P * 512 * 24576 - 2 * 96 * P * 128 * 512 - 2 * 96 * P * 512 * 128) \
        + 24 * (2 * 96 * (192 + 128) - 2 * 96 * (576 + 512)) * pairs
    assert value(k3, f"flops(P={P}, mla=expanded)") == PREFILL_8K + delta


# ================================================================== state (FACTS §5, §8.5)
LENGTHS = [8192 * 2**k for k in range(8)]
RESIDENT = [680_951_808, 907_444_224, 1_360_429_056, 2_266_398_720, 4_078_338_048, 7_702_216_704,
            14_949_974_016, 29_445_488_640]
ACCESS = [1_094_713_344, 1_321_205_760, 1_774_190_592, 2_680_160_256, 4_492_099_584, 8_115_978_240,
          15_363_735_552, 29_859_250_176]
FIXED = 454_459_392


def test_fixed_state(k3):
    result = k3.evaluate_text("state_bytes(H=0)")
    assert result.value == FIXED
    assert result.dims == BYTES
    assert value(k3, "state_bytes(H=0, component=kda_state)") == 69 * 96 * 128 * 128 * 4 == 434_110_464
    assert value(k3, "state_bytes(H=0, component=kda_conv)") == 69 * 3 * 12288 * 4 * 2 == 20_348_928
    assert value(k3, "state_bytes(H=0, component=fixed)") == FIXED


def test_kv_bytes_per_token(k3):
    assert value(k3, "kv_bytes_per_token()") == 24 * (512 + 64) * 2 == 27_648
    assert value(k3, "kv_bytes_per_token(mla=expanded)") == 24 * 96 * (192 + 128) * 2 == 1_474_560


@pytest.mark.parametrize("H, expected", list(zip(LENGTHS, RESIDENT)))
def test_resident_state_curve(k3, H, expected):
    assert value(k3, f"state_bytes(H={H})") == expected == 27_648 * H + FIXED


@pytest.mark.parametrize("H, expected", list(zip(LENGTHS, ACCESS)))
def test_access_curve(k3, H, expected):
    # accounted access (FACTS §5/§7): MLA read + recurrent read and write
    reads = k3.evaluate_text(f"decode_read_bytes(H={H}, component=mla) + decode_read_bytes(H={H}, component=kda_state)")
    assert reads.extrapolated is False
    # the step from the 1,048,576-token snapshot would take the context past K3's limit,
    # so its write needs extrapolate=true (and is flagged)
    ext = ", extrapolate=true" if H == 1_048_576 else ""
    writes = k3.evaluate_text(f"decode_write_bytes(H={H}, component=kda_state{ext})")
    assert writes.extrapolated is (H == 1_048_576)
    assert reads.value + writes.value == expected == 27_648 * H + 2 * 434_110_464


def test_decode_writes(k3):
    # one step: a record per MLA layer, the recurrent matrices rewritten whole, one conv position
    assert value(k3, "decode_write_bytes(H=8192, component=mla)") == 27_648
    assert value(k3, "decode_write_bytes(H=8192, mla=expanded, component=mla)") == 1_474_560
    assert value(k3, "decode_write_bytes(H=8192, component=kda_state)") == 434_110_464
    assert value(k3, "decode_write_bytes(H=8192, component=kda_conv)") == 20_348_928 // 4
    assert value(k3, "decode_read_bytes(H=8192, component=kda_state)") == 434_110_464


def test_expanded_cache_8k(k3):
    assert value(k3, "state_bytes(H=8192, mla=expanded, component=mla)") == 1_474_560 * 8192 == 12_079_595_520
