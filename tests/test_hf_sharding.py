"""Specs written by import-hf shard like the hand-written shipped specs of the same
models: the hf_* blocks carry the same shard= declarations and the emitted stores
their split (kv by n_kv heads; MLA's latent replicated), so per-device weights, state
and communication agree exactly at every tensor-parallel degree."""

import pytest

import specc
from specc.hf.importer import import_config

from conftest import REPO

REAL = REPO / "tests" / "data" / "hf" / "real"

CASES = [
    ("qwen3_8b.json", "qwen3_8b", ["weight_bytes(tp={tp}, per_device=true)",
                                    "state_bytes(H=4096, tp={tp}, per_device=true)",
                                    "comm_bytes(B=2, S=100, P=1, tp={tp}, per_device=true)"]),
    ("llama_2_7b.json", "llama2_7b", ["weight_bytes(tp={tp}, per_device=true)",
                                       "state_bytes(H=4096, tp={tp}, per_device=true)"]),
    ("deepseek_v3.json", "deepseek_v3", ["state_bytes(H=4096, tp={tp}, per_device=true, mla=compressed)",
                                          "state_bytes(H=4096, tp={tp}, per_device=true, mla=expanded)"]),
]


@pytest.mark.parametrize("config, shipped, queries", CASES, ids=[c[1] for c in CASES])
def test_imported_specs_shard_like_the_shipped_ones(tmp_path, config, shipped, queries):
    out = tmp_path / f"{shipped}_imported.yaml"
    out.write_text(import_config(str(REAL / config), out_path=str(out)), encoding="utf-8")
    imported, reference = specc.load(out), specc.load(shipped)
    for tp in (1, 2, 8, 16):
        for template in queries:
            query = template.format(tp=tp)
            assert imported.eval(query).value == reference.eval(query).value, query


def test_an_imported_kv_store_shrinks_with_tp_until_one_head_per_device(tmp_path):
    out = tmp_path / "q.yaml"
    out.write_text(import_config(str(REAL / "qwen3_8b.json"), out_path=str(out)), encoding="utf-8")
    m = specc.load(out)
    one = m.eval("state_bytes(H=1000)").value
    # 8 KV heads: tp = 2, 4, 8 divide them; at tp = 16 each device still keeps one whole head
    assert [m.eval(f"state_bytes(H=1000, tp={tp}, per_device=true)").value for tp in (2, 4, 8, 16)] == \
        [one // 2, one // 4, one // 8, one // 8]


CORPUS = REPO / "tests" / "data" / "hf" / "transformers"


def _conv_bytes(config: str, c: dict) -> int:
    """The short-convolution buffers of every recurrent layer (bf16), by hand."""
    if config == "mamba2":
        d_in = c["expand"] * c["hidden_size"]
        return c["num_hidden_layers"] * 2 * (c["conv_kernel"] - 1) * (d_in + 2 * c["n_groups"] * c["state_size"])
    if config == "qwen3_next":
        channels = 2 * c["linear_num_key_heads"] * c["linear_key_head_dim"] + \
            c["linear_num_value_heads"] * c["linear_value_head_dim"]
        return c["layer_types"].count("linear_attention") * 2 * (c["linear_conv_kernel_dim"] - 1) * channels
    channels = 3 * c["linear_num_heads"] * c["linear_head_dim"]         # kimi_linear
    return c["layer_types"].count("linear_attention") * 2 * (c["linear_conv_kernel_dim"] - 1) * channels


@pytest.mark.parametrize("config", ["mamba2", "qwen3_next", "kimi_linear"])
def test_recurrent_states_split_by_heads(tmp_path, config):
    """The per-head recurrent states of the declared mixers (Mamba-2's heads, DeltaNet's
    value heads, KDA's heads) split over tensor-parallel devices like the attention
    caches; the short-convolution buffers stay whole on every device (declared
    replicated: honest, pessimistic)."""
    import json

    out = tmp_path / f"{config}.yaml"
    out.write_text(import_config(str(CORPUS / f"{config}.json"), out_path=str(out)), encoding="utf-8")
    m = specc.load(out)
    conv = _conv_bytes(config, json.loads((CORPUS / f"{config}.json").read_text()))
    total = m.eval("state_bytes(H=10)").value
    for tp in (2,) if config != "mamba2" else (2, 4, 8):
        assert m.eval(f"state_bytes(H=10, tp={tp}, per_device=true)").value == conv + (total - conv) // tp


def test_imported_qwen3_next_is_the_hand_written_spec(tmp_path):
    """transformers' default Qwen3-Next config is Qwen3-Next-80B-A3B: its import agrees with
    the hand-written specs/qwen3_next_80b_a3b.yaml on parameters, KV per token, state at
    three lengths, FLOPs and per-device weights."""
    out = tmp_path / "qwen3_next.yaml"
    out.write_text(import_config(str(CORPUS / "qwen3_next.json"), out_path=str(out)), encoding="utf-8")
    imported, reference = specc.load(out), specc.load("qwen3_next_80b_a3b")
    queries = ["params()", "kv_bytes_per_token()", "flops(B=1, S=0, P=1024)", "flops(B=4, S=2048, P=1)",
               "weight_bytes(tp=4, per_device=true)"] + [f"state_bytes(H={h})" for h in (1, 4096, 32768)]
    for query in queries:
        assert imported.eval(query).value == reference.eval(query).value, query
