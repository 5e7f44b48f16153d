"""Bounded work: pipeline stages, layer unions and layer texts computed from ranges
(compiler/schema/layerset.py, compiler/sharding.StageMap) agree with brute-force
enumeration on small sets, and stay cheap on 10**12 layers."""

from __future__ import annotations

from types import SimpleNamespace

from hypothesis import given, settings
from hypothesis import strategies as st

from specc.compiler.schema import layerset
from specc.compiler.schema.layerset import LayerIndices
from specc.compiler.deploy.sharding import stage_counts, stages

ranges = st.builds(lambda start, n, step: range(start, start + n * step, step),
                   st.integers(0, 40), st.integers(1, 12), st.integers(1, 4))
layer_sets = st.lists(ranges, min_size=1, max_size=4).map(LayerIndices)


def _model(sets, declared=None):
    ops = [SimpleNamespace(layers=s, segment=f"seg{i}") for i, s in enumerate(sets)]
    ops.insert(0, SimpleNamespace(layers=(), segment="embed"))
    ops.append(SimpleNamespace(layers=(), segment="head"))
    from specc.compiler.schema.spec import PipelineSplit

    pipeline = {pp: PipelineSplit(tuple(counts), None) for pp, counts in (declared or {}).items()}
    return SimpleNamespace(ops=ops, states=[], spec=SimpleNamespace(pipeline=pipeline))


def _brute_stages(sets, pp):
    layers = sorted({l for s in sets for l in s})
    return {l: i * pp // len(layers) for i, l in enumerate(layers)}


@settings(max_examples=300, deadline=None)
@given(st.lists(layer_sets, min_size=1, max_size=3), st.integers(1, 6))
def test_stage_map_equals_enumeration(sets, pp):
    distinct = sorted({l for s in sets for l in s})
    if len(distinct) < pp:
        return
    stage_map = stages(_model(sets), pp, None)
    brute = _brute_stages(sets, pp)
    for layer, stage in brute.items():
        assert stage_map[layer] == stage
    for s in sets:
        expect = [0] * pp
        for layer in s:
            expect[brute[layer]] += 1
        assert stage_counts(s, "x", 1, stage_map, pp) == expect
        for stage in range(pp):
            assert sorted(stage_map.layers_on(s, stage)) == sorted(l for l in s if brute[l] == stage)
    assert stage_map[("segment", "embed")] == 0 and stage_map[("segment", "head")] == pp - 1


@settings(max_examples=200, deadline=None)
@given(st.lists(layer_sets, min_size=1, max_size=3))
def test_union_nth_and_rank_equal_enumeration(sets):
    merged = layerset.union(*sets)
    distinct = sorted({l for s in sets for l in s})
    assert sorted(merged) == distinct and len(merged) == len(distinct)
    for k, value in enumerate(distinct):
        assert layerset.nth(merged, k) == value
        assert layerset.rank(merged, value) == k


def test_declared_pipeline_split_by_ranges():
    sets = [LayerIndices([range(0, 10)])]
    stage_map = stages(_model(sets, {3: [2, 5, 3]}), 3, None)
    assert [stage_map[l] for l in range(10)] == [0, 0, 1, 1, 1, 1, 1, 2, 2, 2]


def test_a_trillion_layers_split_over_stages_instantly():
    big = LayerIndices([range(0, 10**12 - 1)])
    stage_map = stages(_model([big, big]), 7, None)
    counts = stage_counts(big, "x", 1, stage_map, 7)
    assert sum(counts) == 10**12 - 1 and max(counts) - min(counts) <= 1
    assert stage_map[10**12 - 2] == 6


def test_layer_texts_of_huge_sets_come_from_ranges():
    from specc.render import views

    big = LayerIndices([range(0, 10**12, 2), range(1, 10**12, 2)])
    assert views.layer_text(big) == "0–999999999998 step 2, 1–999999999999 step 2"
    assert views.layer_text(LayerIndices([range(0, 10**12)])) == "0–999999999999"
    assert views.layer_text_short(LayerIndices([range(0, 10**12, 3)]), 60) == "0–999999999999 step 3"
    assert views.layer_text((3, 4, 5, 6, 7, 9, 10)) == "3–7, 9–10"
