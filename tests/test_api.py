"""The Python API (specc/api.py) and the search path (dsl/search_path.py): the
README's example runs, values are Python ints/Fractions, the CLI prints what the
API returns, and libraries, devices and specs resolve from any folder."""

from __future__ import annotations

import doctest
import json
import re
import subprocess
import sys
import textwrap
from fractions import Fraction
from pathlib import Path

import pytest

from conftest import QWEN, REPO, SPECS

import specc
from specc.dsl import search_path


@pytest.fixture(scope="module")
def qwen():
    return specc.load("qwen3_8b")


# ------------------------------------------------------------------ the README example
def _readme_section(title: str) -> str:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    start = text.index(f"## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end > 0 else None]


def test_readme_api_example_runs(monkeypatch):
    section = _readme_section("Python API")
    blocks = re.findall(r"```pycon\n(.*?)```", section, re.S)
    assert blocks, "the README's Python API section has no ```pycon example"
    monkeypatch.chdir(REPO)
    runner = doctest.DocTestRunner()
    for i, block in enumerate(blocks):
        test = doctest.DocTestParser().get_doctest(block, {}, f"README Python API #{i}", "README.md", 0)
        runner.run(test)
    failed, attempted = runner.summarize(verbose=False)
    assert attempted >= 10 and failed == 0


def test_import_specc_is_cheap():
    """`import specc` loads neither sympy nor the compiler: the API is imported on first use."""
    code = "import sys, specc; print(sorted(m for m in ('sympy', 'lark', 'specc.api', 'specc.compiler.query.queries') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
    assert callable(specc.load) and specc.Error is specc.SpecError


# ------------------------------------------------------------------ values
def test_params_by_shipped_name_is_a_python_int(qwen):
    result = qwen.eval("params()")
    assert result.value == 8190735360 and type(result.value) is int
    assert (result.unit, result.extrapolated, int(result), float(result)) == ("params", False, 8190735360, 8190735360.0)


def test_load_by_path_and_by_name_agree(qwen):
    for spec in (QWEN, str(QWEN), "qwen3_8b.yaml"):
        model = specc.load(spec)
        assert model.eval("flops(P=8192)").value == qwen.eval("flops(P=8192)").value
    assert qwen.path == QWEN.resolve() and qwen.name == "Qwen3-8B"


def test_ratio_is_a_fraction_and_never_sympy(qwen):
    r = qwen.eval("params(group=dense_shared_ffn) / params()")
    assert type(r.value) is Fraction and r.value == Fraction(1769472, 2666255)
    assert r.unit == "" and abs(float(r) - 0.66365) < 1e-4
    assert str(r) == "1769472/2666255   ≈ 0.663654"


def test_keyword_methods_are_the_query_table(qwen):
    from specc.compiler.query.queries import QUERIES

    from specc.compiler.query.query_registry import docstring

    assert set(QUERIES) <= set(dir(qwen))
    for name in QUERIES:
        method = getattr(qwen, name)
        assert method.__name__ == name and method.__doc__ == docstring(QUERIES[name])
    assert qwen.dim("d").value == qwen.eval("dim(d)").value
    assert qwen.flops(P=8192).value == qwen.eval("flops(B=1, S=0, P=8192)").value == 133594323353600
    assert qwen.eval("flops", P=8192, B=2).value == qwen.eval("flops(P=8192, B=2)").value
    assert qwen.params(group="routed_experts").value == 0
    with pytest.raises(AttributeError):
        qwen.no_such_query


def test_python_arguments(qwen):
    # the chapter's card is 24e9 B; the datasheet's 24,564 MiB holds one request more
    assert qwen.b_max(device="rtx_4090", H=8192, workspace="2 GiB", memory="24 GB").value == 4
    assert qwen.b_max(device="rtx_4090", H=8192, workspace="2 GiB").value == 5
    assert qwen.state_bytes(H=Fraction(8192)).value == qwen.state_bytes(H=8192).value
    ext = qwen.state_bytes(H=65536, extrapolate=True)
    assert ext.extrapolated and str(ext).endswith("(extrapolated)")
    import sympy as sp

    with pytest.raises(specc.Error, match=r"P=Symbol\('P'\): a sympy object") as err:
        qwen.flops(P=sp.Symbol("P"))
    assert "P='P'" in err.value.expected
    with pytest.raises(specc.Error, match="a float is not exact"):
        qwen.flops(P=8192.0)
    with pytest.raises(specc.Error, match="bare query name"):
        qwen.eval("flops(B=1)", P=8192)
    with pytest.raises(specc.Error, match="unknown query 'flop'"):
        qwen.eval("flop", P=1)
    with pytest.raises(specc.Error, match="a query is text"):
        qwen.eval(42)


def test_symbolic_closed_form(qwen):
    import sympy as sp

    r = qwen.eval("flops(P=P)", symbolic=True)
    assert r.symbolic and isinstance(r.value, sp.Expr)
    P = sp.Symbol("P", integer=True, positive=True)
    free = r.expr.free_symbols
    assert len(free) == 1 and free.pop().name == "P"
    # the closed form is the numeric query's value at every P tried
    for p in (1, 7, 8192):
        assert r.expr.subs({s: p for s in r.expr.free_symbols}) == qwen.flops(P=p).value
    assert qwen.flops(P="P", symbolic=True).expr == r.expr
    with pytest.raises(TypeError):
        float(r)
    with pytest.raises(specc.Error):
        qwen.eval("flops(P=P)")                  # without symbolic=True, P is not a number
    assert P.name == "P"


def test_errors_are_one_located_type(qwen, write_spec):
    with pytest.raises(specc.Error) as err:
        qwen.eval("flops(P=0)")
    assert err.value.loc is not None and str(err.value).startswith("<query>:1:1: P must be at least 1")
    bad = write_spec("""
        model: Broken
        imports: [lib/core.yaml]
        dims: {d: 8}
        stack:
          - {name: embed, block: token_embeding, with: {V: 4, d: d}}
        """)
    with pytest.raises(specc.Error) as err:
        specc.load(bad)
    assert f"{bad}:5:26: unknown block 'token_embeding'" in str(err.value)
    with pytest.raises(specc.Error, match="no spec 'qwen3_8bb'"):
        specc.load("qwen3_8bb")


# ------------------------------------------------------------------ the CLI is a wrapper over the API
def test_cli_prints_what_the_api_returns(cli, qwen):
    queries = ["params()", "params(group=dense_shared_ffn) / params()", "state_bytes(H=65536, extrapolate=true)",
               "b_max(device=rtx_4090, H=8192, workspace=2 GiB)"]
    out = cli("eval", "qwen3_8b", *queries)           # a shipped spec by name
    assert out.exit_code == 0, out.output
    assert out.output.splitlines() == [f"{q} = {qwen.eval(q)}" for q in queries]
    data = json.loads(cli("eval", str(QWEN), "--json", *queries).output)
    assert data == [qwen.eval(q).to_json() for q in queries]
    assert data[0] == {"query": "params()", "value": 8190735360, "float": 8190735360.0, "unit": "params",
                       "extrapolated": False}
    assert data[1]["value"] == "1769472/2666255"


def test_claims_and_verify_objects():
    model = specc.load("toy_moe")
    claims, results = model.claims(), model.verify()
    assert claims and [c.id for c in claims] == [r.id for r in results]
    from specc.compiler.schema.spec import load_spec
    from specc.verify.claims import verify_spec
    from specc.verify.output import as_json

    expected = json.loads(as_json(verify_spec(load_spec(SPECS / "toy_moe.yaml"))))["claims"]
    got = [{k: getattr(r, k) for k in ("id", "spec", "source", "eval", "expected", "computed", "verdict", "note",
                                        "fact_check")}
           for r in results]
    assert got == expected
    assert all(r.ok == (r.verdict in ("PASS", "XFAIL")) for r in results)
    assert all(c.eval and c.expected and c.location for c in claims)


# ------------------------------------------------------------------ specs anywhere
SMALL = """
    model: Tiny
    imports: [lib/core.yaml]
    dims: {d: 8, V: 16}
    stores:
      kv: {tags: [kv], bytes: 2*d}
    stack:
      - {name: embed, block: token_embedding, with: {V: V, d: d}}
      - name: mix
        layers: 0..1
        ops: ["y = x @ W[d, d]"]
        inputs: {x: d}
        state: [{store: kv, entries: H}]
    """


def _lone(tmp_path, text=SMALL, name="tiny.yaml") -> Path:
    """A spec in a folder with no lib/ or hardware/ anywhere near it."""
    path = tmp_path / "elsewhere" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path


def test_a_spec_in_any_folder_finds_the_shipped_library_devices_and_specs(tmp_path):
    model = specc.load(_lone(tmp_path))
    assert model.params().value == 16 * 8 + 2 * 8 * 8
    assert model.eval("device_memory(device=h100_sxm)").value == specc.load("qwen3_8b").eval(
        "device_memory(device=h100_sxm)").value
    assert model.eval("params(spec=qwen3_8b)").value == 8190735360
    assert str(search_path.SHIPPED / "lib" / "core.yaml") in model.spec.sources


def test_a_copy_of_a_shipped_spec_evaluates_the_same(tmp_path):
    copy = tmp_path / "mine.yaml"
    copy.write_text(QWEN.read_text(encoding="utf-8"), encoding="utf-8")
    mine, shipped = specc.load(copy), specc.load("qwen3_8b")
    for q in ("params()", "flops(P=8192)", "device_memory(device=rtx_4090)", "b_max(device=rtx_4090, H=8192)"):
        assert mine.eval(q).value == shipped.eval(q).value
    assert len(mine.verify()) == len(shipped.claims())        # claims_files resolve to the shipped claims


def test_local_files_come_before_the_search_path_and_the_shipped_data(tmp_path, monkeypatch):
    spec = _lone(tmp_path)
    # a sibling named like a shipped spec wins over the shipped one
    _lone(tmp_path, SMALL.replace("d: 8,", "d: 4,"), name="qwen3_8b.yaml")
    assert specc.load(spec).eval("params(spec=qwen3_8b)").value == 16 * 4 + 2 * 4 * 4
    # a device on SPECC_PATH, and a folder given as the hardware folder itself
    devices = tmp_path / "devices" / "hardware"
    devices.mkdir(parents=True)
    (devices / "my_gpu.yaml").write_text("name: My GPU\nmemory: 48 GB\n", encoding="utf-8")
    model = specc.load(spec)
    with pytest.raises(specc.Error) as err:
        model.eval("device_memory(device=my_gpu)")
    message = str(err.value)
    assert "unknown device 'my_gpu'" in message and str(spec.parent / "hardware") in message \
        and str(search_path.SHIPPED / "hardware") in message
    for folder in (devices.parent, devices):
        monkeypatch.setenv("SPECC_PATH", str(folder))
        assert model.eval("device_memory(device=my_gpu)").value == 48 * 10 ** 9
    # a user library on the search path shadows nothing that the spec's own folder has
    lib = tmp_path / "mylib" / "lib"
    lib.mkdir(parents=True)
    (lib / "extra.yaml").write_text("blocks:\n  twice:\n    inputs: {x: d}\n    params: [d]\n"
                                    "    ops: ['y = x @ W[d, 2*d]']\n", encoding="utf-8")
    monkeypatch.setenv("SPECC_PATH", str(tmp_path / "mylib"))
    user = _lone(tmp_path, SMALL.replace("imports: [lib/core.yaml]", "imports: [lib/core.yaml, lib/extra.yaml]"),
                 name="user.yaml")
    assert "twice" in specc.load(user).spec.blocks
    monkeypatch.delenv("SPECC_PATH")
    with pytest.raises(specc.Error) as err:
        specc.load(user)
    assert "imported file 'lib/extra.yaml' not found" in str(err.value) and str(user.parent) in str(err.value)
    assert f"{user}:2:" in str(err.value)                       # located at the import


def test_cli_path_option_and_spec_names(cli, tmp_path):
    spec = _lone(tmp_path)
    devices = tmp_path / "devices" / "hardware"
    devices.mkdir(parents=True)
    (devices / "my_gpu.yaml").write_text("memory: 48 GB\n", encoding="utf-8")
    try:
        out = cli("--path", devices.parent, "eval", spec, "device_memory(device=my_gpu)")
        assert out.exit_code == 0 and out.output.strip() == "device_memory(device=my_gpu) = 48,000,000,000 B"
        out = cli("--path", spec.parent, "eval", "tiny", "params()")        # a spec name found on --path
        assert out.exit_code == 0 and out.output.strip() == "params() = 256 params", out.output
    finally:
        search_path.set_cli_paths(())
    out = cli("eval", "tiny", "params()")
    assert out.exit_code == 2 and "no spec 'tiny'" in out.output and str(search_path.SHIPPED) in out.output
    assert cli("check", "qwen3_8b").exit_code == 0


def test_docs_document_only_the_listed_specs():
    """A user's own spec saved in specs/ gets no docs page and does not make the docs test fail."""
    from specc.render import docs

    found = sorted(f"specs/{p.name}" for p in SPECS.glob("*.yaml")) + ["specs/zz_my_own.yaml"]
    documented = docs._documented(REPO / "docs", found)
    assert "specs/qwen3_8b.yaml" in documented and "specs/zz_my_own.yaml" not in documented


# ------------------------------------------------------------------ docs/writing-specs.md
GUIDE = REPO / "docs" / "writing-specs.md"
GUIDE_DATA = REPO / "tests" / "data" / "guide"


def _guide() -> str:
    return GUIDE.read_text(encoding="utf-8")


def test_readme_links_the_guide():
    assert "(docs/writing-specs.md)" in (REPO / "README.md").read_text(encoding="utf-8")


def test_the_guides_final_spec_is_the_tested_file_and_verifies():
    text = _guide()
    marker = "<!-- final spec: tests/data/guide/gemma2_2b.yaml -->\n```yaml\n"
    start = text.index(marker) + len(marker)
    shown = text[start:text.index("```", start)]
    assert shown == (GUIDE_DATA / "gemma2_2b.yaml").read_text(encoding="utf-8")
    results = specc.load(GUIDE_DATA / "gemma2_2b.yaml").verify()
    assert len(results) >= 2 and all(r.verdict == "PASS" for r in results), results
    assert specc.load(GUIDE_DATA / "gemma2_2b.yaml").params().value == 2614341888


def _shell_blocks(text: str):
    """(command, printed output) of every ```text block line that starts with '$ specc'."""
    import shlex

    for block in re.findall(r"```text\n(.*?)```", text, re.S):
        lines = block.rstrip("\n").split("\n")
        for i, line in enumerate(lines):
            if line.startswith("$ specc "):
                end = next((j for j in range(i + 1, len(lines)) if lines[j].startswith("$ ")), len(lines))
                yield shlex.split(line[2:])[1:], "\n".join(lines[i + 1:end])


def test_the_worked_examples_output_is_what_specc_prints(cli, monkeypatch):
    text = _guide()
    section = text[text.index("## 1."):text.index("## 2.")]
    monkeypatch.chdir(REPO)
    runs = list(_shell_blocks(section))
    assert len(runs) >= 4
    for args, shown in runs:
        out = cli(*args)
        assert "\n".join(l.rstrip() for l in out.output.rstrip().splitlines()) == shown, args


def _normalized(text: str) -> str:
    # where a lookup looked, and how many other names exist, depend on the machine and the release
    text = re.sub(r"\(looked in [^)]*\)", "(looked in …)", text)
    return re.sub(r"\(or \d+ more\)", "(or … more)", text)


def test_the_troubleshooting_errors_are_what_specc_prints(cli, tmp_path, monkeypatch):
    import yaml

    text = _guide()
    base = (GUIDE_DATA / "gemma2_2b.yaml").read_text(encoding="utf-8")
    cases = yaml.safe_load((GUIDE_DATA / "errors.yaml").read_text(encoding="utf-8"))["cases"]
    monkeypatch.chdir(tmp_path)
    for case in cases:
        spec = base
        if "replace" in case:
            old, new = case["replace"]
            assert old == "ALL" or old in base, f"{case['id']}: the guide's spec no longer contains {old!r}"
            spec = "" if old == "ALL" else base.replace(old, new, 1)
        (tmp_path / "gemma2.yaml").write_text(spec, encoding="utf-8")
        args = [case["run"][0], "gemma2.yaml", *case["run"][1:]]
        out = cli(*args)
        assert out.exit_code in (1, 2), (case["id"], out.output)
        marker = f"<!-- case: {case['id']} -->"
        assert marker in text, marker
        shown = text[text.index(marker):]
        shown = shown[shown.index("```text\n") + 8:]
        shown = shown[:shown.index("```")].split("\n", 1)[1].rstrip("\n")       # after the $ line
        printed = "\n".join(l.rstrip() for l in out.output.rstrip().splitlines())
        assert _normalized(printed) == _normalized(shown), case["id"]


def test_the_guides_first_try_is_off_by_what_it_says():
    first, final = specc.load(GUIDE_DATA / "try1.yaml"), specc.load(GUIDE_DATA / "gemma2_2b.yaml")
    assert first.params().value - final.params().value == 589717504 == 256000 * 2304 - 26 * 2 * 2304 + 26 * 2 * 256


def test_sweep_from_python_is_the_cli_table(tmp_path, monkeypatch):
    """m.sweep(...) returns the table `specc sweep` writes: exact values, points past
    the maximum context refused (None), and a located error for a bad grid."""
    from specc.compiler.lanes import sweep as sweeping

    monkeypatch.setenv("SPECC_CACHE_DIR", str(tmp_path / "cache"))
    m = specc.load("qwen3_8b")
    table = m.sweep("flops(P=P, B=B)", P=range(40959, 40962), B=[1, 4])
    assert table.names == ["P", "B"] and table.unit == "FLOPs"
    values = list(table.values)
    assert values[:4] == [m.flops(P=40959, B=1).value, m.flops(P=40959, B=4).value,
                          m.flops(P=40960, B=1).value, m.flops(P=40960, B=4).value]
    assert values[4:] == [None, None] and list(table.refused) == [False] * 4 + [True] * 2
    assert sweeping.to_csv(table).splitlines()[-1] == "40961,4,,false,beyond max_context"
    for bad in ({"P": [1.5]}, {"P": []}, {"P": "1..3"}):
        with pytest.raises(specc.Error, match="range or a list"):
            m.sweep("flops(P=P)", **bad)
    with pytest.raises(specc.Error, match="gives no values"):
        m.sweep("flops(P=P, B=B)", P=[1])
