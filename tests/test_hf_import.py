"""`specc import-hf`: Hugging Face config.json → spec. Published totals for real
configurations of every family (tests/data/hf/real, with their published totals in its README.md),
configs written from each family's public definition with their totals derived by
hand (tests/data/hf/families), tiny configs of the first families against an
independent parameter formula, quantization formats, located errors for what the
blocks cannot model, and the CLI."""

from __future__ import annotations

import json
import re
import sys
from fractions import Fraction
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from specc.cli import main
from specc.compiler.graph.build import compile_spec
from specc.compiler.query.queries import QueryEngine
from specc.compiler.schema.spec import load_spec
from specc.dsl.errors import SpecError
from specc.hf.importer import FAMILIES, LIB_DIR, import_config, write_spec

ROOT = Path(__file__).resolve().parent.parent
TINY = Path(__file__).resolve().parent / "data" / "hf"
REAL = TINY / "real"            # real configs (<folder>.json) and their published totals (README.md)
WRITTEN = TINY / "families"     # configs written from the families' public definitions
CORPUS = TINY / "transformers"   # transformers' default configs (tests/test_hf_types.py)

def _published() -> dict:
    """folder -> published total, from the table of tests/data/hf/real/README.md (each parameter once)."""
    rows = re.findall(r"^\| (\w+) \| [\w./-]+ \| ([\d,]+) \|$", (REAL / "README.md").read_text(encoding="utf-8"), re.M)
    return {folder: int(total.replace(",", "")) for folder, total in rows}


PUBLISHED = _published()


def _query(path, text):
    return QueryEngine(load_spec(path)).evaluate_text(text).value


def _imported(config, tmp_path, name="spec"):
    out = tmp_path / f"{name}.yaml"
    write_spec(str(config), str(out))
    return out


@pytest.mark.parametrize("folder", sorted(PUBLISHED))
def test_real_config_matches_published_total(folder, tmp_path):
    out = _imported(REAL / f"{folder}.json", tmp_path, folder)
    compile_spec(load_spec(out))                       # what `specc check` does
    assert _query(out, "params()") == PUBLISHED[folder]


def test_every_real_config_has_its_published_total():
    """The table of tests/data/hf/real/README.md names every config file there, and only those."""
    assert len(PUBLISHED) == 15
    assert set(PUBLISHED) == {p.stem for p in REAL.glob("*.json")}


# ------------------------------------------------------------------ written configs: totals by hand
def _glu_layer(d, n_q, n_kv, d_h, f, norms):
    """q, k, v, o + gate/up/down + norms of one gated decoder layer."""
    return d * n_q * d_h + 2 * d * n_kv * d_h + n_q * d_h * d + 3 * d * f + norms


def _mamba_layer(d, d_in, N, dt_rank, conv, norm):
    """in_proj, conv (+ bias), x_proj, dt_proj (+ bias), A_log, D, out_proj, layer norm."""
    return (d * 2 * d_in + d_in * conv + d_in + d_in * (dt_rank + 2 * N) + dt_rank * d_in + d_in
            + d_in * N + d_in + d_in * d + norm)


HAND = {
    # Gemma-2B: tied 256000×2048 table, 18 layers of MQA (8 heads of 256, 1 KV head), GeGLU 16384,
    # two RMSNorms per layer, final norm: the published 2,506,172,416
    "gemma_2b": 256000 * 2048 + 18 * _glu_layer(2048, 8, 1, 256, 16384, 2 * 2048) + 2048,
    # Gemma-7B: head_dim 256 × 16 heads = 4096 ≠ 3072: the published 8,537,680,896
    "gemma_7b": 256000 * 3072 + 28 * _glu_layer(3072, 16, 16, 256, 24576, 2 * 3072) + 3072,
    # Gemma-3-1B: tied 262144×1152, 26 layers: 4 norms (pre+post) and Q/K norms of 256: 999,885,952
    "gemma3_1b": 262144 * 1152 + 26 * _glu_layer(1152, 4, 1, 256, 6912, 4 * 1152 + 2 * 256) + 1152,
    # Phi-4 (model_type phi3): fused qkv 5120→(40+2·10)·128, untied 100352: 14,659,507,200
    "phi4": 2 * 100352 * 5120 + 40 * _glu_layer(5120, 40, 10, 128, 17920, 2 * 5120) + 5120,
    # Phi-4-mini: partial rotary 0.75 (no parameters), tied 200064: 3,836,021,760
    "phi4_mini": 200064 * 3072 + 32 * _glu_layer(3072, 24, 8, 128, 8192, 2 * 3072) + 3072,
    # Phi-3.5-mini: Phi-3-mini's shape with longrope: 3,821,079,552
    "phi35_mini": 2 * 32064 * 3072 + 32 * _glu_layer(3072, 32, 32, 96, 8192, 2 * 3072) + 3072,
    # Granite-3.0-2B: Llama's layer (multipliers add nothing), tied 49155×2048
    "granite_3_2b": 49155 * 2048 + 40 * _glu_layer(2048, 32, 8, 64, 8192, 2 * 2048) + 2048,
    # Command-R: parallel attention+MLP behind ONE bias-free LayerNorm per layer, tied
    "command_r": 256000 * 8192 + 40 * _glu_layer(8192, 64, 64, 128, 22528, 8192) + 8192,
    # Command-R+: use_qk_norm: LayerNorm weights per head over (96 + 8)·128
    "command_r_plus": 256000 * 12288 + 64 * _glu_layer(12288, 96, 8, 128, 33792, 12288 + (96 + 8) * 128) + 12288,
    # Falcon-40B: new_decoder_architecture: fused qkv 8192→(128 + 2·8)·64, dense 8192², MLP 2·8192·32768,
    # ln_attn + ln_mlp (weight + bias each), tied, ln_f: 41,303,293,952
    "falcon_40b": 65024 * 8192 + 60 * (8192 * 144 * 64 + 8192 * 8192 + 2 * 8192 * 32768 + 4 * 8192) + 2 * 8192,
    # Falcon-RW-1B: ALiBi (no rotary, no parameters), sequential residual (parallel_attn false) with
    # input_layernorm + post_attention_layernorm, biases (bias true), full multi-head fused qkv, tied
    "falcon_rw_1b": 50304 * 2048 + 24 * ((2048 * 6144 + 6144) + (2048 * 2048 + 2048) + (2048 * 8192 + 8192)
                                         + (8192 * 2048 + 2048) + 4 * 2048) + 2 * 2048,
    # Pythia-160M: fused qkv with bias, dense with bias, 4h MLP with biases, two LayerNorms (w + b),
    # untied embed_in/embed_out: the published 162,322,944
    "pythia_160m": 2 * 50304 * 768 + 12 * ((768 * 2304 + 2304) + (768 * 768 + 768) + (768 * 3072 + 3072)
                                           + (3072 * 768 + 768) + 4 * 768) + 2 * 768,
    # StarCoder2-3B: GQA with biases (24 q heads, 2 KV heads of 128), c_fc/c_proj with biases,
    # LayerNorms with bias, tied
    "starcoder2_3b": 49152 * 3072 + 30 * ((3072 * 3072 + 3072) + 2 * (3072 * 256 + 256) + (3072 * 3072 + 3072)
                                          + (3072 * 12288 + 12288) + (12288 * 3072 + 3072) + 4 * 3072) + 2 * 3072,
    # Mamba-130M: 24 Mamba layers (d_in 1536, N 16, dt_rank 48, conv 4), tied 50280×768: 129,135,360
    "mamba_130m": 50280 * 768 + 24 * _mamba_layer(768, 1536, 16, 48, 4, 768) + 768,
    # Falcon-Mamba-7B: intermediate_size 8192 overrides expand 16 (as in transformers), weight-free
    # B/C/Δ norms, untied: 7,272,665,088
    "falcon_mamba_7b": 2 * 65024 * 4096 + 64 * _mamba_layer(4096, 8192, 16, 256, 4, 4096) + 4096,
}
KNOWN = {"gemma_2b": 2_506_172_416, "gemma_7b": 8_537_680_896, "gemma3_1b": 999_885_952,
         "phi4": 14_659_507_200, "phi4_mini": 3_836_021_760, "phi35_mini": 3_821_079_552,
         "falcon_40b": 41_303_293_952, "pythia_160m": 162_322_944, "mamba_130m": 129_135_360,
         "falcon_mamba_7b": 7_272_665_088}


def test_hand_totals_are_the_known_published_ones():
    for name, total in KNOWN.items():
        assert HAND[name] == total, name


@pytest.mark.parametrize("name", sorted(HAND))
def test_written_config_imports_to_its_hand_total(name, tmp_path):
    out = _imported(WRITTEN / f"{name}.json", tmp_path, name)
    compile_spec(load_spec(out))
    assert _query(out, "params()") == HAND[name]


def test_every_family_has_a_config_with_a_checked_total():
    """Each model_type of specs/hf/families.yaml is covered by a real or written config, or
    by transformers' default config of the type (tests/test_hf_types.py checks it exactly)."""
    covered = set()
    corpus = TINY / "transformers"
    for path in (list(REAL.glob("*.json")) + list(WRITTEN.glob("*.json")) + list(TINY.glob("*.json"))
                 + list(corpus.glob("*.json"))):
        data = json.loads(path.read_text())
        covered.add(data.get("model_type"))
        covered.add((data.get("text_config") or {}).get("model_type"))
    assert set(FAMILIES) <= covered, set(FAMILIES) - covered


def test_params_group_breakdown(tmp_path):
    """The groups add up to the total and hold what they should: GPT-2's tied table and its
    1024×768 position table in embedding_head, its Conv1D weights and biases in attention /
    FFN, its LayerNorms (w + b) in other."""
    out = _imported(REAL / "gpt2.json", tmp_path, "gpt2")
    groups = {g: _query(out, f"params(group={g})")
              for g in ("embedding_head", "attention_projection", "dense_shared_ffn", "routed_experts", "other")}
    assert sum(groups.values()) == 124_439_808
    assert groups["embedding_head"] == 50257 * 768 + 1024 * 768
    assert groups["attention_projection"] == 12 * (768 * 2304 + 2304 + 768 * 768 + 768)
    assert groups["dense_shared_ffn"] == 12 * (768 * 3072 + 3072 + 3072 * 768 + 768)
    assert groups["other"] == 12 * 4 * 768 + 2 * 768
    assert groups["routed_experts"] == 0
    # Qwen1.5-MoE: 60 experts × 24 layers, the shared expert and its d→1 gate in dense_shared_ffn,
    # routers (2048×60 per layer) in other
    out = _imported(REAL / "qwen1_5_moe_a2_7b_chat.json", tmp_path, "qmoe")
    assert _query(out, "params(group=routed_experts)") == 24 * 60 * 3 * 2048 * 1408
    assert _query(out, "params(group=dense_shared_ffn)") == 24 * (3 * 2048 * 5632 + 2048)
    assert _query(out, "params(group=other)") == 24 * (2048 * 60 + 2 * 2048) + 2048


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
        if fam.mixer == "mla":
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
        elif fam.shared_experts and layer < cfg.get("first_k_dense_replace", 0):
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
            if fam.shared_experts:
                p += 3 * d * f_e * cfg.get("n_shared_experts", 0)
        per_layer.append(p)
    return total + sum(per_layer)


TINY_CONFIGS = sorted(p.stem for p in TINY.glob("*.json"))


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


def test_imported_spec_is_portable(tmp_path, monkeypatch):
    """The spec imports lib/... from the search path: moved to an unrelated folder
    (no specs/lib/ above it), evaluated from another working directory, it still works."""
    text = import_config(str(TINY / "llama.json"), out_path=str(LIB_DIR.parent / "x.yaml"))
    assert yaml.safe_load(text)["imports"] == ["lib/core.yaml", "lib/hf_families.yaml"]
    assert ".." not in text.split("dims:")[0]
    elsewhere = tmp_path / "a" / "b" / "c" / "d" / "moved.yaml"
    elsewhere.parent.mkdir(parents=True)
    elsewhere.write_text(text, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert _query(elsewhere, "params()") == expected_params(json.loads((TINY / "llama.json").read_text()))


def test_config_values_cannot_change_the_spec(tmp_path):
    """Names and text from config.json go through the YAML serializer: a value with
    newlines, quotes or YAML syntax stays one string, and a file name with a newline
    stays inside its comment."""
    cfg = json.loads((TINY / "llama.json").read_text())
    evil = "x\nstack: []\n# ': {a: b}\n  - name: evil"
    cfg["_name_or_path"] = evil
    cfg["architectures"] = ["LlamaForCausalLM\nimports: [../../etc/passwd]"]
    folder = tmp_path / "odd\nname: 1"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(cfg))
    out = tmp_path / "evil.yaml"
    text = write_spec(str(folder), str(out))
    spec = yaml.safe_load(text)
    assert spec["model"] == evil and spec["imports"] == ["lib/core.yaml", "lib/hf_families.yaml"]
    assert "\nimports: [../../etc/passwd]" in spec["source"]
    assert [s["name"] for s in spec["stack"]] == ["embed", "layers", "head"]
    assert _query(out, "params()") == expected_params(cfg)


def test_unknown_dtype_is_located(tmp_path):
    path = _mutated(tmp_path, "llama", torch_dtype="float7")
    with pytest.raises(SpecError) as info:
        import_config(str(path))
    assert "unknown torch_dtype" in info.value.message and '"torch_dtype"' in info.value.loc.line_text()


def test_unknown_model_type_says_how_to_add_a_family(tmp_path):
    path = _mutated(tmp_path, "llama", model_type="brand_new")
    with pytest.raises(SpecError) as info:
        import_config(str(path))
    assert "specs/hf/families.yaml" in info.value.message and "Adding a Hugging Face family" in info.value.message
    assert '"model_type"' in info.value.loc.line_text()


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
    ("llama", {"model_type": "no_such_family"}, "unknown model_type 'no_such_family'", "model_type"),
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
    path = _mutated(tmp_path, "llama", model_type="no_such_family")
    result = CliRunner().invoke(main, ["import-hf", str(path), "-o", str(tmp_path / "x.yaml")])
    assert result.exit_code == 2
    assert "unknown model_type 'no_such_family'" in result.output and "Traceback" not in result.output
    assert not (tmp_path / "x.yaml").exists()


def test_crosscheck_without_torch_names_the_extra(tmp_path, monkeypatch):
    out = tmp_path / "l.yaml"
    write_spec(str(TINY / "llama.json"), str(out))
    monkeypatch.setitem(sys.modules, "torch", None)     # import torch → ImportError
    result = CliRunner().invoke(main, ["crosscheck", str(out), "--hf-config", str(TINY / "llama.json")])
    assert result.exit_code == 2
    assert "crosscheck" in result.output and "pip install -e '.[crosscheck]'" in result.output
    assert "Traceback" not in result.output


# ------------------------------------------------------------------ quirks, checked by their effect
def _with_fields(tmp_path, src: Path, name="cfg", **changes) -> Path:
    cfg = json.loads(src.read_text())
    for key, value in changes.items():
        if value is ...:
            cfg.pop(key, None)
        else:
            cfg[key] = value
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(cfg, indent=2))
    return path


def test_dataflow_has_no_dead_ends(tmp_path):
    """Every op's output is read by a later op, or is a layer group's or the head's output
    (MLA's rope lives in lib/mla.yaml and is not an import-hf block)."""
    configs = [p for p in list(TINY.glob("*.json")) + list(REAL.glob("*.json")) + list(WRITTEN.glob("*.json"))
               if FAMILIES[json.loads(p.read_text())["model_type"]].mixer != "mla"]
    for path in configs:
        graph = compile_spec(load_spec(_imported(path, tmp_path, path.stem))).graph
        sinks = {n for n in graph.nodes if graph.out_degree(n) == 0}
        assert all(n.startswith("head.logits") or n.split(".")[-1].split("~")[0] == "h" for n in sinks), (path, sinks)


def test_gemma2_soft_caps_are_scalar_work_not_parameters(tmp_path):
    capped = _imported(REAL / "gemma_2_2b_it.json", tmp_path, "capped")
    plain = _imported(_with_fields(tmp_path, REAL / "gemma_2_2b_it.json", attn_logit_softcapping=None,
                                   final_logit_softcapping=None), tmp_path, "plain")
    assert _query(capped, "params()") == _query(plain, "params()")
    assert _query(capped, "flops(P=16)") == _query(plain, "flops(P=16)")
    # 3 ops per capped attention score (8 heads) and per logit (256000 on the last row)
    pairs = _query(capped, "pairs(P=16)")
    extra = _query(capped, "scalar_work(P=16)") - _query(plain, "scalar_work(P=16)")
    assert extra == 3 * 8 * pairs * 26 + 3 * 256000


def test_gemma_sliding_patterns(tmp_path):
    # Gemma-2: layer_types absent → sliding on even layers (every 2nd layer is global)
    text = import_config(str(REAL / "gemma_2_2b_it.json"))
    assert "sliding_layers: 0..24 step 2" in text
    # Gemma-3: 5 sliding : 1 global (sliding_window_pattern 6): layers 5, 11, 17, 23 are global
    out = _imported(WRITTEN / "gemma3_1b.json", tmp_path, "g3")
    per_token = 2 * 1 * 256 * 2                     # K and V, one KV head of 256, bf16
    assert _query(out, "state_bytes(H=32768)") == (22 * 512 + 4 * 32768) * per_token
    # an explicit layer_types list wins over the pattern
    types = ["full_attention" if i % 2 else "sliding_attention" for i in range(26)]
    out = _imported(_with_fields(tmp_path, WRITTEN / "gemma3_1b.json", layer_types=types), tmp_path, "g3t")
    assert _query(out, "state_bytes(H=32768)") == (13 * 512 + 13 * 32768) * per_token


def test_falcon_multi_query_overrides_num_kv_heads(tmp_path):
    out = _imported(REAL / "falcon_7b_instruct.json", tmp_path, "f7")
    assert "n_kv: 1" in out.read_text()           # num_kv_heads says 71; multi_query makes it 1
    assert _query(out, "kv_bytes_per_token()") == 32 * 2 * 1 * 64 * 2
    # new_decoder_architecture reads num_kv_heads (Falcon-40B: 8) and has two norms per layer
    out = _imported(WRITTEN / "falcon_40b.json", tmp_path, "f40")
    assert _query(out, "kv_bytes_per_token()") == 60 * 2 * 8 * 64 * 2
    assert _query(out, "params(group=other)") == 60 * 4 * 8192 + 2 * 8192
    # without multi_query and without the new architecture: one K/V head per query head
    out = _imported(_with_fields(tmp_path, REAL / "falcon_7b_instruct.json", multi_query=False), tmp_path, "mha")
    assert _query(out, "params()") == PUBLISHED["falcon_7b_instruct"] + 32 * 4544 * 2 * 70 * 64


def test_parallel_and_post_norm_dataflow(tmp_path):
    """Phi-2: the MLP reads the attention's own norm; OLMo-2: attention reads the residual
    stream itself and its output is normalised before the add."""
    graph = compile_spec(load_spec(_imported(REAL / "phi_2.json", tmp_path, "phi"))).graph
    assert list(graph.predecessors("layers.ffn_out.y.up")) == ["layers.n1.y"]
    assert set(graph.predecessors("layers.h")) == {"embed.embed", "layers.mix.o~2", "layers.ffn_out.y.down~2"}
    graph = compile_spec(load_spec(_imported(REAL / "olmo_2_1124_7b.json", tmp_path, "olmo"))).graph
    assert list(graph.predecessors("layers.mix.q")) == ["embed.embed"]
    assert list(graph.predecessors("layers.mix.y")) == ["layers.mix.o"]        # post_attention_layernorm
    assert list(graph.predecessors("layers.ffn_out.y.up")) == ["layers.h"]      # no pre-FFN norm


def test_biases_partial_rotary_and_head_bias(tmp_path):
    out = _imported(REAL / "phi_2.json", tmp_path, "phi")
    text = out.read_text()
    assert "rot: 32" in text                      # int(0.4 × 80)
    assert _query(out, "params(group=embedding_head)") == 2 * 51200 * 2560 + 51200   # lm_head bias
    # qk_layernorm adds a LayerNorm (weight + bias) of head_dim on Q and on K per layer
    out = _imported(_with_fields(tmp_path, REAL / "phi_2.json", qk_layernorm=True), tmp_path, "phiqk")
    assert _query(out, "params()") == PUBLISHED["phi_2"] + 32 * 4 * 80
    # StableLM's qk_layernorm: per-head bias-free LayerNorms over (n_q + n_kv)·d_h
    out = _imported(_with_fields(tmp_path, REAL / "stablelm_2_zephyr_1_6b.json", qk_layernorm=True), tmp_path, "st")
    assert _query(out, "params()") == PUBLISHED["stablelm_2_zephyr_1_6b"] + 24 * (32 + 32) * 64


def test_shared_expert_gate_and_mlp_only_layers(tmp_path):
    out = _imported(REAL / "qwen1_5_moe_a2_7b_chat.json", tmp_path, "q")
    flops = _query(out, "flops(P=4, component=shared_expert)")
    assert flops == 24 * (6 * 4 * 2048 * 5632 + 2 * 4 * 2048)       # shared SwiGLU + its d→1 gate
    # an mlp_only layer is a dense FFN of intermediate_size instead of the MoE
    out = _imported(_with_fields(tmp_path, REAL / "qwen1_5_moe_a2_7b_chat.json", mlp_only_layers=[0]), tmp_path, "q0")
    moe_layer = 2048 * 60 + 60 * 3 * 2048 * 1408 + 3 * 2048 * 5632 + 2048
    assert _query(out, "params()") == PUBLISHED["qwen1_5_moe_a2_7b_chat"] - moe_layer + 3 * 2048 * 5632


def test_jamba_layout_and_state(tmp_path):
    out = _imported(REAL / "ai21_jamba_1_5_mini.json", tmp_path, "j")
    text = out.read_text()
    assert "attn_layers: 4..28 step 8" in text and "moe_layers: 1..31 step 2" in text
    # 4 attention layers of 8 KV heads × 128, 28 Mamba layers of (conv 3 × 8192 + SSM 8192 × 16), bf16
    assert _query(out, "state_bytes(H=1000)") == 4 * 1000 * 2 * 8 * 128 * 2 + 28 * (3 * 8192 + 8192 * 16) * 2
    bad = _with_fields(tmp_path, REAL / "ai21_jamba_1_5_mini.json", attn_layer_offset=8)
    with pytest.raises(SpecError, match="is not below 'attn_layer_period'") as info:
        import_config(str(bad))
    assert '"attn_layer_offset"' in info.value.loc.line_text()


def test_mamba_dt_rank_auto_and_intermediate_size(tmp_path):
    # time_step_rank "auto" is ceil(hidden_size / 16) = 48 for Mamba-130M
    auto = _with_fields(tmp_path, WRITTEN / "mamba_130m.json", time_step_rank="auto")
    assert _query(_imported(auto, tmp_path, "auto"), "params()") == HAND["mamba_130m"]
    # without intermediate_size, d_in is expand × hidden_size
    assert _query(_imported(_with_fields(tmp_path, WRITTEN / "falcon_mamba_7b.json", intermediate_size=...,
                                         expand=2), tmp_path, "fm"), "params()") == HAND["falcon_mamba_7b"]


# ------------------------------------------------------------------ model folders and quantization
def test_model_folder_is_accepted(tmp_path):
    snap = tmp_path / "snapshots" / "abc123"
    snap.mkdir(parents=True)
    (snap / "config.json").write_text((REAL / "gpt2.json").read_text())
    out = tmp_path / "g.yaml"
    result = CliRunner().invoke(main, ["import-hf", str(snap), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert _query(out, "params()") == PUBLISHED["gpt2"]
    empty = tmp_path / "empty"
    empty.mkdir()
    result = CliRunner().invoke(main, ["import-hf", str(empty), "-o", str(tmp_path / "x.yaml")])
    assert result.exit_code == 2 and "has no config.json" in result.output and "Traceback" not in result.output


LINEAR = ("attention_projection", "dense_shared_ffn", "routed_experts")
QUANT = [
    # GPTQ 4-bit, group 128: 4/8 B + (fp16 scale + 4-bit zero) per 128 values
    ({"quant_method": "gptq", "bits": 4, "group_size": 128, "sym": True}, "gptq_int4",
     Fraction(1, 2) + Fraction(16 + 4, 8 * 128)),
    ({"quant_method": "awq", "bits": 4, "group_size": 64, "version": "gemm"}, "awq_int4",
     Fraction(1, 2) + Fraction(20, 8 * 64)),
    ({"quant_method": "gptq", "bits": 8, "group_size": -1}, "gptq_int8", Fraction(1)),
    ({"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_quant_type": "nf4"}, "bnb_nf4",
     Fraction(1, 2) + Fraction(4, 64)),
    ({"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_quant_type": "nf4",
      "bnb_4bit_use_double_quant": True}, "bnb_nf4", Fraction(1, 2) + Fraction(1, 64) + Fraction(4, 64 * 256)),
    ({"quant_method": "bitsandbytes", "load_in_8bit": True}, "bnb_int8", Fraction(1)),
    ({"quant_method": "fp8", "fmt": "e4m3", "weight_block_size": [128, 128]}, "fp8", 1 + Fraction(4, 128 * 128)),
    ({"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": False}, "awq_int4",
     Fraction(1, 2) + Fraction(16, 8 * 128)),
]


@pytest.mark.parametrize("quant, fmt, rate", QUANT, ids=[q[1] + str(i) for i, q in enumerate(QUANT)])
def test_quantization_config_is_the_default_format(tmp_path, quant, fmt, rate):
    out = _imported(_with_fields(tmp_path, TINY / "qwen3_moe.json", quantization_config=quant), tmp_path, "qz")
    linear = sum(_query(out, f"params(group={g})") for g in LINEAR)
    rest = _query(out, "params()") - linear
    assert linear > 0 and rest > 0
    expected = linear * rate + rest * 2          # embeddings, head, norms, routers stay bf16
    assert _query(out, "weight_bytes()") == expected
    assert _query(out, f"weight_bytes(format={fmt})") == expected
    assert _query(out, "weight_bytes(format=bf16)") == 2 * (linear + rest)


QUANT_BAD = [
    ({"quant_method": "gptq", "bits": 5, "group_size": 128}, "quantization_config.bits must be", "bits"),
    ({"quant_method": "awq", "bits": 4, "group_size": 0}, "group_size must be", "group_size"),
    ({"quant_method": "hqq", "nbits": 4}, "unknown quant_method 'hqq'", "quant_method"),
    ({"quant_method": "bitsandbytes"}, "neither load_in_4bit nor load_in_8bit", "quant_method"),
    ({"quant_method": "fp8", "weight_block_size": [128]}, "weight_block_size must be", "weight_block_size"),
]


def test_mxfp4_quantizes_the_experts_only(tmp_path):
    """gpt-oss's checkpoint config: MXFP4 experts (1/2 B + an E8M0 scale per 32), the rest bf16."""
    quant = {"quant_method": "mxfp4", "modules_to_not_convert": ["model.layers.*.self_attn",
                                                                 "model.layers.*.mlp.router",
                                                                 "model.embed_tokens", "lm_head"]}
    out = _imported(_with_fields(tmp_path, REAL / "gpt_oss_20b.json", quantization_config=quant), tmp_path, "oss")
    assert _query(out, "params()") == PUBLISHED["gpt_oss_20b"]
    experts = _query(out, "params(group=routed_experts)")
    assert _query(out, "weight_bytes()") == experts * Fraction(17, 32) + (PUBLISHED["gpt_oss_20b"] - experts) * 2


@pytest.mark.parametrize("quant, message, key", QUANT_BAD, ids=[q[2] + str(i) for i, q in enumerate(QUANT_BAD)])
def test_bad_quantization_config_is_located(tmp_path, quant, message, key):
    path = _with_fields(tmp_path, TINY / "llama.json", quantization_config=quant)
    with pytest.raises(SpecError, match=message) as info:
        import_config(str(path))
    assert f'"{key}"' in info.value.loc.line_text()


# ------------------------------------------------------------------ unknown or inconsistent configs
BAD_NEW = [
    (WRITTEN / "falcon_40b.json", {"num_kv_heads": 7}, "7 key/value heads do not divide 128", "num_kv_heads"),
    (TINY / "llama.json", {"num_key_value_heads": 3}, "3 key/value heads do not divide 4", "num_key_value_heads"),
    (TINY / "llama.json", {"num_hidden_layers": 10 ** 9}, "'num_hidden_layers' must be an integer >= 1 (at most",
     "num_hidden_layers"),
    (REAL / "phi_2.json", {"partial_rotary_factor": 1.5}, "'partial_rotary_factor' must be a fraction",
     "partial_rotary_factor"),
    (REAL / "gpt2.json", {"n_embd": -1}, "'n_embd' must be an integer", "n_embd"),
    (REAL / "gpt2.json", {"add_cross_attention": True}, "'add_cross_attention: true' is not supported",
     "add_cross_attention"),
    (REAL / "gemma_2_2b_it.json", {"hidden_activation": "relu"}, "hidden_activation 'relu' is not supported",
     "hidden_activation"),
    (REAL / "falcon_7b_instruct.json", {"new_decoder_architecture": True, "num_ln_in_parallel_attn": 3},
     "3 norms in a parallel block", "num_ln_in_parallel_attn"),
    # the reused block: its input is the hidden state and the embedding (2·d), its heads divide
    (TINY / "crosscheck" / "zamba.json", {"attention_hidden_size": 100}, "'attention_hidden_size' 100 is not 2 ×",
     "attention_hidden_size"),
    (TINY / "crosscheck" / "zamba.json", {"num_key_value_heads": 3}, "3 key/value heads do not divide 4",
     "num_key_value_heads"),
    (TINY / "crosscheck" / "zamba.json", {"layers_block_type": ["hybrid"]}, "must give one layer type per layer (5)",
     "layers_block_type"),
    (CORPUS / "zamba2.json", {"add_bias_linear": True}, "add_bias_linear other than false is not supported",
     "add_bias_linear"),
    (CORPUS / "gemma3n_text.json", {"intermediate_size": [16384, 16384]}, "one positive integer width per layer (35)",
     "intermediate_size"),
]


@pytest.mark.parametrize("src, changes, message, key", BAD_NEW, ids=[b[3] + str(i) for i, b in enumerate(BAD_NEW)])
def test_inconsistent_config_is_located(tmp_path, src, changes, message, key):
    path = _with_fields(tmp_path, src, **changes)
    with pytest.raises(SpecError) as info:
        import_config(str(path))
    assert message in info.value.message
    assert info.value.loc.file == str(path) and f'"{key}"' in info.value.loc.line_text()


def test_deep_nesting_and_non_utf8_are_located(tmp_path):
    deep = tmp_path / "deep.json"
    deep.write_text('{"model_type": "llama",\n "x": ' + "[" * 100000 + "]" * 100000 + "}")
    with pytest.raises(SpecError, match="json_depth") as info:
        import_config(str(deep))
    assert info.value.loc.line == 2
    raw = tmp_path / "latin1.json"
    raw.write_bytes(b'{"model_type": "llama",\n "_name_or_path": "caf\xe9"}')
    result = CliRunner().invoke(main, ["import-hf", str(raw), "-o", str(tmp_path / "x.yaml")])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "not valid UTF-8" in result.output and ":2:" in result.output


# ------------------------------------------------------------------ against PyTorch (when installed)
CROSS = TINY / "crosscheck"     # tiny configs of the families added to import-hf


@pytest.mark.parametrize("name", sorted(p.stem for p in CROSS.glob("*.json")))
def test_new_family_agrees_with_pytorch(name, tmp_path):
    """The model transformers builds from each tiny config has exactly the imported
    parameter total, and the same GEMM FLOPs, except the two Mamba terms that specc
    counts as scalar work (lib/ssm.yaml's convention) and FlopCounterMode as matrix work:
    the depthwise conv1d over the padded P + d_conv − 1 positions and the scan's C·h
    contraction, 2·d_in·N per row. (Per-group rows use HF's module names, which the
    cross-check maps for Llama-style names only.)"""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from specc.verify.crosscheck import crosscheck

    config = CROSS / f"{name}.json"
    out = _imported(config, tmp_path, name)
    B, P = 2, 8
    report = crosscheck(load_spec(out), str(config), batch=B, tokens=P)
    rows = {(r.section, r.name): r for r in report.rows}
    params = rows[("parameters", "total")]
    assert params.hf == params.specc > 0
    cfg = json.loads(config.read_text())
    mamba_layers, d_in, N, d_conv = 0, 0, 0, 0
    if cfg["model_type"] in ("mamba", "falcon_mamba"):
        mamba_layers = cfg["num_hidden_layers"]
        d_in, N, d_conv = cfg["expand"] * cfg["hidden_size"], cfg["state_size"], cfg["conv_kernel"]
    elif cfg["model_type"] == "zamba":     # Mamba-1 in every layer (its per-head x/dt split: the same terms)
        mamba_layers = cfg["num_hidden_layers"]
        d_in, N, d_conv = cfg["mamba_expand"] * cfg["hidden_size"], cfg["mamba_d_state"], cfg["mamba_d_conv"]
    elif cfg["model_type"] == "jamba":
        mamba_layers = sum(1 for i in range(cfg["num_hidden_layers"])
                           if i % cfg["attn_layer_period"] != cfg["attn_layer_offset"])
        d_in, N, d_conv = cfg["mamba_expand"] * cfg["hidden_size"], cfg["mamba_d_state"], cfg["mamba_d_conv"]
    gemm = rows[("matrix FLOPs", "total (GEMM)")]
    scalar_in_specc = mamba_layers * (2 * B * (P + d_conv - 1) * d_in * d_conv + 2 * B * P * d_in * N)
    assert gemm.hf - gemm.specc == scalar_in_specc
