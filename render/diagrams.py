"""Graphviz diagrams of a compiled Model.

* model level: the stack as clusters (one per segment, labelled with its
  stage); a layered segment shows a layer map (one cell per layer, lettered by
  its group of identical layers) and one node per group with its layers, what
  sets it apart, its parameters per layer; state stores are cylinders with an
  edge per group that writes or reads them, labelled with the entries.
* op level: one group's ops as nodes (kind, weight shapes, FLOPs rule), the
  tensors between them as edges labelled name and rows × width.

DOT text needs no Graphviz binary; SVG/PNG need `dot` on PATH."""

from __future__ import annotations

import html
import json
import re
import shutil

import graphviz
import sympy as sp

from ..compiler.graph.build import Model
from . import views as v
from .graph_export import op_attrs, layers_json, to_json

PALETTE = ["#cfe2f3", "#d9ead3", "#fce5cd", "#ead1dc", "#fff2cc", "#d0e0e3", "#f4cccc", "#d9d2e9",
           "#e6b8af", "#c9daf8", "#b6d7a8", "#ffe599"]
FONT = "Helvetica"
MAP_COLUMNS = 24


def _e(text) -> str:
    return html.escape(str(text), quote=True)


def _params_of(group: v.Group) -> sp.Expr:
    return sum((o.params() for o in group.ops), sp.Integer(0))


def _group_flops(group: v.Group, subs) -> float:
    total = sum((o.flops for o in group.ops), sp.Integer(0))
    return float(total.xreplace(subs))


def _new_graph(name: str, rankdir: str = "TB") -> graphviz.Digraph:
    g = graphviz.Digraph(name=re.sub(r"\W+", "_", name))
    g.attr(rankdir=rankdir, fontname=FONT, fontsize="11", compound="true", newrank="true", nodesep="0.25",
           ranksep="0.45", labelloc="t", label=name)
    g.attr("node", fontname=FONT, fontsize="10")
    g.attr("edge", fontname=FONT, fontsize="9", color="#555555")
    return g


def _layer_map(groups: list, colors: dict) -> str:
    """An HTML-like table: one cell per layer, lettered and coloured by group (for a
    stack too deep to draw layer by layer, one cell per range of layers)."""
    if sum(len(g.layers) for g in groups) > MAP_LAYERS:
        return _range_map(groups, colors)
    cells = sorted(((layer, g) for g in groups for layer in g.layers), key=lambda t: t[0])
    rows, row = [], []
    for layer, g in cells:
        row.append(f'<TD BGCOLOR="{colors[g.prefix]}" WIDTH="18" HEIGHT="18" TOOLTIP="layer {layer}: {g.letter}">'
                   f'<FONT POINT-SIZE="8">{g.letter}</FONT></TD>')
        if len(row) == MAP_COLUMNS:
            rows.append(row)
            row = []
    if row:
        rows.append(row)
    body = []
    for i, r in enumerate(rows):
        first = i * MAP_COLUMNS
        body.append(f'<TR><TD BORDER="0" ALIGN="RIGHT"><FONT POINT-SIZE="7">{first}</FONT></TD>{"".join(r)}</TR>')
    return ('<<TABLE BORDER="0" CELLBORDER="1" CELLSPACING="1" CELLPADDING="1">'
            + "".join(body) + "</TABLE>>")


MAP_LAYERS = 4096      # deeper stacks are drawn as ranges, never cell by cell


def _range_map(groups: list, colors: dict) -> str:
    from ..compiler.schema.layerset import ranges_of

    cells = sorted(((r, g) for g in groups for r in ranges_of(g.layers)), key=lambda t: t[0].start)
    body = "".join(f'<TR><TD BGCOLOR="{colors[g.prefix]}" TOOLTIP="layers {v.layer_text_short(r, 60)}: {g.letter}">'
                   f'<FONT POINT-SIZE="8">{g.letter}: {v.layer_text_short(r, 60)}</FONT></TD></TR>'
                   for r, g in cells[:MAP_COLUMNS])
    return '<<TABLE BORDER="0" CELLBORDER="1" CELLSPACING="1" CELLPADDING="1">' + body + "</TABLE>>"


def _unlayered_label(model: Model, group: v.Group) -> str:
    lines = [f"<B>{_e(group.segment)}</B>"]
    for op in group.ops:
        if not (op.weights or op.flops != 0 or op.kind in ("lookup", "select")):
            continue
        shapes = ", ".join(f"{w.name}[{v.weight_text(w)}]" for w in op.weights)
        what = op.kind
        if op.kind == "select":
            what = f"select {v.rows_text(op.outputs[0][1].rows) if op.outputs else ''} rows"
        lines.append(_e(f"{op.short}: {what}" + (f"  {shapes}" if shapes else "")))
    lines.append(_e(f"params {v.params_text(_params_of(group))}"))
    return "<" + "<BR/>".join(lines) + ">"


def _types_table(groups: list, diffs: dict, colors: dict, per_row: int = 5) -> str:
    """All layer types of a segment side by side, in layer order, one coloured cell each."""
    cells = [f'<TD BGCOLOR="{colors[g.prefix]}" ALIGN="LEFT" VALIGN="TOP" BALIGN="LEFT">'
             f'{_group_label(g, diffs[g.prefix], len(groups))}</TD>' for g in groups]
    rows = ["<TR>" + "".join(cells[i:i + per_row]) + "</TR>" for i in range(0, len(cells), per_row)]
    if len(groups) > 1:
        comps = None
        for g in groups:
            mine = [o.component for o in g.ops if o.kind not in ("elementwise", "param") and (o.weights or o.flops != 0)]
            comps = list(dict.fromkeys(mine)) if comps is None else [c for c in comps if c in mine]
        if comps:
            span = min(per_row, len(cells))
            rows.insert(0, f'<TR><TD COLSPAN="{span}" BORDER="0" ALIGN="LEFT">'
                           f'{_e("every layer: " + " · ".join(comps))}</TD></TR>')
    return '<<TABLE BORDER="0" CELLBORDER="1" CELLSPACING="6" CELLPADDING="5" STYLE="ROUNDED">' + "".join(rows) \
        + "</TABLE>>"


def _group_label(group: v.Group, diffs: list, n_groups: int) -> str:
    count = len(group.layers)
    lines = [f"<B>{group.letter}</B>  {_e(group.prefix)}",
             _e(f"layers {v.layer_text_short(group.layers)}  ({count} layer{'s' if count != 1 else ''})")]
    if n_groups == 1:
        comps = []
        for o in group.ops:
            if (o.weights or o.flops != 0) and o.component not in comps and o.kind != "elementwise":
                comps.append(o.component)
        lines.append(_e(" · ".join(comps)))
    for d in diffs:
        lines.append(_e(d if len(d) < 70 else d[:67] + "…"))
    lines.append(_e(f"params/layer {v.params_text(_params_of(group))}"))
    return '<BR ALIGN="LEFT"/>'.join(lines) + '<BR ALIGN="LEFT"/>'


def _stream_shape(group: v.Group) -> str:
    base = v.segment_rows(group)
    for op in reversed(group.ops):
        if op.outputs and op.outputs[-1][1] is not None:
            t = op.outputs[-1][1]
            return v.shape_text(t.rows, t.width, base)
    return ""


def _segment_store_edges(model: Model, seg_name: str, groups: list, anchor) -> list:
    """One edge per (segment, store): which layer types write and read it, and how many entries."""
    per_store: dict = {}
    n_members = 0
    for t in groups:
        for m in (t.members or [t]):
            n_members += 1
            for store, (w, r) in v.store_uses(model, m).items():
                per_store.setdefault(store, []).append((t, m, w, r))
    edges = []
    layered = any(t.layers for t in groups)
    for store in model.spec.stores:
        uses = per_store.get(store)
        if not uses:
            continue
        by_text: dict = {}
        for t, m, w, r in uses:
            parts = ([f"holds {v.entries_text(w)}"] if w is not None else []) + \
                    ([f"reads {v.entries_text(r)}"] if r is not None else [])
            by_text.setdefault(" · ".join(parts), []).append((t, m))
        lines = []
        for text, pairs in by_text.items():
            if not layered:
                lines.append(text)
                continue
            if len(pairs) == n_members:
                who = "every layer"
            else:
                layers_by_type: dict = {}
                for t, m in pairs:
                    layers_by_type.setdefault(t.letter, []).extend(m.layers)
                who = ", ".join(f"{letter} ({v.layer_text_short(ls, 24)})" for letter, ls in layers_by_type.items())
            lines.append(f"{who}: {text}")
        writes = any(w is not None for *_, w, _ in uses)
        reads = any(r is not None for *_, r in uses)
        src, _, cluster = anchor
        edges.append((src, store, lines, writes, reads, cluster if layered else None))
    return edges


def _stream_label(model: Model, seg_of: dict, a: str, b: str) -> str:
    """The tensors segment b takes from segment a, with their shapes."""
    seen = []
    for u, w, data in model.graph.edges(data=True):
        if seg_of.get(u) == a and seg_of.get(w) == b:
            text = f"{data['tensor']}  {v.shape_text(data['rows'], data['width'])}"
            if text not in seen:
                seen.append(text)
    return "\n".join(seen[:3])


def model_graph(model: Model) -> graphviz.Digraph:
    title = f"{model.spec.model}" + "".join(f"  [{k}={c}]" for k, c in model.choices.items())
    title += "\nm = B·P rows (new tokens of all requests); m_l = rows a layer processes; H = context length"
    g = _new_graph(title)
    segs = v.segments(model)
    colors, anchors, types_of = {}, {}, {}
    store_edges = []
    for si_, (seg_name, groups) in enumerate(segs):
        if not groups:
            continue
        layered = any(gr.layers for gr in groups)
        stages = sorted({o.stage for gr in groups for o in gr.ops})
        with g.subgraph(name=f"cluster_{si_}") as c:
            n_layers = sum(len(gr.layers) for gr in groups)
            label = seg_name + (f"  ·  {n_layers} layers" if layered else "")
            if stages != [seg_name]:
                label += f"  ·  stage {', '.join(stages)}"
            c.attr(label=label, style="rounded,filled", fillcolor="#f7f7f7", color="#999999")
            if layered:
                groups = v.layer_types(model, groups)
                for i, gr in enumerate(groups):
                    colors[gr.prefix] = PALETTE[(len(colors)) % len(PALETTE)]
                map_id = f"map_{si_}"
                c.node(map_id, label=_layer_map(groups, colors), shape="plaintext", ordering="out")
                diffs = v.group_differences(groups)
                types_id = f"types_{si_}"
                c.node(types_id, label=_types_table(groups, diffs, colors), shape="plaintext")
                c.edge(map_id, types_id, style="invis")
                anchors[seg_name] = (map_id, types_id, f"cluster_{si_}")
            else:
                gr = groups[0]
                node_id = gr.prefix
                c.node(node_id, label=_unlayered_label(model, gr), shape="box", style="rounded,filled",
                       fillcolor="#ffffff")
                anchors[seg_name] = (node_id, node_id, f"cluster_{si_}")
        store_edges.extend(_segment_store_edges(model, seg_name, groups, anchors[seg_name]))
        types_of[seg_name] = groups
    # the stream between segments
    order = [name for name, groups in segs if groups]
    seg_of = {o.id: o.segment for o in model.ops}
    for a, b in zip(order, order[1:]):
        src = anchors[a][1]
        dst = anchors[b][0]
        attrs = {"label": _stream_label(model, seg_of, a, b) or _stream_shape(types_of[a][-1]),
                 "penwidth": "1.6", "color": "#333333"}
        if anchors[a][0] != anchors[a][1]:
            attrs["ltail"] = anchors[a][2]
        if anchors[b][0] != anchors[b][1] or True:
            attrs["lhead"] = anchors[b][2]
        g.edge(src, dst, **attrs)
    # state stores and who writes / reads them
    for name, store in model.spec.stores.items():
        if not any(e[1] == name for e in store_edges):
            continue
        tags = f" [{', '.join(store.tags)}]" if store.tags else ""
        g.node(f"store_{name}", label=f"{name}{tags}", shape="cylinder", style="filled", fillcolor="#fff8dc",
               fontsize="10")
    for src, store, lines, writes, reads, tail in store_edges:
        attrs = {"label": "\\l".join(lines) + "\\l", "style": "solid" if writes else "dashed", "color": "#b8860b",
                 "fontcolor": "#7a5b00", "dir": "both", "arrowhead": "normal" if writes else "none",
                 "arrowtail": "normal" if reads else "none"}
        if tail:
            attrs["ltail"] = tail
        g.edge(src, f"store_{store}", **attrs)
    return g


def _op_label(op, group: v.Group) -> str:
    rel = group.rel(op)
    if op.kind == "elementwise" and not op.weights:
        return _e(rel)
    lines = [f"<B>{_e(rel)}</B>  <I>{_e(op.kind)}</I>"]
    for w in op.weights:
        copies = f" ×{v.expr_text(w.copies)}" if w.copies != 1 else ""
        lines.append(_e(f"{w.name} [{v.weight_text(w)}]{copies}"))
    if op.flops != 0 or op.kind in v.MATRIX_KINDS:
        rule = op.formula.replace("rows", v.rows_text(op.rows, v.segment_rows(group)))
        if rule == "declared":
            rule = v.expr_text(op.flops)
            rule = rule if len(rule) <= 70 else "declared (see the spec)"
        lines.append(_e(f"FLOPs {rule}"))
    if op.component not in ("elementwise", op.kind):
        lines.append(f'<FONT COLOR="#666666">{_e(op.component)}</FONT>')
    return "<" + "<BR/>".join(lines) + ">"


def _is_alias(op) -> bool:
    """A `view` with one input that keeps its rows and width: a new name, not an op."""
    if op.kind != "view" or op.weights or op.flops != 0 or len(op.inputs) != 1 or len(op.outputs) != 1:
        return False
    (_, before), (_, after) = op.inputs[0], op.outputs[0]
    return sp.simplify(before.rows - after.rows) == 0 and sp.simplify(before.width - after.width) == 0


def op_graph(model: Model, block: str | None = None) -> graphviz.Digraph:
    group = v.find_group(model, block)
    title = (f"{model.spec.model} — {group.prefix} (layers {v.layer_text_short(group.layers, 60)})" if group.layers
             else f"{model.spec.model} — {group.prefix}")
    g = _new_graph(title)
    base = v.segment_rows(group)
    # a pure alias (a `view` that keeps rows and width, e.g. the library's `q_norm = view(q)`
    # standing in for a Q-norm an option turned off) is no op of the model: its consumers are
    # drawn reading the aliased tensor straight from its producer
    alias = {op.id: op.inputs[0][1].producer for op in group.ops if _is_alias(op)}

    def source(node):
        while node in alias and alias[node] is not None:
            node = alias[node]
        return node

    ids = {o.id for o in group.ops} - set(alias)
    external = {}
    for op in group.ops:
        if op.id in alias:
            continue
        if op.kind == "elementwise" and not op.weights:
            g.node(op.id, label=_op_label(op, group), shape="ellipse", style="filled", fillcolor="#eeeeee",
                   fontsize="9", color="#999999")
        elif op.kind == "param":
            shapes = ", ".join(f"{w.name}[{v.weight_text(w)}]" for w in op.weights)
            g.node(op.id, label=f"{group.rel(op)}\n{shapes}", shape="note", fontsize="8", color="#999999")
        else:
            fill = {"matmul": "#cfe2f3", "attend": "#f4cccc", "score": "#fce5cd", "lookup": "#d9ead3",
                    "work": "#ead1dc"}.get(op.kind, "#ffffff")
            g.node(op.id, label=_op_label(op, group), shape="box", style="rounded,filled", fillcolor=fill)
    for u, w_, data in model.graph.edges(data=True):
        if w_ not in ids:
            continue
        tensor = data["tensor"]
        if u in alias:                 # the edge from an alias: from the tensor it renames
            tensor = next(name for o in group.ops if o.id == u for name, _ in o.inputs)
            u = source(u)
        label = f"{tensor}  {v.shape_text(data['rows'], data['width'], base)}"
        if u not in ids:
            key = (u, tensor)
            if key not in external:
                external[key] = f"in_{tensor}_{len(external)}"
                g.node(external[key], label=f"{tensor}\nfrom {u}", shape="plaintext", fontcolor="#555555")
            ext = external[key]
            g.edge(ext, w_, label=label, style="dashed")
        else:
            g.edge(u, w_, label=label)
    # inputs with no producer (block inputs fed from nothing, e.g. token ids)
    for op in group.ops:
        for name, t in op.inputs:
            if t.producer is None:
                node = f"input_{name}"
                g.node(node, label=f"{name}", shape="plaintext", fontcolor="#555555")
                g.edge(node, op.id, label=f"{name}  {v.shape_text(t.rows, t.width, base)}", style="dashed")
    uses = v.store_uses(model, group)
    for store, (w, r) in sorted(uses.items()):
        parts = ([f"holds {v.entries_text(w)}"] if w is not None else []) + \
                ([f"reads {v.entries_text(r)}"] if r is not None else [])
        g.node(f"store_{store}", label=f"{store}\n" + " · ".join(parts), shape="cylinder", style="filled",
               fillcolor="#fff8dc", fontsize="9")
    return g


def has_dot() -> bool:
    return shutil.which("dot") is not None


def _clean_svg(svg: str) -> str:
    # drop the version comment so identical drawings are identical files
    return re.sub(r"<!-- Generated by graphviz[^>]*-->\n?", "", svg)


def render(graph, fmt: str, strict: bool = False) -> bytes | str:
    """'dot' -> DOT text; 'svg' -> SVG text; 'png' -> PNG bytes. Graphviz's
    warnings go to stderr, or raise RenderError when strict (docs)."""
    import subprocess
    import sys

    if fmt == "dot":
        return graph.source
    if not has_dot():
        raise v.RenderError(f"{fmt.upper()} output needs Graphviz's `dot` on PATH (apt-get install graphviz, "
                            "brew install graphviz); DOT and JSON output work without it")
    proc = subprocess.run(["dot", f"-T{fmt}"], input=graph.source.encode("utf-8"), capture_output=True)
    warnings = proc.stderr.decode("utf-8", "replace").strip()
    if proc.returncode != 0 or (warnings and strict):
        name = getattr(graph, "name", None) or "graph"
        raise v.RenderError(f"Graphviz failed on '{name}': {warnings or proc.returncode}")
    if warnings:
        print(warnings, file=sys.stderr)
    if fmt == "svg":
        return _clean_svg(proc.stdout.decode("utf-8"))
    return proc.stdout


def graphviz_warnings(graph: graphviz.Digraph) -> str:
    """Graphviz's stderr when laying out the graph ('' when clean)."""
    import subprocess

    proc = subprocess.run(["dot", "-Tsvg", "-o", "/dev/null"], input=graph.source.encode("utf-8"),
                          capture_output=True)
    return proc.stderr.decode("utf-8", "replace")


def model_json(model: Model) -> str:
    """The model-level view as JSON: segments, groups with layers, stores used."""
    segs = []
    for seg_name, groups in v.segments(model):
        diffs = v.group_differences(groups)
        segs.append({"segment": seg_name, "groups": [{
            "id": gr.prefix, "letter": gr.letter, "layers": layers_json(gr.layers), "multiplicity": gr.mult,
            "stage": gr.stage, "params_per_instance": str(_params_of(gr)), "differences": diffs[gr.prefix],
            "stores": {s: {"writes": None if w is None else str(w), "reads": None if r is None else str(r)}
                       for s, (w, r) in sorted(v.store_uses(model, gr).items())},
        } for gr in groups]})
    payload = json.loads(to_json(model))      # the full op graph: nodes, edges, runs
    payload.update({"segments": segs,
                    "stores": {n: {"tags": list(s.tags), "doc": s.doc} for n, s in model.spec.stores.items()}})
    return json.dumps(payload, indent=2, ensure_ascii=False)


def op_json(model: Model, block: str | None = None) -> str:
    group = v.find_group(model, block)
    ids = {o.id for o in group.ops}
    nodes = [dict(id=o.id, **op_attrs(o)) for o in group.ops]
    edges = [{"source": u, "target": t, "tensor": d["tensor"], "shape": [str(d["rows"]), str(d["width"])]}
             for u, t, d in model.graph.edges(data=True) if t in ids]
    return json.dumps({"model": model.spec.model, "options": model.choices, "block": group.prefix,
                       "layers": layers_json(group.layers), "nodes": nodes, "edges": edges}, indent=2, ensure_ascii=False)
