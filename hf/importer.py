"""Hugging Face `config.json` → specc spec YAML text (`specc import-hf`).

The config is read with `json` (never evaluated; hf/config.py). What each
supported `model_type` means is data: the FAMILIES table (specs/hf/families.yaml)
says which parts of the layer block of specs/lib/hf_families.yaml the family uses
and which config fields (in each transformers spelling) switch them: norm layout,
biases, QK norms, parallel residuals, partial rotary, soft-caps, windows, experts
and their placement, shared experts, and the mixers its `mixers:` table declares
(dimensions read by rules, block bindings, stores, options). No family is named
here. A field whose value the blocks cannot model, a missing field or an unknown
`model_type` is a SpecError located at the field in config.json; a wrapper config
(one whose text model is a `text_config`) imports its text model.

The output is built as a structure and written with yaml.safe_dump; every config
value becomes a named dimension with the field it came from as a comment.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from ..dsl.errors import Loc, SpecError
from .config import MAX_LAYERS, Config
from .quant import quant_format

LIB_DIR = Path(__file__).resolve().parent.parent / "specs" / "lib"
FAMILIES_FILE = LIB_DIR.parent / "hf" / "families.yaml"
# found on the search path (dsl/search_path.py): an imported spec works in any folder
LIB_IMPORTS = ("lib/core.yaml", "lib/hf_families.yaml")

LAYER_TYPES = {"full_attention", "sliding_attention"}
WINDOW_MODES = {"none", "all", "all_if_enabled", "layer_types", "layer_types_or_max_window", "layer_types_or_period"}
FFN_MODES = {"dense", "moe", "none"}
BUILTIN_MIXERS = {"attention", "selective_ssm", "attention_or_ssm"}
NORMS = {"rms", "layernorm", "layernorm_nobias", "none"}
NORM_LAYOUTS = {"pre", "pre_post", "post"}


@dataclass(frozen=True)
class Family:
    """How a model_type maps onto the library blocks (keys documented in specs/hf/families.yaml)."""

    ffn: str = "dense"
    mixer: str = "attention"
    layers: dict | None = None
    layer_count: object = "num_hidden_layers"
    tie_rule: object = None
    mixer_dims: dict = field(default_factory=dict)
    q_gate: bool = False
    head_gate: bool = False
    attn_sub_norm: bool = False
    ffn_sub_norm: bool = False
    attn_extra: object = 0
    layer_scalars: int = 0
    act_scalars: int = 0
    per_layer_config: str | None = None
    layer_bindings: dict = field(default_factory=dict)
    moe_out_bias: bool = False
    head_dense: bool = False
    v_head_dim: object = None
    extra_dims: dict = field(default_factory=dict)
    kv_shared_layers: str | None = None
    head_scale: bool = False
    embed_extra: dict = field(default_factory=dict)
    kv_heads_by_layer: dict | None = None
    per_layer_inputs: dict | None = None
    altup: object = None
    reused_block: dict | None = None
    laurel: object = None
    expert_glu: bool = True
    fields: dict = field(default_factory=dict)
    defaults: dict = field(default_factory=dict)
    tied: bool = False
    norm: str = "rms"
    norm_layout: str = "pre"
    parallel: object = False
    parallel_norms: object = 1
    kv_heads: object = None
    fused_qkv: bool = False
    qk_norm: object = False
    qk_norm_width: str = "head"
    qk_norm_bias: bool = False
    rotary: object = 1
    qkv_bias: object = False
    o_bias: object = False
    mlp_bias: object = False
    head_bias: object = False
    mlp: str = "glu"
    ffn_width: object = "intermediate_size"
    positions: object = None
    final_norm: bool = True
    embed_norm: bool = False
    window_types: dict | None = None
    attn_softcap: str | None = None
    final_softcap: str | None = None
    activation_fields: tuple = ("hidden_act",)
    activations: tuple = ()
    sinks: bool = False
    router_bias: bool = False
    expert_bias: bool = False
    window: str = "none"
    window_period: object = None
    experts_field: str = "num_local_experts"
    expert_width_field: str = "intermediate_size"
    shared_expert_field: str | None = None
    zero_experts_field: str | None = None
    shared_gate: bool = False
    attn_layers: dict | None = None
    moe_layers: dict | None = None
    ssm: dict | None = None
    shared_experts: dict | None = None
    unsupported: tuple = ()
    requires: dict = field(default_factory=dict)
    notes: tuple = ()
    sparse_step: bool = False


ROPE_KINDS: set = set()     # rope_scaling types the blocks accept (from FAMILIES_FILE)
ACTIVATIONS: dict = {}      # mlp kind -> activations a name of which changes no parameter
MIXERS: dict = {}           # declared mixers (layer templates) of FAMILIES_FILE
DTYPES: dict = {}           # transformers dtype name -> specc element type
WRAPPERS: dict = {}         # wrapper model_type -> its text model's, when text_config names none


def _resolve_like(table: dict, name: str, seen: tuple = ()) -> dict:
    """A family's entry with the entries it is `like:` (transitively) under it."""
    entry = dict(table[name])
    like = entry.pop("like", None)
    if like is None:
        return entry
    if like not in table or like in seen:
        raise SpecError(f"{FAMILIES_FILE}: family '{name}' is like '{like}', which is "
                        + ("not a family" if like not in table else "circular"), None,
                        expected="the name of another family")
    return {**_resolve_like(table, like, seen + (name,)), **entry}


def _load_families() -> dict:
    """The model_type table of specs/hf/families.yaml (project data, loaded safely)."""
    import yaml

    from ..compiler.schema.symbols import DTYPE_BYTES

    raw = yaml.safe_load(FAMILIES_FILE.read_text(encoding="utf-8"))
    ROPE_KINDS.update(raw["rope_kinds"])
    ACTIVATIONS.update(glu=tuple(raw["glu_activations"]), plain=tuple(raw["plain_activations"]))
    MIXERS.update(raw.get("mixers", {}))
    codes = [m.get("code") for m in MIXERS.values()]
    if any(type(c) is not int for c in codes) or len(set(codes)) != len(codes) or set(codes) & {0, 1}:
        raise SpecError(f"{FAMILIES_FILE}: every declared mixer needs its own integer code (0 and 1 are the "
                        "built-in selective_ssm and attention)", None, expected="mixers: {name: {code: N, ...}}")
    WRAPPERS.update(raw.get("wrappers", {}))
    for hf_name, elt in raw["dtypes"].items():
        if elt not in DTYPE_BYTES:
            raise SpecError(f"{FAMILIES_FILE}: dtype {hf_name} maps to '{elt}', not an element type", None,
                            expected=", ".join(sorted(DTYPE_BYTES)))
        DTYPES[hf_name] = elt
    fields = set(Family.__dataclass_fields__)
    families = {}
    for name, entry in raw["families"].items():
        entry = dict(entry)
        entry = _resolve_like(raw["families"], name)
        unknown = set(entry) - fields
        checks = [(entry.get("window", "none"), WINDOW_MODES), (entry.get("ffn", "dense"), FFN_MODES),
                  (entry.get("mixer", "attention"), BUILTIN_MIXERS | set(MIXERS)), (entry.get("norm", "rms"), NORMS),
                  (entry.get("norm_layout", "pre"), NORM_LAYOUTS), (entry.get("mlp", "glu"), {"glu", "plain"})]
        bad = [value for value, allowed in checks if value not in allowed]
        if unknown or bad:
            raise SpecError(f"{FAMILIES_FILE}: family '{name}' has unknown keys {sorted(unknown)} or values {bad}",
                            None, expected=", ".join(sorted(fields)))
        layer_mixers = {e.get("mixer") for e in (entry.get("layers") or {}).get("map", {}).values()}
        layer_mixers |= {(entry.get("layers") or {}).get(k, {}).get("mixer") for k in ("listed", "others", "default")}
        missing = {m for m in layer_mixers if m is not None} - BUILTIN_MIXERS - set(MIXERS)
        if missing:
            raise SpecError(f"{FAMILIES_FILE}: family '{name}' names undeclared mixers {sorted(missing)}", None,
                            expected="a built-in mixer or one declared under mixers:")
        for key in ("unsupported", "activation_fields", "activations", "notes"):
            if key in entry:
                entry[key] = tuple(entry[key])
        if not entry.get("activations"):
            entry["activations"] = ACTIVATIONS[entry.get("mlp", "glu")]
        families[name] = Family(**entry)
    return families


FAMILIES: dict[str, Family] = _load_families()


# ------------------------------------------------------------------ the spec being written
@dataclass
class _Spec:
    dims: list = field(default_factory=list)        # (name, value, comment)
    head_dims: list = field(default_factory=list)   # (dimension, layer condition) of other head widths
    kv_bytes: str = "2*n_kv*{d_h}*ELT"               # one attention layer's K and V per token ({d_h}: its head width)
    kv_sets: list = field(default_factory=list)      # (set, K/V-head factor) of layers with more K/V heads
    sets: list = field(default_factory=list)        # (name, text, comment)
    notes: list = field(default_factory=list)
    summary: list = field(default_factory=list)     # description phrases

    def dim(self, name: str, value, comment: str):
        self.dims.append((name, value, comment))


def _layer_set(indices: list) -> str:
    """A compact layer-set text: a range, a stepped range or a list."""
    if len(indices) >= 3:
        step = indices[1] - indices[0]
        if step > 0 and all(b - a == step for a, b in zip(indices, indices[1:])):
            return f"{indices[0]}..{indices[-1]}" + (f" step {step}" if step != 1 else "")
    return ", ".join(str(i) for i in indices)


def _check_common(cfg: Config, fam: Family, model_type: str):
    for key in fam.activation_fields:
        act = cfg.data.get(key)
        if act is None:
            continue
        if act not in fam.activations:
            kind = "gated (GLU)" if fam.mlp == "glu" else "two-matrix"
            raise cfg.error(key, f"{key} '{act}' is not supported for model_type {model_type} "
                            f"(the blocks model its {kind} feed-forward with these activations)",
                            " or ".join(fam.activations))
        break
    for key in ("rope_scaling", "rope_parameters"):
        rope = cfg.data.get(key)
        if rope is None:
            continue
        if not isinstance(rope, dict):
            raise cfg.error(key, f"'{key}' must be an object or null", "{\"rope_type\": ...}")
        kind = rope.get("rope_type", rope.get("type", "default"))
        if kind not in ROPE_KINDS:
            sub = "rope_type" if "rope_type" in rope else "type"
            raise SpecError(f"unknown {key} type '{kind}': specc cannot tell whether it changes the parameters",
                            cfg.loc(key, sub), span=len(sub) + 2,
                            expected="one of " + ", ".join(sorted(ROPE_KINDS)))
    for key in fam.unsupported:
        if cfg.flag(key):
            raise cfg.error(key, f"'{key}: true' is not supported for model_type {model_type} "
                            "(the library blocks for this family have no such parameters)", "false or absent")
    for key, value in fam.requires.items():
        if isinstance(value, str) and value.startswith("="):      # equal to another field
            other = value[1:]
            if cfg.has(key) and cfg.get(key) != cfg.get(other):
                raise cfg.error(key, f"{key} other than {other} is not supported for model_type {model_type} "
                                f"(the blocks have no projection between {key} and {other})",
                                f"{key} = {other} ({cfg.get(other)})")
            continue
        if cfg.get(key, value) != value:
            raise cfg.error(key, f"{key} other than {json.dumps(value)} is not supported for model_type "
                            f"{model_type} (specs/hf/families.yaml models this family only with {key} = "
                            f"{json.dumps(value)})", json.dumps(value))
    if cfg.has("tie_word_embeddings"):
        cfg.flag("tie_word_embeddings")


# on/off parts of the layer block a family entry switches on, with what each adds (the
# spec's comment); in the order the spec lists them
_ATTENTION_SWITCHES = (("sinks", "one learned attention-sink logit per head"),
                       ("q_gate", "an output gate from a second half of the Q projection"),
                       ("head_gate", "a per-head output gate d→n_q"),
                       ("attn_sub_norm", "a norm over the attention output before O"))
_MOE_SWITCHES = (("router_bias", "the router's E-entry bias"),
                 ("expert_bias", "per-expert biases on gate/up and down"),
                 ("moe_out_bias", "one output bias on the MoE block"))


def _switched(fam, switches) -> list:
    """(block parameter, 1, comment) for each switch the family turns on."""
    return [(name, 1, doc) for name, doc in switches if getattr(fam, name)]


def _window_layers(cfg: Config, fam: Family, L: int, model_type: str) -> tuple[list, int | None]:
    """Which layers attend within a sliding window, and its length (HF's own rules:
    `layer_types` when the config lists them, else every layer, the layers from
    max_window_layers on when use_sliding_window is set, or all but every
    window_period-th layer; the family's mode says which)."""
    if fam.window_types is not None:     # {field, sliding: [names], length: FIELD}
        spec_types = fam.window_types
        types = cfg.get(spec_types["field"])
        if types is None:
            return [], None
        if isinstance(types, list) and spec_types.get("skip"):     # entries that are not layers of their own
            types = [t for t in types if t not in spec_types["skip"]]
        if not isinstance(types, list) or len(types) != L or not all(isinstance(t, str) for t in types):
            raise cfg.error(spec_types["field"], f"{spec_types['field']} must list one type per layer ({L})",
                            f"{L} names")
        sliding = [i for i, t in enumerate(types) if t in spec_types["sliding"]]
        return (sliding, cfg.int(spec_types["length"], family=model_type)) if sliding else ([], None)
    if fam.window == "none" or cfg.data.get("sliding_window") is None:
        return [], None
    if fam.window in ("layer_types_or_max_window", "all_if_enabled") and not cfg.flag("use_sliding_window"):
        return [], None
    window = cfg.int("sliding_window", family=model_type)
    types = cfg.data.get("layer_types")
    if types is not None and fam.window in ("layer_types_or_max_window", "layer_types", "layer_types_or_period"):
        if not isinstance(types, list) or len(types) != L:
            raise cfg.error("layer_types", f"layer_types must list one type per layer ({L})", f"{L} entries")
        known = LAYER_TYPES | set((fam.layers or {}).get("map", {}))    # a hybrid's other layer kinds
        for t in types:
            if t not in known:
                raise cfg.error("layer_types", f"unknown layer type '{t}'", " or ".join(sorted(known)))
        return [i for i, t in enumerate(types) if t == "sliding_attention"], window
    if fam.window == "layer_types_or_max_window":
        first = cfg.int("max_window_layers", 0, minimum=0, maximum=MAX_LAYERS)
        return [i for i in range(L) if i >= first], window
    if fam.window == "layer_types_or_period":
        period = cfg.rule_int(fam.window_period, family=model_type)
        return [i for i in range(L) if (i + 1) % period], window
    if fam.window == "layer_types":
        return [], None
    return list(range(L)), window


# ------------------------------------------------------------------ import
def _text_model(cfg: Config) -> str | None:
    """Descend into a wrapper config's text model (a multimodal checkpoint's text_config):
    the model_type of the wrapper, or None when the config is not a wrapper."""
    text = cfg.data.get("text_config")
    outer = cfg.data.get("model_type")
    if not isinstance(text, dict) or (isinstance(outer, str) and outer in FAMILIES):
        return None
    if "model_type" not in text:
        inner = WRAPPERS.get(outer) if isinstance(outer, str) else None
        if inner is None:
            raise cfg.error("text_config", "the text_config of this wrapper config names no model_type",
                            "a text_config with a model_type, or a wrappers: entry in specs/hf/families.yaml")
        text = dict(text, model_type=inner)
    cfg.data = dict(cfg.data, text_config=text)
    cfg.enter("text_config")
    return outer


def _unknown_type(cfg: Config, model_type) -> SpecError:
    shown = json.dumps(model_type).replace('"', "'")
    return cfg.error("model_type", f"unknown model_type {shown}: no entry in specs/hf/families.yaml. A family "
                     "is data: add an entry naming its layer's parts (docs/writing-specs.md, 'Adding a Hugging "
                     "Face family'); a family with the layers of a known one can start from it with "
                     "`like: <model_type>` and list only what differs",
                     "a supported model_type: " + ", ".join(sorted(FAMILIES)))


def import_config(path: str, name: str | None = None, out_path: str | None = None) -> str:
    """The spec YAML text for the config at `path` (a config.json or a model folder).

    The spec is built as a structure and written with yaml.safe_dump; comments are
    added only after the dimensions' lines, from text without line breaks, and the
    result is parsed back and compared with the structure (a config value can never
    change the spec's meaning)."""
    path = _model_config(path)
    cfg = Config(path)
    wrapper = _text_model(cfg)
    model_type = cfg.data.get("model_type")
    if model_type is None:
        raise SpecError("config has no 'model_type'", Loc(cfg.path, 1, 1),
                        expected="one of " + ", ".join(sorted(FAMILIES)))
    if not isinstance(model_type, str) or model_type not in FAMILIES:
        raise _unknown_type(cfg, model_type)
    fam = FAMILIES[model_type]
    cfg.aliases = dict(fam.fields)
    cfg.defaults = dict(fam.defaults)
    _check_common(cfg, fam, model_type)

    here = Path(path).resolve()
    model_name = name or cfg.get("_name_or_path") or (here.parent.name if here.name == "config.json" else here.stem)
    spec = _Spec()
    d = cfg.int("hidden_size", family=model_type)
    if fam.layer_count == "num_hidden_layers":
        L = cfg.int("num_hidden_layers", family=model_type, maximum=MAX_LAYERS)
    else:
        L = cfg.rule_int(fam.layer_count, family=model_type)
        if L > MAX_LAYERS:
            raise cfg.error(cfg.rule(fam.layer_count)[1] or "num_hidden_layers", f"{L} layers", f"at most {MAX_LAYERS}")
    V = cfg.int("vocab_size", family=model_type)
    spec.dim("d", d, cfg.name("hidden_size"))
    spec.dim("L", L, cfg.name("num_hidden_layers") if fam.layer_count == "num_hidden_layers"
             else _rule_text(cfg, fam.layer_count))
    spec.dim("V", V, cfg.name("vocab_size"))
    if fam.tie_rule is not None:    # a family whose model ties (or not) whatever tie_word_embeddings says
        tied = cfg.rule_flag(fam.tie_rule)
    else:
        tied = cfg.flag("tie_word_embeddings") if cfg.has("tie_word_embeddings") else fam.tied
    if wrapper:
        spec.notes.append(f"The config is a {wrapper} wrapper; its text model (text_config, model_type "
                          f"{model_type}) is imported. The wrapper's other towers (vision, audio) and their "
                          "projectors are not counted.")
    segments, stores, options = _decoder(cfg, fam, model_type, spec, d, L)

    dtype = cfg.get("torch_dtype", cfg.get("dtype", "bfloat16"))
    if not isinstance(dtype, str) or dtype not in DTYPES:
        key = "torch_dtype" if cfg.has("torch_dtype") else "dtype"
        raise cfg.error(key, f"unknown {key} {json.dumps(dtype)}", " or ".join(sorted(DTYPES)))
    elt = DTYPES[dtype]
    quant = quant_format(cfg)
    max_ctx = cfg.get("max_position_embeddings")
    positions = 0
    if fam.positions is not None:
        positions = cfg.rule_int(fam.positions, family=model_type)
        spec.dim("n_pos", positions, f"{fam.positions} (learned position table)")

    archs = cfg.get("architectures", [])
    archs = ", ".join(a for a in archs if isinstance(a, str)) if isinstance(archs, list) else ""
    doc: dict = {"model": str(model_name),
                 "source": f"Hugging Face config.json ({model_type}, {archs or 'no architectures field'})",
                 "description": _description(model_type, tied, spec, L, d, V),
                 "imports": list(LIB_IMPORTS),
                 "dims": {n: v for n, v, _ in spec.dims}}
    if isinstance(max_ctx, int) and not isinstance(max_ctx, bool) and max_ctx > 0:
        doc["max_context"] = max_ctx
    if spec.sets:
        doc["sets"] = {n: t for n, t, _ in spec.sets}
    doc["options"] = {
        "head": {"doc": "rows the vocabulary head runs on (Hugging Face computes logits for every position)",
                 "default": "last",
                 "choices": {"last": {"head_rows": "B"}, "all": {"head_rows": "M"}, "none": {"head_rows": 0}}},
        "attention": {"doc": "effective: count the query-key pairs attention needs (causal, or within the "
                             "sliding window); rectangle: count the full P·(S+P) rectangle a masked attention "
                             "kernel computes (the convention of PyTorch's FlopCounterMode, used by specc "
                             "crosscheck)",
                      "default": "effective", "choices": {"effective": {"rect": 0}, "rectangle": {"rect": 1}}},
        **options}
    formats = {elt: {"doc": f"{dtype} weights and state (torch_dtype)", "weights": {"default": elt}}}
    if quant is None:
        formats[elt] = {"default": True, **formats[elt]}
    elif getattr(quant, "scheme", None):
        # counted per matrix by specs/formats/schemes.yaml (codes, scales, zero points); the
        # other tensors stay in the checkpoint's dtype
        qname, rate, qdoc, groups = quant
        formats[qname] = {"default": True,
                          "doc": f"{qdoc} (quantization_config): the matrices of {', '.join(groups)} in scheme "
                                 f"{quant.scheme} (codes, scales and zero points counted per matrix); embeddings, "
                                 f"head, norms, biases and routers stay {dtype}; state "
                                 + (f"in KV scheme {quant.kv}" if quant.kv else dtype),
                          "scheme": quant.scheme, **({"kv": quant.kv} if quant.kv else {}),
                          "weights": {"default": elt}}
    else:
        qname, rate, qdoc, groups = quant
        rate_value = rate.numerator if rate.denominator == 1 else f"{rate.numerator}/{rate.denominator}"
        formats[qname] = {"default": True,
                          "doc": f"{qdoc} (quantization_config), in the parameter groups {', '.join(groups)} "
                                 f"(a bias at its matrix's rate); the other groups (embeddings, head, norms, "
                                 f"routers) stay {dtype}; state {dtype}",
                          "weights": {"default": elt, **{g: rate_value for g in groups}}}
    doc["formats"] = formats
    doc["stores"] = {n: dict(st, bytes={"default": st["bytes"].replace("ELT", elt)}) for n, st in stores.items()}
    head = {"d": "d", "V": "V", "rows": "head_rows"}
    if fam.norm == "layernorm":
        head["norm_bias"] = 1
    if fam.norm == "none":
        head["norm_weight"] = 0
    if not fam.final_norm:
        head["norm"] = 0
    if fam.head_dense:
        head["dense"] = 1
    if fam.head_scale:
        head["scale"] = 1
    if tied:
        head["tied"] = 1
    if cfg.rule_flag(fam.head_bias):
        head["head_bias"] = 1
    if fam.final_softcap and cfg.get(fam.final_softcap) is not None:
        head["softcap"] = 1
        spec.notes.append(f"The logits are soft-capped at {cfg.get(fam.final_softcap)} ({fam.final_softcap}): "
                          "scalar work, no parameters.")
    embed = {"V": "V", "d": "d"} | ({"positions": "n_pos"} if positions else {})
    if fam.embed_norm:
        embed |= {"norm": 1, "norm_bias": 1 if fam.norm == "layernorm" else 0}
    for dim, rule in fam.extra_dims.items():         # dimensions only the family's expressions use
        spec.dim(dim, cfg.rule_int(rule, minimum=0, family=model_type), _rule_text(cfg, rule))
    if fam.embed_extra:
        embed |= {"extra_rows": fam.embed_extra.get("rows", 0), "extra_tables": fam.embed_extra.get("tables", 0)}
    if any(n == "altup" for n, _, _ in spec.dims):     # the other AltUp streams: made from the embedding, merged at the head
        embed["streams"] = "altup"
        head["streams"] = "altup"
    doc["dims"] = {n: v for n, v, _ in spec.dims}
    if fam.per_layer_inputs and cfg.has(fam.per_layer_inputs["width"]):
        pl = fam.per_layer_inputs
        spec.dim("pl_width", cfg.int(pl["width"]), cfg.name(pl["width"]))
        spec.dim("pl_vocab", cfg.int(pl["vocab"]), cfg.name(pl["vocab"]))
        embed |= {"pl_vocab": "pl_vocab", "pl_width": "pl_width", "layers": "L"}
        segments[0]["with"]["pl_width"] = "pl_width"
        doc["dims"] = {n: v for n, v, _ in spec.dims}
    doc["stack"] = ([{"name": "embed", "block": "hf_embedding", "with": embed}] + segments
                    + [{"name": "head", "block": "hf_lm_head", "with": head}])
    if quant is None and cfg.has("quantization_config"):
        spec.notes.append("The checkpoint is quantized; parameter counts are logical (unpacked).")
    if quant is not None:
        spec.notes.append(f"The checkpoint is quantized (format {quant[0]}, the default); parameter counts "
                          "are logical (unpacked) and weight bytes follow the format.")
    spec.notes.append("params() counts what the checkpoint stores: the parameters and the persistent buffers "
                      "transformers saves with them (e.g. a router's score-correction bias); transformers' "
                      "num_parameters() counts parameters only.")
    doc["notes"] = " ".join(spec.notes)
    shown = "/".join(Path(path).parts[-2:])
    return _dump(doc, spec, f"Generated by `specc import-hf` from {shown} (model_type: {model_type}).")


def _comment(text: str) -> str:
    """A YAML comment that stays one comment whatever the text holds (no line breaks)."""
    return "# " + "".join(ch if ch.isprintable() else " " for ch in str(text))


def _dump(doc: dict, spec: _Spec, header: str) -> str:
    """The spec's YAML text: yaml.safe_dump of `doc`, each dimension's line and each
    layer set's line followed by a comment naming the config field it came from."""
    import yaml

    text = yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=96, default_flow_style=False)
    notes = {("dims", n): c for n, _, c in spec.dims} | {("sets", n): c for n, _, c in spec.sets}
    out, section = [], None
    lines = text.splitlines() + [""]
    for line, after in zip(lines, lines[1:]):
        if line and not line.startswith(" "):
            section = line.split(":", 1)[0]
        comment = None
        # a key's own line, its value complete on it (a long value continues on deeper lines)
        if line.startswith("  ") and not line.startswith("   ") and not after.startswith("   ") \
                and section in ("dims", "sets"):
            key = line[2:].split(":", 1)[0]
            comment = notes.get((section, key))
        out.append(f"{line}   {_comment(comment)}" if comment else line)
    result = "\n".join([_comment(header), _comment("Every dimension is a config value; the comment names "
                                                     "the field it came from.")] + out) + "\n"
    if yaml.safe_load(result) != doc:     # a comment may never change what the spec says
        raise AssertionError("import-hf wrote YAML that does not read back as the spec it built")
    return result


def _model_config(path: str) -> str:
    """The config.json of `path`: the file itself, or the one in a model folder (a snapshot)."""
    p = Path(path)
    if p.is_dir():
        inner = p / "config.json"
        if not inner.is_file():
            raise SpecError(f"model folder {path} has no config.json", Loc(str(p), 1, 1),
                            expected="a folder holding a Hugging Face config.json, or the file itself")
        return str(inner)
    return str(p)


def _rule_text(cfg: Config, rule) -> str:
    """Where a rule's value comes from, for the dimension's comment."""
    if isinstance(rule, str):
        return cfg.name(rule)
    if not isinstance(rule, dict):
        return "the family's rule"
    if "field" in rule and "divide" in rule:
        return f"{cfg.name(rule['field'])} / {rule['divide']}"
    if "field" in rule and "times" in rule:
        return f"{cfg.name(rule['field'])} × {rule['times']}"
    if "field" in rule:
        key = rule["field"] if isinstance(rule["field"], str) else cfg.rule(rule)[1]
        if cfg.has(key):
            return cfg.name(key) + (f" + {rule['plus']}" if "plus" in rule else "")
        if "default_times_hidden" in rule:
            return f"{cfg.name(key)} (absent: {rule['default_times_hidden']} × hidden_size)"
        return f"{cfg.name(key)} (absent: {rule.get('default')})"
    if "times_hidden" in rule:
        return f"{cfg.name(rule['times_hidden'])} × {cfg.name('hidden_size')}"
    if "hidden_per" in rule:
        return f"{rule.get('times', 1)} × {cfg.name('hidden_size')} / {cfg.name(rule['hidden_per'])}"
    if "product" in rule:
        return " × ".join(cfg.name(k) for k in rule["product"])
    if "auto_ffn" in rule:
        return f"{cfg.name(rule['auto_ffn']['size'])} (⅔·size FFN sizing: {', '.join(rule['auto_ffn'].values())})"
    if "length" in rule:
        return f"the length of {cfg.name(rule['length'])}"
    if "scale_hidden" in rule:
        return f"{cfg.name(rule['scale_hidden'])} × {cfg.name('hidden_size')}" + (
            f", rounded up to a multiple of {cfg.name(rule['multiple_of'])}" if "multiple_of" in rule else "")
    return "the family's rule"


def _description(model_type, tied, spec, L, d, V) -> str:
    parts = [f"{model_type} decoder imported from its Hugging Face configuration:",
             f"{L} layers of width {d},"] + spec.summary
    parts.append(f"{'tied' if tied else 'untied'} vocabulary of {V}.")
    return " ".join(parts)


def _placement(cfg: Config, rule: dict, L: int, model_type: str) -> list:
    """Layers i with i % period == offset (a hybrid family's placement fields)."""
    period = cfg.int(rule["period"], family=model_type, maximum=MAX_LAYERS)
    offset = cfg.int(rule["offset"], family=model_type, minimum=0, maximum=MAX_LAYERS)
    if offset >= period:
        raise cfg.error(rule["offset"], f"'{rule['offset']}' {offset} is not below '{rule['period']}' {period}",
                        f"an offset from 0 to {period - 1}")
    return [i for i in range(L) if i % period == offset]


def _attention_dims(cfg, fam, model_type, spec, d, L, items):
    """n_q, n_kv, d_h, rotary width, QK norms, biases, soft-cap and sinks; returns the window bindings."""
    n_q = cfg.int("num_attention_heads", family=model_type)
    kv_rule = fam.kv_heads if fam.kv_heads is not None else {"field": "num_key_value_heads", "default": n_q}
    n_kv, kv_field = cfg.rule(kv_rule, n_q)
    if kv_field is not None and cfg.get(kv_field) is not None:
        n_kv = cfg.int(kv_field, family=model_type)
    if n_kv > n_q or n_q % n_kv:
        key = kv_field or "num_attention_heads"
        raise cfg.error(key, f"{n_kv} key/value heads do not divide {n_q} attention heads "
                        "(grouped-query attention shares each K/V head among an equal number of query heads)",
                        f"a divisor of {n_q}")
    spec.dim("n_q", n_q, cfg.name("num_attention_heads"))
    spec.dim("n_kv", n_kv, cfg.name(kv_field) if kv_field and cfg.has(kv_field)
             else f"{kv_field or 'model_type'} (absent: the family's rule gives {n_kv})")
    if cfg.has("head_dim"):
        d_h = cfg.int("head_dim")
        spec.dim("d_h", d_h, "head_dim")
    else:
        d_h = d // n_q         # transformers' hidden_size // num_attention_heads
        if d % n_q:
            spec.notes.append(f"hidden_size {d} is not divisible by {n_q} heads and the config has no head_dim: "
                              f"transformers' head_dim is the floor, {d_h}.")
        spec.dim("d_h", d_h, "hidden_size / num_attention_heads (no head_dim field)")
    items += [("n_q", "n_q", ""), ("n_kv", "n_kv", "")]
    # per-layer head widths (a per_layer_config: {"05": {"head_dim": 512}, ...})
    spec.head_dims = []
    if fam.per_layer_config and cfg.has(fam.per_layer_config):
        key = fam.per_layer_config
        table = cfg.get(key)
        if not isinstance(table, dict):
            raise cfg.error(key, f"'{key}' must map layer indices to field overrides", '{"05": {"head_dim": 512}}')
        widths = {}
        for index, over in table.items():
            if not (isinstance(index, str) and index.isdigit() and int(index) < L and isinstance(over, dict)):
                raise cfg.error(key, f"'{key}' has an entry {json.dumps(index)} that is not a layer index below {L}",
                                "layer indices as strings")
            unknown = set(over) - {"head_dim"}
            if unknown:
                raise cfg.error(key, f"'{key}' overrides {sorted(unknown)} in layer {index}; the blocks model a "
                                "per-layer head_dim only", "head_dim overrides")
            value = over.get("head_dim", d_h)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise cfg.error(key, f"layer {index}'s head_dim must be a positive integer", "an integer")
            if value != d_h:
                widths.setdefault(value, []).append(int(index))
        binding = "d_h"
        for j, (value, layers) in enumerate(sorted(widths.items()), start=2):
            spec.dim(f"d_h{j}", value, f"{key} head_dim (layers {_layer_set(sorted(layers))})")
            spec.sets.append((f"head_dim{j}_layers", _layer_set(sorted(layers)), f"layers whose head_dim is {value}"))
            spec.head_dims.append((f"d_h{j}", f"layer in head_dim{j}_layers"))
            binding = f"if(layer in head_dim{j}_layers, d_h{j}, {binding})"
        items.append(("d_h", binding, ""))
    else:
        items.append(("d_h", "d_h", ""))
    spec.kv_bytes = "2*n_kv*{d_h}*ELT"
    if fam.v_head_dim is not None and cfg.rule(fam.v_head_dim)[0] is not None:
        d_v = cfg.rule_int(fam.v_head_dim, family=model_type)
        if d_v != d_h:
            spec.dim("d_v", d_v, _rule_text(cfg, fam.v_head_dim) + " (value heads narrower than the query/key heads)")
            items.append(("d_v", "d_v", ""))
            spec.kv_bytes = "n_kv*({d_h} + d_v)*ELT"
    # partial rotary: HF rotates int(fraction · head_dim) features of each head
    fraction, rot_field = cfg.rule(fam.rotary, 1)
    if rot_field is not None:
        fraction = cfg.number(rot_field, fraction)
    if fraction is False or fraction == 0:
        items.append(("rot", 0, "no rotary positions" + (f" ({rot_field})" if rot_field else "")))
    elif int(fraction * d_h) != d_h:
        spec.dim("rot", int(fraction * d_h), f"int({rot_field} × d_h): rotary features per head")
        items.append(("rot", "rot", "partial rotary"))
    qk = cfg.rule_flag(fam.qk_norm)
    if qk:
        items.append(("qk_norm", 1 if fam.qk_norm_width == "head" else 2,
                      "QK norms over each head's d_h" if fam.qk_norm_width == "head"
                      else "QK norms over the full Q and K widths"))
        if fam.qk_norm_bias:
            items.append(("qk_norm_bias", 1, "the QK norms are LayerNorms with bias"))
    for key, rule, what in (("qkv_bias", fam.qkv_bias, "biases on q/k/v"), ("o_bias", fam.o_bias,
                                                                             "bias on the output projection")):
        if cfg.rule_flag(rule):
            source = rule if isinstance(rule, str) else (rule.get("field") if isinstance(rule, dict)
                                                         else f"always, in {model_type}")
            items.append((key, 1, f"{what} ({source})"))
    if fam.fused_qkv:
        items.append(("fused_qkv", 1, "one fused QKV projection"))
    if fam.attn_softcap and cfg.get(fam.attn_softcap) is not None:
        items.append(("attn_softcap", 1, f"{fam.attn_softcap} = {cfg.get(fam.attn_softcap)}"))
    items.extend(_switched(fam, _ATTENTION_SWITCHES))
    if fam.attn_extra:
        items.append(("attn_extra", fam.attn_extra, "learned scalars inside the attention"))
    sliding, window = _window_layers(cfg, fam, L, model_type)
    if window is None:
        return None
    spec.dim("sliding_window", window, "sliding_window")
    if len(sliding) == L:
        return ("window", "sliding_window", "every layer attends within the window")
    source = {"layer_types_or_period": "layer_types, or all but every window_period-th layer",
              "layer_types": "layer_types"}.get(fam.window, "layers from max_window_layers on")
    if not sliding:
        return None
    spec.sets.append(("sliding_layers", _layer_set(sliding), f"sliding-window layers ({source})"))
    return ("window", "if(layer in sliding_layers, sliding_window, oo)", "oo: full causal attention")


def _ssm_dims(cfg, fam, model_type, spec, d, items):
    s = fam.ssm
    N = cfg.rule_int(s["state"], family=model_type)
    d_conv = cfg.rule_int(s["conv"], family=model_type)
    d_in, d_in_field = cfg.rule(s["d_in"], 0)
    if d_in:
        d_in = cfg.int(d_in_field, family=model_type)
        d_in_src = d_in_field
    else:
        expand = cfg.rule_int(s["expand"], family=model_type)
        d_in, d_in_src = expand * d, f"{s['expand']} × hidden_size"
    dt_rank, dt_field = cfg.rule(s["dt_rank"])
    if dt_rank == "auto":
        dt_rank, dt_src = math.ceil(d / 16), f"{dt_field} auto: ceil(hidden_size / 16)"
    else:
        dt_rank, dt_src = cfg.int(dt_field, family=model_type), dt_field
    spec.dim("d_in", d_in, d_in_src)
    spec.dim("N", N, f"{s['state']} (SSM state per channel)")
    spec.dim("d_conv", d_conv, f"{s['conv']} (causal conv kernel)")
    spec.dim("dt_rank", dt_rank, dt_src)
    items += [("d_in", "d_in", ""), ("N", "N", ""), ("d_conv", "d_conv", ""), ("dt_rank", "dt_rank", "")]
    if not cfg.rule_flag(s["conv_bias"], True):
        items.append(("conv_bias", 0, "no conv bias"))
    if cfg.rule_flag(s["proj_bias"]):
        items.append(("proj_bias", 1, "in_proj/out_proj biases"))
    if s.get("inner_norms"):
        items.append(("inner_norms", s["inner_norms"], "RMSNorms on Δ, B, C" +
                      (" (with weights)" if s["inner_norms"] == 1 else " (without weights)")))
    spec.summary.append(f"selective-SSM mixers (d_in {d_in}, state {N}, conv {d_conv}, dt rank {dt_rank}),")


def _ffn_kinds(cfg: Config, fam: Family, model_type: str, L: int) -> list:
    """'dense', 'moe' or 'none' for each layer, by the family's declared rule."""
    if fam.ffn == "none":
        return ["none"] * L
    if fam.ffn != "moe":
        return ["dense"] * L
    rule = fam.moe_layers
    if rule is not None and "period" in rule:
        moe = set(_placement(cfg, rule, L, model_type))
        return ["moe" if i in moe else "dense" for i in range(L)]
    if rule is not None and "list" in rule and cfg.has(rule["list"]):
        values = cfg.get(rule["list"])
        if not isinstance(values, list) or not all(type(i) is int and 0 <= i < L for i in values):
            raise cfg.error(rule["list"], f"'{cfg.name(rule['list'])}' must list layer indices below {L}",
                            "a JSON list of layer indices")
        return ["moe" if i in values else "dense" for i in range(L)]
    if rule is not None and "types" in rule and cfg.has(rule["types"]):
        values = cfg.get(rule["types"])
        if not isinstance(values, list) or len(values) != L or not all(isinstance(v, str) for v in values):
            raise cfg.error(rule["types"], f"'{cfg.name(rule['types'])}' must list one FFN type per layer ({L})",
                            f"a JSON list of {L} names")
        return ["moe" if v in rule["moe"] else "dense" for v in values]
    if rule is not None and ("first_dense" in rule or "every" in rule):
        # MoE when first_dense <= i <= last and (i + phase) % every == 0
        first = cfg.rule_int(rule.get("first_dense", 0), 0, minimum=0, family=model_type)
        last = cfg.rule_int(rule.get("last", L - 1), L - 1, minimum=0, family=model_type)
        every = cfg.rule_int(rule.get("every", 1), 1, family=model_type)
        phase = rule.get("phase", 0)
        if first > L:
            key = cfg.name(cfg.rule(rule["first_dense"])[1])
            raise cfg.error(key, f"{key} {first} exceeds num_hidden_layers {L}", f"at most {L}")
        return ["moe" if first <= i <= last and (i + phase) % every == 0 else "dense" for i in range(L)]
    if rule is not None:        # a list or type field the config omits: every layer is MoE
        return ["moe"] * L
    if fam.sparse_step or cfg.has("mlp_only_layers") or cfg.has("decoder_sparse_step"):
        only = cfg.get("mlp_only_layers", [])
        step = cfg.int("decoder_sparse_step", 1, maximum=MAX_LAYERS)
        if not isinstance(only, list) or any(isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < L
                                             for i in only):
            raise cfg.error("mlp_only_layers", "mlp_only_layers must list layer indices", f"integers in 0..{L - 1}")
        return ["dense" if (i in only or (i + 1) % step) else "moe" for i in range(L)]
    return ["moe"] * L


def _reused_block(cfg: Config, fam: Family, model_type: str, spec: _Spec, d: int, L: int, items: list,
                  state: list, stores: dict):
    """A block whose weights are stored once (or in `copies` sets used in turn) and applied
    at the layers a per-layer list names, each application with its own adapters and
    output projection (hf_reused_block); each application caches its own K/V. Keys:
      at: {types: FIELD, names: [NAMES]}   the layers that apply it
      copies: RULE                         weight sets, the i-th application using set i mod copies [1]
      shared_if_tied: true                 shared only when the config ties weights (tie_word_embeddings);
                                           otherwise every application holds its own
      with_embedding: true                 its input is the hidden state and the embedding output (2·d)
      input_width: FIELD                   the config's statement of that width (checked)
      heads, kv_heads, head_dim, ffn: RULEs  its attention and MLP
      qkv_adapters, ffn_adapter: RULEs     per-application adapters; adapter_rank: RULE their rank
      adapter_slots: RULE                  the adapter slots the model allocates [one per application]"""
    rb = fam.reused_block
    key = rb["at"]["types"]
    names = cfg.get(key)
    if not isinstance(names, list) or len(names) != L or not all(isinstance(n, str) for n in names):
        raise cfg.error(key, f"'{cfg.name(key)}' must give one layer type per layer ({L})", f"a list of {L} names")
    layers = [i for i, n in enumerate(names) if n in rb["at"]["names"]]
    if not layers:
        return
    sets = cfg.rule_int(rb.get("copies", 1), 1, family=model_type)
    copies = min(sets, len(layers))
    if rb.get("shared_if_tied"):     # the applications share weights only in a model that ties weights
        tied = cfg.flag("tie_word_embeddings") if cfg.has("tie_word_embeddings") else fam.tied
        copies = copies if tied else len(layers)
    # adapter slots: one per application (or as many as the config's list of them says); weight set b
    # holds the slots i with i % sets == b, and each layer holding a copy of set b holds them all
    slot_rule = rb.get("adapter_slots")
    slot_field = slot_rule.get("length") if isinstance(slot_rule, dict) else slot_rule
    slots = cfg.rule_int(slot_rule, family=model_type) if slot_rule and cfg.has(slot_field) else len(layers)
    per_set = [sum(1 for i in range(slots) if i % sets == b) for b in range(sets)]
    held = {layers[j]: per_set[j % sets] for j in range(copies)}
    ins = 2 if rb.get("with_embedding") else 1
    if rb.get("input_width") and cfg.has(rb["input_width"]) and cfg.int(rb["input_width"]) != ins * d:
        raise cfg.error(rb["input_width"], f"'{cfg.name(rb['input_width'])}' {cfg.int(rb['input_width'])} is not "
                        f"{ins} × hidden_size: the reused block's input is {'the hidden state and the embedding' if ins == 2 else 'the hidden state'}",
                        str(ins * d))
    n_q = cfg.rule_int(rb["heads"], family=model_type)
    n_kv = cfg.rule_int(rb["kv_heads"], n_q, family=model_type)
    if n_kv > n_q or n_q % n_kv:
        raise cfg.error(cfg.rule(rb["kv_heads"])[1] or "num_key_value_heads",
                        f"{n_kv} key/value heads do not divide {n_q} attention heads", f"a divisor of {n_q}")
    d_h = cfg.rule_int(rb["head_dim"], family=model_type)
    f = cfg.rule_int(rb["ffn"], family=model_type)
    qkv_ad = cfg.rule_flag(rb.get("qkv_adapters", False))
    ffn_ad = cfg.rule_flag(rb.get("ffn_adapter", False))
    for name, value, rule in (("ru_q", n_q, rb["heads"]), ("ru_kv", n_kv, rb["kv_heads"]),
                              ("ru_dh", d_h, rb["head_dim"]), ("ru_f", f, rb["ffn"])):
        spec.dim(name, value, _rule_text(cfg, rule) + " (the reused block)")
    items += [("reuse", "if(layer in reused_layers, 1, 0)", "layers that apply the reused block"),
              ("reuse_owner", "if(layer in reuse_owner_layers, 1, 0)", "the applications that hold its weights"),
              ("ru_in", ins, ""), ("ru_q", "ru_q", ""), ("ru_kv", "ru_kv", ""), ("ru_dh", "ru_dh", ""), ("ru_f", "ru_f", "")]
    if qkv_ad or ffn_ad:
        rank = cfg.rule_int(rb["adapter_rank"], family=model_type)
        spec.dim("ru_rank", rank, _rule_text(cfg, rb["adapter_rank"]) + " (per-application adapters)")
        items += [("ru_rank", "ru_rank", ""), ("ru_qkv_adapters", 1 if qkv_ad else 0, ""),
                  ("ru_ffn_adapter", 1 if ffn_ad else 0, "")]
        expr = "0"
        for count in sorted(set(held.values())):
            name = "reuse_owner_layers" if len(set(held.values())) == 1 else f"reuse_adapters{count}_layers"
            if name != "reuse_owner_layers":
                spec.sets.append((name, _layer_set([i for i, c in held.items() if c == count]),
                                  f"layers holding {count} adapter sets of the reused block"))
            expr = f"if(layer in {name}, {count}, {expr})"
        items.append(("ru_adapters", expr, "adapter sets each layer's copy of the weights holds"))
    spec.sets.append(("reused_layers", _layer_set(layers), f"layers that apply the reused block ({cfg.name(key)})"))
    spec.sets.append(("reuse_owner_layers", _layer_set(layers[:copies]),
                      f"the first application of each of its {copies} weight set(s)"))
    state.append({"store": "reused_kv", "entries": "H", "when": "layer in reused_layers"})
    stores["reused_kv"] = {"tags": ["kv"], "doc": "K and V of each application of the reused block, per cached token",
                           "bytes": "2*ru_kv*ru_dh*ELT", "shard": "ru_kv"}
    spec.summary.append(f"a transformer block stored {'once' if copies == 1 else f'{copies} times'} and applied at "
                        f"{len(layers)} layers ({n_q} query / {n_kv} KV heads of {d_h}, MLP {f}"
                        + (", per-application adapters" if qkv_ad or ffn_ad else "") + "),")


def _ffn_widths(cfg: Config, fam: Family, model_type: str, spec: _Spec, L: int, what: str) -> str:
    """The dense FFN width as a binding: one dimension f, or, when the config gives one width
    per layer (a list), f for the first layer's width and f2, f3, … with their layer sets."""
    value, key = cfg.rule(fam.ffn_width)
    if not isinstance(value, list):
        f = cfg.rule_int(fam.ffn_width, family=model_type)
        spec.dim("f", f, _rule_text(cfg, fam.ffn_width) + what)
        return "f"
    if len(value) != L or any(isinstance(v, bool) or not isinstance(v, int) or v < 1 for v in value):
        raise cfg.error(key, f"'{cfg.name(key)}' must give one positive integer width per layer ({L})",
                        f"an integer or a list of {L} integers")
    spec.dim("f", value[0], f"{cfg.name(key)} (layer 0" + (")" if len(set(value)) > 1 else ", every layer)") + what)
    expr = "f"
    for j, width in enumerate(sorted(set(value) - {value[0]}), start=2):
        layers = [i for i, v in enumerate(value) if v == width]
        spec.dim(f"f{j}", width, f"{cfg.name(key)} (layers {_layer_set(layers)})")
        spec.sets.append((f"ffn_width{j}_layers", _layer_set(layers), f"layers whose FFN width is {width}"))
        expr = f"if(layer in ffn_width{j}_layers, f{j}, {expr})"
    return expr


def _declared_mixer(cfg: Config, fam: Family, mixer: dict, model_type: str, spec: _Spec, items: list,
                    stores: dict, options: dict):
    """A mixer declared in families.yaml `mixers:` (a layer template): its dimensions
    read by rules (a family's mixer_dims replace some), its switches (flags: a block
    parameter set to 1 when the rule is true), its block bindings, stores and options."""
    values = {}
    for dim, rule in {**mixer.get("dims", {}), **fam.mixer_dims}.items():
        value = cfg.rule_int(rule, minimum=0, family=model_type)
        values[dim] = value
        spec.dim(dim, value, _rule_text(cfg, rule))
    for key, value in mixer.get("with", {}).items():
        items.append((key, value, ""))
    for key, rule in mixer.get("flags", {}).items():
        items.append((key, 1 if cfg.rule_flag(rule) else 0, ""))
    for name, store in mixer.get("stores", {}).items():
        stores[name] = dict(store)
    options.update(mixer.get("options", {}))
    spec.summary.append(mixer["summary"].format(**values) + ",")


BUILTIN_CODES = {"attention": 1, "selective_ssm": 0}
SET_NAMES = {"attention": "attn_layers"}


def _layer_kinds(cfg: Config, fam: Family, model_type: str, L: int) -> tuple[list, list]:
    """The mixer of each layer, and each layer's FFN kind where the layer list fixes it
    (None: the family's FFN rule decides). `layers:` forms (families.yaml):
      {types: FIELD, map: {NAME: {mixer, ffn}}}      a per-layer list of names, or a string
                                                      of one character per layer
      {list: FIELD, listed: {mixer}, others: {mixer}} the listed layer indices
      {every: FIELD, listed: {mixer}, others: {mixer}} layers i with (i + 1) % every == 0
    each with `default: {mixer}` for a config that omits the field."""
    rule = fam.layers
    if fam.mixer == "attention_or_ssm":
        attn = set(_placement(cfg, fam.attn_layers, L, model_type))
        return ["attention" if i in attn else "selective_ssm" for i in range(L)], [None] * L
    if rule is None:
        return [fam.mixer] * L, [None] * L
    entries = None
    if "types" in rule and cfg.has(rule["types"]):
        key = rule["types"]
        values = cfg.get(key)
        names = list(values) if isinstance(values, str) else values
        if not isinstance(names, list) or len(names) != L:
            raise cfg.error(key, f"'{cfg.name(key)}' must give one layer type per layer ({L})",
                            f"a list of {L} names or a string of {L} characters")
        for name in names:
            if not isinstance(name, str) or name not in rule["map"]:
                raise cfg.error(key, f"unknown layer type {json.dumps(name)} in '{cfg.name(key)}' for model_type "
                                f"{model_type}", " or ".join(sorted(rule["map"])))
        entries = [rule["map"][name] for name in names]
    elif "cycle" in rule and cfg.has(rule["cycle"]):      # a pattern repeated over the layers
        key = rule["cycle"]
        names = cfg.get(key)
        if not isinstance(names, list) or not names or not all(isinstance(n, str) and n in rule["map"] for n in names):
            raise cfg.error(key, f"'{cfg.name(key)}' must list layer types that repeat over the layers",
                            " or ".join(sorted(rule["map"])))
        entries = [rule["map"][names[i % len(names)]] for i in range(L)]
    elif "list" in rule and cfg.has(rule["list"]):
        key = rule["list"]
        values = cfg.get(key)
        if not isinstance(values, list) or not all(type(i) is int and 0 <= i < L for i in values):
            raise cfg.error(key, f"'{cfg.name(key)}' must list layer indices below {L}", "a JSON list")
        entries = [rule["listed"] if i in values else rule["others"] for i in range(L)]
    elif "every" in rule and cfg.has(rule["every"]):
        every = cfg.int(rule["every"], family=model_type, maximum=MAX_LAYERS)
        entries = [rule["listed"] if (i + 1) % every == 0 else rule["others"] for i in range(L)]
    else:
        entries = [rule.get("default", {"mixer": fam.mixer})] * L
    return [e.get("mixer", fam.mixer) for e in entries], [e.get("ffn") for e in entries]


def _mixer_code(kind: str):
    return BUILTIN_CODES[kind] if kind in BUILTIN_CODES else MIXERS[kind]["code"]


def _decoder(cfg: Config, fam: Family, model_type: str, spec: _Spec, d: int, L: int):
    """One hf_decoder_layer segment over 0..L-1 whose per-layer switches are layer
    sets: ([stack segment], {store: declaration}, {option: declaration})."""
    items = [("d", "d", "")]
    state, stores, options = [], {}, {}
    mixers, fixed_ffn = _layer_kinds(cfg, fam, model_type, L)
    present = list(dict.fromkeys(mixers))
    when = {}                   # mixer kind -> the condition of its layers (none when every layer has it)
    if len(present) > 1:
        for kind in present:
            name = SET_NAMES.get(kind, f"{kind}_layers")
            layers = [i for i, m in enumerate(mixers) if m == kind]
            spec.sets.append((name, _layer_set(layers), f"layers whose mixer is {kind}"))
            when[kind] = f"layer in {name}"
        expr = str(_mixer_code(present[-1]))
        for kind in reversed(present[:-1]):
            expr = f"if({when[kind]}, {_mixer_code(kind)}, {expr})"
        items.append(("mixer", expr, "each layer's mixer"))
    elif present[0] != "attention":
        items.append(("mixer", _mixer_code(present[0]), f"every layer's mixer is {present[0]}"))
    # kinds that cache K/V (attention, or a declared mixer with `attention: true`), and kinds
    # that only read the attention's dimensions (`attention_dims: true`)
    has_attn = any(k == "attention" or MIXERS.get(k, {}).get("attention") for k in present)
    needs_dims = has_attn or any(MIXERS.get(k, {}).get("attention_dims") for k in present)
    has_ssm = "selective_ssm" in present
    window = None
    if needs_dims:
        window = _attention_dims(cfg, fam, model_type, spec, d, L, items)
        dims = {n: v for n, v, _ in spec.dims}
        spec.summary.append(f"grouped-query attention ({dims['n_q']} query / {dims['n_kv']} KV heads "
                            f"of {dims['d_h']}){' in the attention layers' if len(present) > 1 else ''},")
    if has_ssm:
        _ssm_dims(cfg, fam, model_type, spec, d, items)
    for kind in present:
        if kind in MIXERS:
            _declared_mixer(cfg, fam, MIXERS[kind], model_type, spec, items, stores, options)
            for decl in MIXERS[kind].get("state", []):
                state.append(dict(decl, **({"when": when[kind]} if kind in when else {})))

    for key, value in fam.layer_bindings.items():     # per-layer switches the family states as expressions
        items.append((key, value, "the family's per-layer rule"))
    # norms and residuals
    if fam.ffn_sub_norm:
        items.append(("ffn_sub_norm", 1, "a norm over the FFN's hidden width before down"))
    if fam.act_scalars:
        items.append(("act_scalars", fam.act_scalars, "the learned activation's stored scalars"))
    if fam.layer_scalars:
        items.append(("scalars", fam.layer_scalars, "stored per-layer output scalars"))
    if fam.norm == "layernorm":
        items.append(("norm_bias", 1, "LayerNorms with bias"))
    if fam.norm == "none":
        items.append(("norm_weight", 0, "norms without learned parameters"))
    if fam.norm_layout == "post":
        items.append(("pre_norm", 0, "norms after each sub-block only"))
    if fam.norm_layout in ("pre_post", "post"):
        items.append(("post_norm", 1, "a norm on each sub-block's output"))
    if cfg.rule_flag(fam.parallel):
        items.append(("parallel", 1, "attention and FFN read the same input"))
        norms = cfg.rule_int(fam.parallel_norms, 1, family=model_type)
        if norms not in (1, 2):
            raise cfg.error("num_ln_in_parallel_attn", f"{norms} norms in a parallel block; the blocks have 1 or 2",
                            "1 or 2")
        if norms == 2:
            items.append(("parallel_norms", 2, "the FFN has its own norm"))

    # feed-forward: the layer list's kind where it fixes one, else the family's rule
    kinds = [fixed or rule for fixed, rule in zip(fixed_ffn, _ffn_kinds(cfg, fam, model_type, L))]
    if "moe" in kinds:
        E = cfg.int(fam.experts_field, family=model_type)
        k = cfg.int("num_experts_per_tok", cfg.get("experts_per_token"), family=model_type)
        f_e = cfg.int(fam.expert_width_field, family=model_type)
        spec.dim("E", E, cfg.name(fam.experts_field))
        if k > E:
            raise cfg.error("num_experts_per_tok", f"num_experts_per_tok {k} exceeds the {E} experts", f"at most {E}")
        spec.dim("k", k, "num_experts_per_tok")
        spec.dim("f_e", f_e, cfg.name(fam.expert_width_field))
        zero = cfg.int(fam.zero_experts_field, 0, minimum=0) if fam.zero_experts_field else 0
        if zero:        # identity experts the router can pick: router columns and bias entries, no weights
            spec.dim("E_zero", zero, cfg.name(fam.zero_experts_field) + " (zero-computation experts)")
    if "dense" in kinds:
        f_expr = _ffn_widths(cfg, fam, model_type, spec, L, " (dense layers)" if "moe" in kinds else "")
        if "none" in kinds:
            dense_layers = [i for i, kd in enumerate(kinds) if kd == "dense"]
            spec.sets.append(("dense_layers", _layer_set(dense_layers), "layers with a dense FFN"))
            items.append(("f", f"if(layer in dense_layers, {f_expr}, 0)", "the other layers have none"))
        else:
            items.append(("f", f_expr, ""))
        if fam.mlp == "plain":
            items.append(("glu", 0, "plain MLP: up, activation, down"))
        if cfg.rule_flag(fam.mlp_bias):
            items.append(("mlp_bias", 1, "biases on the MLP matrices"))
    if "moe" in kinds:
        if "dense" in kinds or "none" in kinds:
            moe_layers = [i for i, kd in enumerate(kinds) if kd == "moe"]
            spec.sets.append(("moe_layers", _layer_set(moe_layers), "layers with a mixture-of-experts FFN"))
            items.append(("E", "if(layer in moe_layers, E, 0)", "the other layers are dense"))
        else:
            items.append(("E", "E", ""))
        items += [("k", "k", ""), ("f_e", "f_e", "")]
        if any(n == "E_zero" for n, _, _ in spec.dims):
            items.append(("E_zero", "E_zero", "zero-computation experts: router columns without weights"))
        f_s = 0
        if fam.shared_expert_field:
            f_s = cfg.int(fam.shared_expert_field, 0, minimum=0)
            spec.dim("f_s", f_s, cfg.name(fam.shared_expert_field))
        elif fam.shared_experts:
            count = cfg.rule_int(fam.shared_experts["count"], 0, minimum=0, family=model_type)
            width = cfg.rule_int(fam.shared_experts["width"], family=model_type)
            f_s = count * width
            spec.dim("f_s", f_s, f"{fam.shared_experts['count']} × {cfg.name(fam.shared_experts['width'])}")
        if f_s:
            items.append(("f_s", "f_s", "shared expert"))
            if fam.shared_gate:
                items.append(("shared_gate", 1, "sigmoid gate d→1 on the shared expert"))
        items.extend(_switched(fam, _MOE_SWITCHES))
        if not fam.expert_glu:
            items.append(("expert_glu", 0, "two-matrix experts (up, activation, down)"))
    dims = {n: v for n, v, _ in spec.dims}
    if "moe" in kinds:
        spec.summary.append(f"MoE of {dims['E']} experts of {dims['f_e']}"
                            + (f" and {dims['E_zero']} zero-computation experts" if dims.get("E_zero") else "")
                            + f" (top-{dims['k']})"
                            + (f" + shared expert {dims['f_s']}" if dims.get("f_s") else "") + ",")
    if "dense" in kinds:
        spec.summary.append(f"{'gated' if fam.mlp == 'glu' else 'plain'} FFN of {dims['f']}"
                            + (" in the other layers," if "moe" in kinds else ","))
    if window:
        items.append(window)
    if fam.altup is not None:       # AltUp: the residual stream kept as several streams
        n_streams = cfg.rule_int(fam.altup, family=model_type)
        spec.dim("altup", n_streams, _rule_text(cfg, fam.altup) + " (AltUp residual streams)")
        items.append(("altup", "altup", "AltUp: predict and correct the residual streams"))
        spec.summary.append(f"AltUp over {n_streams} residual streams,")
    if fam.laurel is not None:      # LAuReL: a low-rank residual branch
        rank = cfg.rule_int(fam.laurel, family=model_type)
        spec.dim("laurel", rank, _rule_text(cfg, fam.laurel) + " (LAuReL rank)")
        items.append(("laurel", "laurel", "LAuReL: a low-rank residual branch"))
        spec.summary.append(f"LAuReL residual branches of rank {rank},")
    if fam.reused_block is not None:
        _reused_block(cfg, fam, model_type, spec, d, L, items, state, stores)
    shared = cfg.int(fam.kv_shared_layers, 0, minimum=0, maximum=L) if fam.kv_shared_layers else 0
    if shared:      # the last `shared` layers reuse earlier layers' K/V: no projections, no cache of their own
        spec.dim("kv_shared", shared, cfg.name(fam.kv_shared_layers))
        spec.sets.append(("kv_shared_layers", _layer_set(list(range(L - shared, L))),
                          "layers that read an earlier layer's K/V cache"))
        items.append(("kv_proj", "if(layer in kv_shared_layers, 0, 1)", "KV-sharing layers have no K/V projections"))
    if fam.kv_heads_by_layer and any(n == fam.kv_heads_by_layer["set"] for n, _, _ in spec.sets):
        name, factor = fam.kv_heads_by_layer["set"], fam.kv_heads_by_layer["factor"]
        items.append(("n_kv", f"if(layer in {name}, {factor}*n_kv, n_kv)", f"{factor}× the K/V heads in {name}"))
        spec.kv_sets.append((name, factor))
    items.append(("rect", "rect", "option attention"))

    segment = {"name": "layers", "layers": "0..L-1", "block": "hf_decoder_layer",
               "with": {key: value for key, value, _ in items}}
    entries = "min(H, window)" if window else "H"
    if has_attn:
        attn_kinds = [k for k in present if k == "attention" or MIXERS.get(k, {}).get("attention")]
        conds = [when[k] for k in attn_kinds if k in when]
        attn_when = " or ".join(conds)
        # layers whose K/V differ (wider heads, more K/V heads) keep their own store
        variants = [(f"kv{j}", cond, spec.kv_bytes.format(d_h=dim), f"whose heads are {dim} wide")
                    for j, (dim, cond) in enumerate(spec.head_dims, start=2)]
        variants += [(f"kv_{name}", f"layer in {name}", f"{factor}*" + spec.kv_bytes.format(d_h="d_h"),
                      f"in {name} ({factor}× the K/V heads)") for name, factor in spec.kv_sets]
        if any(n == "kv_shared_layers" for n, _, _ in spec.sets):
            attn_when = f"({attn_when}) and not (layer in kv_shared_layers)" if attn_when else \
                "not (layer in kv_shared_layers)"
        base_when = " and ".join(([f"({attn_when})"] if attn_when else []) + [f"not ({c})" for _, c, _, _ in variants])
        state.append({"store": "kv", "entries": entries, **({"when": base_when} if base_when else {})})
        stores["kv"] = {"tags": ["kv"], "doc": "K and V of an attention layer, n_kv heads of d_h, per cached token",
                        "bytes": spec.kv_bytes.format(d_h="d_h"), "shard": "n_kv"}
        for name, cond, size, what in variants:
            state.append({"store": name, "entries": entries, "when": f"({attn_when}) and {cond}" if attn_when else cond})
            stores[name] = {"tags": ["kv"], "doc": f"K and V of the attention layers {what}", "bytes": size,
                            "shard": "n_kv"}
    if has_ssm:
        mwhen = {"when": when["selective_ssm"]} if "selective_ssm" in when else {}
        state += [{"store": "conv_state", "entries": 1, **mwhen}, {"store": "ssm_state", "entries": 1, **mwhen}]
        stores["conv_state"] = {"tags": ["ssm"], "doc": "short-convolution buffer of a selective-SSM layer (d_conv − 1 "
                                "inputs over d_in channels)", "bytes": "(d_conv - 1)*d_in*ELT"}
        stores["ssm_state"] = {"tags": ["ssm"], "doc": "SSM state of a selective-SSM layer, d_in × N", "bytes": "d_in*N*ELT"}
    if state:
        segment["state"] = state
        segment["reads"] = [dict(s) for s in state]
    for note in fam.notes:
        if cfg.get(note["field"]):
            spec.notes.append(note["text"].format(value=cfg.get(note["field"])))
    return [segment], stores, options


def write_spec(config_path: str, out_path: str, name: str | None = None) -> str:
    text = import_config(config_path, name, out_path)
    Path(out_path).parent.mkdir(parents=True, exist_ok=True)
    Path(out_path).write_text(text, encoding="utf-8")
    return text
