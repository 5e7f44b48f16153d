"""A config's `quantization_config` → a storage format of the imported spec.

Quantizers (GPTQ, AWQ, bitsandbytes, FP8) replace the decoder's linear layers —
the parameter groups attention_projection, dense_shared_ffn and routed_experts —
and keep embeddings, the head, norms and routers (groups embedding_head, other)
in the checkpoint dtype. A bias counts at the rate of its matrix's group (biases
are a vanishing share; the convention is stated in the format's doc).

Bytes per quantized parameter, as each format stores it:
  gptq / awq        bits/8 for the packed weight, plus per group of `group_size` input
                    rows one fp16 scale and one `bits`-wide packed zero point:
                    bits/8 + (16 + bits) / (8 · group_size)  (AWQ with zero_point false:
                    no zero points, bits/8 + 16 / (8 · group_size))
  bitsandbytes 4    nf4/fp4 codes 1/2 byte, one fp32 absmax per 64-value block:
                    1/2 + 4/64; with double quantization the absmax is 8-bit, with one
                    fp32 scale per 256 blocks: 1/2 + 1/64 + 4/(64·256)
  bitsandbytes 8    int8 codes, 1 byte (LLM.int8's per-row fp32 scales, 4 bytes per
                    output row, are not counted: they depend on the matrix's width)
  fp8               1 byte, plus one fp32 scale per weight_block_size block when the
                    config gives one: 1 + 4/(b0 · b1); per-tensor scales are not counted
  mxfp4             the routed experts only (transformers' MXFP4 quantizer replaces the
                    MoE expert weights; attention, routers, embeddings and head stay):
                    FP4 codes 1/2 byte + one E8M0 scale per 32 values: 1/2 + 1/32
  compressed-tensors, fbgemm_fp8, modelopt
                    name a scheme of specs/formats/schemes.yaml (the format's `scheme:`), whose
                    bytes are counted per matrix from its shape: codes, scales, zero points
                    (compressed-tensors: config_groups' weights num_bits/type/strategy/
                    group_size/block_structure, FP8 tensor/channel/128×128 block, INT8
                    channel, INT4 group with or without zero points; fbgemm_fp8: FP8 with a
                    float32 scale per output channel; modelopt: quant_algo FP8 (per tensor) or
                    NVFP4 (16-value groups), and kv_cache_quant_algo FP8 → an FP8 KV cache).
                    Their ignore / modules_to_not_convert / exclude_modules lists may name
                    only tensors the recipe keeps anyway (head, embeddings, routers, norms).
Anything else is a located error (specc would otherwise print bf16 weight bytes
for a quantized checkpoint)."""

from __future__ import annotations

import re
from fractions import Fraction

from ..dsl.errors import SpecError

QUANTIZED_GROUPS = ("attention_projection", "dense_shared_ffn", "routed_experts")
# module names an ignore list may hold: tensors the schemes' recipe keeps in high precision anyway
_KEPT_MODULES = re.compile(r"(lm_head|embed\w*|wte|wpe|router|norm|(^|[.*])gate|shared_expert_gate)$")


class QuantFormat(tuple):
    """(format name, bytes per quantized parameter, doc, quantized groups), plus `scheme`
    (a weight scheme of specs/formats/schemes.yaml, counted exactly per matrix) and `kv`
    (a KV scheme) when the method names one. Unpacks as the 4-tuple it extends."""

    scheme: str | None
    kv: str | None

    def __new__(cls, items, scheme=None, kv=None):
        obj = super().__new__(cls, items)
        obj.scheme, obj.kv = scheme, kv
        return obj
GPTQ_BITS = {2, 3, 4, 8}


def quant_format(cfg) -> tuple[str, Fraction, str, tuple] | None:
    """(format name, bytes per quantized parameter, doc, quantized groups) or None."""
    q = cfg.data.get("quantization_config")
    if q is None:
        return None
    if not isinstance(q, dict):
        raise cfg.error("quantization_config", "quantization_config must be an object", '{"quant_method": ...}')
    method = q.get("quant_method")

    def bad(key, message, expected):
        return SpecError(message, cfg.loc("quantization_config", key), span=len(key) + 2, expected=expected)

    def integer(key, allowed=None, minimum=1):
        value = q.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum or (allowed and value not in allowed):
            want = ", ".join(map(str, sorted(allowed))) if allowed else f"an integer >= {minimum}"
            raise bad(key, f"quantization_config.{key} must be {want}, got {value!r}", want)
        return value

    if method in ("gptq", "awq"):
        bits = integer("bits", GPTQ_BITS)
        group = q.get("group_size", 128)
        if group == -1:
            rate = Fraction(bits, 8)
            doc = (f"{method.upper()} {bits}-bit weights with one scale/zero per output column "
                   f"(group_size -1: not counted)")
        else:
            group = integer("group_size")
            zeros = not (method == "awq" and q.get("zero_point") is False)
            rate = Fraction(bits, 8) + Fraction(16 + (bits if zeros else 0), 8 * group)
            doc = (f"{method.upper()} {bits}-bit weights, group_size {group}: {bits}/8 B + one fp16 scale "
                   + (f"and one {bits}-bit zero " if zeros else "(no zero point) ") + f"per {group} values")
        return f"{method}_int{bits}", rate, doc, QUANTIZED_GROUPS
    if method == "bitsandbytes":
        if q.get("load_in_4bit"):
            kind = q.get("bnb_4bit_quant_type", "fp4")
            if kind not in ("nf4", "fp4"):
                raise bad("bnb_4bit_quant_type", f"unknown bnb_4bit_quant_type {kind!r}", "nf4 or fp4")
            if q.get("bnb_4bit_use_double_quant"):
                rate = Fraction(1, 2) + Fraction(1, 64) + Fraction(4, 64 * 256)
                doc = f"bitsandbytes {kind}: 1/2 B + 8-bit absmax per 64 values + fp32 per 256 blocks (double quant)"
            else:
                rate = Fraction(1, 2) + Fraction(4, 64)
                doc = f"bitsandbytes {kind}: 1/2 B + one fp32 absmax per 64 values"
            return f"bnb_{kind}", rate, doc, QUANTIZED_GROUPS
        if q.get("load_in_8bit"):
            return ("bnb_int8", Fraction(1), "bitsandbytes LLM.int8: 1 B (per-row fp32 scales not counted)",
                    QUANTIZED_GROUPS)
        raise bad("quant_method", "bitsandbytes quantization_config sets neither load_in_4bit nor load_in_8bit",
                  "load_in_4bit: true or load_in_8bit: true")
    if method == "fp8":
        block = q.get("weight_block_size")
        if block is None:
            return "fp8", Fraction(1), "FP8 weights, 1 B (per-tensor scales not counted)", QUANTIZED_GROUPS
        if (not isinstance(block, list) or len(block) != 2
                or any(isinstance(b, bool) or not isinstance(b, int) or b < 1 for b in block)):
            raise bad("weight_block_size", f"weight_block_size must be two positive integers, got {block!r}",
                      "[128, 128]")
        rate = 1 + Fraction(4, block[0] * block[1])
        return "fp8", rate, f"FP8 weights, 1 B + one fp32 scale per {block[0]}×{block[1]} block", QUANTIZED_GROUPS
    if method == "mxfp4":
        return ("mxfp4", Fraction(1, 2) + Fraction(1, 32), "MXFP4 routed experts: 1/2 B + one E8M0 scale "
                "per 32 values", ("routed_experts",))
    if method == "compressed-tensors":
        return _compressed_tensors(cfg, q, bad)
    if method == "fbgemm_fp8":
        _kept_only(q, "modules_to_not_convert", bad)
        return QuantFormat(("fp8_channel", Fraction(1), "FP8 E4M3 weights (fbgemm_fp8) with one FP32 scale per "
                            "output channel", QUANTIZED_GROUPS), "fp8_channel")
    if method == "modelopt":
        algo = q.get("quant_algo")
        schemes = {"FP8": ("fp8", Fraction(1)), "NVFP4": ("nvfp4", Fraction(1, 2) + Fraction(1, 16))}
        if algo not in schemes:
            raise bad("quant_algo" if "quant_algo" in q else "quant_method",
                      f"modelopt quant_algo {algo!r} has no scheme in specc", "FP8 or NVFP4")
        if algo == "NVFP4" and q.get("group_size", 16) != 16:
            raise bad("group_size", f"NVFP4's group_size is 16, got {q.get('group_size')!r}", "16")
        kv_algo = q.get("kv_cache_quant_algo")
        if kv_algo not in (None, "FP8"):
            raise bad("kv_cache_quant_algo", f"modelopt kv_cache_quant_algo {kv_algo!r} has no KV scheme in specc",
                      "FP8 or null")
        _kept_only(q, "exclude_modules", bad)
        name, rate = schemes[algo]
        return QuantFormat((name, rate, f"ModelOpt {algo} weights", QUANTIZED_GROUPS), name,
                           "fp8" if kv_algo == "FP8" else None)
    key = "quant_method" if "quant_method" in q else "quantization_config"
    raise SpecError(f"unknown quant_method {method!r}: specc cannot tell the bytes per parameter",
                    cfg.loc("quantization_config", key) if key == "quant_method" else cfg.loc(key),
                    span=len(key) + 2, expected="gptq, awq, bitsandbytes, fp8, mxfp4, compressed-tensors, fbgemm_fp8 or modelopt")


def _kept_only(q, key, bad):
    """An ignore list may only name tensors every scheme's recipe keeps in high precision."""
    names = q.get(key) or []
    if not isinstance(names, list) or any(not isinstance(n, str) for n in names):
        raise bad(key, f"quantization_config.{key} must be a list of module names", '["lm_head"]')
    for name in names:
        bare = name[3:] if name.startswith("re:") else name
        if not _KEPT_MODULES.search(bare.rstrip("$")):
            raise bad(key, f"quantization_config.{key} keeps {name!r} unquantized; specc's recipes keep only the "
                      "head, embeddings, routers and norms", "an ignore list of lm_head / embeddings / gates / norms")


def _compressed_tensors(cfg, q, bad):
    """compressed-tensors: the one config group's weight scheme → a scheme of specs/formats/schemes.yaml."""
    groups = q.get("config_groups")
    if not isinstance(groups, dict) or len(groups) != 1:
        raise bad("config_groups" if "config_groups" in q else "quant_method",
                  "compressed-tensors config_groups must hold exactly one group", '{"group_0": {"weights": ...}}')
    (group,) = groups.values()
    w = group.get("weights") if isinstance(group, dict) else None
    if not isinstance(w, dict):
        raise bad("config_groups", "the compressed-tensors group has no weights scheme", '"weights": {...}')
    bits, kind, strategy = w.get("num_bits"), w.get("type"), w.get("strategy")
    acts = group.get("input_activations")
    _kept_only(q, "ignore", bad)
    if kind == "float" and bits == 8:
        if strategy == "block":
            if w.get("block_structure") != [128, 128]:
                raise bad("config_groups", f"FP8 block_structure {w.get('block_structure')!r} has no scheme",
                          "block_structure [128, 128]")
            return QuantFormat(("fp8_block128", 1 + Fraction(4, 128 * 128), "FP8 weights, 128×128 blocks "
                                "(compressed-tensors)", QUANTIZED_GROUPS), "fp8_block128")
        if strategy in ("tensor", "channel"):
            name = "fp8" if strategy == "tensor" else "fp8_channel"
            return QuantFormat((name, Fraction(1), f"FP8 weights, {strategy} scales (compressed-tensors)",
                                QUANTIZED_GROUPS), name)
    if kind == "int" and bits == 8 and strategy == "channel":
        return QuantFormat(("int8", Fraction(1), "INT8 weights, channel scales (compressed-tensors"
                            + (", W8A8)" if acts else ")"), QUANTIZED_GROUPS), "int8")
    if kind == "int" and bits == 4 and strategy == "group":
        size = w.get("group_size")
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise bad("config_groups", f"INT4 group_size must be a positive integer, got {size!r}", "128")
        symmetric = w.get("symmetric", True) is not False
        name = f"int4_sym_g{size}" if symmetric else f"int4_g{size}"
        rate = Fraction(1, 2) + Fraction(16 + (0 if symmetric else 4), 8 * size)
        return QuantFormat((name.replace("_g", "_g"), rate, f"INT4 weights, groups of {size} "
                            f"({'symmetric' if symmetric else 'with zero points'}; compressed-tensors)",
                            QUANTIZED_GROUPS), name)
    raise bad("config_groups", f"compressed-tensors weights num_bits {bits!r}, type {kind!r}, strategy "
              f"{strategy!r} have no scheme in specc", "FP8 tensor/channel/block, INT8 channel or INT4 group")
