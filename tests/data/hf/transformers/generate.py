"""Regenerate the transformers model-type corpus of tests/test_hf_types.py.

For every model type of transformers' MODEL_FOR_CAUSAL_LM_MAPPING_NAMES that
set_aside.yaml does not set aside, write the type's default config (`<type>.json`)
and a variant of it (`<type>__variant.json`: fewer layers with the per-layer lists
cut to match, half the KV heads, the head's tying flipped, a wider FFN and a
smaller vocabulary, each change kept only when transformers still builds the
model), build each model on the meta device and store in expected.json what it
holds: `stored` (parameters plus persistent buffers, what a checkpoint stores:
specc's params()) and `num_parameters` (transformers' count, parameters only); where
transformers allocates parameters its forward never reads and checkpoints do not store
(UNSTORED below), they are left out of `stored` and kept as `unstored`.
A wrapper config (one with a text_config) is counted as its text model.

Run: python tests/data/hf/transformers/generate.py   (needs torch and transformers)
"""

from __future__ import annotations

import copy
import json
import sys
import warnings
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent


def _zero_expert_rows(model) -> int:
    """LongCat-Flash: LongcatFlashExperts allocates gate_up_proj for n_routed_experts +
    zero_expert_num experts, but down_proj for the routed ones only; its forward sends the
    zero-computation experts' tokens through an identity (expert_idx >= num_routed_experts)
    and never reads those gate_up rows, and the published checkpoints store the routed
    experts only (560 B parameters, not transformers' 741 B for the same config)."""
    rows = 0
    for mod in model.modules():
        if hasattr(mod, "zero_expert_num") and getattr(mod, "gate_up_proj", None) is not None:
            rows += (mod.total_experts - mod.num_routed_experts) * mod.gate_up_proj[0].numel()
    return rows


# Parameters transformers allocates that the type's forward never reads and its checkpoints do
# not store: not part of what params() counts (subtracted from `stored`, kept as `unstored`).
UNSTORED = {"longcat_flash": _zero_expert_rows}


def stored_counts(config) -> dict:
    """(stored, num_parameters) of the text model transformers builds from `config`."""
    import torch
    from transformers import AutoModelForCausalLM

    text = config.get_text_config()
    with torch.device("meta"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = AutoModelForCausalLM.from_config(text)
    params = sum(p.numel() for p in model.parameters())
    buffers = 0
    for mod in model.modules():
        for name, buf in mod.named_buffers(recurse=False):
            if buf is not None and name not in mod._non_persistent_buffers_set:
                buffers += buf.numel()
    unstored = UNSTORED[text.model_type](model) if text.model_type in UNSTORED else 0
    out = {"stored": params + buffers - unstored, "num_parameters": params, "buffers": buffers}
    return dict(out, unstored=unstored) if unstored else out


def _text(d: dict) -> dict:
    return d["text_config"] if isinstance(d.get("text_config"), dict) else d


# Default configs transformers cannot build or run as they are (a field left None that the
# model needs): the value the type's own checkpoints use is filled in, and kept in the corpus.
FIXES = {
    "deepseek_v2": {"num_experts_per_tok": 6},
    "dbrx": {"attn_config": {"rope_theta": 500000.0}},
    "hunyuan_v1_dense": {"head_dim": 128},
    "hunyuan_v1_moe": {"head_dim": 128},
    "ministral": {"head_dim": 128},
    "nemotron": {"num_key_value_heads": 8},
    "dots1": {"n_routed_experts": 128, "num_experts_per_tok": 6, "n_shared_experts": 2},
    # LFM2-MoE's layer list has no default: short-convolution layers with attention every 4th from 2
    "lfm2_moe": {"layer_types": ["full_attention" if i % 4 == 2 else "conv" for i in range(32)]},
}


# Wrapper types people download that are not in the causal-LM mapping (image-text-to-text
# checkpoints whose text model is one): imported as their text_config.
WRAPPERS = ["mistral3"]


def _merged(base: dict, fix: dict) -> dict:
    """`base` with `fix` laid over it (nested objects merged)."""
    out = dict(base)
    for key, value in fix.items():
        out[key] = _merged(base[key], value) if isinstance(value, dict) and isinstance(base.get(key), dict) else value
    return out


def variants(d: dict, names: dict):
    """Candidate changes of a config dict, most first: the variant keeps those transformers
    builds. `names` maps canonical field names to the type's own (its attribute_map)."""
    t = _text(d)
    changes = []
    layers_key = names.get("num_hidden_layers", "num_hidden_layers")
    L = t.get(layers_key)
    if isinstance(L, int) and L > 2:
        newL = max(2, L // 2)

        def cut(x, newL=newL, L=L):
            x = _text(x)
            x[layers_key] = newL
            for k, v in list(x.items()):
                if isinstance(v, list) and len(v) == L:
                    x[k] = v[:newL]
                if isinstance(v, str) and len(v) == L:     # hybrid_override_pattern strings
                    x[k] = v[:newL]
        changes.append(("layers", cut))
    q, kv = t.get(names.get("num_attention_heads", "num_attention_heads")), t.get("num_key_value_heads")
    if isinstance(kv, int) and kv > 1 and kv % 2 == 0:
        changes.append(("kv_heads", lambda x: _text(x).__setitem__("num_key_value_heads", kv // 2)))
    elif isinstance(q, int) and kv is None and q % 2 == 0 and "num_key_value_heads" in t:
        changes.append(("kv_heads", lambda x: _text(x).__setitem__("num_key_value_heads", q // 2)))
    if isinstance(t.get("tie_word_embeddings"), bool):
        tie = t["tie_word_embeddings"]
        changes.append(("tied", lambda x: _text(x).__setitem__("tie_word_embeddings", not tie)))
    for key in ("intermediate_size", "moe_intermediate_size", "ffn_hidden_size", "n_inner", "ffn_dim", "dff"):
        if isinstance(t.get(key), int) and t[key] > 0:
            changes.append((key, lambda x, key=key: _text(x).__setitem__(key, _text(x)[key] + 64)))
    if isinstance(t.get("vocab_size"), int) and t["vocab_size"] > 2000:
        changes.append(("vocab", lambda x: _text(x).__setitem__("vocab_size", _text(x)["vocab_size"] - 1000)))
    return changes


def main() -> int:
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    aside = yaml.safe_load((HERE / "set_aside.yaml").read_text())
    set_aside = {t for group in aside.values() for t in group["types"]}
    expected = {}
    only = set(sys.argv[1:])
    old = HERE / "expected.json"
    if only and old.exists():
        expected = json.loads(old.read_text())
    for mtype in sorted(set(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES) | set(WRAPPERS)):
        if mtype in set_aside or (only and mtype not in only):
            continue
        try:
            base = CONFIG_MAPPING[mtype]()
            if mtype in FIXES:
                base = CONFIG_MAPPING[mtype].from_dict(_merged(base.to_dict(), FIXES[mtype]))
            d = base.to_dict()
            counts = stored_counts(base)
        except Exception as exc:    # a type transformers cannot build from its defaults
            expected[mtype] = {"error": f"{type(exc).__name__}: {str(exc)[:200]}"}
            print(mtype, "ERROR", exc, file=sys.stderr)
            continue
        entry = {"default": counts}
        (HERE / f"{mtype}.json").write_text(json.dumps(d, indent=1, sort_keys=True, default=str) + "\n")
        var, kept = copy.deepcopy(d), []
        text_class = type(base.get_text_config())
        for what, change in variants(d, dict(getattr(text_class, "attribute_map", {}))):
            trial = copy.deepcopy(var)
            change(trial)
            try:
                c = stored_counts(CONFIG_MAPPING[mtype].from_dict(trial))
            except Exception:
                continue
            var, kept, vcounts = trial, kept + [what], c
        if kept:
            (HERE / f"{mtype}__variant.json").write_text(json.dumps(var, indent=1, sort_keys=True, default=str) + "\n")
            entry["variant"] = dict(vcounts, changes=kept)
        expected[mtype] = entry
        print(mtype, entry, file=sys.stderr)
    old.write_text(json.dumps(expected, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
