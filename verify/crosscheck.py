"""`specc crosscheck`: compare a spec with PyTorch's own count of the Hugging Face model.

The Hugging Face model is built from its config alone (`from_config`, no weights,
no network) on the meta device; its parameters (plus persistent buffers such as
router score-correction biases, which published totals include)
are counted by group, and the matrix FLOPs of one forward of B×P tokens are
counted with `torch.utils.flop_counter.FlopCounterMode`, attributed to modules
and compared component by component with specc's `params()` and
`flops(B, S=0, P, head=all, attention=rectangle)`.

Conventions (what is compared with what):
* FlopCounterMode counts the matrix multiplications that run: masked attention
  computes the full P×(S+P) score rectangle, so specc is compiled with the
  spec's `attention=rectangle` choice when it has one (imported specs do);
  otherwise the spec's effective pairs are compared and the row is marked.
* Hugging Face computes logits on every position: specc's `head=all`.
* Biases of linear layers are additions (no matrix FLOPs) in both.
* The model runs with eager attention and eager experts so that every matrix
  product is a counted aten op (SDPA on CPU and grouped expert kernels are not
  counted by FlopCounterMode). MoE routing needs values, which the meta device
  does not have: such models run on the CPU with random weights (small configs
  only); the expert FLOPs depend only on the k·B·P assignments, not on which
  experts are picked.

torch and transformers are an optional extra (`pip install -e '.[crosscheck]'`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import sympy as sp

from ..compiler.graph.build import compile_spec
from ..compiler.schema.symbols import B, P, S

EXTRA_HINT = "pip install -e '.[crosscheck]'  (or: pip install torch transformers)"
CPU_LIMIT = 300_000_000      # parameters above which `auto` does not instantiate real weights

# module-path words of the Hugging Face decoder families (naming conventions, not models)
ATTENTION_WORDS = {"self_attn", "attention", "attn"}
FFN_WORDS = {"mlp", "block_sparse_moe", "feed_forward"}
ROUTER_WORDS = {"gate", "router"}


class CrosscheckUnavailable(Exception):
    """The cross-check cannot run (missing extra, unknown model type, ...): exit 2."""


@dataclass
class Row:
    section: str        # parameters | FLOPs
    name: str
    hf: int | None
    specc: int | None
    verdict: str        # agree | differ | convention
    note: str = ""


@dataclass
class Report:
    title: list
    rows: list = field(default_factory=list)
    notes: list = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(r.verdict != "differ" for r in self.rows)

    def render(self) -> str:
        def fmt(v):
            return "—" if v is None else f"{v:,}"

        head = ("", "Hugging Face (PyTorch)", "specc", "")
        widths = [max(len(head[0]), *(len(r.name) for r in self.rows)) + 2,
                  max(len(head[1]), *(len(fmt(r.hf)) for r in self.rows)),
                  max(len(head[2]), *(len(fmt(r.specc)) for r in self.rows))]
        out = list(self.title)
        section = None
        for r in self.rows:
            if r.section != section:
                section = r.section
                out.append("")
                out.append(f"{section:<{widths[0]}}  {head[1]:>{widths[1]}}  {head[2]:>{widths[2]}}  verdict")
            line = f"  {r.name:<{widths[0] - 2}}  {fmt(r.hf):>{widths[1]}}  {fmt(r.specc):>{widths[2]}}  {r.verdict}"
            out.append(line + (f"  ({r.note})" if r.note else ""))
        if self.notes:
            out.append("")
            out.extend("note: " + n for n in self.notes)
        bad = sum(r.verdict == "differ" for r in self.rows)
        out.append("")
        out.append("result: every compared row agrees" if not bad else f"result: {bad} row(s) differ")
        return "\n".join(out)


# ------------------------------------------------------------------ Hugging Face side
def _imports():
    try:
        import torch
        import transformers
        from torch.utils.flop_counter import FlopCounterMode
    except ImportError as exc:
        raise CrosscheckUnavailable(f"needs torch and transformers ({exc.name} is not installed); "
                                    f"install the optional extra: {EXTRA_HINT}") from None
    return torch, transformers, FlopCounterMode


def _hf_config(transformers, path: str):
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise CrosscheckUnavailable(f"cannot read {path}: {exc}") from None
    model_type = data.pop("model_type", None)
    try:
        return transformers.AutoConfig.for_model(model_type, **data)
    except (ValueError, KeyError) as exc:
        raise CrosscheckUnavailable(f"transformers cannot build model_type '{model_type}': {exc}") from None


def _build(torch, transformers, cfg, device: str):
    kwargs = {"attn_implementation": "eager", "experts_implementation": "eager"}
    with torch.device(device):
        try:
            return transformers.AutoModelForCausalLM.from_config(cfg, **kwargs)
        except TypeError:   # older transformers: no experts_implementation
            kwargs.pop("experts_implementation")
            return transformers.AutoModelForCausalLM.from_config(cfg, **kwargs)


def param_group(name: str) -> str:
    """The specc parameter group of a Hugging Face parameter/buffer name."""
    parts = name.split(".")
    module, leaf = parts[:-1], parts[-1]
    if (module and module[-1] == "embed_tokens") or (module and module[0] == "lm_head"):
        return "embedding_head"
    if any("norm" in p for p in module) or leaf == "sinks":
        return "other"
    if any(p in ATTENTION_WORDS for p in module):
        return "attention_projection"
    if len(module) >= 2 and module[-1] in ROUTER_WORDS and module[-2] in FFN_WORDS:
        return "other"          # the project's convention: routers count under 'other'
    if "experts" in module:
        return "routed_experts"
    if any(p in FFN_WORDS or p.startswith("shared_expert") for p in module):
        return "dense_shared_ffn"
    return "other"


def flop_component(path: str) -> str:
    """The specc FLOPs component of the matrix work a module does itself."""
    parts = path.split(".")
    if parts[0] == "lm_head":
        return "vocabulary_head"
    if "rotary_emb" in parts:
        return "rotary_angles"
    if any(p in ATTENTION_WORDS for p in parts):
        return "attention_interaction" if parts[-1] in ATTENTION_WORDS else "attention_projection"
    if any(p.startswith("shared_expert") for p in parts):
        return "shared_expert"
    if "experts" in parts:
        return "routed_expert"
    if len(parts) >= 2 and parts[-1] in ROUTER_WORDS and parts[-2] in FFN_WORDS:
        return "router"
    if any(p in FFN_WORDS for p in parts):
        return "ffn"
    return "other"


def _hf_params(torch, model) -> tuple[dict, list]:
    groups: dict = {}
    seen = set()
    buffers = []
    for name, p in model.named_parameters():
        groups[param_group(name)] = groups.get(param_group(name), 0) + p.numel()
        seen.add(id(p))
    for mod_name, module in model.named_modules():
        for b_name, buf in module._buffers.items():
            if buf is None or b_name in module._non_persistent_buffers_set or id(buf) in seen:
                continue
            seen.add(id(buf))
            full = f"{mod_name}.{b_name}" if mod_name else b_name
            groups[param_group(full)] = groups.get(param_group(full), 0) + buf.numel()
            buffers.append(full)
    return groups, buffers


def _self_flops(counts: dict) -> dict:
    """FlopCounterMode attributes an op to a module and all its ancestors; keep only
    what each module does itself (its total minus its direct children's totals)."""
    totals = {}
    for module, ops in counts.items():
        if module == "Global":
            continue
        totals[module] = sum(int(v) for v in ops.values())
    own = dict(totals)
    for module, total in totals.items():
        parent = module
        while "." in parent:   # the nearest tracked ancestor (containers such as ModuleList run no forward)
            parent = parent.rsplit(".", 1)[0]
            if parent in totals:
                own[parent] -= total
                break
    return {m.split(".", 1)[1] if "." in m else "": v for m, v in own.items() if v}


def hf_counts(config_path: str, batch: int, tokens: int, device: str = "auto"):
    """(params by group, FLOPs by component, buffers counted, device used) of the HF model."""
    torch, transformers, FlopCounterMode = _imports()
    transformers.logging.set_verbosity_error()
    cfg = _hf_config(transformers, config_path)
    meta_model = _build(torch, transformers, cfg, "meta")
    params, buffers = _hf_params(torch, meta_model)
    total = sum(params.values())

    def run(model, dev):
        model.eval()
        ids = torch.zeros((batch, tokens), dtype=torch.long, device=dev) if dev == "meta" else \
            torch.randint(0, cfg.vocab_size, (batch, tokens), generator=torch.Generator().manual_seed(0))
        # an explicit all-ones mask keeps transformers from inspecting position values
        mask = torch.ones((batch, tokens), dtype=torch.long, device=dev)
        with FlopCounterMode(display=False) as counter, torch.no_grad():
            model(input_ids=ids, attention_mask=mask, use_cache=False)
        return counter.get_flop_counts()

    counts, used, why = None, None, ""
    if device in ("auto", "meta"):
        try:
            counts, used = run(meta_model, "meta"), "meta"
        except Exception as exc:  # data-dependent ops (MoE routing) cannot run without values
            why = f"{type(exc).__name__}: {str(exc).split(',')[0][:100]}"
    if counts is None:
        if device == "meta" or (device == "auto" and total > CPU_LIMIT):
            reason = (f"the forward cannot run on the meta device ({why}; MoE routing needs values)"
                      + ("" if device == "meta" else
                         f" and {total:,} parameters are too many to instantiate on the CPU (limit {CPU_LIMIT:,})")
                      + "; cross-check a tiny config of the same family, or pass --device cpu")
            return params, None, buffers, reason
        torch.manual_seed(0)
        counts, used = run(_build(torch, transformers, cfg, "cpu"), "cpu"), "cpu"
    flops: dict = {}
    for module, value in _self_flops(counts).items():
        comp = flop_component(module)
        flops[comp] = flops.get(comp, 0) + value
    return params, flops, buffers, used


# ------------------------------------------------------------------ specc side
def _choices(spec) -> tuple[dict, list]:
    choices, notes = {}, []
    head = spec.options.get("head")
    if head is not None and "all" in head.choices:
        choices["head"] = "all"
    else:
        notes.append("the spec has no head=all choice: its head rows are compared with HF's logits on every position")
    rect = [o for o in spec.options.values() if "rectangle" in o.choices]
    if rect:
        choices[rect[0].name] = "rectangle"
    else:
        notes.append("the spec has no attention=rectangle choice: its attention pairs are compared with HF's full "
                     "rectangles only where they are causal pairs (P(P+1)/2 of the P·P rectangle)")
    return choices, notes


def specc_counts(spec, batch: int, tokens: int):
    choices, notes = _choices(spec)
    model = compile_spec(spec, None, choices)
    params: dict = {}
    flops: dict = {}
    scenario = {B: sp.Integer(batch), S: sp.Integer(0), P: sp.Integer(tokens)}
    for op in model.ops:
        for w in op.weights:
            value = sp.Integer(op.mult) * w.params
            params[w.group] = params.get(w.group, 0) + value
        value = (op.mult * op.flops).xreplace(scenario)
        if value != 0:
            flops[op.component] = flops.get(op.component, 0) + value
    as_int = lambda d: {k: int(v) for k, v in d.items() if v != 0}  # noqa: E731
    return as_int(params), as_int(flops), choices, notes


# ------------------------------------------------------------------ comparison
PARAM_ORDER = ["embedding_head", "attention_projection", "dense_shared_ffn", "routed_experts", "engram", "other"]
FLOP_ORDER = ["attention_projection", "attention_interaction", "ffn", "shared_expert", "router", "routed_expert",
              "vocabulary_head", "rotary_angles"]
CONVENTION = {"rotary_angles": "HF forms RoPE angles with a matrix product; specc counts RoPE as element-wise"}


def _ordered(keys, order):
    return [k for k in order if k in keys] + sorted(k for k in keys if k not in order)


def crosscheck(spec, config_path: str, batch: int = 1, tokens: int = 16, device: str = "auto") -> Report:
    hf_params, hf_flops, buffers, used = hf_counts(config_path, batch, tokens, device)
    sc_params, sc_flops, choices, notes = specc_counts(spec, batch, tokens)
    chosen = ", ".join(f"{k}={v}" for k, v in choices.items())
    forward = f"forward: B={batch}, S=0, P={tokens} on the {used} device; " \
        f"specc flops(B={batch}, S=0, P={tokens}{', ' + chosen if chosen else ''})" if hf_flops is not None \
        else "matrix FLOPs not compared: " + used
    report = Report([f"crosscheck {spec.path} against {config_path}", forward])
    report.notes.extend(notes)
    if buffers:
        report.notes.append("persistent buffers counted as parameters: " + ", ".join(sorted(
            {b.split(".")[-1] for b in buffers})) + f" ({len(buffers)} tensors)")
    for key in _ordered(set(hf_params) | set(sc_params), PARAM_ORDER):
        h, s = hf_params.get(key, 0), sc_params.get(key, 0)
        report.rows.append(Row("parameters", key, h, s, "agree" if h == s else "differ"))
    h, s = sum(hf_params.values()), sum(sc_params.values())
    report.rows.append(Row("parameters", "total", h, s, "agree" if h == s else "differ"))
    if hf_flops is None:
        return report
    gemm_h = gemm_s = 0
    for key in _ordered(set(hf_flops) | set(sc_flops), FLOP_ORDER):
        h, s = hf_flops.get(key, 0), sc_flops.get(key, 0)
        if key in CONVENTION and s == 0:
            report.rows.append(Row("matrix FLOPs", key, h, None, "convention", CONVENTION[key]))
            continue
        if key == "attention_interaction" and "rectangle" not in choices.values():
            # the spec counts effective pairs: like with like only if they are causal pairs,
            # which are the rectangle's P(P+1)/2 of P·P (S = 0)
            causal = sp.Rational(h) * (tokens + 1) / (2 * tokens)
            verdict = "agree" if causal == s else "convention"
            report.rows.append(Row("matrix FLOPs", key, h, s, verdict,
                                   "specc causal pairs = HF rectangle·(P+1)/(2P)" if verdict == "agree" else
                                   "specc counts effective pairs, HF full rectangles; not compared"))
            continue
        gemm_h, gemm_s = gemm_h + h, gemm_s + s
        note = "full P×(S+P) rectangles" if key == "attention_interaction" else ""
        report.rows.append(Row("matrix FLOPs", key, h, s, "agree" if h == s else "differ", note))
    counted = set(FLOP_ORDER) | set(hf_flops) | set(sc_flops)
    compared = {r.name for r in report.rows if r.section == "matrix FLOPs" and r.note != "" and
                (r.verdict == "convention" or r.note.startswith("specc"))}
    left_out = sorted(compared & counted)
    report.rows.append(Row("matrix FLOPs", "total (GEMM)", gemm_h, gemm_s, "agree" if gemm_h == gemm_s else "differ",
                           "without " + ", ".join(left_out) if left_out else ""))
    return report
