"""Layers are compiled once per group of identical layers; a layer that differs
from another only in a state declaration written with `layer`, or in an op that
reads `layer` directly (not through a block parameter), must not share its group.
(Found while writing docs/writing-specs.md: both used to take layer 0's values.)"""

from __future__ import annotations

import specc

SPEC = """
model: Grouping
imports: [lib/core.yaml]
dims: {d: 8, L: 6, window: 4, widths: [1, 2, 3, 1, 2, 3]}
stores:
  kv: {tags: [kv], bytes: 2*d}
blocks:
  direct:
    params: {d: null}
    inputs: {x: d}
    ops: ["y = x @ W[d, widths[layer]]", "z = y @ W2[widths[layer], d]"]
stack:
  - {name: embed, block: token_embedding, with: {V: 16, d: d}}
  - name: layers
    layers: 0..L-1
    block: direct
    with: {d: d}
    state: [{store: kv, entries: "if(layer % 2 == 0, min(H, window), H)"}]
"""


def test_layers_differing_only_outside_the_bindings_are_not_merged(write_spec):
    model = specc.load(write_spec(SPEC))
    widths, d, window = [1, 2, 3, 1, 2, 3], 8, 4
    # brute force: every layer on its own
    assert model.params().value == 16 * d + sum(2 * d * w for w in widths)
    for i, w in enumerate(widths):
        assert model.params(layer=i).value == 2 * d * w
    for h in (1, 3, 4, 5, 100):
        expected = sum((min(h, window) if i % 2 == 0 else h) * 2 * d for i in range(6))
        assert model.state_bytes(H=h).value == expected
