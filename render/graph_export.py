"""The compiled graph as node-link JSON or Graphviz DOT text (no Graphviz needed)."""

from __future__ import annotations

import json

import networkx as nx

from ..compiler.graph.build import Model


def layers_json(layers):
    """A layer set for JSON: the list of indices, or, for a set too large to list,
    {"ranges": [[first, last, step], ...]} (never enumerated)."""
    from ..compiler.schema.layerset import SMALL, ranges_of

    if len(layers) <= SMALL:
        return list(layers)
    return {"ranges": [[r.start, r[-1], r.step] for r in ranges_of(layers)]}


def op_attrs(op) -> dict:
    return {
        "name": op.name, "kind": op.kind, "segment": op.segment, "stage": op.stage, "component": op.component,
        "layers": layers_json(op.layers), "multiplicity": op.mult, "statement": op.stmt.text,
        "params": str(op.params()), "flops": str(op.flops), "flops_rule": op.formula,
        "weights": [{"name": w.name, "shape": [str(s) for s in w.shape], "copies": str(w.copies), "group": w.group}
                    for w in op.weights],
    }


def to_json(model: Model) -> str:
    graph = nx.DiGraph()
    for node_id, data in model.graph.nodes(data=True):
        graph.add_node(node_id, **op_attrs(data["op"]))
    for u, v, data in model.graph.edges(data=True):
        graph.add_edge(u, v, tensor=data["tensor"], shape=[str(data["rows"]), str(data["width"])])
    payload = nx.node_link_data(graph, edges="edges")
    payload["model"] = model.spec.model
    payload["options"] = model.choices
    payload["runs"] = [{"segment": s, "group": g, "first_layer": a, "last_layer": b} for s, g, a, b in model.runs]
    return json.dumps(payload, indent=2)


def _q(text: str) -> str:
    return '"' + str(text).replace("\\", "\\\\").replace('"', '\\"') + '"'


def to_dot(model: Model) -> str:
    lines = [f"digraph {_q(model.spec.model)} {{", "  rankdir=TB;", '  node [shape=box, fontname="Helvetica", fontsize=10];',
             '  edge [fontname="Helvetica", fontsize=9];']
    by_segment: dict = {}
    for node_id, data in model.graph.nodes(data=True):
        by_segment.setdefault(data["op"].segment, []).append((node_id, data["op"]))
    for idx, (segment, ops) in enumerate(by_segment.items()):
        lines.append(f"  subgraph cluster_{idx} {{")
        lines.append(f"    label={_q(segment)};")
        for node_id, op in ops:
            mult = f" ×{op.mult}" if op.mult > 1 else ""
            weights = ", ".join(f"{w.name}[{', '.join(map(str, w.shape))}]" for w in op.weights)
            label = f"{op.name.split('.', 1)[-1]}{mult}\\n{op.kind}" + (f"\\n{weights}" if weights else "")
            lines.append(f"    {_q(node_id)} [label={_q(label)}];")
        lines.append("  }")
    for u, v, data in model.graph.edges(data=True):
        label = f"{data['tensor']} [{data['rows']}, {data['width']}]"
        lines.append(f"  {_q(u)} -> {_q(v)} [label={_q(label)}];")
    lines.append("}")
    return "\n".join(lines)
