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
Anything else is a located error (specc would otherwise print bf16 weight bytes
for a quantized checkpoint)."""

from __future__ import annotations

from fractions import Fraction

from .errors import SpecError

QUANTIZED_GROUPS = ("attention_projection", "dense_shared_ffn", "routed_experts")
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
    key = "quant_method" if "quant_method" in q else "quantization_config"
    raise SpecError(f"unknown quant_method {method!r}: specc cannot tell the bytes per parameter",
                    cfg.loc("quantization_config", key) if key == "quant_method" else cfg.loc(key),
                    span=len(key) + 2, expected="gptq, awq, bitsandbytes, fp8 or mxfp4")
