"""The one table of queries: name → family, argument signature, unit, doc.

Plain data only. This module imports nothing but the standard library (no sympy,
lark, yaml or networkx), so the CLI's help text, the README's query table, the
Python API's keyword methods and the explorer's list can all be generated from
it without loading the engine. Each query's implementation is a method
`q_<name>` of the query-family module named by its family (compiler/q_<family>.py,
training.py for `training`); QueryEngine checks at import time that the two agree.

Deployment arguments (`tp=, pp=, ep=, dp=, per_device=`) are accepted by every
memory, state and capacity query; see the README section "Deployment sizing"."""

from __future__ import annotations

from dataclasses import dataclass

# arguments every per-device query takes (see compiler/sharding.py)
DEPLOY_ARGS = "tp=1, pp=1, ep=1, dp=1, per_device=false"


@dataclass(frozen=True)
class QueryInfo:
    name: str
    family: str
    args: str        # the signature as users write it, defaults shown
    unit: str
    doc: str

    @property
    def signature(self) -> str:
        return f"{self.name}({self.args})"

    def __str__(self) -> str:
        return f"{self.signature} — {self.doc}"


# family -> its queries: (name, args, unit, doc). The families are also the
# module names; their order is the order of the README table and of `eval --help`.
FAMILIES: dict[str, list[tuple[str, str, str, str]]] = {
    "memory": [
        ("params", "group=, op=, layer=, stage=, " + DEPLOY_ARGS, "params",
         "parameter count (groups: embedding_head, attention_projection, dense_shared_ffn, routed_experts, "
         "engram, other)"),
        ("active_params", "", "params",
         "parameters one token uses: all weights, but of routed experts only the top-k of E one token reaches"),
        ("weight_bytes", "format=, group=, " + DEPLOY_ARGS, "B", "bytes of stored weights in a storage format"),
        ("weight_read_bytes", "B=1, format=, " + DEPLOY_ARGS, "B",
         "weight bytes one decode step reads (only the experts B rows can touch; lookup tables excluded)"),
    ],
    "compute": [
        ("flops", "B=1, S=0, P, <option>=, stage=, component=, op=, layer=", "FLOPs",
         "matrix FLOPs of one call"),
        ("scalar_work", "B=1, S=0, P, ...", "FLOPs", "declared non-matrix work of one call"),
        ("request_flops", "B=1, S=0, P, G, ...", "FLOPs", "prefill plus G−1 decode calls, summed in closed form"),
        ("pairs", "B=1, S=0, P", "", "valid causal query–key pairs of a call"),
        ("rows", "B=1, S=0, P, op=, layer=", "", "rows (positions × requests) an op processes in one call"),
    ],
    "state": [
        ("kv_bytes_per_token", "format=, component=, " + DEPLOY_ARGS, "B/token",
         "average growth of the kv-tagged state per token"),
        ("state_bytes", "H, B=1, format=, component=, " + DEPLOY_ARGS, "B", "resident state at context length H"),
        ("decode_read_bytes", "H, B=1, format=, component=, " + DEPLOY_ARGS, "B",
         "bytes one decode step reads (component weights, lookup, a store or a tag)"),
        ("decode_write_bytes", "H, B=1, format=, component=", "B",
         "bytes the step from H to H+1 tokens writes (writes: declarations; else the state's growth)"),
        ("request_read_bytes", "S=0, P, G, B=1, format=, component=", "B",
         "state bytes read by the G−1 decode steps"),
    ],
    "capacity": [
        ("b_max", "device=, H, workspace=0 B, format=, memory=, block=, tp=1, pp=1, ep=1, dp=1", "",
         "requests that fit on the deployment (workspace= and memory= per device)"),
        ("h_max", "device=, B=1, workspace=0 B, format=, memory=, block=, tp=1, pp=1, ep=1, dp=1", "tokens",
         "the longest context at which B requests fit (block=: entries round up to whole blocks)"),
    ],
    "device": [
        ("device_memory", "device=, memory=", "B",
         "memory of a device in specs/hardware/ (bytes as the device reports them; memory= a document's figure)"),
        ("device_flops", "device=, dtype=bf16, flops=", "FLOPs/s",
         "a device's peak dense matrix FLOP/s for a data type (bf16, else fp16 where it has no bf16)"),
        ("device_bandwidth", "device=, bandwidth=", "B/s", "a device's memory bandwidth"),
        ("device_link", "device=, link=nvlink|host", "B/s",
         "a device's device-to-device (or host) link bandwidth, both directions added"),
    ],
    "deployment": [
        ("comm_bytes", "B=1, S=0, P, tp=1, pp=1, ep=1, per_device=false, component=tp|ep|pp, act_bytes=2", "B",
         "bytes one device sends in one call (ring all-reduce, all-gather, all-to-all, pipeline sends)"),
    ],
    "time": [
        ("call_time", "B=1, S=0, P, device=, dtype=, format=, tp=1, pp=1, ep=1, dp=1, mfu=1, mbu=1, "
                      "overlap=false, activations=false, act_bytes=2, flops=, bandwidth=", "s",
         "roofline time of one call: Σ ops max(FLOPs/(peak·mfu), bytes/(bandwidth·mbu)) + comm bytes/link"),
        ("ttft", "P, B=1, device=, ...", "s", "time to first token: the prefill call of P tokens (S = 0)"),
        ("tpot", "H, B=1, device=, ...", "s", "time per output token: one decode step at context H (S = H, P = 1)"),
        ("throughput", "H, B, device=, ...", "tokens/s", "decode tokens per second of B requests at context H"),
    ],
    "training": [
        ("train_memory", "B=1, P, precision=mixed, optimizer=adam, component=, checkpointing=, "
                         "tp=1, pp=1, dp=1, zero=0, per_device=false", "B",
         "training memory; component weights|gradients|master|<optimizer state>|moments|optimizer|static|"
         "activations; zero=1|2|3 partitions optimizer states, + gradients, + weights over dp"),
        ("train_flops", "B=1, P, checkpointing=, backward=2, <option>=", "FLOPs",
         "matrix FLOPs of one training step: (1 + backward + recompute) forward passes"),
    ],
    "structure": [
        ("op_count", "op=, stage=, component=, layer=", "", "layer instances that contain an op"),
        ("dim", "NAME", "", "a dimension of the spec"),
        ("dtype_bytes", "NAME", "B", "bytes per element of a storage type (fp4 = 0.5 B, bf16 = 2 B, ...)"),
    ],
}

REGISTRY: dict[str, QueryInfo] = {
    name: QueryInfo(name, family, args, unit, doc)
    for family, rows in FAMILIES.items() for name, args, unit, doc in rows
}
# queries the evaluator answers itself (their argument is a bare name, not a keyword)
SPECIAL_FORMS = {"dim", "dtype_bytes"}


def help_lines() -> list[str]:
    """One line per query, grouped by family, for `specc eval --help`."""
    out = []
    for family, rows in FAMILIES.items():
        out.append(f"{family}: " + ", ".join(name for name, *_ in rows))
    return out


def markdown_table() -> str:
    """The README's query table (between the markers README_BEGIN / README_END)."""
    lines = ["| query | family | unit | what it answers |", "|---|---|---|---|"]
    for info in REGISTRY.values():
        cells = (f"`{info.signature}`", info.family, info.unit or "—", info.doc)
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines)


README_BEGIN = "<!-- query table: generated from compiler/query_registry.py by `python -m specc.compiler.query_registry README.md`; do not edit -->"
README_END = "<!-- end of query table -->"


def update_readme(path: str) -> bool:
    """Rewrite the marked query table of a README from the registry; True if it changed.
    Run `python -m specc.compiler.query_registry README.md` after changing the table above."""
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    start, end = text.index(README_BEGIN) + len(README_BEGIN), text.index(README_END)
    new = text[:start] + "\n" + markdown_table() + "\n" + text[end:]
    if new != text:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(new)
    return new != text


if __name__ == "__main__":  # pragma: no cover
    import sys

    for readme in sys.argv[1:] or ["README.md"]:
        print(f"{readme}: {'updated' if update_readme(readme) else 'up to date'}")
