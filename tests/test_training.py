"""The training query family (compiler/query/training.py) on a tiny two-segment spec:
per-parameter recipes (precision x optimizer), declared activations by
checkpointing policy, training FLOPs, recipe overrides and located errors."""

from __future__ import annotations

import pytest
import sympy as sp

from specc.compiler.query.queries import QueryEngine
from specc.compiler.schema.spec import load_spec
from specc.dsl.errors import SpecError
from specc.dsl.units import BYTES, FLOPS

# two decoder layers + one extra "tail" layer, so activations sum over segments
TINY = """\
model: TinyTrain
imports: [lib/core.yaml]
dims: {d: 8, L: 2, n_q: 2, n_kv: 1, d_h: 4, f: 16, V: 10}
options:
  head:
    default: last
    choices:
      last: {head_rows: B}
      all: {head_rows: M}
training:
  doc: test conventions
  activation_dtype: bf16
  checkpointing:
    none: {saved: {layers: 12*d + n_q*P, tail: 3*d}}
    full: {saved: {layers: d, tail: d}, recompute: 1}
  optimizers:
    adam8: {m: int8, v: int8}
  precisions:
    half: {weights: fp16, gradients: fp16}
stack:
  - {name: embed, block: token_embedding, with: {V: V, d: d}}
  - name: layers
    layers: 0..L-1
    block: pre_norm_decoder_layer
    with: {d: d, n_q: n_q, n_kv: n_kv, d_h: d_h, f: f, pairs: "B*causal_pairs(S, P)"}
  - name: tail
    layers: 0..0
    block: swiglu
    with: {d: d, f: f}
  - {name: head, block: lm_head, with: {d: d, V: V, rows: head_rows}}
"""


@pytest.fixture
def engine(write_spec):
    return QueryEngine(load_spec(write_spec(TINY)))


def q(engine, text, **kw):
    return engine.evaluate_text(text, **kw)


def n_params(engine):
    return q(engine, "params()").value


def test_mixed_adam_is_16_bytes_per_param(engine):
    n = n_params(engine)
    parts = {"weights": 2, "gradients": 2, "master": 4, "m": 4, "v": 4, "moments": 8, "optimizer": 12, "static": 16}
    for component, bpp in parts.items():
        result = q(engine, f"train_memory(component={component})")
        assert result.value == bpp * n, component
        assert result.dims == BYTES


@pytest.mark.parametrize("precision, optimizer, bpp", [
    ("fp32", "adam", 16), ("fp32", "sgd", 8), ("fp32", "momentum", 12), ("bf16", "adam", 12),
    ("mixed_fp16", "adamw", 16), ("mixed", "adam8", 10), ("half", "sgd", 4),
])
def test_recipes(engine, precision, optimizer, bpp):
    n = n_params(engine)
    assert q(engine, f"train_memory(precision={precision}, optimizer={optimizer}, component=static)").value == bpp * n


def test_master_only_in_mixed_recipes(engine):
    assert q(engine, "train_memory(precision=fp32, component=master)").value == 0
    assert q(engine, "train_memory(precision=fp32, component=optimizer)").value == 8 * n_params(engine)


def test_activations_sum_segments_and_policies(engine):
    d, n_q, layers = 8, 2, 2
    for B, P in [(1, 1), (4, 16), (3, 100)]:
        none = q(engine, f"train_memory(B={B}, P={P}, component=activations)").value
        assert none == B * P * 2 * (layers * (12 * d + n_q * P) + 1 * 3 * d)
        full = q(engine, f"train_memory(B={B}, P={P}, component=activations, checkpointing=full)").value
        assert full == B * P * 2 * (layers * d + d)


def test_total_is_static_plus_activations(engine):
    total = q(engine, "train_memory(B=2, P=32)").value
    assert total == q(engine, "train_memory(component=static)").value + \
        q(engine, "train_memory(B=2, P=32, component=activations)").value


def test_symbolic_activations(engine):
    result = q(engine, "train_memory(B=B, P=P, component=activations)", symbolic_ok=True).value
    B, P = sp.Symbol("B", integer=True, nonnegative=True), sp.Symbol("P", integer=True, nonnegative=True)
    assert sp.expand(result - 2 * B * P * (2 * (96 + 2 * P) + 24)) == 0


def test_train_flops(engine):
    forward = q(engine, "flops(B=2, S=0, P=64, head=all)").value
    assert q(engine, "train_flops(B=2, P=64, head=all)").value == 3 * forward
    assert q(engine, "train_flops(B=2, P=64, head=all, checkpointing=full)").value == 4 * forward
    assert q(engine, "train_flops(B=2, P=64, head=all, backward=1)").value == 2 * forward
    assert q(engine, "train_flops(B=2, P=64)").dims == FLOPS
    # filters pass through: the attention share alone
    attn = q(engine, "flops(B=2, S=0, P=64, component=attention_interaction)").value
    assert q(engine, "train_flops(B=2, P=64, component=attention_interaction)").value == 3 * attn


@pytest.mark.parametrize("query, message", [
    ("train_memory(component=moment)", "no training component 'moment'"),
    ("train_memory(precision=fp8)", "unknown precision 'fp8'"),
    ("train_memory(optimizer=lion, component=static)", "unknown optimizer 'lion'"),
    ("train_memory(P=8, checkpointing=selective, component=activations)", "unknown checkpointing policy"),
    ("train_memory()", "missing scenario argument 'P='"),
    ("train_memory(component=activations)", "missing scenario argument 'P='"),
    ("train_memory(component=static, foo=1)", "does not take 'foo='"),
    ("train_flops(P=0)", "P must be at least 1"),
])
def test_query_errors(engine, query, message):
    with pytest.raises(SpecError) as err:
        q(engine, query)
    assert message in str(err.value)


def test_spec_without_training_section(write_spec):
    text = TINY.split("training:")[0] + "stack:" + TINY.split("stack:")[1]
    engine = QueryEngine(load_spec(write_spec(text)))
    assert q(engine, "train_memory(component=static)").value == 16 * n_params(engine)
    assert q(engine, "train_flops(P=4)").value == 3 * q(engine, "flops(P=4)").value
    with pytest.raises(SpecError, match="declares no activations"):
        q(engine, "train_memory(P=8, component=activations)")


@pytest.mark.parametrize("old, new, message", [
    ("  activation_dtype: bf16", "  activation_dtpye: bf16", "unknown key 'activation_dtpye' in training"),
    ("tail: 3*d}", "tial: 3*d}", "unknown stack segment 'tial'"),
    ("recompute: 1}", "recompute: 1, extra: 2}", "unknown key 'extra'"),
    ("half: {weights: fp16, gradients: fp16}", "half: {weights: fp16, grads: fp16}", "unknown key 'grads'"),
])
def test_section_errors_are_located(write_spec, old, new, message):
    assert old in TINY
    path = write_spec(TINY.replace(old, new))
    with pytest.raises(SpecError) as err:
        engine = QueryEngine(load_spec(path))
        q(engine, "train_memory(B=1, P=4)")
    assert message in str(err.value)
    assert err.value.loc is not None and err.value.loc.line > 1
