"""The static explorer (specc site): the export in Python, and the page in a real
headless Chromium driven by Selenium, whose every figure must equal
`specc eval --json` of the query the figure names."""

from __future__ import annotations

import json
import os
from fractions import Fraction
import random
import shutil
from pathlib import Path
from urllib.parse import urlencode

import pytest
from click.testing import CliRunner

from specc.cli import main
from specc.render import site as S

REPO = Path(__file__).resolve().parents[1]
SHIPPED = sorted(str(p) for p in (REPO / "specs").glob("*.yaml"))
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
try:
    import selenium  # noqa: F401
    HAVE_SELENIUM = True
except ImportError:                        # the test extra installs it; without it the browser tests skip
    HAVE_SELENIUM = False
_browser_available = pytest.mark.skipif(not (CHROMIUM and CHROMEDRIVER and HAVE_SELENIUM),
                                        reason="headless Chromium, chromedriver and selenium are needed")


def needs_browser(test):
    """A test of the built site in Chromium: it needs the browser, and it is slow (the site export
    of every shipped spec is most of the suite's time), so it runs with --runslow or SPECC_SLOW=1."""
    return pytest.mark.slow(_browser_available(test))


# ------------------------------------------------------------------ the export, without a browser
def test_query_text_binds_page_state_and_symbols():
    fig = next(f for f in S.FIGURES if f.id == "decode_flops")
    assert S.query_text(fig, {"B": 2, "H": 100}, {"head": "all"}) == "flops(B=2, S=100, P=1, head=all)"
    assert S.query_text(fig, None, {}) == "flops(B=B, S=S, P=1)"


def test_variants_cover_every_option_combination_defaults_first(qwen_engine):
    variants = S._variants(qwen_engine.spec)
    assert variants[0] == {"head": "last"}
    assert sorted(v["head"] for v in variants) == ["all", "last", "none"]


def test_exported_functions_agree_with_the_engine(tmp_path):
    """The printed JavaScript is checked in the browser; here the export's
    bookkeeping: every variant names a function for every available figure,
    unavailable ones say why."""
    data = S.join_parts([S.export_part((str(REPO / "specs" / "deepseek_v41.yaml"), "base"))])
    # every option combination, and the knobs' variants (KNOB_CHOICES) at the default options
    knobbed = {S.variant_key({"mode": "ced", **k}) for k in S.knob_variants(("weights", "kv"))}
    assert set(data["variants"]) == {"mode=ced", "mode=reference"} | knobbed
    assert "params" not in data["variants"]["mode=ced&weights=fp8"]       # params takes no knob
    assert {"weight_bytes|reference", "decode_read_bytes|reference"} <= set(data["variants"]["mode=ced&weights=fp8"])
    both = S.variant_key({"mode": "ced", "kv": "fp8", "weights": "nvfp4"})
    assert both == "kv=fp8&mode=ced&weights=nvfp4" and f"{both}#b_max|reference|{S.layout_key(S.TRIVIAL)}" in data["forms"]
    for key, table in data["variants"].items():
        for slot, index in table.items():
            assert index is None or 0 <= index < len(data["functions"])
            if index is None:
                assert data["messages"][data["unavailable"][f"{key}#{slot}"]]
    # every option combination on one device: capacity, fit and time formulas for every format
    one = S.layout_key(S.TRIVIAL)
    for vkey in ("mode=ced", "mode=reference"):
        for fmt in ("reference", "production"):
            for what in ("b_max", "short", "short_tpot", "short_ttft"):
                assert f"{vkey}#{what}|{fmt}|{one}" in data["forms"]
            for step in ("tpot", "ttft"):
                assert f"{vkey}#compute_{step}|{fmt}|{S.stage_key(S.TRIVIAL)}" in data["forms"]
    for slot, index in data["forms"].items():
        assert index is None and data["messages"][data["unavailable"][slot]] or 0 <= index < len(data["functions"])
    assert data["variants"]["mode=ced"]["prefill_flops"] is not None
    assert all(src.startswith("function") for src in data["functions"])
    # the claims table is specc verify's JSON, with each source's English name and quote's gloss;
    # no absolute path of the build machine
    assert data["claims"] and {"id", "source", "verdict", "eval"} <= set(data["claims"][0])
    assert all(c["gloss"] and c["source_name"] for c in data["claims"] if c["source"].startswith("000_"))
    assert data["path"].endswith("deepseek_v41.yaml") and not data["path"].startswith("/")


def test_layouts_offer_tp_ep_on_the_same_gpus():
    """ep is 1 or the stage's tp·dp (vLLM's --enable-expert-parallel), where it divides the experts;
    a dense spec has ep = 1 only."""
    from specc.compiler.query.queries import QueryEngine
    from specc.compiler.schema.spec import load_spec

    moe = S.spec_layouts(QueryEngine.shared(load_spec(REPO / "specs" / "deepseek_v3.yaml")).model({}))
    keys = {S.layout_key(p) for p in moe}
    assert {"tp=8&pp=1&dp=1&ep=8", "tp=1&pp=1&dp=8&ep=8", "tp=1&pp=1&dp=16&ep=16", "tp=8&pp=2&dp=1&ep=1"} <= keys
    assert all(p["ep"] in (1, p["tp"] * p["dp"]) and p["tp"] * p["dp"] <= S.MAX_STAGE_DEVICES for p in moe)
    dense = S.spec_layouts(QueryEngine.shared(load_spec(REPO / "specs" / "llama2_70b.yaml")).model({}))
    assert all(p["ep"] == 1 for p in dense) and moe[0] == S.TRIVIAL == dense[0]


def _device_values(engine, device: str, memory=None, workspace=0, mfu=1, mbu=1) -> dict:
    """The page's formula arguments for a device (what explorer.js passes), as sympy numbers."""
    import sympy as sp

    links = S.device_links(engine, device)
    ask = lambda q: engine.evaluate_text(f"{q}(device={device})").value   # noqa: E731
    values = {"d_memory": memory if memory is not None else ask("device_memory"), "d_workspace": workspace,
              "d_flops": ask("device_flops"), "d_bandwidth": ask("device_bandwidth"), "d_mfu": mfu, "d_mbu": mbu,
              "d_up": links.scale_up if links.scale_up is not None else 1,
              "d_out": links.scale_out if links.scale_out is not None else 1}
    for kind in S._collective_kinds():
        values[f"d_lu_{kind}"] = links.latency.get(kind, 0)
        values[f"d_lo_{kind}"] = (links.scale_out_latency or links.latency).get(kind, 0)
    return {sp.Symbol(k): sp.sympify(v) for k, v in values.items()}, links.gpus_per_node


@pytest.mark.parametrize("name,choices,fmt,dep,device,scenario,rates", [
    ("llama2_7b", {}, "int4", {"tp": 2, "pp": 2, "ep": 1, "dp": 4}, "a100_80gb", (7, 4096, 100), (Fraction(4, 5), 1, False)),
    ("qwen36_35b_a3b", {}, None, {"tp": 1, "pp": 1, "ep": 8, "dp": 8}, "h100_sxm", (33, 1000, 1000),
     (1, Fraction(1, 3), True)),
    ("deepseek_v41", {"mode": "reference"}, "production", {"tp": 1, "pp": 1, "ep": 1, "dp": 1}, "b200", (9, 70000, 7),
     (1, 1, False)),
    ("deepseek_v41", {}, None, {"tp": 2, "pp": 1, "ep": 16, "dp": 8}, "h200", (5, 300, 64), (Fraction(1, 2), 1, False)),
    ("llama2_70b", {}, None, {"tp": 8, "pp": 2, "ep": 1, "dp": 1}, "h100_sxm", (3, 4000, 4096), (1, 1, False)),
    ("deepseek_v3", {}, None, {"tp": 1, "pp": 1, "ep": 16, "dp": 16}, "h200", (20, 2000, 512), (1, Fraction(9, 10), False)),
    ("mixtral_8x7b", {}, None, {"tp": 8, "pp": 1, "ep": 8, "dp": 1}, "a100_80gb_pcie", (4, 100, 30), (1, 1, True)),
])
def test_page_time_formulas_are_the_engines(name, choices, fmt, dep, device, scenario, rates):
    """The formulas the page calls (compute, collectives on the device's node size, their sum or
    overlap, B / seconds) at the device's facts equal tpot, throughput and ttft (one request beside
    B decoding); nodes of 8 (llama2_70b tp=8, pp=2 and V3 dp=16, ep=16 span two) and of 2 GPUs."""
    import sympy as sp

    from specc.compiler.query.queries import QueryEngine
    from specc.compiler.schema.spec import load_spec
    from specc.compiler.schema.symbols import B, H, P

    engine = QueryEngine.shared(load_spec(REPO / "specs" / f"{name}.yaml"))
    model = engine.model(dict(choices))
    fmt = fmt or engine.spec.default_format
    point = {"tp": dep["tp"], "pp": dep["pp"], "dp": dep["dp"], "ep": dep["ep"]}
    batch, length, prompt = scenario
    mfu, mbu, overlap = rates
    values, node = _device_values(engine, device, mfu=mfu, mbu=mbu)
    compute = S.compute_forms(engine, model, point, fmt)
    comm = S.comm_forms(engine, model, point, node)
    at = {**values, B: batch, H: length, P: prompt}
    step = lambda c, k: max(c, k) if overlap else c + k      # noqa: E731 (specc_step_seconds)
    common = [f"device={device}", f"mfu={mfu}", f"mbu={mbu}", f"overlap={'true' if overlap else 'false'}",
              *(f"{k}={v}" for k, v in dep.items()), *(f"{k}={v}" for k, v in choices.items()), f"format={fmt}",
              "ignore_fit=true", "extrapolate=true"]
    if "out" in comm["tpot"][1] and S.device_links(engine, device).scale_out is None:
        # the device gives no scale-out link: the page refuses, as the engine does; both with one given
        values[sp.Symbol("d_out")] = sp.Integer(25 * 10 ** 9)
        at = {**values, B: batch, H: length, P: prompt}
        common.append("scale_out_bandwidth=25 GB / 1 s")
    ask = lambda q: engine.evaluate_text(f"{q}, {', '.join(common)})").value   # noqa: E731
    tpot = step(compute["tpot"].xreplace(at), comm["tpot"][0].xreplace(at))
    assert tpot == ask(f"tpot(H={length}, B={batch}")
    assert sp.Integer(batch) / tpot == ask(f"throughput(H={length}, B={batch}")
    ttft = step(compute["ttft"].xreplace(at), comm["ttft"][0].xreplace(at))
    assert ttft == ask(f"ttft(P={prompt}, B={batch}, H={length}")


@pytest.mark.parametrize("name,dep,device,scenario", [
    ("deepseek_v3", {"tp": 8, "ep": 8}, "h200", (4, 4096)),
    ("deepseek_v3", {"dp": 8, "ep": 8}, "h200", (4, 4096)),
    ("llama2_70b", {"pp": 2}, "rtx_4090", (1, 1000)),
    ("qwen3_8b", {"tp": 2, "dp": 2}, "l4", (64, 40000)),
])
def test_the_page_fit_rule_is_the_engines(name, dep, device, scenario):
    """The printed shortfall is positive exactly when the engine refuses a time query, and equals
    the shortfall its message gives; b_max is the engine's with memory and workspace as symbols."""
    import re

    import sympy as sp

    from specc.compiler.query.queries import QueryEngine
    from specc.compiler.schema.spec import load_spec
    from specc.compiler.schema.symbols import B, H, P
    from specc.dsl.errors import SpecError

    engine = QueryEngine.shared(load_spec(REPO / "specs" / f"{name}.yaml"))
    model = engine.model({})
    point = {**S.TRIVIAL, **dep}
    batch, length = scenario
    workspace = 2 ** 31
    values, _ = _device_values(engine, device, workspace=workspace)
    forms = S.capacity_forms(engine, model, point, engine.spec.default_format)
    degrees = ", ".join(f"{k}={v}" for k, v in dep.items())
    for step, query in (("short_tpot", f"tpot(H={length}, B={batch}"), ("short_ttft", f"ttft(P=512, B={batch}, H={length}")):
        short = forms[step].xreplace({**values, B: batch, H: length, P: 512})
        try:
            engine.evaluate_text(f"{query}, device={device}, {degrees}, workspace=2 GiB, extrapolate=true)")
            assert short <= 0, (step, short)
        except SpecError as exc:
            found = re.search(r"([0-9,]+) B short", str(exc))
            assert found and short == int(found.group(1).replace(",", "")), (step, short, str(exc))
    b_max = forms["b_max"].xreplace({**values, H: length})
    assert b_max == engine.evaluate_text(f"b_max(device={device}, H={length}, {degrees}, workspace=2 GiB, "
                                         "extrapolate=true)").value
    assert isinstance(b_max, sp.Integer)


def test_roofline_rows_do_not_depend_on_pp(v41_engine):
    """The export keeps one row set per (tp, ep) for every pp: roofline sums every stage's ops."""
    one, four = v41_engine.roofline_forms({}, None, 2, 1, 4), v41_engine.roofline_forms({}, None, 2, 4, 4)
    assert one["call"] == four["call"] and one["step"] == four["step"] and one["comm"] != four["comm"]


def test_merged_rows_keep_the_sum_of_maxima():
    import sympy as sp

    from specc.compiler.schema import symbols as sym

    b, s, p_ = sym.B, sym.S, sym.P
    rows = [("a", 2 * b * p_, 6 * b), ("b", 3 * b * p_, 9 * b), ("c", 4 * b * p_, 6 * b), ("d", 0, 5 * s),
            ("e", 0, 7 * s), ("f", b, 0)]
    merged = S.merged_rows(rows)
    assert len(merged) == 4                     # a+b (proportional), c, d+e (bytes only), f
    at = {b: 3, s: 11, p_: 5}
    for p, q in ((1, 1), (3, 1), (1, 7), (sp.Rational(5, 2), 2)):
        total = sum(sp.Max(sp.sympify(f).xreplace(at) / p, sp.sympify(b).xreplace(at) / q) for _, f, b in rows)
        assert total == sum(sp.Max((w * f).xreplace(at) / p, (v * g).xreplace(at) / q) for f, w, g, v in merged)


def test_byte_units_are_the_dsl_table():
    units = S._byte_units()
    assert units["GiB"] == str(2 ** 30) and units["GB"] == str(10 ** 9) and units["B"] == "1"


# ------------------------------------------------------------------ the page in Chromium
@pytest.fixture(scope="session")
def built_site(tmp_path_factory):
    out = tmp_path_factory.mktemp("site")
    result = CliRunner().invoke(main, ["site", "-o", str(out), "--specs", str(REPO / "specs" / "*.yaml"),
                                       "--docs", str(REPO / "docs")])
    assert result.exit_code == 0, result.output
    return out


@pytest.fixture(scope="session")
def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1366,900", "--hide-scrollbars"):
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    yield driver
    driver.quit()


def _open(browser, site_dir: Path, params: dict | str):
    from selenium.webdriver.support.ui import WebDriverWait

    query = params if isinstance(params, str) else urlencode(params)
    browser.get((site_dir / "explorer.html").as_uri() + ("?" + query if query else ""))
    WebDriverWait(browser, 20).until(lambda d: d.execute_script("return document.body.dataset.ready === 'true'"))


def _figures(browser) -> list[dict]:
    return browser.execute_script(
        "return Array.from(document.querySelectorAll('[data-query]')).map(e => ({"
        "figure: e.dataset.figure, query: e.dataset.query, value: e.dataset.value === undefined ? null : e.dataset.value,"
        "extrapolated: e.dataset.extrapolated === 'true'}))")


def _severe(browser) -> list:
    return [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]


def _specc_eval(spec_path: str, queries: list[str]) -> list[dict]:
    result = CliRunner().invoke(main, ["eval", spec_path, "--json", *queries])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def _check_page(browser, spec_path: str, seen: set | None = None, log: list | None = None) -> int:
    """Every figure with a value equals specc eval --json of its query; returns how many."""
    shown = [f for f in _figures(browser) if f["value"] is not None]
    if seen is not None:
        seen.update(f["figure"] for f in shown)
    if log is not None:
        log.extend(shown)
    assert shown, "the page shows no figure"
    unique = {f["query"]: f for f in shown}
    answers = _specc_eval(spec_path, list(unique))
    for answer in answers:
        fig = unique[answer["query"]]
        assert fig["value"] == str(answer["value"]), (spec_path, answer["query"], fig["value"], answer["value"])
        assert fig["extrapolated"] == answer["extrapolated"], answer["query"]
    return len(shown)


def _engine_takes_memory() -> bool:
    """Whether b_max accepts a memory= override (the deployment queries add it)."""
    from specc.compiler.query.queries import QueryEngine
    from specc.compiler.schema.spec import load_spec
    from specc.dsl.errors import SpecError

    try:
        QueryEngine.shared(load_spec(REPO / "specs" / "qwen3_8b.yaml")).evaluate_text(
            "b_max(device=rtx_4090, H=1, memory=24 GB)")
        return True
    except SpecError:
        return False


def _random_setting(rng: random.Random, spec_path: str, memory_override: bool = False) -> dict:
    from specc.compiler.schema.spec import load_spec

    spec = load_spec(spec_path)
    params = {"spec": Path(spec_path).stem}
    for name, option in spec.options.items():
        if rng.random() < 0.5:
            params[name] = rng.choice(list(option.choices))
    if len(spec.formats) > 1 and rng.random() < 0.6:
        params["format"] = rng.choice(list(spec.formats))
    params["device"] = rng.choice(sorted(p.stem for p in (REPO / "specs" / "hardware").glob("*.yaml")))
    params["B"] = rng.choice([1, 1, 2, 3, 4, 8, 16, 33, 64])
    top = 131072
    from specc.compiler.query.queries import QueryEngine

    max_context = QueryEngine.shared(spec).model({}).max_context
    if max_context is not None:
        top = int(max_context)
    params["H"] = rng.choice([0, 1, 2, 127, 128, 129, 511, 4096, 8191, 8192, rng.randint(1, top), top,
                              top + rng.randint(1, 5000)])
    params["S"] = rng.choice([0, 0, 1, 1000, rng.randint(0, 65536)])
    params["P"] = rng.choice([1, 2, 128, 4096, 8192, rng.randint(1, 32768)])
    params["G"] = rng.choice([1, 2, 100, rng.randint(1, 2048)])
    params["workspace"] = rng.choice(["0 B", "2 GiB", "1.5 GB", "512 MiB", "3 GB"])
    if memory_override and rng.random() < 0.3:
        params["memory"] = rng.choice(["24GB", "80 GB", "16 GiB", "141 GB", "192GiB"])
    if memory_override and rng.random() < 0.6:          # the engine has deployment queries too
        layout = rng.choice(S.spec_layouts(QueryEngine.shared(spec).model({})))
        params.update({k: v for k, v in layout.items() if v != 1})
        if rng.random() < 0.7:                           # layouts past one device are the default options'
            for name in spec.options:
                params.pop(name, None)
    if rng.random() < 0.5:
        params["mfu"] = rng.choice(["1", "0.5", "0.8", "1/3", "0.37"])
    if rng.random() < 0.5:
        params["mbu"] = rng.choice(["1", "0.6", "0.85", "2/3"])
    if rng.random() < 0.2:
        params["overlap"] = "true"
    # the format knobs, where they are exported (the default options on one device; elsewhere the
    # page says so, which test_must_show_an_fp8_kv_cache_per_token checks)
    if any(k in params for k in ("tp", "pp", "ep", "dp", *spec.options)):
        return params
    if rng.random() < 0.25:
        params["weights"] = rng.choice(S.KNOB_CHOICES["weights"])
    if rng.random() < 0.2:
        params["kv"] = rng.choice(S.KNOB_CHOICES["kv"])
    if rng.random() < 0.2:
        params["compute"] = rng.choice(S.COMPUTE_CHOICES)
    return params


@needs_browser
def test_must_show_qwen3_8b_b_max_on_the_chapter_card(browser, built_site):
    _open(browser, built_site, "spec=qwen3_8b&device=rtx_4090&memory=24GB&H=8192&B=1&workspace=2GiB")
    el = browser.find_element("css selector", "#figures [data-figure=b_max]")
    assert el.get_attribute("data-value") == "4"
    assert el.get_attribute("data-query").startswith("b_max(device=rtx_4090, H=8192, workspace=2 GiB")
    _check_page(browser, str(REPO / "specs" / "qwen3_8b.yaml"))
    assert not _severe(browser)


@needs_browser
def test_must_show_v41_prefill_flops(browser, built_site):
    _open(browser, built_site, "spec=deepseek_v41&P=8192&B=1")
    el = browser.find_element("css selector", "#figures [data-figure=prefill_flops]")
    assert el.get_attribute("data-value") == "143946626891776"
    assert "143,946,626,891,776 FLOPs" in el.text
    assert not _severe(browser)


@needs_browser
def test_time_figures_and_the_tpot_chart(browser, built_site):
    _open(browser, built_site, "spec=qwen3_8b&device=h100_sxm&H=8192&B=4&tp=2&mbu=0.8")
    el = browser.find_element("css selector", "#time-figures [data-figure=tpot]")
    assert el.get_attribute("data-query") == "tpot(H=8192, B=4, device=h100_sxm, tp=2, mbu=0.8)"
    assert " ms" in el.text and "tokens/s" in browser.find_element("id", "time-figures").text
    _check_page(browser, str(REPO / "specs" / "qwen3_8b.yaml"))
    # TPOT against the context, on a log axis, with the current point marked
    charts = browser.find_elements("css selector", "#charts figure.chart")
    tpot = [c for c in charts if "Time per output token" in c.text]
    assert len(charts) == 3 and len(tpot) == 1
    assert tpot[0].find_elements("css selector", "circle.current") and "log scale" in tpot[0].text
    # the README's figure: Llama-2-7B on an A100 80GB, one request at 4,096 tokens
    _open(browser, built_site, "spec=llama2_7b&device=a100_80gb&H=4096&B=1")
    el = browser.find_element("css selector", "#time-figures [data-figure=tpot]")
    assert el.get_attribute("data-value") == "6001056/796484375"
    assert not _severe(browser)


@needs_browser
def test_fifty_random_settings_agree_with_specc_eval(browser, built_site):
    rng = random.Random(20261201)
    memory_override = _engine_takes_memory()
    checked = 0
    specs_seen, figures_seen, shown = set(), set(), []
    for i in range(52):
        spec_path = SHIPPED[i % len(SHIPPED)] if i < len(SHIPPED) else rng.choice(SHIPPED)
        params = _random_setting(rng, spec_path, memory_override)
        _open(browser, built_site, params)
        assert browser.find_element("id", "errors").get_attribute("hidden"), (params, browser.find_element("id", "errors").text)
        checked += _check_page(browser, spec_path, figures_seen, shown)
        specs_seen.add(spec_path)
        assert not _severe(browser), (params, _severe(browser))
    assert specs_seen == set(SHIPPED)
    assert {f.id for f in S.FIGURES} | {"b_max"} <= figures_seen
    if memory_override:
        assert {f.id for f in S.DEPLOYED} | {"h_max"} <= figures_seen
    assert checked >= 52 * 10
    # the time figures, on deployments past one device and at mfu/mbu below the peak
    timed = [f for f in shown if f["figure"] in {t.id for t in S.TIME_FIGURES}]
    assert {t.id for t in S.TIME_FIGURES} <= figures_seen and len(timed) >= 52
    assert sum(1 for f in timed if any(f"{k}=" in f["query"] for k in ("tp", "pp", "ep", "dp"))) >= 20
    assert sum(1 for f in timed if "mfu=" in f["query"] or "mbu=" in f["query"]) >= 15
    print(f"{checked} values compared, {len(timed)} of them time figures")


@needs_browser
def test_a_deployment_that_does_not_fit_shows_the_shortfall(browser, built_site):
    """DeepSeek-V3 (BF16 weights) needs more than an H200 holds at tp=8, ep=8 and at dp=8, ep=8
    (8 GPUs each): the page shows no time but the shortfall the engine's refusal gives; over two
    8-GPU nodes (dp=16, ep=16, the all-to-all crossing the scale-out link) it fits and answers."""
    from specc.compiler.query.queries import QueryEngine
    from specc.compiler.schema.spec import load_spec
    from specc.dsl.errors import SpecError

    path = REPO / "specs" / "deepseek_v3.yaml"
    engine = QueryEngine.shared(load_spec(path))
    for layout in ("tp=8&ep=8", "dp=8&ep=8"):
        _open(browser, built_site, f"spec=deepseek_v3&device=h200&H=4096&B=4&{layout}")
        for fig in ("ttft", "tpot", "throughput"):
            el = browser.find_element("css selector", f"#time-figures [data-figure={fig}]")
            assert el.get_attribute("data-value") is None and "does not fit" in el.text
            short = int(el.get_attribute("data-short"))
            with pytest.raises(SpecError) as refused:
                engine.evaluate_text(el.get_attribute("data-query"))
            assert f"{short:,} B short" in str(refused.value)
        weights = browser.find_element("css selector", "#figures [data-figure=weights_device]")
        assert int(weights.get_attribute("data-value")) > 150 * 10 ** 9
    _open(browser, built_site, "spec=deepseek_v3&device=h200&H=4096&B=16&dp=16&ep=16&P=2048")
    tpot = browser.find_element("css selector", "#time-figures [data-figure=tpot]")
    assert tpot.get_attribute("data-value") and "dp=16" in tpot.get_attribute("data-query")
    _check_page(browser, str(path))
    assert not _severe(browser)


@needs_browser
def test_url_restores_the_state_and_follows_the_controls(browser, built_site):
    from selenium.webdriver.common.keys import Keys

    _open(browser, built_site, "spec=llama2_7b&format=int8&attention=eager&device=a100_80gb&H=4096&B=2&workspace=1GiB")
    before = {f["query"]: f["value"] for f in _figures(browser)}
    assert any("format=int8" in q for q in before) and any("attention=eager" in q for q in before)
    field = browser.find_element("id", "B")
    field.send_keys(Keys.CONTROL, "a")
    field.send_keys("7")                      # typing updates the figures, and the URL after the repaint
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(browser, 5).until(lambda d: "B=7" in d.current_url)
    url = browser.current_url
    _open(browser, built_site, url.split("?", 1)[1])
    after = _figures(browser)
    assert any(f["query"] == "state_bytes(H=4096, B=7, attention=eager, format=int8)" for f in after)
    _check_page(browser, str(REPO / "specs" / "llama2_7b.yaml"))
    assert not _severe(browser)


@needs_browser
def test_bad_url_values_are_reported_not_thrown(browser, built_site):
    _open(browser, built_site, "spec=qwen3_8b&H=-5&workspace=2 parsecs&head=sideways&mfu=1.5&mbu=zero&tp=3&ep=2")
    errors = browser.find_element("id", "errors")
    assert not errors.get_attribute("hidden")
    assert "H=-5" in errors.text and "parsecs" in errors.text and "sideways" in errors.text
    assert "mfu=1.5" in errors.text and "mbu=zero" in errors.text and "tp=3" in errors.text and "ep=2" in errors.text
    assert not _severe(browser)


@needs_browser
def test_defaults_stay_within_the_specs_context(browser, built_site):
    """P and H default to 8,192 tokens, or within the spec's maximum context when it is shorter
    (P at most the maximum, H a power of two below it, as a decode step at H reaches H + 1):
    Llama-2-70B (4,096) opens with no extrapolated figure; a value in the URL is kept."""
    _open(browser, built_site, "spec=llama2_70b")
    assert browser.find_element("id", "P").get_attribute("value") == "4096"
    assert browser.find_element("id", "H").get_attribute("value") == "2048"
    assert not [f for f in _figures(browser) if f["extrapolated"]]
    _open(browser, built_site, "spec=qwen3_8b")
    assert browser.find_element("id", "P").get_attribute("value") == "8192"
    _open(browser, built_site, "spec=llama2_70b&H=8192")
    assert browser.find_element("id", "H").get_attribute("value") == "8192"
    assert not _severe(browser)


@needs_browser
def test_phone_shows_the_headline_before_the_controls(browser, built_site):
    browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                            {"width": 390, "height": 844, "deviceScaleFactor": 1, "mobile": True})
    try:
        _open(browser, built_site, "spec=qwen3_8b&device=h100_sxm")
        top = browser.execute_script(
            "return [document.querySelector('#time-figures [data-figure=tpot]').getBoundingClientRect().top,"
            " document.getElementById('controls').getBoundingClientRect().top]")
        assert top[0] < top[1] and top[0] < 844, top       # the first figure on the first screen
    finally:
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


@needs_browser
@pytest.mark.parametrize("width,height,name", [(1366, 900, "laptop"), (390, 844, "phone")])
def test_screenshots_and_no_horizontal_scroll(browser, built_site, tmp_path, width, height, name):
    """Headless Chromium will not make a window narrower than 500 px, so the phone
    width is device emulation. SPECC_SCREENSHOTS=DIR keeps the pictures."""
    def metrics(h):
        browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                                {"width": width, "height": h, "deviceScaleFactor": 1, "mobile": name == "phone"})
    metrics(height)
    try:
        _open(browser, built_site, "spec=qwen3_8b&device=rtx_4090&H=8192&B=4&workspace=2GiB")
        assert browser.execute_script("return window.innerWidth") == width
        assert browser.execute_script("return document.documentElement.scrollWidth") <= width
        folder = Path(os.environ.get("SPECC_SCREENSHOTS", tmp_path))
        folder.mkdir(parents=True, exist_ok=True)
        shots = [folder / f"specc-explorer-{name}.png", folder / f"specc-explorer-{name}-full.png"]
        assert browser.save_screenshot(str(shots[0]))
        metrics(min(browser.execute_script("return document.documentElement.scrollHeight"), 4000))
        assert browser.save_screenshot(str(shots[1]))
        for shot in shots:
            assert shot.stat().st_size > 20_000          # a rendered page, not a blank one
        assert not _severe(browser)
    finally:
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


def test_a_spec_folder_outside_the_repository_still_lists_every_device(tmp_path):
    """The device table comes from the search path (beside the spec, --path/SPECC_PATH, the
    shipped data), as device= resolves names, not from a hardware/ folder beside the spec."""
    import shutil

    from specc.compiler.query.queries import QueryEngine
    from specc.compiler.schema.spec import load_spec
    from specc.dsl.search_path import SHIPPED, device_files
    from specc.render.site import export_devices

    spec = tmp_path / "mine.yaml"
    shutil.copy(SHIPPED / "qwen3_8b.yaml", spec)
    files = device_files(spec)
    assert {"h100_sxm", "h200", "mi300x"} <= {p.stem for p in files}
    rows = export_devices(QueryEngine.shared(load_spec(spec)), files)
    assert len(rows) == len(files) and all(row["memory"] for row in rows)


# ------------------------------------------------------------------ the knobs, layouts, options, folders
def _values(browser) -> dict:
    """figure id -> (data-query, data-value or None) of the cards (not the bars' inline b_max)."""
    return {f["figure"]: (f["query"], f["value"]) for f in _figures(browser)}


def test_knob_variants_are_the_declared_knobs():
    """A figure's knob variants are the combinations of KNOB_CHOICES over the knobs its query declares."""
    assert S.knob_variants(S.declared("params")) == []
    assert {v["weights"] for v in S.knob_variants(S.declared("weight_bytes"))} == set(S.KNOB_CHOICES["weights"])
    assert S.knob_variants(S.declared("kv_bytes_per_token")) == [{"kv": k} for k in S.KNOB_CHOICES["kv"]]
    both = S.knob_variants(S.declared("b_max"))
    assert len(both) == (len(S.KNOB_CHOICES["weights"]) + 1) * (len(S.KNOB_CHOICES["kv"]) + 1) - 1
    assert "compute" not in S.declared("b_max") and "compute" in S.declared("tpot")


@needs_browser
@pytest.mark.parametrize("spec,params", [
    ("llama31_8b", "kv=fp8&H=4096&B=8&device=h100_sxm"),
    ("llama31_8b", "weights=fp8&kv=fp8&H=4096&B=8&device=h100_sxm"),
    ("llama31_8b", "weights=fp8&compute=bf16&H=4096&B=8&device=h200&workspace=2GiB"),
    ("llama31_8b", "weights=nvfp4&H=1000&B=3&device=b200&mfu=0.5"),
    ("llama31_8b", "weights=nvfp4&H=1000&B=3&device=h100_sxm"),
    ("llama31_8b", "weights=int4_sym_g128&kv=fp8&H=30000&B=2&device=l4"),
    ("gpt_oss_20b", "weights=mxfp4&kv=fp8&H=4096&B=16&device=h100_sxm"),
    ("deepseek_v3", "weights=int8&H=4096&B=4&device=h200&memory=1.5TB"),
    ("deepseek_v3", "format=fp8&H=4096&B=4&device=h200&memory=1.5TB&compute=bf16"),
    ("deepseek_v3", "format=fp8&H=4096&B=4&device=h200&memory=1.5TB"),
    ("qwen3_8b", "compute=fp8&H=2048&B=2&device=h100_sxm&tp=2"),
])
def test_the_format_knobs_agree_with_specc_eval(browser, built_site, spec, params):
    """weights=, kv= and compute= are controls: every figure whose query declares a knob names it
    in its data-query and shows the engine's value; compute follows the weight scheme (the format's
    own, too: DeepSeek-V3's FP8 release runs at the FP8 peak) unless compute= says otherwise."""
    _open(browser, built_site, f"spec={spec}&{params}")
    assert browser.find_element("id", "errors").get_attribute("hidden"), browser.find_element("id", "errors").text
    values = _values(browser)
    knobs = dict(kv.split("=", 1) for kv in params.split("&") if kv.split("=")[0] in ("weights", "kv", "compute"))
    from specc.compiler.query.query_registry import REGISTRY

    for fig, (query, value) in values.items():
        name = query.split("(", 1)[0]
        for knob, choice in knobs.items():
            assert (f"{knob}={choice}" in query) == (knob in REGISTRY[name].names), (fig, query)
    for fig in ("tpot", "ttft", "throughput", "b_max", "h_max"):
        assert values[fig][1] is not None, (fig, values[fig])
    if "weights" in knobs:
        assert values["weight_bytes"][1] is not None and values["decode_read_bytes"][1] is not None
    _check_page(browser, str(REPO / "specs" / f"{spec}.yaml"))
    assert not _severe(browser)


@needs_browser
def test_must_show_an_fp8_kv_cache_per_token(browser, built_site):
    _open(browser, built_site, "spec=llama31_8b&kv=fp8")
    el = browser.find_element("css selector", "#figures [data-figure=kv_bytes_per_token]")
    assert el.get_attribute("data-value") == "65536" and el.get_attribute("data-query") == "kv_bytes_per_token(kv=fp8)"
    # a knob beside a non-default option is not exported: the page says so, and shows no value
    _open(browser, built_site, "spec=llama31_8b&kv=fp8&head=all&tp=2")
    el = browser.find_element("css selector", "#figures [data-figure=kv_bytes_per_token]")
    assert el.get_attribute("data-value") is None and "not exported" in el.text and "ask specc eval" in el.text
    _open(browser, built_site, "spec=llama31_8b&weights=fp8&tp=2")
    el = browser.find_element("css selector", "#time-figures [data-figure=tpot]")
    assert el.get_attribute("data-value") is None and "on one device" in el.text
    assert "weights=fp8" in el.get_attribute("data-query")
    assert not _severe(browser)


@needs_browser
@pytest.mark.parametrize("spec,params", [
    ("llama2_70b", "pp=2&H=4000&B=3&device=h100_sxm"),
    ("llama2_70b", "tp=2&pp=4&H=1000&B=64&device=a100_80gb&format=int8"),
    ("qwen3_8b", "pp=8&dp=2&H=30000&B=5&device=a100_80gb&workspace=1GiB"),
    ("deepseek_v3", "mla=compressed&format=fp8&tp=8&ep=8&H=4096&B=64&device=h200&workspace=4GiB"),
    ("deepseek_v3", "mla=compressed&format=fp8&dp=8&ep=8&pp=2&H=4096&B=64&device=h200"),
    ("qwen36_35b_a3b", "tp=2&dp=4&ep=8&H=8000&B=9&device=h100_sxm"),
])
def test_pipeline_and_expert_layouts_answer(browser, built_site, spec, params):
    """pp > 1 and ep > 1 (DeepSeek-V3's latent cache, mla=compressed, in its FP8 release): every
    capacity and time figure has a value, equal to specc eval's."""
    _open(browser, built_site, f"spec={spec}&{params}")
    assert browser.find_element("id", "errors").get_attribute("hidden"), browser.find_element("id", "errors").text
    values = _values(browser)
    for fig in ("weights_device", "state_device", "b_max", "h_max", "tpot", "ttft", "throughput"):
        assert values[fig][1] is not None, (fig, values[fig])
    _check_page(browser, str(REPO / "specs" / f"{spec}.yaml"))
    assert not _severe(browser)


@needs_browser
def test_every_option_of_every_spec_agrees_with_specc_eval(browser, built_site):
    """Each choice of each option of each shipped spec, on one device: every figure with a value
    is specc eval's, and none that the default options show is missing."""
    from specc.compiler.schema.spec import load_spec

    opened = 0
    for path in SHIPPED:
        spec = load_spec(path)
        for name, option in spec.options.items():
            for choice in option.choices:
                if choice == option.default:
                    continue
                _open(browser, built_site, {"spec": Path(path).stem, name: choice, "device": "h100_sxm",
                                            "H": 1024, "B": 2, "P": 512})
                assert browser.find_element("id", "errors").get_attribute("hidden"), (path, name, choice)
                values = _values(browser)
                assert all(f"{name}={choice}" in q for fig, (q, v) in values.items()
                           if fig in {f.id for f in S.FIGURES + S.TIME_FIGURES} | {"b_max"}), (path, name)
                _check_page(browser, path)
                opened += 1
        assert not _severe(browser), path
    assert opened >= 50


@needs_browser
def test_a_site_of_a_spec_folder_outside_the_repository(browser, tmp_path):
    """A spec and the device it is sized for, copied to a folder of their own: the site offers that
    device (from the folder) beside the shipped ones, and every value is specc eval's of the copy."""
    import yaml

    folder = tmp_path / "mine"
    (folder / "hardware").mkdir(parents=True)
    spec = folder / "my_model.yaml"
    shutil.copy(REPO / "specs" / "qwen3_8b.yaml", spec)
    device = yaml.safe_load((REPO / "specs" / "hardware" / "l4.yaml").read_text())
    device["memory"], device["display_name"] = "48 GB", "My 48 GB card"
    (folder / "hardware" / "my_card.yaml").write_text(yaml.safe_dump(device))
    site = tmp_path / "site"
    result = CliRunner().invoke(main, ["site", "-o", str(site), "--specs", str(spec), "--docs", str(tmp_path / "none")])
    assert result.exit_code == 0, result.output
    assert str(tmp_path) not in (site / "data" / "my_model.js").read_text()
    for params in ("spec=my_model&device=my_card&H=8192&B=4&workspace=2GiB",
                   "spec=my_model&device=my_card&H=30000&B=2&weights=int8&compute=bf16",
                   "spec=my_model&device=h100_sxm&tp=2&pp=2&H=4096&B=8&head=last"):
        _open(browser, site, params)
        assert browser.find_element("id", "errors").get_attribute("hidden"), params
        values = _values(browser)
        assert values["b_max"][1] is not None and values["tpot"][1] is not None
        _check_page(browser, str(spec))
        assert not _severe(browser)


def test_export_messages_name_no_absolute_path(tmp_path, monkeypatch):
    """A spec's location in a reason the page shows is relative to the folder specc ran in, or the
    file's name: never the build machine's absolute path (relative locations stay as they are)."""
    monkeypatch.chdir(tmp_path)
    out = S._Exported()
    out.why("a", f"{tmp_path}/specs/mine.yaml:35:3: store 'kv' gives its entry size without an element type")
    out.why("b", "/elsewhere/x/theirs.yaml:1:1: bad (see '/elsewhere/y/dev.yml')")
    out.why("c", "specs/mine.yaml:2:2: kept")
    assert out.messages == ["specs/mine.yaml:35:3: store 'kv' gives its entry size without an element type",
                            "theirs.yaml:1:1: bad (see 'dev.yml')", "specs/mine.yaml:2:2: kept"]


@needs_browser
def test_controls_changed_in_the_page_keep_agreeing(browser, built_site):
    """Values the page keeps between repaints (each device's formula arguments) follow the controls:
    memory= overrides the selected device only, before and after another device is selected; the
    knobs, the format and the degrees changed in place."""
    from selenium.webdriver.support.ui import Select

    _open(browser, built_site, "spec=qwen3_8b&device=rtx_4090&memory=48GB&H=8192&B=2&workspace=2GiB")
    _check_page(browser, str(REPO / "specs" / "qwen3_8b.yaml"))
    for control, value in (("device", "h100_sxm"), ("weights", "fp8"), ("compute", "bf16"), ("device", "rtx_4090"),
                           ("weights", ""), ("tp", "2"), ("kv", "fp8")):
        Select(browser.find_element("id", control)).select_by_value(value)
        _check_page(browser, str(REPO / "specs" / "qwen3_8b.yaml"))
    assert not _severe(browser)
