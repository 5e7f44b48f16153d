"""Engine command lines that run a planned deployment (vLLM and SGLang).

Flags are the engines' documented ones; the planner's settings map onto them:
max_num_seqs = the requests that fit (the admission rule), max_model_len =
I + G, max_num_batched_tokens = the chunk budget, gpu_memory_utilization = the
memory fraction. The model's path is a placeholder (a spec names no checkpoint).
Storage formats map to engine flags only where the name is a generic scheme
(the table below); any other format is left to the user and said so.

Degrees: specc's instance is tp·pp·ep devices, the ep ranks holding 1/ep of the
experts and serving 1/ep of the requests (attention data parallel). vLLM's
--enable-expert-parallel with --data-parallel-size ep and SGLang's
--enable-dp-attention express that; vLLM then splits experts over tp·ep, not ep
(a difference in the expert split the comment line names)."""

from __future__ import annotations

from .serving import final_context

# generic storage scheme names -> (vLLM flags, SGLang flags)
_QUANT = {
    "fp8": (["--quantization", "fp8"], ["--quantization", "fp8"]),
    "int8": (["--quantization", "<an int8 scheme: w8a8 / gptq / ...>"], ["--quantization", "w8a8_int8"]),
    "int4": (["--quantization", "<an int4 scheme: awq / gptq>"], ["--quantization", "awq"]),
    "fp4": (["--quantization", "<an fp4 scheme: modelopt_fp4 / ...>"], ["--quantization", "modelopt_fp4"]),
}


def _quant(fmt: tuple, which: int) -> list:
    for _, value in fmt:
        if value in _QUANT:
            return _QUANT[value][which]
    return []


def vllm(dep, traffic, rules, n_fit: int, model: str = "<model path>") -> list:
    """One command per instance kind (aggregated: one; disaggregated: prefill, decode)."""
    lay = dep.layout
    base = ["vllm", "serve", model, "--tensor-parallel-size", str(lay.tp)]
    if lay.pp > 1:
        base += ["--pipeline-parallel-size", str(lay.pp)]
    if lay.ep > 1:
        base += ["--data-parallel-size", str(lay.ep), "--enable-expert-parallel"]
    base += ["--max-num-seqs", str(max(n_fit, 1)), "--max-model-len", str(final_context(traffic)),
             "--max-num-batched-tokens", str(rules.chunk), "--enable-chunked-prefill",
             "--gpu-memory-utilization", f"{float(rules.memory_fraction):g}"]
    base += _quant(lay.fmt, 0)
    if dep.mode == "aggregated":
        return [_line(base, f"× {dep.dp} replicas behind a load balancer")]
    kv = ["--kv-transfer-config", "'{\"kv_connector\":\"NixlConnector\",\"kv_role\":\"kv_both\"}'"]
    return [_line(base + kv, f"prefill: × {dep.dp_prefill} instances"),
            _line(base + kv, f"decode: × {dep.dp} instances")]


def sglang(dep, traffic, rules, n_fit: int, model: str = "<model path>") -> list:
    lay = dep.layout
    base = ["python", "-m", "sglang.launch_server", "--model-path", model,
            "--tp-size", str(lay.tp * lay.ep)]
    if lay.pp > 1:
        base += ["--pp-size", str(lay.pp)]
    if lay.ep > 1:
        base += ["--ep-size", str(lay.tp * lay.ep), "--enable-dp-attention", "--dp-size", str(lay.ep)]
    base += ["--max-running-requests", str(max(n_fit, 1)), "--context-length", str(final_context(traffic)),
             "--chunked-prefill-size", str(rules.chunk), "--mem-fraction-static", f"{float(rules.memory_fraction):g}"]
    base += _quant(lay.fmt, 1)
    if dep.mode == "aggregated":
        return [_line(base, f"× {dep.dp} replicas behind a router")]
    return [_line(base + ["--disaggregation-mode", "prefill"], f"× {dep.dp_prefill} instances"),
            _line(base + ["--disaggregation-mode", "decode"], f"× {dep.dp} instances")]


def _line(args: list, note: str) -> str:
    return " ".join(args) + f"   # {note}"
