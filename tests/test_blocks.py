"""The block library reference: costs derived symbolically, and the committed
specs/lib/README.md is what `specc blocks` prints now."""

from __future__ import annotations

import glob

import sympy as sp

from specc.compiler.graph.blockref import ROWS, block_reference


def _ref(repo, name):
    return next(r for r in block_reference(repo / "specs/lib/core.yaml") if r.name == name)


def test_swiglu_costs_are_derived(repo):
    ref = _ref(repo, "swiglu")
    d, f = sp.symbols("d f", integer=True, positive=True)
    assert ref.error == ""
    assert sp.expand(ref.params_total - 3 * d * f) == 0
    assert sp.expand(ref.flops_total - 6 * d * f * ROWS) == 0


def test_routed_experts_scale_with_top_k_not_expert_count(repo):
    ref = _ref(repo, "routed_swiglu_experts")
    E, k, d, f = sp.symbols("E k d f", integer=True, positive=True)
    assert sp.expand(ref.params_total - 3 * E * d * f) == 0
    assert sp.expand(ref.flops_total - 6 * k * d * f * ROWS) == 0


def test_every_library_block_is_documented_and_costed(repo):
    for lib in sorted(glob.glob(str(repo / "specs/lib/*.yaml"))):
        for ref in block_reference(lib):
            assert ref.doc, f"{lib}: block {ref.name} has no doc"
            assert ref.error == "", f"{lib}: block {ref.name}: {ref.error}"


def test_committed_reference_is_current(repo, cli, monkeypatch):
    monkeypatch.chdir(repo)
    result = cli("blocks")
    assert result.exit_code == 0
    committed = (repo / "specs/lib/README.md").read_text(encoding="utf-8")
    assert result.output == committed, "specs/lib/README.md is stale: run `specc blocks -o specs/lib/README.md`"


def test_no_library_block_has_a_dead_end(repo):
    """Every op of every library block feeds another op or the block's outputs
    (routers feed route(), indexer scores feed the sparse attention, ...)."""
    checked = 0
    for lib in sorted(glob.glob(str(repo / "specs/lib/*.yaml"))):
        for ref in block_reference(lib):
            assert ref.error == "", f"{lib}: block {ref.name}: {ref.error}"
            assert ref.dead_ends == [], f"{lib}: block {ref.name}: nothing consumes {ref.dead_ends}"
            checked += 1
    assert checked > 20


def test_a_dead_end_is_seen_in_a_library_block(tmp_path):
    lib = tmp_path / "lib.yaml"
    lib.write_text("blocks:\n  leaky:\n    doc: a router nobody reads\n    params: {d: null, E: null}\n"
                   "    inputs: {x: d}\n    outputs: [y]\n    ops:\n"
                   "      - router = x @ W_router[d, E]\n      - y = x @ W[d, d]\n")
    (ref,) = block_reference(lib)
    assert [text for text, _ in ref.dead_ends] == ["router = x @ W_router[d, E]"]
