"""active_params(): the parameters one token uses. Against the formula authors wrote in
claims before the query existed, params() - params(group=routed_experts)·(1 - k/E), on
every shipped spec with a router, and by enumeration on a toy MoE: one token's rows
reach k experts, whose weights (matmuls and per-expert biases) are the ones it uses."""

from __future__ import annotations

import pytest

from conftest import shipped_engine



@pytest.mark.parametrize("name", ["mixtral_8x7b", "deepseek_v3", "gpt_oss_120b", "gpt_oss_20b", "qwen3_30b_a3b",
                                  "deepseekmoe_16b", "toy_moe", "fine_grained_moe_example"])
def test_active_params_is_the_claims_formula(name):
    engine = shipped_engine(name)
    formula = "params() - params(group=routed_experts) * (1 - dim(k)/dim(E))"
    assert engine.evaluate_text("active_params()").value == engine.evaluate_text(formula).value


def test_a_dense_model_uses_every_parameter():
    engine = shipped_engine("qwen3_8b")
    assert engine.evaluate_text("active_params()").value == engine.evaluate_text("params()").value


def test_active_params_by_enumeration(write_spec):
    """A toy router: E experts with biases, top-k; count the weights one token touches by hand."""
    from specc.compiler.query.queries import QueryEngine
    from specc.compiler.schema.spec import load_spec

    for E, k in [(4, 1), (4, 2), (8, 3), (3, 3), (2, 5)]:
        path = write_spec(f"""
            model: toy
            imports: [lib/core.yaml]
            dims: {{d: 6, f: 5, E: {E}, k: {k}, V: 11}}
            blocks:
              moe:
                params: {{d: null, f: null, E: null, k: null}}
                inputs: {{x: d}}
                outputs: [y]
                ops:
                  - scores = x @ W_r[d, E]; group=other
                  - routed = route(x, scores; top_k=k)
                  - up = routed @ W_up[d, f]; experts=E, group=routed_experts
                  - up = add(up, b_up[E, f]; group=routed_experts)
                  - down = up @ W_down[f, d]; experts=E, group=routed_experts
                  - y = combine(down; top_k=k)
            stack:
              - {{name: embed, block: token_embedding, with: {{V: V, d: d}}}}
              - {{name: layers, layers: 0..1, block: moe, with: {{d: d, f: f, E: E, k: k}}}}
            """, name=f"toy_{E}_{k}.yaml")
        engine = QueryEngine(load_spec(path))
        reached = min(E, k)                           # one token, k routed rows, at most E distinct experts
        per_expert = 6 * 5 + 5 + 5 * 6                # W_up, b_up and W_down rows of one expert
        by_hand = 11 * 6 + 2 * (6 * E + reached * per_expert)
        assert engine.evaluate_text("active_params()").value == by_hand, (E, k)
        assert engine.evaluate_text("params()").value == 11 * 6 + 2 * (6 * E + E * per_expert)
