"""Deployment formats as knobs (compiler/deploy/schemes.py, specs/formats/schemes.yaml): weights=,
kv=, compute= on any spec, checked against hand counts of codes, scales and zero
points; the released formats of shipped specs; import-hf's quantization_config methods."""

from __future__ import annotations

import json
from fractions import Fraction
from math import ceil
from pathlib import Path

import pytest

import specc
from specc.compiler.deploy import schemes
from specc.compiler.query.queries import QueryEngine
from specc.compiler.schema.spec import load_spec
from specc.dsl.errors import SpecError
from specc.hf.importer import write_spec

DATA = Path(__file__).resolve().parent / "data" / "hf"
QUANT = DATA / "quant"


def _value(model, text):
    return model.eval(text).value


# ------------------------------------------------------------------ KV schemes
def test_fp8_kv_halves_llama():
    m = specc.load("llama31_8b")
    assert _value(m, "kv_bytes_per_token()") == 131_072
    assert _value(m, "kv_bytes_per_token(kv=fp8)") == 65_536          # 32 layers × 2 × 8 heads × 128 × 1 B
    assert _value(m, "kv_bytes_per_token(kv=fp8_e5m2)") == 65_536
    assert _value(m, "state_bytes(H=4096, kv=fp8)") * 2 == _value(m, "state_bytes(H=4096)")


def test_fp8_ds_mla_is_656_bytes_per_layer():
    m = specc.load("deepseek_v3")
    # 512 FP8 latent values + 4 FP32 scales (one per 128) + 64 BF16 rotary values, 61 layers
    assert 512 * 1 + 4 * 4 + 64 * 2 == 656
    assert _value(m, "kv_bytes_per_token(kv=fp8_ds_mla, mla=compressed)") == 61 * 656 == 40_016
    assert _value(m, "kv_bytes_per_token(kv=fp8, mla=compressed)") == 61 * 576
    # the spec's default is the latent cache engines keep, so the knob alone poses vLLM's layout
    assert _value(m, "kv_bytes_per_token(kv=fp8_ds_mla)") == 40_016


def test_kv_layout_errors_are_located():
    with pytest.raises(specc.Error, match="has none") as info:
        specc.load("llama31_8b").eval("kv_bytes_per_token(kv=fp8_ds_mla)")
    assert info.value.loc.col == 23
    with pytest.raises(specc.Error, match="the cache is store 'mla_kv'"):
        specc.load("deepseek_v3").eval("kv_bytes_per_token(kv=fp8_ds_mla, mla=expanded)")
    with pytest.raises(specc.Error, match="unknown KV scheme 'fp9'"):
        specc.load("llama31_8b").eval("kv_bytes_per_token(kv=fp9)")


# ------------------------------------------------------------------ weight schemes, by hand
def _hand(scheme: str, i: int, o: int) -> Fraction:
    """Bytes of one matrix W[i, o] (i inputs, o outputs), counted from the schemes' sources."""
    codes = {"bf16": 2, "fp16": 2, "fp8": 1, "fp8_channel": 1, "fp8_block128": 1, "fp8_e5m2": 1, "int8": 1}
    if scheme in ("bf16", "fp16"):
        return Fraction(i * o * 2)
    if scheme in ("fp8", "fp8_e5m2"):
        return Fraction(i * o * codes[scheme] + 4)                     # one FP32 scale per matrix
    if scheme in ("fp8_channel", "int8"):
        return Fraction(i * o + 4 * o)                                 # one FP32 scale per output
    if scheme == "fp8_block128":
        return Fraction(i * o + 4 * ceil(i / 128) * ceil(o / 128))     # one FP32 scale per 128×128 tile
    if scheme.startswith("int4_sym_g"):
        g = int(scheme[len("int4_sym_g"):])
        return Fraction(i * o, 2) + ceil(i / g) * o * 2                # 4-bit codes + FP16 scale per group
    if scheme.startswith("int4_g") or scheme == "int4":
        g = int(scheme[len("int4_g"):]) if scheme != "int4" else 128
        return Fraction(i * o, 2) + ceil(i / g) * o * (2 + Fraction(1, 2))   # + a 4-bit zero per group
    if scheme == "mxfp4":
        return Fraction(i * o, 2) + ceil(i / 32) * o * 1               # FP4 codes + E8M0 per 32
    if scheme == "nvfp4":
        return Fraction(i * o, 2) + ceil(i / 16) * o * 1 + 4           # FP4 + E4M3 per 16 + FP32 per matrix
    raise AssertionError(scheme)


SCHEMES = ["bf16", "fp16", "fp8", "fp8_channel", "fp8_block128", "fp8_e5m2", "int8", "int4", "int4_g32",
           "int4_sym_g16", "mxfp4", "nvfp4"]


@pytest.mark.parametrize("scheme", SCHEMES)
def test_weight_scheme_on_toy_moe_is_a_hand_count(scheme):
    """toy_moe (FP32): 8 experts of W_1[16, 64] and W_2[64, 16] are quantized; the router
    W_router[16, 8], its bias[8] and the expert biases b_1[8, 64], b_2[8, 16] stay FP32."""
    m = specc.load("toy_moe")
    kept = (16 * 8 + 8 + 8 * 64 + 8 * 16) * 4
    experts = 8 * (_hand(scheme, 16, 64) + _hand(scheme, 64, 16))
    assert _value(m, f"weight_bytes(weights={scheme})") == kept + experts
    assert _value(m, f"weight_bytes(weights={scheme}, group=routed_experts)") == experts + (8 * 64 + 8 * 16) * 4


@pytest.mark.parametrize("scheme", ["fp8", "fp8_block128", "int4_g128", "nvfp4"])
def test_weight_scheme_on_llama_quantizes_the_linear_layers(scheme):
    m = specc.load("llama31_8b")
    d, f, kv, L, V = 4096, 14336, 1024, 32, 128256
    layer = sum(_hand(scheme, i, o) for i, o in [(d, d), (d, kv), (d, kv), (d, d), (d, f), (d, f), (f, d)])
    kept = (2 * V * d + (2 * L + 1) * d) * 2          # embedding, head, norms in BF16
    assert _value(m, f"weight_bytes(weights={scheme})") == L * layer + kept


def test_mxfp4_recipe_keeps_attention():
    """mxfp4's recipe is the experts only (gpt-oss): a dense model's weights are unchanged."""
    m = specc.load("llama31_8b")
    assert _value(m, "weight_bytes(weights=mxfp4)") == _value(m, "weight_bytes()")


def test_unknown_weight_scheme_is_located():
    with pytest.raises(specc.Error, match="unknown weight scheme 'fp7'") as info:
        specc.load("llama31_8b").eval("weight_bytes(weights=fp7)")
    assert info.value.loc.col == 22


# ------------------------------------------------------------------ released formats of shipped specs
def test_deepseek_v3_release_is_fp8_blocks_and_fits_8_h200():
    m = specc.load("deepseek_v3")
    assert _value(m, "weight_bytes(format=fp8)") == _value(m, "weight_bytes(weights=fp8_block128)")
    assert _value(m, "weight_bytes(format=fp8)") < _value(m, "weight_bytes()") * Fraction(51, 100)
    dev = "device=h200, H=4096, mla=compressed, tp=8, ep=8"
    fp8 = _value(m, f"weight_bytes(format=fp8, tp=8, ep=8, per_device=true)")
    assert fp8 == _value(m, "weight_bytes(weights=fp8_block128, tp=8, ep=8, per_device=true)")
    assert _value(m, f"b_max({dev}, format=fp8)") >= 1
    assert _value(m, f"b_max({dev}, format=fp8, allocator=vllm, kv=fp8_ds_mla)") >= 1


def test_gpt_oss_release_counts_mxfp4_experts_per_matrix():
    m = specc.load("gpt_oss_20b")
    # 13,761,264,768 B = 12.82 GiB (the biases stay BF16 instead of the expert rate)
    assert _value(m, "weight_bytes(format=release)") == 13_761_264_768
    assert _value(m, "weight_bytes(weights=mxfp4)") == 13_761_264_768


# ------------------------------------------------------------------ compute follows the scheme
def test_fp8_weights_use_the_fp8_peak_unless_compute_says():
    m = specc.load("llama31_8b")
    base = "ttft(P=4096, device=h100_sxm"
    fp8 = m.eval(base + ", weights=fp8)")
    assert fp8.value == _value(m, base + ", weights=fp8, dtype=fp8)")
    assert "compute fp8" in str(fp8) and fp8.note == "compute fp8: weights=fp8"
    bf16 = m.eval(base + ", weights=fp8, compute=bf16)")
    assert bf16.value == _value(m, base + ", weights=fp8, dtype=bf16)") and "compute bf16" in str(bf16)
    assert bf16.value > fp8.value
    int4 = m.eval(base + ", weights=int4)")                # weight-only: BF16 math
    assert int4.note.startswith("compute bf16") and int4.value == _value(m, base + ", weights=int4, dtype=bf16)")
    assert m.eval(base + ")").note == ""                   # no knob: the output is unchanged


# ------------------------------------------------------------------ import-hf quantization_config
SCHEME_METHODS = {
    "compressed_tensors_fp8": ("fp8_channel", None),
    "compressed_tensors_fp8_block": ("fp8_block128", None),
    "compressed_tensors_int8": ("int8", None),
    "compressed_tensors_int4": ("int4_sym_g128", None),
    "fbgemm_fp8": ("fp8_channel", None),
    "modelopt_fp8": ("fp8", "fp8"),
    "modelopt_nvfp4": ("nvfp4", None),
}
RATE_METHODS = {          # per-parameter rates of the linear groups (hf/quant.py)
    "gptq": Fraction(1, 2) + Fraction(20, 8 * 128),
    "awq": Fraction(1, 2) + Fraction(20, 8 * 128),
    "bitsandbytes": Fraction(1, 2) + Fraction(4, 64),
    "fp8_block": 1 + Fraction(4, 128 * 128),
}


def _import(tmp_path, base: Path, quant: dict, name: str) -> QueryEngine:
    cfg = json.loads(base.read_text())
    cfg["quantization_config"] = quant
    src = tmp_path / f"{name}.json"
    src.write_text(json.dumps(cfg))
    out = tmp_path / f"{name}.yaml"
    write_spec(str(src), str(out))
    return QueryEngine(load_spec(out))


def _q(engine, text):
    return engine.evaluate_text(text).value


def test_every_method_has_a_config():
    assert {p.stem for p in QUANT.glob("*.json")} == set(SCHEME_METHODS) | set(RATE_METHODS) | {"mxfp4"}


@pytest.mark.parametrize("method", sorted(SCHEME_METHODS))
def test_scheme_methods_give_exact_bytes(tmp_path, method):
    scheme, kv = SCHEME_METHODS[method]
    e = _import(tmp_path, DATA / "llama.json", json.loads((QUANT / f"{method}.json").read_text()), method)
    assert _q(e, "weight_bytes()") == _q(e, f"weight_bytes(format=bf16, weights={scheme})")
    assert _q(e, "weight_bytes()") < _q(e, "weight_bytes(format=bf16)")
    if kv:
        assert _q(e, "kv_bytes_per_token()") == _q(e, f"kv_bytes_per_token(format=bf16, kv={kv})")
    else:
        assert _q(e, "kv_bytes_per_token()") == _q(e, "kv_bytes_per_token(format=bf16)")


@pytest.mark.parametrize("method", sorted(RATE_METHODS))
def test_rate_methods_give_exact_bytes(tmp_path, method):
    e = _import(tmp_path, DATA / "qwen3_moe.json", json.loads((QUANT / f"{method}.json").read_text()), method)
    linear = sum(_q(e, f"params(group={g})") for g in ("attention_projection", "dense_shared_ffn", "routed_experts"))
    rest = _q(e, "params()") - linear
    assert _q(e, "weight_bytes()") == linear * RATE_METHODS[method] + rest * 2


def test_mxfp4_method(tmp_path):
    e = _import(tmp_path, DATA / "real" / "gpt_oss_20b.json", json.loads((QUANT / "mxfp4.json").read_text()), "oss")
    experts = _q(e, "params(group=routed_experts)")
    assert _q(e, "weight_bytes()") == experts * Fraction(17, 32) + (_q(e, "params()") - experts) * 2


BAD = [
    ({"quant_method": "compressed-tensors", "config_groups": {"g": {"weights": {"num_bits": 2, "type": "int",
                                                                                "strategy": "group"}}}},
     "have no scheme", "config_groups"),
    ({"quant_method": "compressed-tensors", "config_groups": {"g": {"weights": {"num_bits": 8, "type": "float",
                                                                                "strategy": "tensor"}}},
      "ignore": ["lm_head", "re:.*self_attn.*"]}, "keeps 're:.*self_attn.*' unquantized", "ignore"),
    ({"quant_method": "modelopt", "quant_algo": "W4A8_AWQ"}, "quant_algo 'W4A8_AWQ' has no scheme", "quant_algo"),
    ({"quant_method": "modelopt", "quant_algo": "FP8", "kv_cache_quant_algo": "NVFP4"}, "no KV scheme",
     "kv_cache_quant_algo"),
    ({"quant_method": "fbgemm_fp8", "modules_to_not_convert": ["model.layers.0.mlp.down_proj"]}, "unquantized",
     "modules_to_not_convert"),
    ({"quant_method": "quanto", "weights": "int8"}, "unknown quant_method 'quanto'", "quant_method"),
]


@pytest.mark.parametrize("quant, message, key", BAD, ids=[b[2] + str(i) for i, b in enumerate(BAD)])
def test_unmodelled_quantization_is_a_located_error(tmp_path, quant, message, key):
    from specc.hf.importer import import_config

    cfg = json.loads((DATA / "llama.json").read_text())
    cfg["quantization_config"] = quant
    src = tmp_path / "bad.json"
    src.write_text(json.dumps(cfg, indent=2))
    with pytest.raises(SpecError, match=message) as info:
        import_config(str(src))
    assert f'"{key}"' in info.value.loc.line_text()


def test_schemes_table_is_documented():
    table = schemes.markdown_table()
    for name in ("fp8_block128", "int4", "mxfp4", "nvfp4", "fp8_ds_mla"):
        assert f"`{name}`" in table
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    start = readme.index(schemes.README_BEGIN) + len(schemes.README_BEGIN)
    assert readme[start:readme.index(schemes.README_END)].strip() == table


def test_python_api_takes_the_knobs():
    m = specc.load("llama31_8b")
    assert m.kv_bytes_per_token(kv="fp8").value == 65_536
    assert m.b_max(H=4096, kv_memory="40 GiB", allocator="vllm").value == 79
    assert m.ttft(P=4096, device="h100_sxm", weights="fp8").to_json()["note"] == "compute fp8: weights=fp8"


def test_a_spec_format_naming_an_unknown_scheme_is_located(tmp_path):
    spec = tmp_path / "bad.yaml"
    spec.write_text("model: Bad\nimports: [lib/core.yaml]\ndims: {d: 8, V: 16}\nformats:\n"
                    "  q: {default: true, scheme: fp8_blok128, weights: {default: 2}}\n"
                    "stack:\n  - {name: embed, block: token_embedding, with: {V: V, d: d}}\n")
    with pytest.raises(SpecError, match="unknown weight scheme 'fp8_blok128'") as info:
        load_spec(spec)
    assert (info.value.loc.line, info.value.loc.col) == (5, 30)


def test_decode_reads_the_quantized_bytes():
    """A decode step reads every matrix in its scheme once; the embedding table is read by row."""
    m = specc.load("llama31_8b")
    table = 128256 * 4096 * 2
    for scheme in ("fp8", "int4_g128", "nvfp4"):
        assert _value(m, f"weight_read_bytes(weights={scheme})") == _value(m, f"weight_bytes(weights={scheme})") - table
    moe = specc.load("toy_moe")     # B=1 touches k of the E experts: the per-expert share of the scheme's bytes
    full = _value(moe, "weight_read_bytes(B=64, weights=mxfp4)")
    one = _value(moe, "weight_read_bytes(B=1, weights=mxfp4)")
    per_expert = _hand("mxfp4", 16, 64) + _hand("mxfp4", 64, 16)
    assert full - one == (8 - _value(moe, "dim(k)")) * per_expert
