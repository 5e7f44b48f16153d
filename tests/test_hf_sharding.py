"""Specs written by import-hf shard like the hand-written shipped specs of the same
models: the hf_* blocks carry the same shard= declarations and the emitted stores
their split (kv by n_kv heads; MLA's latent replicated), so per-device weights, state
and communication agree exactly at every tensor-parallel degree."""

import pytest

import specc
from specc.dsl.hf_import import import_config

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
