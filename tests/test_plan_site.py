"""The explorer's plan view (specc site --plan): the serving formulas it runs are the
planner's (one declaration, plan/formulas.py), and in a real headless Chromium the page's
chosen deployment, Pareto front, best per device and every exact figure equal
`specc plan --format json` on the same inputs (the page's space: --pp 1)."""

from __future__ import annotations

import json
import random
import shutil
from fractions import Fraction
from pathlib import Path
from urllib.parse import urlencode

import pytest
from click.testing import CliRunner

from specc.cli import main
from specc.plan import formulas as F
from specc.plan.serving import EXACT

REPO = Path(__file__).resolve().parents[1]
SPECS = REPO / "specs"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
try:
    import selenium  # noqa: F401
    HAVE_SELENIUM = True
except ImportError:
    HAVE_SELENIUM = False
# a dense spec, a spec with routed experts (dp and ep searched), and one with many declared formats
PLAN_SPECS = ("qwen3_8b", "mixtral_8x7b", "llama2_7b")


def needs_browser(test):
    """Slow (a site export and a browser): runs with --runslow or SPECC_SLOW=1, like tests/test_site.py."""
    return pytest.mark.slow(pytest.mark.skipif(not (CHROMIUM and CHROMEDRIVER and HAVE_SELENIUM),
                                               reason="headless Chromium, chromedriver and selenium are needed")(test))


# ------------------------------------------------------------------ one declaration, two algebras
def test_the_printed_formulas_are_the_planners():
    """Each formula the page calls (sympy, printed to JavaScript) equals the one serving.py runs
    (exact numbers) at random rational points; the text-only branches (a count of one) too."""
    import sympy as sp

    rng = random.Random(7)
    for name, (fn, args) in F.FORMULAS.items():
        expr = F.symbolic(name)
        for _ in range(20):
            point = {a: Fraction(rng.randint(1, 400), rng.choice([1, 1, 3, 7, 1000])) for a in args}
            for a in ("isl", "osl", "b", "start", "chunk", "dp", "n", "n_chunks", "root", "replicas",
                      "prefill_replicas", "instance", "fit"):
                if a in point:
                    point[a] = rng.choice([1, 2, rng.randint(3, 5000)])
            if name == "mean_context":
                point["osl"] = max(2, point["osl"])
            if {"u", "lam", "s"} & set(args):          # keep 1 − u and 1 − λ·s away from zero
                for a in ("u", "lam", "s"):
                    if a in point:
                        point[a] = Fraction(rng.randint(1, 30), 100)
            # exact numbers, and the counts whose value 1 shortens a figure's text as ints
            point = {a: v if a in ("n", "n_chunks") else Fraction(v) for a, v in point.items()}
            want = fn(EXACT, *[point[a] for a in args])
            got = expr.xreplace({sp.Symbol(a): sp.Rational(Fraction(v).numerator, Fraction(v).denominator)
                                 for a, v in point.items()})
            got = bool(got) if isinstance(want, bool) else Fraction(int(sp.Rational(got).p), int(sp.Rational(got).q))
            assert got == want, (name, point, got, want)
    js = F.javascript()
    assert all(f"function plan_{name}(" in js for name in F.FORMULAS)


def test_the_page_searches_the_planners_layouts():
    """The exported layouts are the planner's (plan/search.py `layouts` with pp = 1), less the ones the
    engine refuses, which the page lists as the plan's notes do; each carries the planner's query texts."""
    from specc.plan.queries import Asker
    from specc.plan.run import DEFAULT_DEVICES, formats_of
    from specc.plan.search import Space, layouts
    from specc.render.plan_site import PAGE_SPACE, export_plan

    path = str(SPECS / "mixtral_8x7b.yaml")
    data = export_plan(path, devices=("h200", "mi300x"))
    asker = Asker(path)
    space = Space(("h200", "mi300x"), PAGE_SPACE["max_gpus"], formats_of(asker.spec), pp=PAGE_SPACE["pp"])
    want = [(lay.device, lay.tp, lay.dp, lay.ep, lay.format_name()) for lay in layouts(asker, space)]
    got = [(r["device"], r["tp"], r["dp"], r["ep"], data["formats"][r["format"]]["name"]) for r in data["layouts"]]
    assert set(got) <= set(want) and len(want) - len(got) == sum(n["count"] for n in data["left_out"])
    assert data["moe"] and any(r["dp"] == 8 and r["ep"] == 8 for r in data["layouts"])
    assert all(0 <= r[k] < len(data["functions"]) for r in data["layouts"] for k in ("fit", "state", "time"))
    mi = next(d for d in data["devices"] if d["name"] == "mi300x")
    assert mi["link"] is None and "scale_out_link" in mi["no_link"]
    assert set(DEFAULT_DEVICES) >= {d["name"] for d in data["devices"]}
    assert not data["path"].startswith("/")


def test_cli_plan_takes_the_pipeline_degrees():
    run = CliRunner().invoke(main, ["plan", str(SPECS / "qwen3_8b.yaml"), "--rate", "5", "--isl", "1000", "--osl", "200",
                                    "--tpot", "30ms", "--devices", "h100_sxm", "--max-gpus", "4", "--pp", "1",
                                    "--format", "json", "--quiet"])
    assert run.exit_code == 0, run.output
    data = json.loads(run.output)
    assert data["chosen"]["pp"] == 1 and all(d["pp"] == 1 for d in data["front"])
    bad = CliRunner().invoke(main, ["plan", str(SPECS / "qwen3_8b.yaml"), "--rate", "5", "--isl", "1000", "--osl", "200",
                                    "--pp", "0"])
    assert bad.exit_code == 2 and "--pp" in bad.output and "Traceback" not in bad.output


# ------------------------------------------------------------------ the page in Chromium
@pytest.fixture(scope="module")
def plan_site(tmp_path_factory):
    out = tmp_path_factory.mktemp("plan_site")
    specs = [str(SPECS / f"{name}.yaml") for name in PLAN_SPECS]
    from specc.render.site import write_site

    write_site(out, specs, None, jobs=2, plan=True)
    return out


@pytest.fixture(scope="module")
def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1366,900"):
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    yield driver
    driver.quit()


def _open(browser, site: Path, params: dict):
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get((site / "plan.html").as_uri() + "?" + urlencode(params))
    WebDriverWait(browser, 120).until(lambda d: d.execute_script("return document.body.dataset.ready === 'true'"))
    severe = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert not severe, severe


_ROWS = ("return Array.from(document.querySelectorAll('#%s tbody tr')).map(tr => ({...tr.dataset, "
         "figures: Object.fromEntries(Array.from(tr.querySelectorAll('span[data-figure]')).map(s => "
         "[s.dataset.figure, {exact: s.dataset.exact, query: s.dataset.query || null}]))}))")


def _page(browser) -> dict:
    return {"chosen": browser.execute_script(_ROWS % "chosen-table"), "front": browser.execute_script(_ROWS % "front"), "best": browser.execute_script(_ROWS % "best"),
            "error": browser.execute_script("const e = document.getElementById('plan-errors'); return e.hidden ? null : e.textContent"),
            "command": browser.execute_script("const p = document.querySelector('#chosen-table pre.commands'); "
                                              "return p ? p.textContent.split('\\n')[0] : null")}


def _specc_plan(spec: str, params: dict) -> tuple[int, dict | None]:
    """specc plan --format json on the page's inputs (its space: --pp 1)."""
    args = ["plan", str(SPECS / f"{spec}.yaml"), "--rate", params["rate"], "--isl", params["isl"], "--osl", params["osl"],
            "--devices", params["devices"], "--max-gpus", params["max_gpus"], "--pp", "1",
            "--mode", params.get("mode", "both"), "--arrivals", params.get("arrivals", "poisson"),
            "--max-num-batched-tokens", params.get("chunk", "8192"), "--format", "json", "--quiet"]
    for target in ("ttft", "tpot"):
        if params.get(target):
            args += [f"--{target}", f"{params[target]}ms"]
    for price in filter(None, params.get("prices", "").split(",")):
        args += ["--price", price]
    run = CliRunner().invoke(main, args)
    assert run.exit_code in (0, 1), run.output
    text = run.output[run.output.index("{"):] if "{" in run.output else ""
    return run.exit_code, json.loads(text[: text.rindex("}") + 1]) if text else None


def _key(dep: dict) -> tuple:
    return (dep["device"], dep["mode"], dep["tp"], dep["pp"], dep["dp"], dep["ep"], tuple(dep["format"].items()),
            dep["replicas"], dep["prefill_replicas"])


def _same(row: dict, dep: dict) -> None:
    """A page row is the planner's deployment, figure by figure, exactly."""
    fmt = ",".join(f"{k}={v}" for k, v in dep["format"].items()) or "default"
    assert (row["device"], row["mode"], int(row["tp"]), int(row["pp"]), int(row["dp"]), int(row["ep"]), row["format"],
            int(row["replicas"]), int(row["prefillReplicas"]), int(row["gpus"]), int(row["runningBatch"])) == \
        (dep["device"], dep["mode"], dep["tp"], dep["pp"], dep["dp"], dep["ep"], fmt, dep["replicas"],
         dep["prefill_replicas"], dep["gpus"], dep["running_batch"])
    shown = row["figures"]
    assert set(dep["figures"]) == set(shown), (set(dep["figures"]) ^ set(shown))
    for name, fig in dep["figures"].items():
        assert Fraction(shown[name]["exact"]) == Fraction(fig["exact"]), (name, shown[name], fig["exact"])


CASES = [
    # a dense spec on three devices (mi300x has no scale-out link: no disaggregated candidates)
    ("qwen3_8b", {"rate": "8", "isl": "1000", "osl": "200", "ttft": "1000", "tpot": "40",
                  "devices": "h100_sxm,a100_80gb,mi300x", "max_gpus": "8"}),
    # routed experts (dp, ep), prompts in three chunks, both modes
    ("mixtral_8x7b", {"rate": "6", "isl": "2500", "osl": "300", "ttft": "2000", "tpot": "60", "chunk": "1024",
                      "devices": "h200,h100_sxm", "max_gpus": "8"}),
    # fixed arrivals, prices (cost replaces GPUs), disaggregated only
    ("llama2_7b", {"rate": "5/2", "isl": "1500", "osl": "250", "ttft": "500", "tpot": "25", "arrivals": "fixed",
                   "mode": "disaggregated", "devices": "h200,b200", "prices": "h200=3.5,b200=5.25", "max_gpus": "6"}),
]


@needs_browser
@pytest.mark.parametrize("spec,params", CASES, ids=[c[0] for c in CASES])
def test_the_page_plans_what_specc_plan_plans(browser, plan_site, spec, params):
    _open(browser, plan_site, {"spec": spec, **params})
    page = _page(browser)
    code, plan = _specc_plan(spec, params)
    assert code == 0 and plan["chosen"] is not None, plan and plan["message"]
    assert page["error"] is None, page["error"]
    assert len(page["chosen"]) == 1
    _same(page["chosen"][0], plan["chosen"])
    # the chosen deployment (the cheapest, ties to the most slack) is marked where the front holds it
    assert [r["chosen"] == "true" for r in page["front"]] == [_key(d) == _key(plan["chosen"]) for d in plan["front"]]
    assert len(page["front"]) == len(plan["front"]) >= 1
    for row, dep in zip(page["front"], plan["front"]):
        _same(row, dep)
    assert [r["device"] for r in page["best"]] == list(plan["best_per_device"])
    for row, dep in zip(page["best"], plan["best_per_device"].values()):
        _same(row, dep)
    # the row's command is the plan's own inputs; its atomic queries are what specc eval answers
    assert page["command"].startswith(f"specc plan specs/{spec}.yaml --rate {params['rate']}") and "--pp 1" in page["command"]
    queries = {f["query"]: f["exact"] for r in page["chosen"] + page["front"] for f in r["figures"].values() if f["query"]}
    assert len(queries) >= 4
    run = CliRunner().invoke(main, ["eval", str(SPECS / f"{spec}.yaml"), "--json", *queries])
    assert run.exit_code == 0, run.output
    for answer in json.loads(run.output):
        assert Fraction(str(answer["value"])) == Fraction(queries[answer["query"]]), answer["query"]


@needs_browser
def test_nothing_meets_the_targets_says_so(browser, plan_site):
    params = {"rate": "8", "isl": "1000", "osl": "200", "ttft": "1000", "tpot": "1", "devices": "h100_sxm",
              "max_gpus": "2"}
    _open(browser, plan_site, {"spec": "qwen3_8b", **params})
    page = _page(browser)
    code, plan = _specc_plan("qwen3_8b", params)
    assert code == 1 and plan["chosen"] is None
    assert page["front"] == [] and "nothing within 2 GPUs meets the targets" in page["error"]
    assert f"bound by {plan['closest']['binding_limit']}" in page["error"]


@needs_browser
def test_the_url_holds_the_plan(browser, plan_site):
    """The state is in the query string: a control change rewrites it, and opening it restores the plan."""
    from selenium.webdriver.common.by import By

    _open(browser, plan_site, {"spec": "qwen3_8b", "rate": "8", "isl": "1000", "osl": "200", "devices": "h100_sxm",
                               "max_gpus": "4", "tpot": "40", "ttft": "1000"})
    rate = browser.find_element(By.ID, "rate")
    rate.clear()
    rate.send_keys("12")
    browser.execute_script("document.getElementById('rate').dispatchEvent(new Event('change'))")
    url = browser.current_url
    assert "rate=12" in url and "devices=h100_sxm" in url
    before = _page(browser)
    browser.get(url)
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(browser, 60).until(lambda d: d.execute_script("return document.body.dataset.ready === 'true'"))
    assert _page(browser) == before and browser.find_element(By.ID, "rate").get_attribute("value") == "12"
    # unticking the only device leaves nothing to search
    browser.find_element(By.CSS_SELECTOR, "#devices input[value=h100_sxm]").click()
    assert "devices=&" in browser.current_url or browser.current_url.endswith("devices=")
    # values the page's loops cannot take are reported on the page, never thrown
    for bad, shown in (({"isl": "9" * 400}, "at most 15 digits"), ({"max_gpus": "99999999"}, "at most 1024 GPUs"),
                       ({"rate": "fast"}, "cannot read the rate"), ({"spec": "__proto__"}, None)):
        _open(browser, plan_site, {"spec": "qwen3_8b", "rate": "8", "isl": "1000", "osl": "200", **bad})
        if shown:
            assert shown in _page(browser)["error"], bad
