"""The explorer and its export facing hostile input: a spec named __proto__, a
device file that is not a mapping, huge scenario values in the URL, and no
absolute path of the build machine in the exported data."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from specc.cli import main

REPO = Path(__file__).resolve().parents[1]
TOY = REPO / "specs" / "toy_moe.yaml"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
try:
    import selenium  # noqa: F401
    HAVE_SELENIUM = True
except ImportError:
    HAVE_SELENIUM = False
needs_browser = pytest.mark.skipif(not (CHROMIUM and CHROMEDRIVER and HAVE_SELENIUM),
                                   reason="headless Chromium, chromedriver and selenium are needed")


def _specs(folder: Path, names) -> Path:
    folder.mkdir(parents=True)
    os.symlink(REPO / "specs" / "lib", folder / "lib")
    shutil.copytree(REPO / "specs" / "hardware", folder / "hardware")
    for name in names:
        shutil.copy(TOY, folder / f"{name}.yaml")
    return folder


@pytest.fixture(scope="module")
def hostile_site(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("hostile")
    specs = _specs(tmp / "specs", ["__proto__", "toy_moe"])
    out = tmp / "site"
    result = CliRunner().invoke(main, ["site", "-o", str(out), "--specs", str(specs / "*.yaml"), "--jobs", "1"])
    assert result.exit_code == 0, result.output
    return tmp, out


def test_the_export_holds_no_absolute_path_of_the_build_machine(hostile_site):
    tmp, out = hostile_site
    for path in (out / "data").iterdir():
        text = path.read_text(encoding="utf-8")
        assert str(tmp) not in text, path.name


def test_a_device_file_that_is_not_a_mapping_is_a_located_error(tmp_path):
    specs = _specs(tmp_path / "specs", ["toy_moe"])
    (specs / "hardware" / "broken.yaml").write_text("- just\n- a list\n")
    result = CliRunner().invoke(main, ["site", "-o", str(tmp_path / "site"), "--specs", str(specs / "*.yaml"),
                                       "--jobs", "1"])
    assert result.exit_code == 2, result.output
    assert "broken.yaml:1:1: a device file is a mapping" in result.output
    assert "Traceback" not in result.output


@needs_browser
def test_hostile_urls_are_reported_not_thrown(hostile_site):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.support.ui import WebDriverWait

    _, out = hostile_site
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    try:
        for query, shown in (("spec=__proto__", None), ("spec=toy_moe&H=" + "9" * 400, "more than 15 digits"),
                             ("spec=toy_moe&B=" + "1" * 40, "more than 15 digits"),
                             ("spec=constructor", "no spec 'constructor'")):
            driver.get((out / "explorer.html").as_uri() + "?" + query)
            WebDriverWait(driver, 30).until(lambda d: d.execute_script("return document.body.dataset.ready === 'true'"))
            severe = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
            assert not severe, (query, severe)
            if shown:
                assert shown in driver.find_element("id", "errors").text, query
    finally:
        driver.quit()
