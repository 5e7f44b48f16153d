"""Training-memory queries (weights, gradients, optimizer states, activations).

A mixin of QueryEngine, kept apart because training accounting is its own
family of conventions. Its queries are registered in query_registry.py (family 'training').

Conventions
-----------
*Per-parameter state* follows a **precision** recipe (which dtype holds the
weights, the gradients and an optional FP32 master copy) and an **optimizer**
recipe (the dtype of each optimizer state kept per parameter). Both are general,
not model data, so the defaults live in the two tables below; a spec may add or
override recipes in its `training:` section:

    mixed       weights bf16, gradients bf16, master fp32   (2 + 2 + 4 B/param)
    mixed_fp16  weights fp16, gradients fp16, master fp32
    bf16        weights bf16, gradients bf16                (no master copy)
    fp32        weights fp32, gradients fp32
    adam/adamw  m fp32, v fp32                              (4 + 4 B/param)
    momentum    momentum fp32 (SGD with momentum)
    sgd         no state

So mixed-precision Adam keeps 2 + 2 + 4 + 4 + 4 = 16 B per parameter. Every
parameter of the spec (params()) is counted, embeddings and norms included.

*Activations* vary by model, so they are declared data: the spec's `training:`
section names, per checkpointing policy, the elements each layer instance of a
stack segment saves per token (an expression over the dims, which may use P, the
sequence length, e.g. for attention scores), the dtype they are saved in, and how
many extra forward passes the policy recomputes during the backward pass:

    training:
      activation_dtype: bf16                  # bytes per saved element (dtype name or expression)
      checkpointing:                          # the first policy is the default
        none: {saved: {layers: 12*d}}         # segment -> elements per token per layer instance
        full: {saved: {layers: d}, recompute: 1}
      precisions: {name: {weights: bf16, gradients: bf16, master: fp32}}   # optional
      optimizers: {name: {m: fp32, v: fp32}}                               # optional

Activation bytes = Σ_segments layers(segment) · saved(segment) · B · P · bytes.

*Deployment* (tp=, pp=, dp=, per_device=true, zero=0|1|2|3): per-parameter state
follows the weights' sharding (compiler/deploy/sharding.py: the most loaded device's
parameters over tp and pp); ZeRO then partitions it over the dp ranks, stage by
stage as DeepSpeed does — zero=1 the optimizer states (master copy and moments),
zero=2 also the gradients, zero=3 also the weights — each rank keeping
ceil(params / dp) of a partitioned component. Activations are those of the
ceil(B / dp) sequences of one rank on the most loaded pipeline stage's layers; they
are not split over tp (no sequence parallelism). Without per_device=true the deployment
arguments are not used: train_memory is the whole model's.

*Conventions of the frameworks* (convention=): `megatron` is the precision recipe above
with Adam (18 B per parameter; zero=1 is its distributed optimizer, 6 + 12/dp on the
most loaded shard: 6·n + 12·ceil(n/dp)); `deepspeed` is DeepSpeed's own estimators'
sum of the model states (estimate_zero2/zero3_model_states_mem_needs, no offload):
zero=1|2: 4·n + floor(16·n/dp); zero=3: floor(18·n/dp) + 4·(largest layer's params).
*ZeRO-3's working set*: a rank gathers one layer's full weights (and holds its
gradients) at a time; the largest op's parameters (one expert's for routed experts),
at the weight and gradient bytes of the recipe, are added to the static state.

*Training FLOPs* of one step on B sequences of P tokens are (1 + backward +
recompute) forward passes: the forward matrix FLOPs (flops(B, S=0, P) with the
spec's options, e.g. head=all), a backward pass of `backward` = 2 forwards
(gradients with respect to the inputs and to the weights) and the recomputed
forwards of the checkpointing policy.
"""

from __future__ import annotations

import sympy as sp

from ...dsl.errors import SpecError, did_you_mean
from ...dsl.units import BYTES, FLOPS
from ..schema.symbols import model_env
from .query_base import Quantity
from ...dsl.limits import limit_error
from ..schema.layerset import union
from ..deploy.sharding import Deployment, weight_fraction
from ..schema.spec import PRECISION_KEYS, TrainingSection

# precision recipe: component -> dtype (bytes per parameter)
PRECISIONS = {
    "mixed": {"weights": "bf16", "gradients": "bf16", "master": "fp32"},
    "mixed_fp16": {"weights": "fp16", "gradients": "fp16", "master": "fp32"},
    "bf16": {"weights": "bf16", "gradients": "bf16"},
    "fp32": {"weights": "fp32", "gradients": "fp32"},
    # Megatron-LM: BF16 weights, FP32 main gradients and FP32 main weights (theoretical_memory_usage.py:
    # 18 bytes per parameter with Adam; 6 + 12/dp with the distributed optimizer, i.e. zero=1)
    "megatron": {"weights": "bf16", "gradients": "fp32", "master": "fp32"},
}
CONVENTIONS = ("megatron", "deepspeed")
# optimizer recipe: state name -> dtype (bytes per parameter)
OPTIMIZERS = {
    "adam": {"m": "fp32", "v": "fp32"},
    "adamw": {"m": "fp32", "v": "fp32"},
    "momentum": {"momentum": "fp32"},
    "sgd": {},
}
_PRECISION_KEYS = PRECISION_KEYS
_GROUPS = {"moments", "optimizer", "static", "activations"}


class _Recipes:
    """The spec's training section (checked at load, compiler/schema/spec.py) with the default
    recipes above merged under the spec's own."""

    def __init__(self, section):
        self.loc, self.declared, self.dtype = section.loc, section.declared, section.dtype
        self.policies = section.policies
        self.precisions = {**{k: dict(v) for k, v in PRECISIONS.items()}, **section.precisions}
        self.optimizers = {**{k: dict(v) for k, v in OPTIMIZERS.items()}, **section.optimizers}


class TrainingQueries:
    """Methods q_<name>(self, model, args) -> Quantity, like QueryEngine's."""

    def _training(self) -> _Recipes:
        if getattr(self, "_training_cache", None) is None:
            self._training_cache = _Recipes(self.spec.training or TrainingSection())
        return self._training_cache

    @staticmethod
    def _dtype_bytes(model, value, loc) -> sp.Expr:
        """Bytes per element of a recipe entry: a dtype name (fp32, bf16, ...) or an expression."""
        from ..schema.expressions import Evaluator
        from ..schema.symbols import DTYPE_BYTES

        if isinstance(value, str):
            if value not in DTYPE_BYTES:
                raise SpecError(f"unknown dtype '{value}'", loc, expected=did_you_mean(value, DTYPE_BYTES))
            return DTYPE_BYTES[value]
        return Evaluator(model_env(model), what="name")(value)

    def _policy(self, tr: _Recipes, args):
        name = args.name("checkpointing")
        if not tr.policies:
            raise SpecError(f"{self.spec.model} declares no activations for training", tr.loc or args.loc,
                            expected="a 'training:' section with activation_dtype: and checkpointing:")
        if name is None:
            return next(iter(tr.policies))
        if name not in tr.policies:
            raise SpecError(f"unknown checkpointing policy '{name}'", args.loc, expected=did_you_mean(name, tr.policies))
        return name

    def _activation_bytes(self, model, tr: _Recipes, policy: str, batch, seq, loc, only=None) -> sp.Expr:
        """only: segment -> the layers to count (one pipeline stage); default every layer."""
        from ..schema.expressions import Evaluator
        from ..schema.symbols import B, P

        if tr.dtype is None:
            raise SpecError("training activations need 'activation_dtype:'", tr.loc, expected="activation_dtype: bf16")
        env = model_env(model)
        per_elem = self._dtype_bytes(model, tr.dtype, tr.loc)
        saved, _ = tr.policies[policy]
        total = sp.Integer(0)
        for seg, (node, seg_loc) in saved.items():
            seg_ops = [op for op in model.ops if op.segment == seg]
            if not seg_ops:
                segments = {op.segment for op in model.ops}
                raise SpecError(f"checkpointing policy '{policy}' names unknown stack segment '{seg}'", seg_loc,
                                span=len(seg), expected=did_you_mean(seg, segments))
            layered = [op.layers for op in seg_ops if op.layers]
            # distinct layers counted over ranges (never listed), plus one for the unlayered ops
            try:
                count = len(union(*layered)) + (1 if len(layered) < len(seg_ops) else 0)
            except ValueError:
                raise limit_error("enumerated_layers", seg_loc) from None
            if only is not None and layered:
                count = len(only.get(seg, ()))
            total += count * Evaluator(env, what="name")(node)
        return (total * B * P * per_elem).xreplace({B: batch, P: seq})

    @staticmethod
    def _zero(args) -> int:
        args.used.add("zero")
        value = args.raw("zero")
        if value is None:
            return 0
        if value not in (sp.Integer(0), sp.Integer(1), sp.Integer(2), sp.Integer(3)):
            raise SpecError(f"'zero=' takes a ZeRO stage 0, 1, 2 or 3, got {value}", args.node_loc("zero"),
                            expected="zero=1 (optimizer states), 2 (+ gradients) or 3 (+ weights)")
        return int(value)

    def _stage_activations(self, model, tr, policy, batch, seq, dep, loc):
        """Activation bytes of the most loaded pipeline stage (layers of each segment on it)."""
        if dep.pp == 1:
            return self._activation_bytes(model, tr, policy, batch, seq, loc)
        stage_of = self._stage_of(model, dep.pp, loc)
        per_stage = []
        for stage in range(dep.pp):
            sub = {}
            for op in model.ops:
                if op.layers:
                    # ranges clipped to the stage, never each layer (a spec may have 10**12)
                    sub[op.segment] = union(sub.get(op.segment, ()), stage_of.layers_on(op.layers, stage))
            per_stage.append(self._activation_bytes(model, tr, policy, batch, seq, loc, sub))
        return self._most_loaded(per_stage)

    def _largest_layer(self, model, dep, loc):
        """The largest op's parameters on one device (per expert for routed experts): the
        working set ZeRO-3 gathers at a time (DeepSpeed's largest_layer_params)."""
        from ..deploy.sharding import tp_fraction

        return max((op.params() / op.experts * tp_fraction(op, dep, loc) for op in model.ops if op.weights),
                   default=sp.Integer(0))

    def q_train_memory(self, model, args):
        tr = self._training()
        convention = args.name("convention")
        if convention is not None and convention not in CONVENTIONS:
            raise SpecError(f"no training convention '{convention}'", args.node_loc("convention"),
                            expected=did_you_mean(convention, CONVENTIONS))
        if convention is not None and args.raw("precision") is not None:
            raise SpecError(f"convention={convention} fixes the precision recipe", args.node_loc("precision"),
                            expected="precision= or convention=, not both")
        prec_name = args.name("precision") or ("megatron" if convention == "megatron" else "mixed")
        opt_name = args.name("optimizer") or "adam"
        if prec_name not in tr.precisions:
            raise SpecError(f"unknown precision '{prec_name}'", args.loc, expected=did_you_mean(prec_name, tr.precisions))
        if opt_name not in tr.optimizers:
            raise SpecError(f"unknown optimizer '{opt_name}'", args.loc, expected=did_you_mean(opt_name, tr.optimizers))
        precision, optimizer = tr.precisions[prec_name], tr.optimizers[opt_name]
        component = args.name("component")
        known = _PRECISION_KEYS | set(optimizer) | _GROUPS
        if component is not None and component not in known:
            raise SpecError(f"no training component '{component}' (precision {prec_name}, optimizer {opt_name})",
                            args.loc, expected=did_you_mean(component, known))
        picked = {
            None: set(precision) | set(optimizer) | {"activations"},
            "static": set(precision) | set(optimizer),
            "optimizer": ({"master"} & set(precision)) | set(optimizer),
            "moments": set(optimizer),
        }.get(component, {component})
        raw = self.deployment(args, ("tp", "pp", "dp"))
        dep = Deployment(raw.tp, raw.pp, 1, raw.dp, raw.per_device, experts_over_dp=False)
        zero = self._zero(args)
        if not dep.per_device and (zero or not dep.trivial):
            raise SpecError("tp=, pp=, dp= and zero= size one device: add per_device=true", args.loc,
                            expected="train_memory(..., dp=8, zero=2, per_device=true)")
        n_params = self._sum_params(model, {}, args.loc)
        if dep.per_device:
            terms = [(op.layers, op.segment, op.mult, op.params() * weight_fraction(op, dep, args.loc)) for op in model.ops]
            n_params = self._most_loaded(self._per_stage(model, dep, terms, args.loc))
        total = sp.Integer(0)
        if convention == "deepspeed":
            total += self._deepspeed_states(model, args, component, picked, n_params, dep, zero)
        else:
            # the ZeRO stage from which each component is partitioned over dp
            zero_from = {"weights": 3, "gradients": 2}
            for part in sorted(picked - {"activations"}):
                recipe = precision if part in _PRECISION_KEYS else optimizer
                if part in recipe:
                    held = n_params
                    if dep.dp > 1 and zero >= zero_from.get(part, 1):
                        held = sp.ceiling(n_params / dep.dp)
                    total += held * self._dtype_bytes(model, recipe[part], args.loc)
            if zero == 3 and dep.dp > 1 and component in (None, "static"):
                working = sum(self._dtype_bytes(model, precision[p], args.loc) for p in ("weights", "gradients")
                              if p in precision)
                total += working * self._largest_layer(model, dep, args.loc)
        if "activations" in picked:
            if component == "activations" or args.raw("P") is not None:
                policy = self._policy(tr, args)
                batch = args.scenario("B", 1)
                if dep.per_device:
                    total += self._stage_activations(model, tr, policy, sp.ceiling(batch / dep.dp), args.scenario("P"),
                                                     dep, args.loc)
                else:
                    total += self._activation_bytes(model, tr, policy, batch, args.scenario("P"), args.loc)
            else:
                args.scenario("P")   # the total needs the sequence length: a located 'missing P=' error
        return Quantity(total, BYTES)

    def _deepspeed_states(self, model, args, component, picked, n_params, dep, zero):
        """DeepSpeed's estimators of the model states per GPU (no offload): zero=1|2
        4·n + int(16·n/dp); zero=3 int(18·n/dp) + 4·largest layer."""
        if component not in (None, "static", "activations"):
            raise SpecError("convention=deepspeed sizes the model states as one sum, as its estimators do",
                            args.node_loc("component"), expected="component=static or component=activations")
        if "activations" in picked and len(picked) == 1:
            return sp.Integer(0)
        if zero == 0:
            raise SpecError("DeepSpeed's estimators size ZeRO stages 1 to 3", args.node_loc("convention"),
                            expected="zero=1, 2 or 3 with convention=deepspeed")
        if zero == 3:
            return sp.floor(18 * n_params / dep.dp) + 4 * self._largest_layer(model, dep, args.loc)
        return 4 * n_params + sp.floor(16 * n_params / dep.dp)

    def q_train_flops(self, model, args):
        from ..schema.expressions import Evaluator
        from ..schema.symbols import B, P, S

        tr = self._training()
        batch, seq = args.scenario("B", 1), args.scenario("P")
        if isinstance(seq, sp.Integer) and seq < 1:
            raise SpecError("P must be at least 1", args.loc, expected="P >= 1")
        args.used.add("backward")
        backward = args.raw("backward")
        backward = sp.Integer(2) if backward is None else sp.nsimplify(backward)
        recompute = sp.Integer(0)
        if tr.policies:
            _, node = tr.policies[self._policy(tr, args)]
            if node is not None:
                recompute = Evaluator(model_env(model), what="name")(node)
        elif args.raw("checkpointing") is not None:
            self._policy(tr, args)
        ext = args.check_context(model, seq)
        forward = self._sum(model, "flops", args.filters(), args.loc).xreplace({B: batch, S: sp.Integer(0), P: seq})
        return Quantity((1 + backward + recompute) * forward, FLOPS, ext)
