"""Hugging Face `config.json` → specc spec YAML text (`specc import-hf`).

The config is read with `json` (never evaluated). What each supported
`model_type` means is data: the FAMILIES table says which layer block of
specs/lib/hf_families.yaml the family uses and which config fields switch its
optional parts (biases, QK norms, sinks, windows, router biases, shared
experts, MLA). A field whose value the blocks cannot model, a missing field or
an unknown `model_type` is a SpecError located at the field in config.json.

The output is deterministic, commented YAML: every config value becomes a named
dimension with the field it came from as a comment.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from .errors import Loc, SpecError

LIB_DIR = Path(__file__).resolve().parent.parent / "specs" / "lib"

ACTIVATIONS = {"silu", "swish"}
LAYER_TYPES = {"full_attention", "sliding_attention"}


@dataclass(frozen=True)
class Family:
    """How a model_type maps onto the library blocks.

    attention: 'gqa' or 'mla'; ffn: 'dense', 'moe' or 'dense_then_moe' (dense first
    layers, then MoE with shared experts); flags name the config field that turns a
    part on (a bool constant means always on/off); `unsupported` lists fields whose
    true value the blocks cannot model."""

    attention: str
    ffn: str
    qk_norm: bool = False
    qkv_bias: str | bool = False
    o_bias: str | bool = False
    mlp_bias: str | bool = False
    sinks: bool = False
    router_bias: bool = False
    expert_bias: bool = False
    window: str = "none"          # see WINDOW_MODES and specs/hf/families.yaml
    experts_field: str = "num_local_experts"
    expert_width_field: str = "intermediate_size"
    unsupported: tuple = ()       # boolean fields that must be false/absent
    sparse_step: bool = False     # mlp_only_layers / decoder_sparse_step choose dense layers


FAMILIES_FILE = LIB_DIR.parent / "hf" / "families.yaml"
ROPE_KINDS: set = set()     # rope_scaling types the blocks accept (from FAMILIES_FILE)
WINDOW_MODES = {"none", "all", "all_if_enabled", "layer_types", "layer_types_or_max_window"}
FFN_MODES = {"dense", "moe", "dense_then_moe"}


def _load_families() -> dict:
    """The model_type table of specs/hf/families.yaml (project data, loaded safely)."""
    import yaml

    raw = yaml.safe_load(FAMILIES_FILE.read_text(encoding="utf-8"))
    ROPE_KINDS.update(raw["rope_kinds"])
    fields = set(Family.__dataclass_fields__)
    families = {}
    for name, entry in raw["families"].items():
        unknown = set(entry) - fields
        if unknown or entry.get("window", "none") not in WINDOW_MODES or entry.get("ffn") not in FFN_MODES:
            raise SpecError(f"{FAMILIES_FILE}: family '{name}' has unknown fields {sorted(unknown)} "
                            f"or window mode '{entry.get('window')}'", None,
                            expected=", ".join(sorted(fields)) + "; window: " + ", ".join(sorted(WINDOW_MODES)))
        entry = dict(entry)
        entry["unsupported"] = tuple(entry.get("unsupported", ()))
        families[name] = Family(**entry)
    return families


FAMILIES: dict[str, Family] = _load_families()


# ------------------------------------------------------------------ the config, with positions
class Config:
    """A parsed config.json that can say where each key is."""

    def __init__(self, path: str):
        self.path = str(path)
        from .limits import limit, limit_error
        from .yamlload import decode_bytes

        try:
            data = Path(path).read_bytes()
        except OSError as exc:
            raise SpecError(f"cannot read {path}: {exc.strerror}", Loc(self.path, 1, 1, "")) from None
        self.text = decode_bytes(data, self.path)   # size, encoding: located errors
        depth = 0
        for i, ch in enumerate(self.text):          # json.loads recurses per level
            depth += ch in "[{"
            depth -= ch in "]}"
            if depth > limit("json_depth"):
                raise limit_error("json_depth", Loc(self.path, self.text.count("\n", 0, i) + 1,
                                                    i - self.text.rfind("\n", 0, i)))
        try:
            self.data = json.loads(self.text)
        except json.JSONDecodeError as exc:
            raise SpecError(f"not valid JSON: {exc.msg}", Loc(self.path, exc.lineno, exc.colno),
                            expected="a Hugging Face config.json") from None
        if not isinstance(self.data, dict):
            raise SpecError("config.json must be a JSON object", Loc(self.path, 1, 1), expected="{...}")

    def loc(self, *keys: str) -> Loc:
        """Where `"key":` is (nested keys are searched after their parent)."""
        offset = 0
        for key in keys:
            found = re.compile(r'"%s"\s*:' % re.escape(key)).search(self.text, offset)
            if not found:
                break
            offset = found.start()
        line = self.text.count("\n", 0, offset) + 1
        col = offset - (self.text.rfind("\n", 0, offset) + 1) + 1
        return Loc(self.path, line, col)

    def error(self, key: str, message: str, expected: str | None = None, *parents: str):
        return SpecError(message, self.loc(*parents, key), span=len(key) + 2, expected=expected)

    def has(self, key: str) -> bool:
        return self.data.get(key) is not None

    def get(self, key: str, default=None):
        value = self.data.get(key)
        return default if value is None else value

    def int(self, key: str, default=None, *, minimum: int = 1, family: str = "") -> int:
        value = self.data.get(key)
        if value is None:
            if default is not None:
                return default
            raise SpecError(f"config has no '{key}' (model_type {family} needs it)", Loc(self.path, 1, 1),
                            expected=f'a "{key}": <integer> field')
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise self.error(key, f"'{key}' must be an integer >= {minimum}, got {json.dumps(value)[:40]}",
                             f"an integer >= {minimum}")
        if value >= 10 ** 15:   # an absurd size (the limits of dsl/limits.py would stop it later, less clearly)
            raise self.error(key, f"'{key}' = {str(value)[:40]}{'...' if len(str(value)) > 40 else ''} "
                             "is not a plausible size", "an integer below 10^15")
        return value

    def flag(self, key) -> bool:
        if isinstance(key, bool):
            return key
        value = self.data.get(key)
        if value is None:
            return False
        if not isinstance(value, bool):
            raise self.error(key, f"'{key}' must be true or false, got {json.dumps(value)}", "true or false")
        return value


# ------------------------------------------------------------------ the spec being written
@dataclass
class _Spec:
    dims: list = field(default_factory=list)        # (name, value, comment)
    sets: list = field(default_factory=list)        # (name, text, comment)
    notes: list = field(default_factory=list)

    def dim(self, name: str, value, comment: str):
        self.dims.append((name, value, comment))


def _layer_set(indices: list) -> str:
    """A compact layer-set text: a range, a stepped range or a list."""
    if len(indices) >= 3:
        step = indices[1] - indices[0]
        if step > 0 and all(b - a == step for a, b in zip(indices, indices[1:])):
            return f"{indices[0]}..{indices[-1]}" + (f" step {step}" if step != 1 else "")
    return ", ".join(str(i) for i in indices)


def _runs(kinds: list) -> list:
    """Maximal runs of equal kinds: [(kind, first, last), ...]."""
    out = []
    for i, kind in enumerate(kinds):
        if out and out[-1][0] == kind:
            out[-1] = (kind, out[-1][1], i)
        else:
            out.append((kind, i, i))
    return out


def _check_common(cfg: Config, fam: Family, model_type: str):
    act = cfg.get("hidden_act", "silu")
    if act not in ACTIVATIONS:
        raise cfg.error("hidden_act", f"hidden_act '{act}' is not supported for model_type {model_type} "
                        "(the blocks model SwiGLU feed-forwards)", "silu")
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
    if cfg.has("tie_word_embeddings"):
        cfg.flag("tie_word_embeddings")


def _window_layers(cfg: Config, fam: Family, L: int, model_type: str) -> tuple[list, int | None]:
    """Which layers attend within a sliding window, and its length (HF's own rules:
    `layer_types` when the config lists them, else every layer, or the layers from
    max_window_layers on when use_sliding_window is set; the family's mode says which)."""
    if fam.window == "none" or cfg.data.get("sliding_window") is None:
        return [], None
    if fam.window in ("layer_types_or_max_window", "all_if_enabled") and not cfg.flag("use_sliding_window"):
        return [], None
    window = cfg.int("sliding_window", family=model_type)
    types = cfg.data.get("layer_types")
    if types is not None and fam.window in ("layer_types_or_max_window", "layer_types"):
        if not isinstance(types, list) or len(types) != L:
            raise cfg.error("layer_types", f"layer_types must list one type per layer ({L})", f"{L} entries")
        for t in types:
            if t not in LAYER_TYPES:
                raise cfg.error("layer_types", f"unknown layer type '{t}'", " or ".join(sorted(LAYER_TYPES)))
        return [i for i, t in enumerate(types) if t == "sliding_attention"], window
    if fam.window == "layer_types_or_max_window":
        first = cfg.int("max_window_layers", 0, minimum=0)
        return [i for i in range(L) if i >= first], window
    if fam.window == "layer_types":
        return [], None
    return list(range(L)), window


# ------------------------------------------------------------------ import
def import_config(path: str, name: str | None = None, out_path: str | None = None) -> str:
    """The spec YAML text for the config at `path` (written next to `out_path`'s lib)."""
    cfg = Config(path)
    model_type = cfg.data.get("model_type")
    if model_type is None:
        raise SpecError("config has no 'model_type'", Loc(cfg.path, 1, 1),
                        expected="one of " + ", ".join(sorted(FAMILIES)))
    if model_type not in FAMILIES:
        raise cfg.error("model_type", f"unknown model_type '{model_type}'",
                        "a supported model_type: " + ", ".join(sorted(FAMILIES)))
    fam = FAMILIES[model_type]
    _check_common(cfg, fam, model_type)

    out_dir = Path(out_path).resolve().parent if out_path else Path.cwd()
    lib = os.path.relpath(LIB_DIR, out_dir).replace(os.sep, "/")
    here = Path(path).resolve()
    model_name = name or cfg.get("_name_or_path") or (here.parent.name if here.name == "config.json" else here.stem)
    spec = _Spec()
    d = cfg.int("hidden_size", family=model_type)
    L = cfg.int("num_hidden_layers", family=model_type)
    V = cfg.int("vocab_size", family=model_type)
    spec.dim("d", d, "hidden_size")
    spec.dim("L", L, "num_hidden_layers")
    spec.dim("V", V, "vocab_size")
    tied = cfg.flag("tie_word_embeddings")

    if fam.attention == "gqa":
        layers, stores, options = _gqa(cfg, fam, model_type, spec, d, L)
    else:
        layers, stores, options = _mla(cfg, fam, model_type, spec, d, L)

    dtype = str(cfg.get("torch_dtype", cfg.get("dtype", "bfloat16")))
    fmt, fmt_bytes = {"float32": ("fp32", "fp32"), "float16": ("fp16", "fp16")}.get(dtype, ("bf16", "bf16"))
    max_ctx = cfg.data.get("max_position_embeddings")

    out = []
    w = out.append
    shown = "/".join(Path(path).parts[-2:])
    w(f"# Generated by `specc import-hf` from {shown} (model_type: {model_type}).")
    w("# Every dimension is a config value; the comment names the field it came from.")
    w(f"model: {_scalar(model_name)}")
    w(f"source: Hugging Face config.json ({model_type}, "
      f"{', '.join(cfg.get('architectures', [])) or 'no architectures field'})")
    desc = _description(cfg, fam, model_type, tied, spec)
    w("description: >")
    for line in desc:
        w("  " + line)
    w(f"imports: [{lib}/core.yaml, {lib}/hf_families.yaml]")
    w("")
    w("dims:")
    width = max(len(f"  {n}: {v}") for n, v, _ in spec.dims) + 2
    for n, v, c in spec.dims:
        w(f"{f'  {n}: {v}':<{width}}# {c}")
    if isinstance(max_ctx, int) and not isinstance(max_ctx, bool) and max_ctx > 0:
        w("")
        w(f"max_context: {max_ctx}   # max_position_embeddings")
    if spec.sets:
        w("")
        w("sets:")
        for n, t, c in spec.sets:
            w(f"  {n}: {t}   # {c}")
    w("")
    w("options:")
    w("  head:")
    w("    doc: rows the vocabulary head runs on (Hugging Face computes logits for every position)")
    w("    default: last")
    w("    choices:")
    w("      last: {head_rows: B}")
    w("      all: {head_rows: M}")
    w("      none: {head_rows: 0}")
    w("  attention:")
    w("    doc: >")
    w("      effective: count the query-key pairs attention needs (causal, or within the sliding")
    w("      window); rectangle: count the full P·(S+P) rectangle a masked attention kernel")
    w("      computes (the convention of PyTorch's FlopCounterMode, used by specc crosscheck)")
    w("    default: effective")
    w("    choices:")
    w("      effective: {rect: 0}")
    w("      rectangle: {rect: 1}")
    out.extend(options)
    w("")
    w("formats:")
    w(f"  {fmt}:")
    w("    default: true")
    w(f"    doc: {dtype} weights and KV cache (torch_dtype)")
    w("    weights: {default: %s}" % {"fp32": 4}.get(fmt_bytes, 2))
    w("")
    w("stores:")
    for store_name, tags, doc, expr in stores:
        w(f"  {store_name}:")
        w(f"    tags: [{', '.join(tags)}]")
        w(f"    doc: {doc}")
        w(f"    bytes: {{{fmt}: {expr.replace('ELT', fmt_bytes)}}}")
    w("")
    w("stack:")
    w("  - name: embed")
    w("    block: token_embedding")
    w("    with: {V: V, d: d}")
    out.extend(layers)
    w("  - name: head")
    if tied:
        w("    block: tied_lm_head   # tie_word_embeddings: the head reuses the embedding table")
    else:
        w("    block: lm_head")
    w("    with: {d: d, V: V, rows: head_rows}")
    if cfg.has("quantization_config"):
        method = cfg.get("quantization_config", {}).get("quant_method", "?") if isinstance(
            cfg.get("quantization_config"), dict) else "?"
        spec.notes.append(f"The checkpoint is quantized ({method}); parameter counts are logical (unpacked).")
    if spec.notes:
        w("")
        w("notes: >")
        for note in spec.notes:
            out.extend("  " + line for line in _wrap(note))
    return "\n".join(out) + "\n"


def _scalar(value: str) -> str:
    text = str(value)
    if re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.\-/ ]*", text) and not text.endswith(" "):
        return text
    return json.dumps(text)


def _description(cfg, fam, model_type, tied, spec) -> list:
    parts = [f"{model_type} decoder imported from its Hugging Face configuration:"]
    dims = {n: v for n, v, _ in spec.dims}
    parts.append(f"{dims['L']} pre-norm layers of width {dims['d']},")
    if fam.attention == "mla":
        parts.append(f"multi-head latent attention ({dims['heads']} heads),")
    else:
        parts.append(f"grouped-query attention ({dims['n_q']} query / {dims['n_kv']} KV heads of {dims['d_h']}),")
    if fam.ffn == "dense":
        parts.append(f"SwiGLU FFN of {dims['f']},")
    else:
        parts.append(f"MoE of {dims['E']} experts of {dims['f_e']} (top-{dims['k']}),")
    parts.append(f"{'tied' if tied else 'untied'} vocabulary of {dims['V']}.")
    return _wrap(" ".join(parts))


def _wrap(text: str, width: int = 88) -> list:
    lines, line = [], ""
    for word in text.split():
        if line and len(line) + len(word) + 1 > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}".strip()
    return lines + [line]


def _with(items: list) -> list:
    """`with:` lines, one binding per line with an optional comment."""
    out = ["    with:"]
    for key, value, comment in items:
        text = f"      {key}: {value}"
        out.append(f"{text:<39} # {comment}" if comment else text)
    return out


def _gqa(cfg: Config, fam: Family, model_type: str, spec: _Spec, d: int, L: int):
    n_q = cfg.int("num_attention_heads", family=model_type)
    n_kv = cfg.int("num_key_value_heads", n_q)
    if n_q % n_kv:
        raise cfg.error("num_key_value_heads", f"num_key_value_heads = {n_kv} does not divide "
                        f"num_attention_heads = {n_q}", "a divisor of num_attention_heads (grouped-query attention)")
    spec.dim("n_q", n_q, "num_attention_heads")
    spec.dim("n_kv", n_kv, "num_key_value_heads" if cfg.has("num_key_value_heads") else
             "num_key_value_heads (absent: = num_attention_heads)")
    if cfg.has("head_dim"):
        d_h = cfg.int("head_dim")
        spec.dim("d_h", d_h, "head_dim")
    else:
        if d % n_q:
            raise cfg.error("num_attention_heads", f"hidden_size {d} is not divisible by {n_q} heads "
                            "and there is no head_dim", "a head_dim field")
        spec.dim("d_h", d // n_q, "hidden_size / num_attention_heads (no head_dim field)")
    sliding, window = _window_layers(cfg, fam, L, model_type)
    if window is not None:
        spec.dim("sliding_window", window, "sliding_window")

    flags = []
    if fam.qk_norm:
        flags.append(("qk_norm", 1, "per-head RMSNorm on Q and K"))
    if cfg.flag(fam.qkv_bias):
        flags.append(("qkv_bias", 1, "biases on q/k/v" + (f" ({fam.qkv_bias})" if isinstance(fam.qkv_bias, str)
                                                           else f" (always, in {model_type})")))
    if cfg.flag(fam.o_bias):
        flags.append(("o_bias", 1, f"bias on the output projection ({fam.o_bias})"))
    if fam.sinks:
        flags.append(("sinks", 1, "one learned attention-sink logit per head"))
    if window is not None:
        if len(sliding) == L:
            win = ("window", "sliding_window", "every layer attends within the window")
        else:
            source = "layer_types" if fam.window == "layer_types" else "layers from max_window_layers on"
            spec.sets.append(("sliding_layers", _layer_set(sliding), f"sliding-window layers ({source})"))
            win = ("window", '"if(layer in sliding_layers, sliding_window, oo)"', "oo: full causal attention")
        entries = '"min(H, window)"'
    else:
        win, entries = None, "H"

    kinds = ["dense"] * L
    if fam.ffn == "moe":
        E = cfg.int(fam.experts_field, family=model_type)
        k = cfg.int("num_experts_per_tok", cfg.get("experts_per_token"), family=model_type)
        f_e = cfg.int(fam.expert_width_field, family=model_type)
        spec.dim("E", E, fam.experts_field)
        if k > E:
            raise cfg.error("num_experts_per_tok", f"num_experts_per_tok {k} exceeds the {E} experts", f"at most {E}")
        spec.dim("k", k, "num_experts_per_tok")
        spec.dim("f_e", f_e, fam.expert_width_field)
        if fam.sparse_step or cfg.has("mlp_only_layers") or cfg.has("decoder_sparse_step"):
            only = cfg.get("mlp_only_layers", [])
            step = cfg.int("decoder_sparse_step", 1)
            if not isinstance(only, list) or any(not isinstance(i, int) or not 0 <= i < L for i in only):
                raise cfg.error("mlp_only_layers", "mlp_only_layers must list layer indices", f"integers in 0..{L - 1}")
            kinds = ["dense" if (i in only or (i + 1) % step) else "moe" for i in range(L)]
        else:
            kinds = ["moe"] * L
        if "dense" in kinds:
            spec.dim("f", cfg.int("intermediate_size", family=model_type), "intermediate_size (dense layers)")
    else:
        spec.dim("f", cfg.int("intermediate_size", family=model_type), "intermediate_size")
    mlp_bias = cfg.flag(fam.mlp_bias)

    common = [("d", "d", ""), ("n_q", "n_q", ""), ("n_kv", "n_kv", ""), ("d_h", "d_h", "")]
    lines = []
    runs = _runs(kinds)
    for kind, first, last in runs:
        seg = "layers" if len(runs) == 1 else f"{kind}_layers" + (
            f"_{first}" if sum(1 for r in runs if r[0] == kind) > 1 else "")
        lines.append(f"  - name: {seg}")
        lines.append(f"    layers: {first}..{'L-1' if last == L - 1 else last}")
        items = list(common)
        if kind == "dense":
            lines.append("    block: hf_dense_layer")
            items.append(("f", "f", ""))
            if mlp_bias:
                items.append(("mlp_bias", 1, "mlp_bias"))
        else:
            lines.append("    block: hf_moe_layer")
            items += [("E", "E", ""), ("k", "k", ""), ("f_e", "f_e", "")]
            if fam.router_bias:
                items.append(("router_bias", 1, "the router linear has a bias"))
            if fam.expert_bias:
                items.append(("expert_bias", 1, "per-expert biases on gate/up and down"))
        items += flags
        if win:
            items.append(win)
        items.append(("rect", "rect", "option attention"))
        lines += _with(items)
        lines += ["    state:", f"      - {{store: kv, entries: {entries}}}",
                  "    reads:", f"      - {{store: kv, entries: {entries}}}"]
    stores = [("kv", ["kv"], "K and V of every layer, n_kv heads of d_h, per cached token", "2*n_kv*d_h*ELT")]
    return lines, stores, []


def _mla(cfg: Config, fam: Family, model_type: str, spec: _Spec, d: int, L: int):
    heads = cfg.int("num_attention_heads", family=model_type)
    spec.dim("heads", heads, "num_attention_heads")
    q_rank = cfg.get("q_lora_rank")
    if q_rank is None:
        spec.dim("q_rank", 0, "q_lora_rank (null: one d→heads·(qk_nope+qk_rope) query projection)")
    else:
        spec.dim("q_rank", cfg.int("q_lora_rank"), "q_lora_rank")
    spec.dim("kv_rank", cfg.int("kv_lora_rank", family=model_type), "kv_lora_rank")
    spec.dim("qk_nope", cfg.int("qk_nope_head_dim", family=model_type), "qk_nope_head_dim")
    spec.dim("qk_rope", cfg.int("qk_rope_head_dim", family=model_type), "qk_rope_head_dim")
    spec.dim("v_head", cfg.int("v_head_dim", family=model_type), "v_head_dim")
    spec.dim("f", cfg.int("intermediate_size", family=model_type), "intermediate_size (dense layers)")
    E = cfg.int(fam.experts_field, family=model_type)
    spec.dim("E", E, fam.experts_field)
    spec.dim("k", cfg.int("num_experts_per_tok", family=model_type), "num_experts_per_tok")
    spec.dim("f_e", cfg.int(fam.expert_width_field, family=model_type), fam.expert_width_field)
    n_shared = cfg.int("n_shared_experts", 0, minimum=0)
    spec.dim("n_shared", n_shared, "n_shared_experts")
    first = cfg.int("first_k_dense_replace", 0, minimum=0)
    if first > L:
        raise cfg.error("first_k_dense_replace", f"first_k_dense_replace {first} exceeds num_hidden_layers {L}",
                        f"at most {L}")
    spec.dim("first_dense", first, "first_k_dense_replace (dense FFN layers before the MoE layers)")
    if cfg.int("moe_layer_freq", 1) != 1:
        raise cfg.error("moe_layer_freq", "moe_layer_freq other than 1 is not supported "
                        "(Hugging Face's model makes every layer from first_k_dense_replace on an MoE layer)", "1")
    if cfg.has("num_nextn_predict_layers") and cfg.get("num_nextn_predict_layers"):
        spec.notes.append(f"num_nextn_predict_layers = {cfg.get('num_nextn_predict_layers')}: the multi-token "
                          "prediction module of the checkpoint is not part of the Hugging Face model and not "
                          "modelled here.")
    if fam.router_bias:
        spec.notes.append("The router's E-entry score-correction bias (e_score_correction_bias) is counted as "
                          "parameters (transformers keeps it as a buffer).")
    attn = [("d", "d", ""), ("heads", "heads", ""), ("q_rank", "q_rank", ""), ("kv_rank", "kv_rank", ""),
            ("qk_nope", "qk_nope", ""), ("qk_rope", "qk_rope", ""), ("v", "v_head", "")]
    tail = [("rect", "rect", "option attention"), ("compressed", "mla_compressed", "option mla")]
    lines = []
    if first > 0:
        lines += ["  - name: dense_layers", "    layers: 0..first_dense-1", "    block: hf_mla_layer"]
        lines += _with(attn + [("f", "f", "dense SwiGLU FFN")] + tail)
    if first < L:
        lines += ["  - name: moe_layers", f"    layers: {'first_dense' if first else '0'}..L-1",
                  "    block: hf_mla_layer"]
        moe = [("E", "E", ""), ("k", "k", ""), ("f_e", "f_e", ""), ("f_s", "n_shared*f_e", "shared experts")]
        if fam.router_bias:
            moe.append(("router_bias", 1, "e_score_correction_bias"))
        lines += _with(attn + moe + tail)
    stores = [("mla_latent", ["kv"], "compressed path — the latent and the rotary key per cached token",
               "(kv_rank + qk_rope)*ELT"),
              ("mla_kv", ["kv"], "expanded path — per-head K (qk_nope+qk_rope) and V per cached token",
               "heads*(qk_nope + qk_rope + v_head)*ELT")]
    options = ["  mla:",
               "    doc: MLA execution path (same parameters); Hugging Face runs the expanded one",
               "    default: expanded",
               "    choices:",
               "      expanded: {mla_compressed: 0}",
               "      compressed: {mla_compressed: 1}"]
    return lines, stores, options


def write_spec(config_path: str, out_path: str, name: str | None = None) -> str:
    text = import_config(config_path, name, out_path)
    Path(out_path).parent.mkdir(parents=True, exist_ok=True)
    Path(out_path).write_text(text, encoding="utf-8")
    return text
