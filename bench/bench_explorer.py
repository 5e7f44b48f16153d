"""Explorer repaint time per control change (a benchmark, not a test).

Builds the site for a few specs (or takes one built with `specc site -o DIR`),
opens it in Debian's headless Chromium (Selenium, as tests/test_site.py does)
and, inside the page, changes one control at a time — the batch, the context
field and slider, the device, the deployment degrees, mfu, the weights/KV/compute
knobs, the format, a spec option — timing with performance.now() from setting
the control to the repaint being done (the change handler has run and the
layout is computed: a forced reflow). Reported: the median and the 90th
percentile over every change, each spec, and the ratio to a baseline measured
in the same run: the same dispatch and forced reflow on an element no handler
listens to (what any change costs before the explorer does anything).

    python bench/bench_explorer.py [--site DIR] [--specs llama31_8b,deepseek_v3] [--rounds 5]

Goal (issue 17): median < 16 ms, one frame.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# one control change in the page: (element id, the values to cycle through; None: every option of a select)
CHANGES = [("B", ["1", "4", "33", "64"]), ("H", ["1000", "4096", "8191", "30000"]), ("H-slider", ["10", "12", "14"]),
           ("device", None), ("tp", None), ("mfu", ["0.5", "1"]), ("weights", None), ("kv", None),
           ("compute", None), ("format", None)]

TIMER = """
const [id, value] = arguments;
const el = document.getElementById(id);
const t0 = performance.now();
if (el) {
  el.value = value;
  el.dispatchEvent(new Event(el.tagName === "SELECT" || id === "mfu" ? "change" : "input", {bubbles: true}));
} else {
  document.body.dispatchEvent(new Event("specc-baseline"));
}
document.body.getBoundingClientRect(); void document.body.offsetHeight;     // the layout is done
return performance.now() - t0;
"""


def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = shutil.which("chromium") or shutil.which("chromium-browser")
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1366,900"):
        opts.add_argument(arg)
    return webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=opts)


def open_page(driver, site: Path, query: str):
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get((site / "explorer.html").as_uri() + "?" + query)
    WebDriverWait(driver, 30).until(lambda d: d.execute_script("return document.body.dataset.ready === 'true'"))


def options_of(driver, element: str) -> list:
    return driver.execute_script(
        "const e = document.getElementById(arguments[0]); return e && e.options ? Array.from(e.options).map(o => o.value) : []",
        element)


def measure(driver, site: Path, spec: str, rounds: int) -> tuple[list, list, dict]:
    open_page(driver, site, f"spec={spec}&device=h100_sxm")
    times, base, by_control = [], [], {}
    for _ in range(rounds):
        for element, values in CHANGES:
            for value in values if values is not None else options_of(driver, element):
                times.append(driver.execute_script(TIMER, element, value))
                by_control.setdefault(element, []).append(times[-1])
                base.append(driver.execute_script(TIMER, "no-such-control", ""))
        open_page(driver, site, f"spec={spec}&device=h100_sxm")
    return times, base, by_control


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--site", type=Path, help="a site built by specc site (default: build one for --specs)")
    parser.add_argument("--specs", default="llama31_8b,deepseek_v3")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    specs = args.specs.split(",")
    site = args.site
    if site is None:
        from specc.render.site import write_site

        site = Path(tempfile.mkdtemp(prefix="specc-bench-site-"))
        t0 = time.perf_counter()
        write_site(site, [str(ROOT / "specs" / f"{s}.yaml") for s in specs], None)
        print(f"site of {', '.join(specs)} built in {time.perf_counter() - t0:.1f} s")
    driver = browser()
    try:
        every, floor = [], []
        for spec in specs:
            times, base, by_control = measure(driver, site, spec, args.rounds)
            every += times
            floor += base
            print(f"{spec:>14}: median {statistics.median(times):6.2f} ms, p90 "
                  f"{statistics.quantiles(times, n=10)[-1]:6.2f} ms over {len(times)} control changes ("
                  + ", ".join(f"{k} {statistics.median(v):.1f}" for k, v in by_control.items()) + ")")
        median, baseline = statistics.median(every), statistics.median(floor)
        print(f"repaint per control change: median {median:.2f} ms (goal < 16 ms); baseline (a dispatch no handler "
              f"takes, and a reflow) {baseline:.3f} ms; ratio {median / max(baseline, 1e-3):.0f}x")
    finally:
        driver.quit()
    return 0 if median < 16 else 1


if __name__ == "__main__":
    sys.exit(main())
