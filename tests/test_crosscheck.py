"""`specc crosscheck`: tiny configs of every family, imported with `specc import-hf`,
agree exactly with PyTorch's count of the Hugging Face model — parameters by group
and matrix FLOPs by component (attention as full rectangles, head on all rows)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from click.testing import CliRunner  # noqa: E402

from specc.cli import main  # noqa: E402
from specc.compiler.schema.spec import load_spec  # noqa: E402
from specc.hf.importer import write_spec  # noqa: E402
from specc.verify.crosscheck import crosscheck, flop_component, param_group  # noqa: E402

TINY = Path(__file__).resolve().parent / "data" / "hf"
CONFIGS = sorted(p.stem for p in TINY.glob("*.json"))


@pytest.fixture(scope="module")
def specs(tmp_path_factory):
    out = tmp_path_factory.mktemp("hf")
    paths = {}
    for name in CONFIGS:
        paths[name] = out / f"{name}.yaml"
        write_spec(str(TINY / f"{name}.json"), str(paths[name]))
    return paths


@pytest.mark.parametrize("name", CONFIGS)
def test_tiny_family_agrees_exactly(name, specs):
    report = crosscheck(load_spec(specs[name]), str(TINY / f"{name}.json"), batch=2, tokens=8)
    rows = {(r.section, r.name): r for r in report.rows}
    assert report.ok, report.render()
    assert rows[("parameters", "total")].hf == rows[("parameters", "total")].specc > 0
    total = rows[("matrix FLOPs", "total (GEMM)")]
    assert total.hf == total.specc > 0
    # the comparison is term by term, with attention interaction as its own row
    for key in ("attention_projection", "attention_interaction", "vocabulary_head"):
        assert rows[("matrix FLOPs", key)].verdict == "agree"
    cfg = json.loads((TINY / f"{name}.json").read_text())
    if any(k in cfg for k in ("num_local_experts", "num_experts", "n_routed_experts")):
        assert rows[("matrix FLOPs", "routed_expert")].hf > 0
        assert rows[("matrix FLOPs", "router")].verdict == "agree"


def test_attention_rectangle_convention(specs):
    """HF computes P×P scores per head even with a sliding window of 4: compared with
    specc's attention=rectangle, never with the effective (windowed) pairs."""
    report = crosscheck(load_spec(specs["mistral"]), str(TINY / "mistral.json"), batch=1, tokens=8)
    row = next(r for r in report.rows if r.name == "attention_interaction")
    assert row.hf == row.specc == 2 * 2 * 4 * (16 + 16) * 8 * 8   # layers·2·heads·(qk+v)·P²
    assert "rectangles" in row.note


def test_a_wrong_spec_differs(specs):
    text = specs["llama"].read_text()
    assert "  f: 96 " in text
    bad = specs["llama"].with_name("llama_wrong.yaml")     # same folder: same relative imports
    bad.write_text(text.replace("  f: 96 ", "  f: 95 "))
    report = crosscheck(load_spec(bad), str(TINY / "llama.json"), batch=1, tokens=4)
    assert not report.ok
    assert {r.name for r in report.rows if r.verdict == "differ"} >= {"dense_shared_ffn", "ffn"}


def test_cli_table(specs):
    result = CliRunner().invoke(main, ["crosscheck", str(specs["qwen3_moe"]), "--hf-config",
                                       str(TINY / "qwen3_moe.json"), "--batch", "1", "--tokens", "4"])
    assert result.exit_code == 0, result.output
    assert "routed_expert" in result.output and "every compared row agrees" in result.output


def test_module_name_conventions():
    assert param_group("model.layers.0.self_attn.q_proj.bias") == "attention_projection"
    assert param_group("model.layers.0.self_attn.sinks") == "other"
    assert param_group("model.layers.0.self_attn.kv_a_layernorm.weight") == "other"
    assert param_group("model.layers.3.mlp.gate.e_score_correction_bias") == "other"      # routers are counted under other (FACTS §1.3)
    assert param_group("model.layers.3.mlp.router.bias") == "other"
    assert param_group("model.layers.3.mlp.experts.gate_up_proj") == "routed_experts"
    assert param_group("model.layers.3.mlp.shared_experts.up_proj.weight") == "dense_shared_ffn"
    assert param_group("model.layers.0.mlp.gate_proj.weight") == "dense_shared_ffn"
    assert param_group("lm_head.weight") == "embedding_head"
    assert flop_component("model.layers.0.self_attn") == "attention_interaction"
    assert flop_component("model.layers.0.self_attn.kv_b_proj") == "attention_projection"
    assert flop_component("model.layers.0.mlp.gate_proj") == "ffn"
    assert flop_component("model.layers.2.block_sparse_moe.gate") == "router"
    assert flop_component("model.rotary_emb") == "rotary_angles"
