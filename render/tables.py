"""Tables rendered from the compiled model and the query engine.

kinds:
  modules  — per segment, one row per module: role, input → output (rows ×
             width), weight (in × out, count), FLOPs formula, layers per call
             (the chapter's Bảng 2-1 … 2-6 layout)
  params   — parameters by group for each spec, in billions (Bảng 2-B)
  flops    — matrix FLOPs by component for each spec and scenario
  state    — state bytes by store for each spec and context length
  compare  — one row per spec, one column per query (Bảng 2-A / 2-C / 2-E)
  roofline — per op of one call on a device: FLOPs, bytes, arithmetic intensity,
             which bound applies and its time (LLM-Viewer's table, exact inputs)

Every number comes from QueryEngine.evaluate_text or from Model ops."""

from __future__ import annotations

import csv
import html
import io
from dataclasses import dataclass, field

import sympy as sp

from ..compiler.graph.build import Model
from ..compiler.query.queries import QueryEngine
from ..compiler.query.query_value import make_call
from ..dsl.errors import SpecError
from ..dsl.parser import parse_quantity
from ..dsl.units import unit_of_terms
from . import views as v


@dataclass
class Table:
    title: str
    columns: list
    rows: list                      # list of lists of cell strings
    sections: list = field(default_factory=list)   # (row index, section title)
    notes: list = field(default_factory=list)
    data: list = field(default_factory=list)       # per row: machine-readable values (tests, JSON)


# ------------------------------------------------------------------ formats
def _md_cell(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", "<br>")


def to_markdown(t: Table) -> str:
    out = [f"### {t.title}", ""] if t.title else []
    sections = dict(t.sections)
    header = "| " + " | ".join(_md_cell(c) for c in t.columns) + " |"
    rule = "|" + "|".join("---" for _ in t.columns) + "|"
    out += [header, rule]
    for i, row in enumerate(t.rows):
        if i in sections:
            out.append("| " + " | ".join([f"**{_md_cell(sections[i])}**"] + [""] * (len(t.columns) - 1)) + " |")
        out.append("| " + " | ".join(_md_cell(c) for c in row) + " |")
    for note in t.notes:
        out += ["", note]
    return "\n".join(out) + "\n"


def to_html(t: Table, standalone: bool = False) -> str:
    e = html.escape
    sections = dict(t.sections)
    out = ['<table class="specc">']
    if t.title:
        out.append(f"<caption>{e(t.title)}</caption>")
    out.append("<thead><tr>" + "".join(f"<th>{e(str(c))}</th>" for c in t.columns) + "</tr></thead><tbody>")
    for i, row in enumerate(t.rows):
        if i in sections:
            out.append(f'<tr class="section"><th colspan="{len(t.columns)}">{e(sections[i])}</th></tr>')
        out.append("<tr>" + "".join(f"<td>{e(str(c))}</td>" for c in row) + "</tr>")
    out.append("</tbody></table>")
    for note in t.notes:
        out.append(f'<p class="note">{e(note)}</p>')
    body = "\n".join(out)
    if not standalone:
        return body + "\n"
    return ("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" + e(t.title) + "</title><style>"
            + TABLE_CSS + "</style></head><body>\n" + body + "\n</body></html>\n")


TABLE_CSS = ("table.specc{border-collapse:collapse;font:13px/1.35 system-ui,sans-serif;margin:1em 0}"
             "table.specc td,table.specc th{border:1px solid #ccc;padding:3px 7px;vertical-align:top;text-align:left}"
             "table.specc thead th{background:#eef2f7}table.specc tr.section th{background:#f6f6f6;font-weight:600}"
             "table.specc caption{font-weight:600;text-align:left;padding:4px 0}p.note{color:#555;font-size:12px}")


def to_csv(t: Table) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    sections = dict(t.sections)
    has_sections = bool(t.sections)
    writer.writerow((["section"] if has_sections else []) + list(t.columns))
    current = ""
    for i, row in enumerate(t.rows):
        current = sections.get(i, current)
        writer.writerow(([current] if has_sections else []) + list(row))
    return buf.getvalue()


_LATEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{",
          "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "×": r"$\times$", "→": r"$\to$",
          "·": r"$\cdot$", "∞": r"$\infty$", "—": "---", "–": "--", "≈": r"$\approx$", "≤": r"$\le$",
          "<": r"\textless{}", ">": r"\textgreater{}"}


def _tex(text) -> str:
    return "".join(_LATEX.get(ch, ch) for ch in str(text))


def to_latex(t: Table) -> str:
    sections = dict(t.sections)
    out = ["\\begin{table}[ht]", "\\centering", "\\small"]
    if t.title:
        out.append(f"\\caption{{{_tex(t.title)}}}")
    out.append("\\begin{tabular}{" + "l" * len(t.columns) + "}")
    out.append("\\hline")
    out.append(" & ".join(f"\\textbf{{{_tex(c)}}}" for c in t.columns) + " \\\\")
    out.append("\\hline")
    for i, row in enumerate(t.rows):
        if i in sections:
            out.append(f"\\multicolumn{{{len(t.columns)}}}{{l}}{{\\textit{{{_tex(sections[i])}}}}} \\\\")
        out.append(" & ".join(_tex(c) for c in row) + " \\\\")
    out += ["\\hline", "\\end{tabular}"]
    for note in t.notes:
        out.append(f"\\par\\footnotesize {_tex(note)}")
    out.append("\\end{table}")
    return "\n".join(out) + "\n"


FORMATS = {"md": to_markdown, "html": to_html, "csv": to_csv, "latex": to_latex}


# ------------------------------------------------------------------ modules
@dataclass
class ModuleRow:
    section: str
    module: str
    role: str
    io: str
    weights: str
    formula: str
    layers: int
    flops: sp.Expr                  # per layer instance, summed over the row's ops
    params: sp.Expr                 # per layer instance
    weight_shapes: list             # [(shape tuple of ints/exprs, count)]
    key: tuple = ()
    layer_set: set = field(default_factory=set)
    first_rel: str = ""             # the row's first op inside its group (for ordering)
    names: list = field(default_factory=list)   # element-wise rows: the ops they stand for
    total_params: sp.Expr = sp.Integer(0)      # over every layer the row stands for


def _x(text: str) -> str:
    return text.replace("·", "×")


def _matmul_formula(op, rows: str, count: int = 1) -> str:
    w = op.weights[0]
    groups = sp.sympify(w.copies) / sp.sympify(op.experts) if op.experts != 1 else sp.sympify(w.copies)
    parts = ["2"] + ([str(count)] if count != 1 else []) + [rows] + ([str(groups)] if groups != 1 else []) \
        + [v.expr_text(s) for s in w.shape]
    return "×".join(parts)


def _weights_cell(op, count: int = 1) -> str:
    parts = []
    for w in op.weights:
        text = v.weight_text(w)
        copies = sp.sympify(w.copies)
        if op.kind == "lookup":
            text = f"lookup table {text}"
        if op.experts != 1:
            text += f", {v.expr_text(op.experts)} experts"
            copies = copies / op.experts
        if copies != 1:
            text += f", {v.expr_text(copies)} groups"
        if count != 1:
            text += f", {count} in total"
        parts.append(text)
    return "; ".join(parts) if parts else "no weights"


def _shape(t, base) -> str:
    return v.shape_text(t.rows, t.width, base).replace("·", "")


def _is_matrix(op) -> bool:
    return op.kind != "elementwise" and (op.flops != 0 or op.kind in v.MATRIX_KINDS or op.kind == "lookup")


def _group_rows(model: Model, group: v.Group) -> list:
    base = v.segment_rows(group)
    rows: list = []
    ops = group.ops
    instance_of = {o.id: (group.rel(o).split(".")[0] if "." in group.rel(o) else None) for o in ops}
    # block calls whose matrix ops are all plain matmuls on one row count collapse into one row
    collapsible = {}
    for inst in {i for i in instance_of.values() if i}:
        mats = [o for o in ops if instance_of[o.id] == inst and _is_matrix(o)]
        collapsible[inst] = (len(mats) >= 2 and all(o.kind == "matmul" for o in mats)
                             and len({sp.srepr(o.rows) for o in mats}) == 1)
    done_instances = set()
    i = 0
    elementwise = []
    while i < len(ops):
        op = ops[i]
        inst = instance_of[op.id]
        if not _is_matrix(op):
            if op.kind in ("elementwise", "param") and (op.weights or op.kind == "elementwise"):
                elementwise.append(op)
            i += 1
            continue
        if inst and collapsible.get(inst):
            if inst not in done_instances:
                done_instances.add(inst)
                mats = [o for o in ops if instance_of[o.id] == inst and _is_matrix(o)]
                rows.append(_collapsed_row(group, inst, mats, base))
                rows[-1].first_rel = group.rel(mats[0])
            i += 1
            continue
        if op.kind == "matmul":
            # merge following matmuls with the same input and weight shape (k, v)
            same = [op]
            j = i + 1
            while j < len(ops):
                nxt = ops[j]
                if not _is_matrix(nxt):
                    j += 1
                    continue
                if (nxt.kind == "matmul" and instance_of[nxt.id] == inst and nxt.inputs and op.inputs
                        and nxt.inputs[0][0] == op.inputs[0][0] and sp.srepr(nxt.rows) == sp.srepr(op.rows)
                        and [w.shape for w in nxt.weights] == [w.shape for w in op.weights]
                        and nxt.weights[0].copies == op.weights[0].copies and sp.srepr(nxt.flops) == sp.srepr(op.flops)):
                    same.append(nxt)
                    j += 1
                    continue
                break
            for o in same[1:]:
                ops = [x for x in ops if x.id != o.id]
            rows.append(_matmul_row(group, same, base))
            rows[-1].first_rel = group.rel(op)
            i += 1
            continue
        rows.append(_single_row(group, op, base))
        rows[-1].first_rel = group.rel(op)
        i += 1
    if elementwise:
        names = [group.rel(o).split(".")[-1] for o in elementwise]
        vec = [o for o in elementwise if o.weights]
        params = sum((o.params() for o in elementwise), sp.Integer(0))
        rows.append(ModuleRow(group.segment, "element-wise", "norms, rotations, activations, residual mixes",
                              "kept or element-wise on the tensors above", "vectors" if vec else "—", "element-wise",
                              group.mult, sp.Integer(0), params, [], ("elementwise",),
                              names=list(dict.fromkeys(names))))
    return rows


def _matmul_row(group, same, base) -> ModuleRow:
    op = same[0]
    names = ", ".join(group.rel(o).split(".")[-1] for o in same)
    prefix = group.rel(op).rsplit(".", 1)[0] + "." if "." in group.rel(op) else ""
    rows = v.rows_text(op.rows, base).replace("·", "")
    io_text = f"{_shape(op.inputs[0][1], base)} → {_shape(op.outputs[0][1], base)}"
    flops = sum((o.flops for o in same), sp.Integer(0))
    params = sum((o.params() for o in same), sp.Integer(0))
    shapes = [(tuple(op.weights[0].shape), len(same))]
    return ModuleRow(group.segment, prefix + names, op.component, io_text, _weights_cell(op, len(same)),
                     _matmul_formula(op, rows, len(same)), group.mult, flops, params, shapes,
                     ("matmul", prefix + names, io_text, tuple(map(str, op.weights[0].shape)), sp.srepr(flops)))


def _single_row(group, op, base) -> ModuleRow:
    rel = group.rel(op)
    if op.kind == "lookup":
        t_in, t_out = op.inputs[0][1], op.outputs[0][1]
        io_text = f"{v.rows_text(t_in.rows, base)} IDs → {_shape(t_out, base)}"
        formula = "0; row reads counted separately"
    elif op.kind in ("attend", "score"):
        ins = ", ".join(f"{n} {_shape(t, base)}" for n, t in op.inputs)
        io_text = f"{ins} → {_shape(op.outputs[0][1], base)}" if op.outputs else ins
        formula = _x(op.formula).replace("pairs", "N_pair")
    else:
        io_text = (f"{_shape(op.inputs[0][1], base)} → {_shape(op.outputs[0][1], base)}"
                   if op.inputs and op.outputs else "")
        formula = _x(op.formula).replace("rows", v.rows_text(op.rows, base))
    shapes = [(tuple(w.shape), 1) for w in op.weights]
    return ModuleRow(group.segment, rel, op.component, io_text, _weights_cell(op), formula, group.mult, op.flops,
                     op.params(), shapes, (op.kind, rel, io_text, sp.srepr(op.flops), str(shapes)))


def _collapsed_row(group, inst, mats, base) -> ModuleRow:
    first = mats[0]
    chain = [_shape(first.inputs[0][1], base)]
    for o in mats:
        s = _shape(o.outputs[0][1], base)
        if s != chain[-1]:
            chain.append(s)
    counts: dict = {}
    for o in mats:
        counts.setdefault((tuple(o.weights[0].shape), sp.srepr(o.weights[0].copies)), [o, 0])[1] += 1
    wparts, shapes = [], []
    for (shape, _), (o, n) in counts.items():
        w = o.weights[0]
        text = ("" if n == 1 else f"{n}× ") + v.weight_text(w)
        if o.experts != 1:
            text += f" (each of {v.expr_text(o.experts)} experts)"
        wparts.append(text)
        shapes.append((shape, n))
    rows = v.rows_text(first.rows, base).replace("·", "")
    products = {sp.srepr(sp.Mul(*o.weights[0].shape)) for o in mats}
    if len(products) == 1:
        i, o_ = first.weights[0].shape
        formula = f"{2 * len(mats)}×{rows}×{v.expr_text(i)}×{v.expr_text(o_)}"
    else:
        formula = " + ".join(_matmul_formula(o, rows) for o in mats)
    flops = sum((o.flops for o in mats), sp.Integer(0))
    params = sum((o.params() for o in mats), sp.Integer(0))
    comps = list(dict.fromkeys(o.component for o in mats))
    return ModuleRow(group.segment, f"{inst} ({', '.join(group.rel(o).split('.')[-1] for o in mats)})",
                     ", ".join(comps), " → ".join(chain), "; ".join(wparts), formula, group.mult, flops, params,
                     shapes, ("block", inst, " → ".join(chain), sp.srepr(flops), str(shapes), sp.srepr(params)))


def _op_order(groups: list) -> dict:
    """A common order of the ops of a segment's groups (they instantiate one
    block, some ops switched off in some layers): {name in group: rank}."""
    import networkx as nx

    dag = nx.DiGraph()
    first_seen: dict = {}
    for g in groups:
        rels = [g.rel(o) for o in g.ops]
        for r in rels:
            first_seen.setdefault(r, len(first_seen))
            dag.add_node(r)
        dag.add_edges_from(zip(rels, rels[1:]))
    try:
        order = list(nx.lexicographical_topological_sort(dag, key=lambda r: first_seen[r]))
    except nx.NetworkXUnfeasible:
        order = sorted(first_seen, key=first_seen.get)
    return {r: i for i, r in enumerate(order)}


def _layer_set(*sets):
    """The union of layer collections: a set when small, ranges when huge (never listed)."""
    from ..compiler.schema.layerset import SMALL, union

    if sum(len(x) for x in sets) <= SMALL:
        return set().union(*(set(x) for x in sets))
    return union(*sets)


def module_rows(model: Model) -> list:
    """Module rows merged across groups of identical layers: layers = sum of multiplicities,
    in the order of the ops in the block."""
    merged: dict = {}
    order = []
    ranks: dict = {}
    for seg_name, groups in v.segments(model):
        ranks[seg_name] = _op_order(groups)
        for group in groups:
            for row in _group_rows(model, group):
                row.layer_set = _layer_set(group.layers)
                row.total_params = row.params * row.layers
                key = (seg_name,) + row.key
                if key in merged:
                    m = merged[key]
                    m.layers += row.layers
                    m.layer_set = _layer_set(m.layer_set, group.layers)
                    m.total_params += row.total_params
                    m.names += [n for n in row.names if n not in m.names]
                else:
                    merged[key] = row
                    order.append(key)
    rows = [merged[k] for k in order]
    for r in rows:
        if r.names:
            r.module = "element-wise: " + ", ".join(r.names)
            if r.weights == "vectors":
                r.weights = f"vectors ({v.params_text(r.total_params)} params in all)"
    seg_index = {name: i for i, (name, _) in enumerate(v.segments(model))}
    return sorted(rows, key=lambda r: (seg_index[r.section], r.formula == "element-wise",
                                       ranks[r.section].get(r.first_rel, 0)))


def modules_table(model: Model) -> Table:
    rows = module_rows(model)
    seg_layers = {name: sum(len(g.layers) for g in groups) for name, groups in v.segments(model)}
    t = Table(f"{model.spec.model}: modules per layer and output interface"
              + "".join(f" [{k}={c}]" for k, c in model.choices.items()),
              ["Module", "Role", "Input → output (rows × width)", "Weights (in × out)", "Matrix FLOPs",
               "Layers/call"], [])
    current = None
    for r in rows:
        if r.section != current:
            current = r.section
            n = seg_layers.get(current, 0)
            t.sections.append((len(t.rows), current + (f" ({n} layers)" if n else "")))
        module = r.module
        if r.layer_set and len(r.layer_set) < seg_layers.get(r.section, 0):
            module += f" [layers {v.layer_text(r.layer_set)}]"
        t.rows.append([module, r.role, r.io, r.weights, r.formula, str(r.layers)])
        t.data.append(r)
    t.notes.append("m = B·P rows (new tokens of all requests); m_l = rows a layer processes when it differs; "
                   "N_pair = query-key pairs of the call; FLOPs are per layer instance; multiply by Layers/call.")
    return t


# ------------------------------------------------------------------ numeric tables
def convert(quantity, unit_text: str) -> float:
    q = parse_quantity("1 " + unit_text)
    u = unit_of_terms(q.numerator, q.denominator)
    if u.dims != quantity.dims and quantity.value != 0:
        from ..dsl.units import dims_name

        raise v.RenderError(f"cannot show {dims_name(quantity.dims)} in {unit_text}")
    return float(sp.Rational(quantity.value) / sp.Rational(u.factor)) if quantity.value.is_rational \
        else float(quantity.value) / float(u.factor)


CANONICAL_GROUPS = ["embedding_head", "attention_projection", "dense_shared_ffn", "routed_experts", "engram", "other"]


def params_table(engines: list) -> Table:
    groups = list(CANONICAL_GROUPS)
    for e in engines:
        for o in e.model({}).ops:
            for w in o.weights:
                if w.group not in groups:
                    groups.append(w.group)
    t = Table("Parameters by group (billions of logical parameters)", ["Model"] + groups + ["Total"], [])
    for e in engines:
        row, data = [e.spec.model], {}
        for g in groups:
            value = e.evaluate_text(make_call("params", {"group": g}).text()).value
            data[g] = value
            row.append(_billions(value))
        total = e.evaluate_text("params()").value
        data["total"] = total
        row.append(_billions(total))
        t.rows.append(row)
        t.data.append(data)
    t.notes.append("params(group=…) of each spec; 1 B = 10^9 parameters.")
    return t


def _billions(value) -> str:
    x = float(value) / 1e9
    if value != 0 and x < 0.001:
        return "<0.001"
    return f"{x:,.3f}"


DEFAULT_SCENARIOS = [("prefill 8K", "B=1, S=0, P=8192"), ("decode at 8K", "B=1, S=8192, P=1")]


def _scenario_query(name: str, arguments: str, **more) -> str:
    """The query `name` at the scenario arguments a user wrote ('B=1, S=0, P=8192'), with
    `more` arguments and extrapolate=true (a table runs past a model's context, flagged)."""
    from ..compiler.query.query_value import call_with_arguments
    from ..dsl.errors import Loc

    call = call_with_arguments(name, arguments)
    if call is None:
        raise SpecError(f"cannot read the arguments '{arguments}'", Loc("<scenario>", 1, 1, source_text=arguments),
                        expected="NAME=VALUE, ... such as B=1, S=0, P=8192")
    return call.with_args({**more, "extrapolate": True}).text()


def flops_table(engine: QueryEngine, scenarios=None, unit: str = "GFLOPs") -> Table:
    scenarios = scenarios or DEFAULT_SCENARIOS
    model = engine.model({})
    comps = list(dict.fromkeys(o.component for o in model.ops if o.flops != 0))
    t = Table(f"{engine.spec.model}: matrix FLOPs by component ({unit})",
              ["Component"] + [f"{label} ({args})" for label, args in scenarios], [])
    for comp in comps + ["total"]:
        row, data = [comp], {}
        for label, args in scenarios:
            q = engine.evaluate_text(_scenario_query("flops", args, component=None if comp == "total" else comp))
            data[label] = q.value
            row.append(f"{convert(q, unit):,.3f}" + (" *" if q.extrapolated else ""))
        t.rows.append(row)
        t.data.append(data)
    stages = list(dict.fromkeys(o.stage for o in model.ops if o.flops != 0))
    if len(stages) > 1:
        t.sections.append((0, "by component"))
        t.sections.append((len(t.rows), "by stage"))
        for st in stages:
            row, data = [f"stage {st}"], {}
            for label, args in scenarios:
                q = engine.evaluate_text(_scenario_query("flops", args, stage=st))
                data[label] = q.value
                row.append(f"{convert(q, unit):,.3f}")
            t.rows.append(row)
            t.data.append(data)
    t.notes.append("flops(…, component=…) and flops(…, stage=…) of the default options; * extrapolated beyond "
                   "the spec's maximum context.")
    return t


DEFAULT_CONTEXTS = [8192, 131072, 1048576]


def state_table(engine: QueryEngine, contexts=None, fmt: str | None = None) -> Table:
    contexts = contexts or DEFAULT_CONTEXTS
    stores = [s for s in engine.spec.stores if any(u.store == s for u in engine.model({}).states)]
    t = Table(f"{engine.spec.model}: per-request state by store" + (f" (format {fmt})" if fmt else ""),
              ["Store", "Tags", "Bytes/token (slope)"] + [f"H={h:,}" for h in contexts], [])
    for store in stores + ["total"]:
        slope = engine.evaluate_text(make_call("kv_bytes_per_token", {"component": store, "format": fmt}).text()) \
            if store != "total" else None
        row = [store, ", ".join(engine.spec.stores[store].tags) if store != "total" else "",
               (f"{float(slope.value):,.4g} B" if slope is not None else "")]
        data = {}
        for h in contexts:
            q = engine.evaluate_text(make_call("state_bytes", {"H": h, "component": None if store == "total" else store,
                                                              "format": fmt, "extrapolate": True}).text())
            data[h] = q.value
            row.append(v.binary_bytes(q.value) + (" *" if q.extrapolated else ""))
        t.rows.append(row)
        t.data.append(data)
    t.notes.append("state_bytes(H, component=store) for one request; * extrapolated beyond the spec's maximum "
                   "context.")
    return t


@dataclass
class Column:
    label: str
    query: str
    unit: str
    digits: int = 3


def default_columns() -> list:
    """The compare table's default columns, as the query declarations give them."""
    from ..compiler.query.query_registry import default_columns as declared

    return [Column(c.label, make_call(name, c.args).text(), c.unit, c.digits) for name, c in declared()]


def parse_column(text: str) -> Column:
    """'LABEL=QUERY@UNIT' (unit optional)."""
    if "=" not in text:
        raise v.RenderError(f"column '{text}' is not LABEL=QUERY[@UNIT]")
    label, rest = text.split("=", 1)
    query, unit = (rest.rsplit("@", 1) + [""])[:2] if "@" in rest else (rest, "")
    return Column(label.strip(), query.strip(), unit.strip())


def compare_table(engines: list, columns=None, title: str = "Comparison") -> Table:
    columns = columns or default_columns()
    t = Table(title, ["Model"] + [c.label for c in columns], [])
    any_ext = False
    for e in engines:
        row, data = [e.spec.model], {}
        for c in columns:
            try:
                q = e.evaluate_text(c.query)
            except SpecError:  # a query this spec cannot answer (e.g. a missing store): n/a, keep the table
                row.append("n/a")
                data[c.label] = None
                continue
            data[c.label] = q.value
            x = convert(q, c.unit) if c.unit else float(q.value)
            mark = " *" if q.extrapolated else ""
            any_ext = any_ext or q.extrapolated
            row.append(f"{x:,.{c.digits}f}{mark}")
        t.rows.append(row)
        t.data.append(data)
    t.notes.append("Queries: " + "; ".join(f"{c.label} = {c.query}" for c in columns) + ".")
    if any_ext:
        t.notes.append("* extrapolated beyond the spec's maximum context (same structure, by formula).")
    return t


DEFAULT_ROOFLINE = "B=1, S=4096, P=1, device=h100_sxm"


def roofline_table(engine: QueryEngine, args: str | None = None) -> Table:
    """One row per op of call_time(args) (per device), then communication and the total;
    the rows add up to call_time itself (checked here, not assumed)."""
    args = args or DEFAULT_ROOFLINE
    total = engine.evaluate_text(_scenario_query("call_time", args))
    rows, comm_s, overlap = engine.last_roofline
    t = Table(f"{engine.spec.model}: roofline of call_time({args})",
              ["Op", "Kind", "GFLOPs", "MB", "FLOP/B", "Bound", "Time (µs)"], [])
    for r in rows:
        intensity = r.intensity
        t.rows.append([r.name, r.kind, f"{float(r.flops) / 1e9:,.3f}", f"{float(r.bytes) / 1e6:,.3f}",
                       "—" if intensity is None else f"{float(intensity):,.1f}", r.bound,
                       f"{float(r.time) * 1e6:,.2f}"])
        t.data.append({"op": r.name, "flops": r.flops, "bytes": r.bytes, "time": r.time, "bound": r.bound})
    compute = sp.Add(*[r.time for r in rows])
    check = sp.Max(compute, comm_s) if overlap else compute + comm_s
    if sp.simplify(check - total.value) != 0:
        raise SpecError(f"roofline rows add up to {check}, but call_time is {total.value}", None)
    t.rows.append(["communication", "link", "", "", "", "overlapped" if overlap else "added",
                   f"{float(comm_s) * 1e6:,.2f}"])
    t.rows.append(["total", "", f"{float(sp.Add(*[r.flops for r in rows])) / 1e9:,.3f}",
                   f"{float(sp.Add(*[r.bytes for r in rows])) / 1e6:,.3f}", "", "",
                   f"{float(total.value) * 1e6:,.2f}"])
    rates = "the device's measured rates (its file's `measured:` source)" if "efficiency=measured" in args \
        else "the datasheet peak"
    t.notes.append(f"Per device of the deployment; FLOPs and bytes exact, times at {rates} (mfu/mbu scale "
                   "them); communication is each collective's latency plus its bytes over the per-direction "
                   "link. Conventions: compiler/query/q_time.py and README 'Deployment sizing'.")
    return t
