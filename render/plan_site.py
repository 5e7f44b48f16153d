"""The explorer's plan view (`specc site --plan`): `specc plan` in the browser.

The page (render/site_assets/plan.{html,js}) takes a traffic (rate, ISL, OSL,
arrivals, chunk budget) and targets (TTFT, TPOT), the candidate devices, formats
and GPU budget, and runs the planner's search over data this module exports:

* for each layout of the planner's space (plan/search.py `layouts`, restricted to
  PAGE_SPACE below), the exact closed forms the planner asks the engine for:
  call_time in (B, S, P) on that device (the planner's decode steps and prefill
  chunks are its values), b_max in H (the requests that fit, at the workspace the
  memory fraction leaves), state_bytes in (H, B) per device, and the exact weights
  per device; each printed to JavaScript by compiler/codegen (BigInt, rationals);
* per device, its memory, the workspace, the per-GPU scale-out link (or why there
  is none), and gpus_per_node;
* the serving model's formulas (plan/formulas.py, the one declaration serving.py
  evaluates) printed to JavaScript: data/plan_formulas.js.

The page composes those functions (loops over layouts, replica counts and prefill
chunks, the least batch that satisfies the fixed point) and does no capacity or
time arithmetic of its own. Every figure is exact, so the page's chosen deployment
and its figures equal `specc plan --format json` on the same inputs (tests/test_plan_site.py).

The page's space is a documented subset of the planner's (PAGE_SPACE): the planner's
default devices, tensor parallelism within a node, pp = 1 only (pipeline stages
multiply the exported forms; `specc plan` searches them), dp and ep as the planner
searches them for specs with routed experts, and the planner's default formats; the
memory fraction is the planner's 0.9. The page says so, and each row's
`specc plan ... --pp 1` command reproduces the whole plan."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

# the planner's space the page searches (see the module doc)
PAGE_SPACE = {"pp": (1,), "max_gpus": 64}


def _public_path(path) -> str:
    """A spec's path as the page prints it in commands: relative to the folder specc ran in,
    or the file's name alone (never the build machine's absolute paths)."""
    import os

    text = str(path)
    if not os.path.isabs(text):
        return text
    try:
        return Path(text).resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return Path(text).name


def _exact(value) -> str:
    from ..dsl.human import exact_text

    return exact_text(Fraction(value))


def _devices(asker, names) -> list[dict]:
    """The devices the page offers: memory, the workspace the memory fraction leaves, the
    per-GPU scale-out link (the disaggregated mode's KV transfer) and gpus_per_node."""
    from ..dsl.errors import SpecError
    from ..plan import formulas as F
    from ..plan.queries import Layout
    from ..plan.serving import EXACT, EngineRules

    rules = EngineRules()
    out = []
    for name in names:
        lay = Layout(name)
        try:
            memory = asker.exact(asker.q.device_memory(lay))
        except SpecError:
            continue                     # no such device file on this spec's search path
        row = {"name": name, "memory": _exact(memory), "memory_query": asker.q.device_memory(lay),
               "workspace": _exact(F.workspace(EXACT, memory, rules.memory_fraction.numerator,
                                               rules.memory_fraction.denominator)),
               "gpus_per_node": asker.gpus_per_node(name), "link": None, "link_query": asker.q.kv_link(lay),
               "no_link": None}
        try:
            row["link"] = _exact(asker.exact(asker.q.kv_link(lay)))
        except SpecError as exc:
            row["no_link"] = exc.message.splitlines()[0]
        out.append(row)
    return out


class _Functions:
    """Printed closed forms, each distinct source once."""

    def __init__(self):
        self.sources: list[str] = []
        self._index: dict[str, int] = {}

    def add(self, expr, args) -> int:
        from ..compiler.lanes import codegen

        source = codegen.emit(expr, list(args), "javascript", shared=False)
        if source not in self._index:
            self._index[source] = len(self.sources)
            self.sources.append(source)
        return self._index[source]


def _symbolic(asker, text: str):
    import sympy as sp

    return sp.sympify(asker.engine.evaluate_text(text, "<site>", symbolic_ok=True).value)


def export_plan(path: str, devices=None) -> dict:
    """Everything the plan view needs about one spec (see the module doc)."""
    from ..compiler.lanes.codegen import CodegenError
    from ..compiler.schema.patterns import NoClosedForm
    from ..dsl.errors import SpecError
    from ..plan.queries import Asker
    from ..plan.run import DEFAULT_DEVICES, formats_of
    from ..plan.search import Space, layouts
    from ..plan.serving import EngineRules

    asker = Asker(path)
    q = asker.q
    spec = asker.spec
    devs = _devices(asker, devices or DEFAULT_DEVICES)
    fmts = formats_of(spec)
    space = Space(tuple(d["name"] for d in devs), PAGE_SPACE["max_gpus"], fmts, pp=PAGE_SPACE["pp"])
    workspace = {d["name"]: int(Fraction(d["workspace"])) for d in devs}
    fns = _Functions()
    rows, left_out = [], {}
    for lay in layouts(asker, space):
        ws = workspace[lay.device]
        try:
            weights = asker.exact(q.weight_bytes(lay))
            fit = fns.add(_symbolic(asker, q.b_max(lay, "H", ws)), ["H"])
            state = fns.add(_symbolic(asker, q.state_bytes(lay, "H", "B")), ["H", "B"])
            time = fns.add(_symbolic(asker, q.call_time(lay, "B", "S", "P")), ["B", "S", "P"])
        except (SpecError, NoClosedForm, CodegenError) as exc:
            # the planner leaves such a layout out too (a split or a format the spec refuses)
            why = f"{lay.format_name()}: {str(getattr(exc, 'message', exc)).splitlines()[0]}"
            left_out[why] = left_out.get(why, 0) + 1
            continue
        rows.append({
            "device": lay.device, "tp": lay.tp, "pp": lay.pp, "dp": lay.dp, "ep": lay.ep,
            "format": fmts.index(lay.fmt), "gpus": lay.gpus, "weights": _exact(weights),
            "fit": fit, "state": state, "time": time,
            # query texts with {B}, {H}, {S}, {P} left for the page to fill (the planner's own texts)
            "queries": {"decode": q.decode_step(lay, "{B}", "{H}"),
                        "decode_beyond_fit": q.decode_step(lay, "{B}", "{H}", beyond_fit=True),
                        "first_chunk": q.prefill_chunk(lay, 0, "{P}"), "chunk": q.call_time(lay, 1, "{S}", "{P}"),
                        "fit": q.b_max(lay, "{H}", ws), "weights": q.weight_bytes(lay),
                        "state": q.state_bytes(lay, "{H}", "{B}")},
        })
    max_context = spec.max_context
    return {
        "name": Path(path).stem, "model": spec.model, "path": _public_path(path),
        "max_context": None if max_context is None else int(getattr(max_context, "value", max_context)),
        "moe": any(r["dp"] > 1 or r["ep"] > 1 for r in rows),
        "formats": [{"name": ",".join(f"{k}={v}" for k, v in fmt) or "default",
                     "cli": "+".join(f"{k}={v}" for k, v in fmt) or (spec.default_format or "")}
                    for fmt in fmts],
        "devices": devs, "layouts": rows, "max_loop_gain": _exact(EngineRules().max_loop_gain),
        "memory_fraction": _exact(EngineRules().memory_fraction),
        "left_out": [{"count": n, "why": why} for why, n in left_out.items()],
        "functions": fns.sources,
    }


def _spec_js(data: dict) -> str:
    functions = data.pop("functions")
    body = ",\n".join(src.rstrip() for src in functions)
    return f"SPECC_PLAN.register({json.dumps(data, ensure_ascii=False, sort_keys=True)},\n[\n{body}\n]);\n"


def formulas_js() -> str:
    """The serving model's formulas (plan/formulas.py) printed to JavaScript."""
    from ..plan import formulas

    return ("// the serving model's formulas, printed from plan/formulas.py (the planner runs the same)\n"
            + formulas.javascript())


def _join(parts: list[dict]) -> dict:
    """One spec's exports per device (export_plan(path, (device,))) as one, in device order
    (the planner enumerates layouts device by device), functions renumbered."""
    data = None
    index: dict = {}
    for part in parts:
        remap = []
        for source in part.pop("functions"):
            index.setdefault(source, len(index))
            remap.append(index[source])
        for row in part["layouts"]:
            for key in ("fit", "state", "time"):
                row[key] = remap[row[key]]
        if data is None:
            data = part
            continue
        data["devices"] += part["devices"]
        data["layouts"] += part["layouts"]
        data["moe"] = data["moe"] or part["moe"]
        for note in part["left_out"]:
            same = next((n for n in data["left_out"] if n["why"] == note["why"]), None)
            if same:
                same["count"] += note["count"]
            else:
                data["left_out"].append(note)
    data["functions"] = list(index)
    return data


def _export_task(task) -> dict:
    path, device = task
    return export_plan(path, (device,))


def plan_files(spec_paths: list[str], jobs: int = 2, devices=None) -> dict:
    """The plan view's data files for `spec_paths`: data/plan_<name>.js, data/plan_index.js,
    data/plan_formulas.js (the page itself is an asset, copied with the explorer's). Each
    spec is exported one device at a time (`jobs` worker processes)."""
    from concurrent.futures import ProcessPoolExecutor

    from ..plan.run import DEFAULT_DEVICES

    paths = sorted(spec_paths)
    tasks = [(p, d) for p in paths for d in (devices or DEFAULT_DEVICES)]
    if jobs > 1 and len(tasks) > 1:
        with ProcessPoolExecutor(jobs) as pool:
            done = list(pool.map(_export_task, tasks))
    else:
        done = [_export_task(t) for t in tasks]
    files = {}
    index = []
    for path in paths:
        data = _join([d for t, d in zip(tasks, done) if t[0] == path])
        index.append({"name": data["name"], "model": data["model"], "layouts": len(data["layouts"])})
        files[f"data/plan_{data['name']}.js"] = _spec_js(data)
    site = {"specs": index, "space": {"pp": list(PAGE_SPACE["pp"]), "max_gpus": PAGE_SPACE["max_gpus"]}}
    files["data/plan_index.js"] = "var SPECC_PLAN_SITE = " + json.dumps(site, ensure_ascii=False, indent=1) + ";\n"
    files["data/plan_formulas.js"] = formulas_js()
    return files
