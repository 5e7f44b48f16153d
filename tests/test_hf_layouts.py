"""Layouts, not only totals: for each family with more than one kind of layer, the
imported spec's per-request state at three context lengths and its KV bytes per
cached token equal the values derived by hand from the config's fields (bf16, 2 bytes
per element): full attention grows with H, sliding/chunked layers stop at their window,
Mamba / DeltaNet / KDA / short-convolution layers keep a constant state, MLA caches
its expanded K/V or its latent (option mla), DeepSeek-V3.2's indexer one key per token,
KV-sharing layers (Gemma-3n) cache nothing, a reused block (Zamba) caches K/V at every
application, LongCat-Flash's two MLA sub-layers per layer each cache theirs.
The configs are the transformers corpus' defaults (tests/data/hf/transformers)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specc.compiler.query.queries import QueryEngine
from specc.compiler.schema.spec import load_spec
from specc.hf.importer import write_spec

CORPUS = Path(__file__).resolve().parent / "data" / "hf" / "transformers"
HS = (1, 1000, 4000)
E = 2       # bytes per bf16 element


def _cfg(name):
    data = json.loads((CORPUS / f"{name}.json").read_text())
    return data.get("text_config", data) if "text_config" in data and name in ("gemma4", "llama4") else data


def _d_h(c):
    return c.get("head_dim") or c["hidden_size"] // c["num_attention_heads"]


def _kv(c, d_h=None):
    """K and V of one attention layer per cached token."""
    return 2 * c["num_key_value_heads"] * (d_h or _d_h(c)) * E


def llama(c, H):
    return c["num_hidden_layers"] * _kv(c) * H, c["num_hidden_layers"] * _kv(c)


def mistral(c, H):
    return c["num_hidden_layers"] * _kv(c) * min(H, c["sliding_window"]), 0


def gpt_neo(c, H):
    kv = 2 * c["hidden_size"] * E
    state = sum(kv * (min(H, c["window_size"]) if t == "local" else H) for t in c["attention_layers"])
    return state, kv * c["attention_layers"].count("global")


def gemma4_text(c, H):
    wide = {int(i): o["head_dim"] for i, o in c["per_layer_config"].items()}
    state = grow = 0
    for i, t in enumerate(c["layer_types"]):
        kv = _kv(c, wide.get(i, c["head_dim"]))
        state += kv * (min(H, c["sliding_window"]) if t == "sliding_attention" else H)
        grow += kv if t == "full_attention" else 0
    return state, grow


def llama4(c, H):
    state = sum(_kv(c) * (min(H, c["attention_chunk_size"]) if t == "chunked_attention" else H) for t in c["layer_types"])
    return state, _kv(c) * c["layer_types"].count("full_attention")


def qwen3_next(c, H):
    nk, dk, nv, dv, K = (c["linear_num_key_heads"], c["linear_key_head_dim"], c["linear_num_value_heads"],
                         c["linear_value_head_dim"], c["linear_conv_kernel_dim"])
    linear = E * (nv * dk * dv + (K - 1) * (2 * nk * dk + nv * dv))
    full = c["layer_types"].count("full_attention")
    return full * _kv(c) * H + (c["num_hidden_layers"] - full) * linear, full * _kv(c)


def _mamba2(d_in, g, N, K):
    return E * ((K - 1) * (d_in + 2 * g * N) + d_in * N)


def nemotron_h(c, H):
    d_in = c["mamba_num_heads"] * c["mamba_head_dim"]
    mamba = _mamba2(d_in, c["n_groups"], c["ssm_state_size"], c["conv_kernel"])
    types = c["layers_block_type"]
    n_attn = sum(t in ("attention", "full_attention") for t in types)
    n_mamba = sum(t in ("mamba", "linear_attention") for t in types)
    return n_attn * _kv(c) * H + n_mamba * mamba, n_attn * _kv(c)


def falcon_h1(c, H):
    mamba = _mamba2(c["mamba_d_ssm"], c["mamba_n_groups"], c["mamba_d_state"], c["mamba_d_conv"])
    L = c["num_hidden_layers"]
    return L * (_kv(c) * H + mamba), L * _kv(c)


def mamba2(c, H):
    d_in = c["expand"] * c["hidden_size"]
    return c["num_hidden_layers"] * _mamba2(d_in, c["n_groups"], c["state_size"], c["conv_kernel"]), 0


def lfm2_moe(c, H):
    conv = E * (c["conv_L_cache"] - 1) * c["hidden_size"]
    full = c["layer_types"].count("full_attention")
    return full * _kv(c) * H + c["layer_types"].count("conv") * conv, full * _kv(c)


def deepseek_v32(c, H, compressed=False):
    per = (c["kv_lora_rank"] + c["qk_rope_head_dim"] if compressed
           else c["num_attention_heads"] * (c["qk_nope_head_dim"] + c["qk_rope_head_dim"] + c["v_head_dim"]))
    per = E * (per + c["index_head_dim"])          # the indexer's key
    return c["num_hidden_layers"] * per * H, c["num_hidden_layers"] * per


def kimi_linear(c, H):
    heads, dim, K = c["linear_num_heads"], c["linear_head_dim"], c["linear_conv_kernel_dim"]
    kda = E * (heads * dim * dim + (K - 1) * 3 * heads * dim)
    mla = E * c["num_attention_heads"] * (c["qk_nope_head_dim"] + c["qk_rope_head_dim"] + c["v_head_dim"])
    full = c["layer_types"].count("full_attention")
    return full * mla * H + c["layer_types"].count("linear_attention") * kda, full * mla


def minimax(c, H):
    d_h = c["hidden_size"] // c["num_attention_heads"]
    lightning = E * c["num_attention_heads"] * d_h * d_h       # one d_h × d_h state per head
    full = c["layer_types"].count("full_attention")
    return full * _kv(c) * H + c["layer_types"].count("linear_attention") * lightning, full * _kv(c)


def mimo_v2_flash(c, H):
    """Values narrower than keys (v_head_dim), sliding layers with twice the K/V heads."""
    per = c["num_key_value_heads"] * (c["head_dim"] + c["v_head_dim"]) * E
    state = sum(2 * per * min(H, c["sliding_window"]) if t == "sliding_attention" else per * H
                for t in c["layer_types"])
    return state, per * c["layer_types"].count("full_attention")


def zamba(c, H):
    """Mamba-1 state in every layer (d_in = expand·d channels: conv d_conv − 1 inputs, state N);
    each application of the reused block caches its own K/V (n_kv heads of attention_head_dim)."""
    d_in = c["mamba_expand"] * c["hidden_size"]
    mamba = E * ((c["mamba_d_conv"] - 1) * d_in + d_in * c["mamba_d_state"])
    kv = 2 * c["num_key_value_heads"] * c["attention_head_dim"] * E
    apps = c["layers_block_type"].count("hybrid")
    return c["num_hidden_layers"] * mamba + apps * kv * H, apps * kv


def zamba2(c, H):
    """Mamba-2 state in every layer; K/V per application of the reused block."""
    d_in = c["mamba_expand"] * c["hidden_size"]
    mamba = _mamba2(d_in, c["mamba_ngroups"], c["mamba_d_state"], c["mamba_d_conv"])
    kv = 2 * c["num_key_value_heads"] * c["attention_head_dim"] * E
    apps = c["layers_block_type"].count("hybrid")
    return c["num_hidden_layers"] * mamba + apps * kv * H, apps * kv


def gemma3n_text(c, H):
    """The last num_kv_shared_layers layers read earlier layers' K/V and cache nothing; the
    others cache a window (sliding) or every token (full)."""
    own = c["layer_types"][:c["num_hidden_layers"] - c["num_kv_shared_layers"]]
    state = sum(_kv(c) * (min(H, c["sliding_window"]) if t == "sliding_attention" else H) for t in own)
    return state, _kv(c) * own.count("full_attention")


def longcat_flash(c, H):
    """Two MLA sub-layers per configured layer, each caching its expanded K and V (transformers'
    path): heads·(qk_nope + qk_rope + v_head) per token."""
    per = E * c["num_attention_heads"] * (c["qk_nope_head_dim"] + c["qk_rope_head_dim"] + c["v_head_dim"])
    return 2 * c["num_layers"] * per * H, 2 * c["num_layers"] * per


CASES = {"mimo_v2_flash": mimo_v2_flash, "minimax": minimax, "llama": llama, "mistral": mistral, "gpt_neo": gpt_neo, "gemma4_text": gemma4_text, "llama4": llama4,
         "qwen3_next": qwen3_next, "nemotron_h": nemotron_h, "falcon_h1": falcon_h1, "mamba2": mamba2,
         "lfm2_moe": lfm2_moe, "deepseek_v32": deepseek_v32, "kimi_linear": kimi_linear, "zamba": zamba,
         "zamba2": zamba2, "gemma3n_text": gemma3n_text, "longcat_flash": longcat_flash}


@pytest.fixture(scope="module")
def engines(tmp_path_factory):
    folder = tmp_path_factory.mktemp("layouts")
    out = {}
    for name in CASES:
        path = folder / f"{name}.yaml"
        write_spec(str(CORPUS / f"{name}.json"), str(path))
        out[name] = QueryEngine(load_spec(path))
    return out


@pytest.mark.parametrize("name", sorted(CASES))
def test_state_and_kv_per_token_by_hand(engines, name):
    engine, cfg = engines[name], _cfg(name)
    for H in HS:
        state, per_token = CASES[name](cfg, H)
        assert engine.evaluate_text(f"state_bytes(H={H}, extrapolate=true)").value == state, (name, H)
    assert engine.evaluate_text("kv_bytes_per_token()").value == per_token, name


def test_longcat_compressed_path_caches_two_latents_per_layer(engines):
    cfg = _cfg("longcat_flash")
    for H in HS:
        want = 2 * cfg["num_layers"] * E * (cfg["kv_lora_rank"] + cfg["qk_rope_head_dim"]) * H
        assert engines["longcat_flash"].evaluate_text(f"state_bytes(H={H}, mla=compressed)").value == want


def test_the_gemma3n_wrapper_has_its_text_model_layout(tmp_path):
    """The gemma3n wrapper as downloaded: its text_config's layout."""
    out = tmp_path / "g.yaml"
    write_spec(str(CORPUS / "gemma3n.json"), str(out))
    engine, cfg = QueryEngine(load_spec(out)), json.loads((CORPUS / "gemma3n.json").read_text())["text_config"]
    for H in HS:
        assert engine.evaluate_text(f"state_bytes(H={H}, extrapolate=true)").value == gemma3n_text(cfg, H)[0]


def test_mla_compressed_path_caches_the_latent(engines):
    cfg = _cfg("deepseek_v32")
    for H in HS:
        state, _ = deepseek_v32(cfg, H, compressed=True)
        assert engines["deepseek_v32"].evaluate_text(f"state_bytes(H={H}, mla=compressed)").value == state
