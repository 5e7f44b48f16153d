"""`specc import-hf`: Hugging Face config.json → spec. Published totals for the six
shipped configurations, tiny configs of every family against an independent
parameter formula, located errors for what the blocks cannot model, and the CLI."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from specc.cli import main
from specc.compiler.build import compile_spec
from specc.compiler.queries import QueryEngine
from specc.compiler.spec import load_spec
from specc.dsl.errors import SpecError
from specc.dsl.hf_import import FAMILIES, LIB_DIR, import_config, write_spec

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = Path("/work/shared/hf-configs")
if not SHIPPED.exists():
    SHIPPED = ROOT.parent / "shared" / "hf-configs"
TINY = Path(__file__).resolve().parent / "data" / "hf"

PUBLISHED = {
    "llama_2_7b": 6_738_415_616,
    "mistral_7b_v0_1": 7_241_732_096,
    "qwen3_8b": 8_190_735_360,
    "qwen3_30b_a3b": 30_532_122_624,
    "deepseek_v3": 671_026_419_200,
    "gpt_oss_20b": 20_914_757_184,
}


def _query(path, text):
    return QueryEngine(load_spec(path)).evaluate_text(text).value


@pytest.mark.parametrize("folder", sorted(PUBLISHED))
def test_shipped_config_matches_published_total(folder, tmp_path):
    config = SHIPPED / folder / "config.json"
    if not config.exists():
        pytest.skip(f"{config} not available")
    out = tmp_path / f"{folder}.yaml"
    write_spec(str(config), str(out))
    assert _query(out, "params()") == PUBLISHED[folder]


# ------------------------------------------------------------------ tiny configs, every family
def expected_params(cfg: dict) -> int:
    """An independent count from the config (what the HF modules hold)."""
    d, L, V = cfg["hidden_size"], cfg["num_hidden_layers"], cfg["vocab_size"]
    mt = cfg["model_type"]
    fam = FAMILIES[mt]
    total = V * d * (1 if cfg.get("tie_word_embeddings") else 2) + d   # embed, head, final norm
    n_q = cfg["num_attention_heads"]
    per_layer = []
    for layer in range(L):
        p = 2 * d                                                        # two RMSNorms
        if fam.attention == "mla":
            q_rank, kv_rank = cfg.get("q_lora_rank"), cfg["kv_lora_rank"]
            nope, rope, v = cfg["qk_nope_head_dim"], cfg["qk_rope_head_dim"], cfg["v_head_dim"]
            p += (d * q_rank + q_rank + q_rank * n_q * (nope + rope)) if q_rank else d * n_q * (nope + rope)
            p += d * (kv_rank + rope) + kv_rank + kv_rank * n_q * (nope + v) + n_q * v * d
        else:
            n_kv = cfg.get("num_key_value_heads", n_q)
            d_h = cfg.get("head_dim") or d // n_q
            p += d * (n_q + 2 * n_kv) * d_h + n_q * d_h * d
            bias = cfg.get("attention_bias", False)
            if mt == "qwen2" or (bias and mt in ("llama", "qwen3", "qwen3_moe", "gpt_oss")):
                p += (n_q + 2 * n_kv) * d_h
            if bias and mt in ("llama", "qwen3", "qwen3_moe", "gpt_oss"):
                p += d
            if fam.qk_norm:
                p += 2 * d_h
            if fam.sinks:
                p += n_q
        # feed-forward
        if fam.ffn == "dense":
            f = cfg["intermediate_size"]
            p += 3 * d * f + (2 * f + d if cfg.get("mlp_bias") else 0)
        elif fam.ffn == "dense_then_moe" and layer < cfg.get("first_k_dense_replace", 0):
            p += 3 * d * cfg["intermediate_size"]
        elif mt == "qwen3_moe" and (layer in cfg.get("mlp_only_layers", [])
                                    or (layer + 1) % cfg.get("decoder_sparse_step", 1)):
            p += 3 * d * cfg["intermediate_size"]
        else:
            E = cfg[fam.experts_field]
            f_e = cfg[fam.expert_width_field]
            p += d * E + 3 * E * d * f_e
            if fam.router_bias:
                p += E
            if fam.expert_bias:
                p += E * (2 * f_e + d)
            if fam.ffn == "dense_then_moe":
                p += 3 * d * f_e * cfg.get("n_shared_experts", 0)
        per_layer.append(p)
    return total + sum(per_layer)


TINY_CONFIGS = sorted(p.stem for p in TINY.glob("*.json"))


def test_every_family_has_a_tiny_config():
    types = {json.loads((TINY / f"{n}.json").read_text())["model_type"] for n in TINY_CONFIGS}
    assert types == set(FAMILIES)


@pytest.mark.parametrize("name", TINY_CONFIGS)
def test_tiny_config_params_and_check(name, tmp_path):
    config = TINY / f"{name}.json"
    cfg = json.loads(config.read_text())
    out = tmp_path / f"{name}.yaml"
    write_spec(str(config), str(out))
    compile_spec(load_spec(out))                       # what `specc check` does
    assert _query(out, "params()") == expected_params(cfg)
    # every option of the imported spec compiles
    assert _query(out, "flops(P=8, attention=rectangle, head=all)") >= _query(out, "flops(P=8)")


def test_output_is_deterministic_and_commented(tmp_path):
    config = TINY / "gpt_oss.json"
    first = import_config(str(config), out_path=str(tmp_path / "a.yaml"))
    second = import_config(str(config), out_path=str(tmp_path / "a.yaml"))
    assert first == second
    assert "d: 64" in first and "# hidden_size" in first and "# num_key_value_heads" in first
    assert "sliding_layers: 0, 2" in first and "sinks: 1" in first


def test_imports_are_relative_to_the_output(tmp_path):
    text = import_config(str(TINY / "llama.json"), out_path=str(LIB_DIR.parent / "x.yaml"))
    assert "imports: [lib/core.yaml, lib/hf_families.yaml]" in text


def test_tied_embeddings_count_the_table_once(tmp_path):
    tied = tmp_path / "tied.yaml"
    untied = tmp_path / "untied.yaml"
    cfg = json.loads((TINY / "llama.json").read_text())
    write_spec(str(TINY / "llama.json"), str(untied))
    cfg["tie_word_embeddings"] = True
    (tmp_path / "tied.json").write_text(json.dumps(cfg))
    write_spec(str(tmp_path / "tied.json"), str(tied))
    d, V = cfg["hidden_size"], cfg["vocab_size"]
    assert _query(untied, "params()") - _query(tied, "params()") == d * V
    # the tied head still does its matrix work
    assert _query(tied, "flops(P=4, head=all)") == _query(untied, "flops(P=4, head=all)")


def test_sliding_window_counts(tmp_path):
    out = tmp_path / "mistral.yaml"
    write_spec(str(TINY / "mistral.json"), str(out))
    # window 4 over 8 positions: sum of min(t+1, 4) = 26 pairs per layer; 4·n_q·d_h = 256 FLOPs per pair
    assert _query(out, "flops(P=8, component=attention_interaction)") == 2 * 256 * 26
    assert _query(out, "flops(P=8, component=attention_interaction, attention=rectangle)") == 2 * 256 * 64
    # the KV cache of a window layer holds at most 4 entries
    assert _query(out, "state_bytes(H=100)") == 2 * 4 * (2 * 2 * 16 * 2)


# ------------------------------------------------------------------ located errors
def _mutated(tmp_path, base: str, **changes) -> Path:
    cfg = json.loads((TINY / f"{base}.json").read_text())
    for key, value in changes.items():
        if value is ...:
            cfg.pop(key, None)
        else:
            cfg[key] = value
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg, indent=2))
    return path


BAD = [
    ("llama", {"model_type": "falcon"}, "unknown model_type 'falcon'", "model_type"),
    ("llama", {"rope_scaling": {"rope_type": "weird", "factor": 2}}, "unknown rope_scaling type 'weird'", "rope_type"),
    ("mistral", {"attention_bias": True}, "'attention_bias: true' is not supported for model_type mistral",
     "attention_bias"),
    ("deepseek_v3", {"attention_bias": True}, "not supported for model_type deepseek_v3", "attention_bias"),
    ("deepseek_v2", {"mlp_bias": True}, "'mlp_bias: true' is not supported", "mlp_bias"),
    ("llama", {"hidden_act": "gelu"}, "hidden_act 'gelu' is not supported", "hidden_act"),
    ("llama", {"num_hidden_layers": 0}, "'num_hidden_layers' must be an integer >= 1", "num_hidden_layers"),
    ("llama", {"hidden_size": "64"}, "'hidden_size' must be an integer", "hidden_size"),
    ("deepseek_v3", {"moe_layer_freq": 2}, "moe_layer_freq other than 1", "moe_layer_freq"),
    ("gpt_oss", {"layer_types": ["sliding_attention", "chunked_attention"] * 2}, "unknown layer type", "layer_types"),
    ("llama", {"tie_word_embeddings": "yes"}, "'tie_word_embeddings' must be true or false", "tie_word_embeddings"),
]


@pytest.mark.parametrize("base, changes, message, key", BAD, ids=[b[2][:40] for b in BAD])
def test_bad_config_is_a_located_error(tmp_path, base, changes, message, key):
    path = _mutated(tmp_path, base, **changes)
    with pytest.raises(SpecError) as info:
        import_config(str(path))
    err = info.value
    assert message in err.message
    assert err.loc is not None and err.loc.file == str(path)
    assert f'"{key}"' in err.loc.line_text()


def test_missing_field_names_it(tmp_path):
    path = _mutated(tmp_path, "llama", hidden_size=...)
    with pytest.raises(SpecError, match="config has no 'hidden_size'"):
        import_config(str(path))


def test_invalid_json_is_located(tmp_path):
    path = tmp_path / "config.json"
    path.write_text('{"model_type": "llama",\n  "hidden_size": 64,,\n}')
    with pytest.raises(SpecError) as info:
        import_config(str(path))
    assert info.value.loc.line == 2 and "not valid JSON" in info.value.message


# ------------------------------------------------------------------ CLI
def test_cli_import_then_eval(tmp_path):
    runner = CliRunner()
    out = tmp_path / "q.yaml"
    result = runner.invoke(main, ["import-hf", str(TINY / "qwen3.json"), "-o", str(out), "--name", "Tiny-Qwen3"])
    assert result.exit_code == 0, result.output
    assert "model: Tiny-Qwen3" in out.read_text()
    result = runner.invoke(main, ["eval", str(out), "params()"])
    assert result.exit_code == 0 and f"{expected_params(json.loads((TINY / 'qwen3.json').read_text())):,}" in result.output
    result = runner.invoke(main, ["check", str(out)])
    assert result.exit_code == 0


def test_cli_error_exit_2_without_traceback(tmp_path):
    path = _mutated(tmp_path, "llama", model_type="falcon")
    result = CliRunner().invoke(main, ["import-hf", str(path), "-o", str(tmp_path / "x.yaml")])
    assert result.exit_code == 2
    assert "unknown model_type 'falcon'" in result.output and "Traceback" not in result.output
    assert not (tmp_path / "x.yaml").exists()


def test_crosscheck_without_torch_names_the_extra(tmp_path, monkeypatch):
    out = tmp_path / "l.yaml"
    write_spec(str(TINY / "llama.json"), str(out))
    monkeypatch.setitem(sys.modules, "torch", None)     # import torch → ImportError
    result = CliRunner().invoke(main, ["crosscheck", str(out), "--hf-config", str(TINY / "llama.json")])
    assert result.exit_code == 2
    assert "crosscheck" in result.output and "pip install -e '.[crosscheck]'" in result.output
    assert "Traceback" not in result.output
