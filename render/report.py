"""Claims reports: a Markdown and a self-contained HTML page per spec, plus an
index. Every number is the verifier's (verify.claims.verify_spec): verdict,
source line and quote, the query, computed vs expected, the tolerance, the
exact value and, for scenario queries, the closed form in the scenario
symbols; errata are highlighted. Diagrams and plots are embedded inline."""

from __future__ import annotations

import html
import re
from collections import Counter
from dataclasses import dataclass, field

import sympy as sp

from ..compiler.query.queries import QueryEngine
from ..dsl.errors import SpecError
from ..verify.claims import VERDICTS
from ..verify import sources as S
from ..verify.output import tolerance_text
from . import tables as T

e = html.escape



@dataclass
class ClaimRow:
    verdict: str
    id: str
    source: str
    quote: str
    query: str
    computed: str
    exact: str
    expected: str
    tolerance: str
    closed_form: str
    note: str
    erratum: str
    message: str
    source_name: str = ""     # the cited document's English name (specs/sources/sources.yaml)
    gloss: str = ""           # the quote in English (verify/sources.py)

    @property
    def source_text(self) -> str:
        """'the Model Architecture chapter, 000_f4a9f3652d679e1f.txt:11' (the file alone when unlisted)."""
        return f"{self.source_name}, {self.source}" if self.source_name else self.source


@dataclass
class SpecReport:
    path: str
    model: str
    description: str
    source: str
    counts: dict
    claims: list
    figures: list = field(default_factory=list)     # (title, svg text, file name or None)
    tables: list = field(default_factory=list)      # T.Table


def closed_form(engine: QueryEngine, query: str, cache: dict) -> str:
    """The claim's query with its scenario numbers replaced by symbols, as a
    closed form, when it is a single call of a query whose declaration names the
    scenario parameters it has a closed form in (compiler/query/query_registry.py)."""
    from ..compiler.query.query_registry import REGISTRY
    from ..compiler.query.query_value import Expr, Name

    expr = Expr.parse(str(query).strip())
    call = expr.call if expr is not None else None
    info = REGISTRY.get(call.name) if call is not None else None
    if info is None or not info.closed_form or any(isinstance(v, Expr) for _, v in call.args):
        return ""
    literal = {k: Name(k) for k, v in call.args if k in info.closed_form and isinstance(v, int)}
    if not literal:
        return ""
    sym = call.with_args(literal).text()
    if sym in cache:
        return cache[sym]
    try:
        value = engine.evaluate_text(sym, symbolic_ok=True).value
        out = str(sp.factor_terms(value)) if not value.has(sp.Piecewise) else str(value)
    except (SpecError, ValueError, TypeError, NotImplementedError):  # a courtesy; the verdict does not depend on it
        out = ""
    if len(out) > 240:
        out = ""
    cache[sym] = out.replace("**", "^")
    return cache[sym]


def claim_rows(engine: QueryEngine, results: list) -> list:
    cache: dict = {}
    rows = []
    for r in results:
        c = r.claim
        expected = str(c.expect or c.expect_formula or "")
        rows.append(ClaimRow(r.verdict, c.id, c.source, c.quote, str(c.eval), r.computed_display(),
                             r.computed_exact(), expected, tolerance_text(r) if r.low is not None else "",
                             closed_form(engine, c.eval, cache) if r.computed is not None else "",
                             c.note or "", c.erratum or "", r.message if r.verdict != "PASS" else "",
                             S.source_name(c.source), S.gloss(c)))
    return rows


def cited_sources(rep: "SpecReport") -> list:
    """The entries of specs/sources/sources.yaml the report's claims cite, in file order."""
    files = sorted({S.source_file(c.source) for c in rep.claims})
    return [S.sources()[f] for f in files if f in S.sources()]


def _source_line(entry: dict) -> str:
    published = str(entry.get("published") or "")
    return (f"{entry['name']} — `{entry['file']}`: {entry['what']}, in {entry['language']}, "
            f"titled “{entry['title']}”" + (f"; published: {published}" if published else ""))


def build(path: str, engine: QueryEngine | None = None, figures=(), tables=()) -> SpecReport:
    from ..compiler.schema.spec import load_spec

    spec = engine.spec if engine is not None else load_spec(path)
    engine = engine or QueryEngine(spec)
    results = [r for r in _verify(spec, engine)]
    counts = Counter(r.verdict for r in results)
    return SpecReport(str(path), spec.model, str(getattr(spec, "description", "") or ""),
                      str(getattr(spec, "source", "") or ""), {v: counts.get(v, 0) for v in VERDICTS},
                      claim_rows(engine, results), list(figures), list(tables))


def _verify(spec, engine) -> list:
    from ..verify.claims import check, load_claims

    return [check(engine, claim) for claim in load_claims(spec)]


def summary_text(counts: dict) -> str:
    total = sum(counts.values())
    return ", ".join(f"{n} {v}" for v, n in counts.items() if n) + f" ({total} claims)" if total else "no claims"


# ------------------------------------------------------------------ Markdown
def _md(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def to_markdown(rep: SpecReport, links: dict | None = None) -> str:
    links = links or {}
    out = [f"# {rep.model}", ""]
    if rep.description:
        out += [rep.description.strip(), ""]
    out += [f"Spec: `{rep.path}`" + (f" — source: {rep.source}" if rep.source else ""), "",
            f"**Verdicts:** {summary_text(rep.counts)}", ""]
    for title, _, fname in rep.figures:
        if fname:
            out += [f"![{title}]({fname})", ""]
    for t in rep.tables:
        out.append(T.to_markdown(t))
    out += ["## Claims", "",
            "| verdict | claim | source | quote | query | computed | expected | closed form |",
            "|---|---|---|---|---|---|---|---|"]
    for c in rep.claims:
        verdict = f"**{c.verdict}**" if c.verdict != "PASS" else c.verdict
        quote = f"“{c.quote}”" + (f" — *{c.gloss}*" if c.gloss else "") if c.quote else c.gloss
        out.append("| " + " | ".join([verdict, f"`{_md(c.id)}`", _md(c.source_text), _md(quote), f"`{_md(c.query)}`",
                                      _md(f"{c.computed} (= {c.exact})" if c.exact else c.computed),
                                      _md(f"{c.expected} {c.tolerance}".strip()),
                                      f"`{_md(c.closed_form)}`" if c.closed_form else ""]) + " |")
    errata = [c for c in rep.claims if c.erratum or c.verdict in ("FAIL", "XPASS", "ERROR")]
    if errata:
        out += ["", "## Errata and problems", ""]
        for c in errata:
            out.append(f"- **{c.verdict}** `{c.id}` ({c.source}): {_md(c.erratum or c.message)}")
    cited = cited_sources(rep)
    if cited:
        out += ["", "## Sources", "",
                "The documents the claims cite (`specs/sources/sources.yaml`); quotes are in the source's "
                "language, each followed by its English gloss.", ""]
        out += [f"- {_md(_source_line(entry))}" for entry in cited]
    return "\n".join(out) + "\n"


# ------------------------------------------------------------------ HTML
CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px auto;max-width:1280px;color:#222;padding:0 16px}
h1{font-size:24px;margin-bottom:4px}h2{font-size:19px;margin-top:28px;border-bottom:1px solid #ddd;padding-bottom:3px}
.summary span{display:inline-block;margin-right:8px;padding:2px 9px;border-radius:10px;font-weight:600;font-size:13px}
.v-PASS{background:#d9f2d9;color:#185c18}.v-FAIL{background:#f9d2d2;color:#8a1010}.v-XFAIL{background:#fde9c4;color:#7a4a00}
.v-XPASS{background:#f9d2d2;color:#8a1010}.v-ERROR{background:#e8d3f4;color:#5b1f80}
table.claims{border-collapse:collapse;width:100%;font-size:12.5px}
table.claims th,table.claims td{border:1px solid #d5d5d5;padding:3px 6px;vertical-align:top;text-align:left}
table.claims thead th{background:#eef2f7;position:sticky;top:0}
table.claims tr.erratum td{background:#fff6e0}table.claims tr.bad td{background:#fde8e8}
td.q{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:11.5px;word-break:break-word}
td.num{white-space:nowrap}.quote{color:#444;font-style:italic}.gloss{color:#235;font-size:12px}.note{color:#555;font-size:12px}
.err{color:#7a4a00;font-size:12px;margin-top:3px}.figure{margin:12px 0;overflow-x:auto;border:1px solid #eee;padding:6px}
.figure svg{max-width:100%;height:auto}.figure h3{margin:2px 0 6px;font-size:14px}
nav a{margin-right:12px}
""" + T.TABLE_CSS


def _page(title: str, body: str) -> str:
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{e(title)}</title><link rel=\"icon\" href=\"data:,\"><style>{CSS}</style></head>\n<body>\n"
            + body + "\n</body></html>\n")


def svg_inline(svg: str) -> str:
    # drop the XML prolog and DOCTYPE so the SVG can live inside HTML
    svg = re.sub(r"<\?xml[^>]*\?>\s*", "", svg)
    svg = re.sub(r"<!DOCTYPE[^>]*>\s*", "", svg)
    return svg


def summary_html(counts: dict) -> str:
    return "".join(f'<span class="v-{v}">{n} {v}</span>' for v, n in counts.items() if n) or "no claims"


def to_html(rep: SpecReport, nav: str = "") -> str:
    parts = [nav, f"<h1>{e(rep.model)}</h1>"]
    if rep.description:
        parts.append(f"<p>{e(rep.description.strip())}</p>")
    parts.append(f'<p class="note">Spec <code>{e(rep.path)}</code>' + (f" — source: {e(rep.source)}" if rep.source
                                                                       else "") + "</p>")
    parts.append(f'<p class="summary"><b>Verdicts:</b> {summary_html(rep.counts)}</p>')
    for title, svg, _ in rep.figures:
        parts.append(f'<div class="figure"><h3>{e(title)}</h3>{svg_inline(svg)}</div>')
    for t in rep.tables:
        parts.append(T.to_html(t))
    parts.append("<h2>Claims</h2>")
    parts.append('<table class="claims"><thead><tr><th>verdict</th><th>claim · source · quote</th><th>query</th>'
                 "<th>computed</th><th>expected (tolerance)</th><th>exact value · closed form</th></tr></thead><tbody>")
    for c in rep.claims:
        cls = "erratum" if c.erratum else ("bad" if c.verdict in ("FAIL", "XPASS", "ERROR") else "")
        extra = ""
        if c.erratum:
            extra += f'<div class="err"><b>erratum:</b> {e(c.erratum)}</div>'
        elif c.message:
            extra += f'<div class="err">{e(c.message)}</div>'
        if c.note:
            extra += f'<div class="note">{e(c.note)}</div>'
        closed = f"<br><code>{e(c.closed_form)}</code>" if c.closed_form else ""
        parts.append(
            f'<tr class="{cls}" id="{e(c.id)}"><td><span class="v-{c.verdict}">{c.verdict}</span></td>'
            f"<td><b>{e(c.id)}</b><br>{e(c.source_text)}"
            + (f'<div class="quote">“{e(c.quote)}”</div>' if c.quote else "")
            + (f'<div class="gloss">{e(c.gloss)}</div>' if c.gloss else "") + f"{extra}</td>"
            f'<td class="q">{e(c.query)}</td><td class="num">{e(c.computed)}</td>'
            f'<td class="num">{e(c.expected)} {e(c.tolerance)}</td>'
            f'<td class="q">{e(c.exact)}{closed}</td></tr>')
    parts.append("</tbody></table>")
    cited = cited_sources(rep)
    if cited:
        parts.append("<h2>Sources</h2><p class=\"note\">The documents the claims cite "
                     "(<code>specs/sources/sources.yaml</code>); quotes are in the source's language, each "
                     "followed by its English gloss.</p><ul>"
                     + "".join(f"<li>{e(_source_line(entry)).replace('`', '')}</li>" for entry in cited) + "</ul>")
    return _page(f"{rep.model} — specc report", "\n".join(parts))


def index_markdown(entries: list, extra: str = "") -> str:
    """entries: [(model, spec path, counts, link to md)]"""
    out = ["# specc: verified resource accounting of the shipped specs", "",
           "Generated by `specc docs -o docs/` from the specs, their claims and the query engine; "
           "do not edit by hand.", "",
           "| model | spec | verdicts | report |", "|---|---|---|---|"]
    from .output_tree import link as relative_link

    for model, path, counts, link in entries:
        # the link is relative and percent-encoded: a file name never becomes a scheme (javascript:)
        out.append(f"| {_md(model)} | `{_md(str(path))}` | {summary_text(counts)} | "
                   f"[{_md(link)}]({relative_link(link)}) |")
    out.append("")
    return "\n".join(out) + extra


def index_html(entries: list, body_extra: str = "") -> str:
    from .output_tree import link as relative_link

    rows = "".join(f"<tr><td><a href=\"{e(relative_link(link))}\">{e(model)}</a></td><td><code>{e(path)}</code></td>"
                   f"<td class=\"summary\">{summary_html(counts)}</td></tr>"
                   for model, path, counts, link in entries)
    body = ("<h1>specc: verified resource accounting</h1>"
            "<p class=\"note\">Generated by <code>specc docs -o docs/</code>; every number comes from the specs, "
            "their claims and the query engine.</p>"
            "<table class=\"specc\"><thead><tr><th>model</th><th>spec</th><th>verdicts</th></tr></thead><tbody>"
            + rows + "</tbody></table>" + body_extra)
    return _page("specc reports", body)
