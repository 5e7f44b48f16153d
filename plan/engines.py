"""Engine command lines that run a planned deployment (vLLM and SGLang).

Flags are the engines' documented ones; the planner's settings map onto them:
max_num_seqs = the requests that fit (the admission rule; vLLM's is per
data-parallel rank, each rank scheduling its own, SGLang's
--max-running-requests counts every rank's), max_model_len =
I + G, max_num_batched_tokens = the chunk budget, gpu_memory_utilization = the
memory fraction. The model's path is a placeholder (a spec names no checkpoint).

Degrees (plan/queries.py): an instance is tp·pp·dp devices, ep of each stage's
tp·dp ranks holding the routed experts.
  vLLM:   --tensor-parallel-size tp, --pipeline-parallel-size pp, --data-parallel-size dp
          (attention data parallel), --enable-expert-parallel when ep > 1. vLLM spreads the
          experts over all tp·dp ranks (ep = tp·dp) or, without the flag, shards each
          expert over them (ep = 1); a layout in between (1 < ep < tp·dp) has no vLLM
          flag, and its line says so.
  SGLang: --tp-size tp·dp (every rank of a stage), --dp-size dp --enable-dp-attention when
          dp > 1, --ep-size ep when ep > 1 (experts tensor-parallel over tp·dp/ep),
          --pp-size pp.
Storage formats map to flags where the name is a generic scheme (the table below):
weights=SCHEME (or a format of that name) -> --quantization, kv=fp8 -> --kv-cache-dtype.
A spec's named format whose scheme is the released checkpoint's needs no flag (the
engine reads the checkpoint's quantization config); any other format is left to
the user and said so."""

from __future__ import annotations

from .serving import final_context

# generic weight scheme names -> (vLLM flags, SGLang flags)
_QUANT = {
    "fp8": (["--quantization", "fp8"], ["--quantization", "fp8"]),
    "int8": (["--quantization", "<an int8 scheme: w8a8 / gptq / ...>"], ["--quantization", "w8a8_int8"]),
    "int4": (["--quantization", "<an int4 scheme: awq / gptq>"], ["--quantization", "awq"]),
    "fp4": (["--quantization", "<an fp4 scheme: modelopt_fp4 / ...>"], ["--quantization", "modelopt_fp4"]),
}
# KV scheme names -> (vLLM --kv-cache-dtype, SGLang --kv-cache-dtype)
_KV = {"fp8": ("fp8", "fp8_e4m3"), "fp8_e4m3": ("fp8_e4m3", "fp8_e4m3"), "fp8_e5m2": ("fp8_e5m2", "fp8_e5m2")}


def _quant(fmt: tuple, which: int) -> list:
    out = []
    for key, value in fmt:
        if key in ("format", "weights") and value in _QUANT and not out:
            out += _QUANT[value][which]
        elif key == "kv" and value in _KV:
            out += ["--kv-cache-dtype", _KV[value][which]]
    return out


def vllm(dep, traffic, rules, n_fit: int, model: str = "<model path>") -> list:
    """One command per instance kind (aggregated: one; disaggregated: prefill, decode)."""
    lay = dep.layout
    base = ["vllm", "serve", model, "--tensor-parallel-size", str(lay.tp)]
    if lay.pp > 1:
        base += ["--pipeline-parallel-size", str(lay.pp)]
    if lay.dp > 1:
        base += ["--data-parallel-size", str(lay.dp)]
    if lay.ep > 1:
        base += ["--enable-expert-parallel"]
    base += ["--max-num-seqs", str(max(n_fit // lay.dp, 1)), "--max-model-len", str(final_context(traffic)),
             "--max-num-batched-tokens", str(rules.chunk), "--enable-chunked-prefill",
             "--gpu-memory-utilization", f"{float(rules.memory_fraction):g}"]
    base += _quant(lay.fmt, 0)
    caveat = (f"; vLLM spreads experts over all {lay.tp * lay.dp} ranks or none: ep={lay.ep} has no flag"
              if 1 < lay.ep < lay.tp * lay.dp else "")
    if dep.mode == "aggregated":
        return [_line(base, f"× {dep.replicas} replicas behind a load balancer{caveat}")]
    kv = ["--kv-transfer-config", "'{\"kv_connector\":\"NixlConnector\",\"kv_role\":\"kv_both\"}'"]
    return [_line(base + kv, f"prefill: × {dep.prefill_replicas} instances{caveat}"),
            _line(base + kv, f"decode: × {dep.replicas} instances{caveat}")]


def sglang(dep, traffic, rules, n_fit: int, model: str = "<model path>") -> list:
    lay = dep.layout
    base = ["python", "-m", "sglang.launch_server", "--model-path", model,
            "--tp-size", str(lay.tp * lay.dp)]
    if lay.pp > 1:
        base += ["--pp-size", str(lay.pp)]
    if lay.dp > 1:
        base += ["--dp-size", str(lay.dp), "--enable-dp-attention"]
    if lay.ep > 1:
        base += ["--ep-size", str(lay.ep)]
    base += ["--max-running-requests", str(max(n_fit, 1)), "--context-length", str(final_context(traffic)),
             "--chunked-prefill-size", str(rules.chunk), "--mem-fraction-static", f"{float(rules.memory_fraction):g}"]
    base += _quant(lay.fmt, 1)
    if dep.mode == "aggregated":
        return [_line(base, f"× {dep.replicas} replicas behind a router")]
    return [_line(base + ["--disaggregation-mode", "prefill"], f"× {dep.prefill_replicas} instances"),
            _line(base + ["--disaggregation-mode", "decode"], f"× {dep.replicas} instances")]


def _line(args: list, note: str) -> str:
    return " ".join(args) + f"   # {note}"
