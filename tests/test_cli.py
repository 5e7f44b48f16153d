"""The `specc` command line, end to end: verify (all output formats, errata and
tolerances), eval, check, graph and --help. Most commands run in-process through
click's CliRunner; a few run as real subprocesses (`python -m specc`)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
QWEN = REPO / "specs" / "qwen3_8b.yaml"
V41 = REPO / "specs" / "deepseek_v41.yaml"
CLAIM_FIELDS = {"id", "spec", "source", "eval", "expected", "computed", "verdict", "note"}


def shipped_claims(specs=(QWEN, V41)) -> list[dict]:
    """Every claim the given spec files carry: their own `claims:` and those of
    the files their `claims_files:` list (read with plain YAML, independently of
    specc's loader)."""
    out = []
    for spec in specs:
        data = yaml.safe_load(spec.read_text(encoding="utf-8"))
        out.extend(data.get("claims") or [])
        for rel in data.get("claims_files") or []:
            out.extend(yaml.safe_load((spec.parent / rel).read_text(encoding="utf-8"))["claims"])
    assert out
    return out


def run_specc(*args, timeout=120):
    """`python -m specc ...` as a real subprocess, from the repository root."""
    return subprocess.run([sys.executable, "-m", "specc", *map(str, args)], cwd=REPO, capture_output=True,
                          text=True, timeout=timeout)


# ------------------------------------------------------------------ verify, end to end
def test_verify_shipped_specs_subprocess():
    proc = run_specc("verify", "specs/qwen3_8b.yaml", "specs/deepseek_v41.yaml", "--verbose")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stdout.splitlines()
    for claim in shipped_claims():
        pattern = re.compile(rf"^(PASS|XFAIL)\s+{re.escape(str(claim['id']))}\s+{re.escape(str(claim.get('source') or ''))}\s*$")
        assert any(pattern.match(line) for line in lines), f"claim {claim['id']} / {claim.get('source')} not listed"
    assert re.search(rf"\({len(shipped_claims())} claims\)$", lines[-1]), lines[-1]
    assert not re.search(r"\b(fail|xpass|error)\b", lines[-1]), lines[-1]


def test_verify_summary_is_one_line_per_spec():
    """The default text is one screen: a line per spec with its counts, the totals, no claim listing."""
    proc = run_specc("verify", "specs/qwen3_8b.yaml", "specs/deepseek_v41.yaml")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr
    lines = proc.stdout.splitlines()
    assert re.match(r"^specs/qwen3_8b\.yaml\s+\d+ pass$", lines[0]), lines[0]
    assert re.match(r"^specs/deepseek_v41\.yaml\s+\d+ pass$", lines[1]), lines[1]
    assert not any(line.startswith(("PASS ", "XFAIL ")) for line in lines)
    assert any(re.search(rf"\({len(shipped_claims())} claims\)$", line) for line in lines)
    assert "--verbose" in lines[-1]
    assert len(lines) <= 8


@pytest.fixture(scope="module")
def verify_json(cli):
    result = cli("verify", QWEN, V41, "--format", "json")
    return result


def test_verify_json(verify_json):
    assert verify_json.exit_code == 0
    data = json.loads(verify_json.stdout)
    assert set(data) >= {"claims", "summary"}
    for claim in data["claims"]:
        assert set(claim) >= CLAIM_FIELDS, claim
    summary = data["summary"]
    assert summary["FAIL"] + summary["XPASS"] + summary["ERROR"] == 0
    assert sum(summary.values()) == len(data["claims"])
    ids = {c["id"] for c in data["claims"]}
    assert ids == {str(c["id"]) for c in shipped_claims()}
    by_id = {c["id"]: c for c in data["claims"]}
    for claim in shipped_claims():
        row = by_id[str(claim["id"])]
        assert row["source"] == str(claim.get("source") or "")
        assert row["eval"] == str(claim["eval"])
        assert row["verdict"] in ("PASS", "XFAIL")
        assert Path(row["spec"]).name in ("qwen3_8b.yaml", "deepseek_v41.yaml")


def test_verify_json_exact_values(verify_json):
    """Computed values are exact integers as strings, e.g. Qwen3-8B's params()."""
    data = json.loads(verify_json.stdout)
    qwen_params = [c for c in data["claims"] if c["eval"] == "params()" and c["spec"].endswith("qwen3_8b.yaml")]
    assert qwen_params and all(c["computed"] == "8190735360" for c in qwen_params)


def test_verify_junit(cli):
    result = cli("verify", QWEN, V41, "--format", "junit")
    assert result.exit_code == 0
    root = ET.fromstring(result.stdout)
    assert root.tag == "testsuite"
    cases = root.findall("testcase")
    assert len(cases) == int(root.get("tests")) == len(shipped_claims())
    assert root.get("failures") == "0" and root.get("errors") == "0"
    assert not list(root.iter("failure"))
    assert not list(root.iter("error"))


def test_verify_markdown(cli):
    result = cli("verify", QWEN, "--format", "md")
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[0].startswith("| verdict |")
    assert re.fullmatch(r"\|(-{3,}\|)+", lines[1])
    assert any("`qwen3-8b.total-params`" in line for line in lines)


def test_verify_only(cli):
    result = cli("verify", QWEN, "--only", "total-params", "--format", "json")
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert data["claims"] and all("total-params" in c["id"] for c in data["claims"])


# ------------------------------------------------------------------ errata and tolerances
@pytest.fixture
def bare_qwen(write_spec):
    """Qwen3-8B without its own claims file, so only the claims under test run."""
    text = QWEN.read_text(encoding="utf-8")
    text = re.sub(r"(?m)^claims_files:.*$", "", text)
    return write_spec(text, name="qwen3_8b.yaml")


def claims_file(tmp_path, *claims) -> Path:
    path = tmp_path / "extra_claims.yaml"
    path.write_text(yaml.safe_dump({"claims": list(claims)}, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return path


PREFILL = "flops(B=1, S=0, P=8192)"  # 133,594,323,353,600 FLOPs = 133.5943… TFLOPs


def verdicts(cli, spec, claims_path):
    result = cli("verify", spec, "--claims", claims_path, "--format", "json")
    data = json.loads(result.stdout)
    return result.exit_code, {c["id"]: c["verdict"] for c in data["claims"]}, data


def test_erratum_wrong_value_is_xfail(cli, bare_qwen, tmp_path):
    path = claims_file(tmp_path, {"id": "t.erratum", "source": "test", "eval": PREFILL, "expect": "140 TFLOPs",
                                  "erratum": "the source misprints 133.6 as 140"})
    code, got, data = verdicts(cli, bare_qwen, path)
    assert got == {"t.erratum": "XFAIL"}
    assert code == 0
    assert data["summary"]["XFAIL"] == 1


def test_erratum_right_value_is_xpass(cli, bare_qwen, tmp_path):
    path = claims_file(tmp_path, {"id": "t.erratum", "source": "test", "eval": PREFILL, "expect": "133.6 TFLOPs",
                                  "erratum": "wrongly marked as an erratum"})
    code, got, _ = verdicts(cli, bare_qwen, path)
    assert got == {"t.erratum": "XPASS"}
    assert code == 1


def test_wrong_value_is_fail(cli, bare_qwen, tmp_path):
    path = claims_file(tmp_path, {"id": "t.wrong", "source": "test", "eval": PREFILL, "expect": "140 TFLOPs"})
    code, got, _ = verdicts(cli, bare_qwen, path)
    assert got == {"t.wrong": "FAIL"}
    assert code == 1
    text = cli("verify", bare_qwen, "--claims", path)
    assert text.exit_code == 1
    assert "FAIL" in text.stdout and "outside" in text.stdout


@pytest.mark.parametrize("expect, verdict", [
    ("133.6 TFLOPs", "PASS"),                 # [133.55, 133.65]
    ("134 TFLOPs", "PASS"),                   # [133.5, 134.5)
    ("133.59 TFLOPs", "PASS"),                # [133.585, 133.595) holds 133.5943
    ("133.60 TFLOPs", "FAIL"),                # [133.595, 133.605) excludes 133.5943
    ("133.5 TFLOPs", "FAIL"),                 # [133.45, 133.55)
    ("133,594,323,353,600 FLOPs", "PASS"),    # exact integer, half-unit tolerance
    ("133,594,323,353,601 FLOPs", "FAIL"),
    ("0.1336 PFLOPs", "PASS"),
    ("133.594 TFLOPs", "PASS"),
    ("133.595 TFLOPs", "FAIL"),               # [133.5945, 133.5955)
])
def test_printed_digits_set_the_tolerance(cli, bare_qwen, tmp_path, expect, verdict):
    path = claims_file(tmp_path, {"id": "t.tol", "source": "test", "eval": PREFILL, "expect": expect})
    code, got, _ = verdicts(cli, bare_qwen, path)
    assert got == {"t.tol": verdict}
    assert code == (0 if verdict == "PASS" else 1)


@pytest.mark.parametrize("expect", ["1 x", "0 x"])
def test_an_exact_tie_rounds_either_way(cli, bare_qwen, tmp_path, expect):
    # 4096 / 8192 = 0.5 exactly: printed as 1 (half up) or 0 (half to even), both honest
    path = claims_file(tmp_path, {"id": "t.tie", "source": "test", "eval": "dim(d) / 8192", "expect": expect})
    assert verdicts(cli, bare_qwen, path)[1] == {"t.tie": "PASS"}


def test_explicit_tolerance(cli, bare_qwen, tmp_path):
    path = claims_file(
        tmp_path,
        {"id": "t.pct-pass", "source": "test", "eval": PREFILL, "expect": "130 TFLOPs", "tolerance": "3 %"},
        {"id": "t.pct-fail", "source": "test", "eval": PREFILL, "expect": "130 TFLOPs", "tolerance": "2 %"},
    )
    code, got, _ = verdicts(cli, bare_qwen, path)
    assert got == {"t.pct-pass": "PASS", "t.pct-fail": "FAIL"}
    assert code == 1


# ------------------------------------------------------------------ eval
def test_eval_json(cli):
    result = cli("eval", QWEN, "flops(B=1, S=0, P=8192)", "--json")
    assert result.exit_code == 0
    [row] = json.loads(result.stdout)
    assert row["value"] == 133_594_323_353_600 and type(row["value"]) is int
    assert row["unit"] == "FLOPs"
    assert row["extrapolated"] is False
    assert row["query"] == "flops(B=1, S=0, P=8192)"


def test_eval_v41_subprocess():
    proc = run_specc("eval", "specs/deepseek_v41.yaml", "flops(B=1, S=0, P=8192)",
                     "kv_bytes_per_token(format=production)")
    assert proc.returncode == 0, proc.stderr
    assert "143,946,626,891,776" in proc.stdout
    assert re.search(r"kv_bytes_per_token\(format=production\) = 890\b", proc.stdout)


def test_eval_kv_bytes_production(cli):
    result = cli("eval", V41, "kv_bytes_per_token(format=production)", "--json")
    assert result.exit_code == 0
    [row] = json.loads(result.stdout)
    assert row["value"] == 890


def test_eval_symbolic(cli):
    result = cli("eval", QWEN, "--symbolic", "flops(B=B, S=S, P=P)")
    assert result.exit_code == 0
    expression = result.stdout.split("=", 3)[-1]
    assert re.search(r"\bB\b", expression) and re.search(r"\bP\b", expression)


def test_eval_extrapolated_flag(cli):
    result = cli("eval", QWEN, "flops(S=204800, P=1, extrapolate=true)", "--json")
    assert result.exit_code == 0
    [row] = json.loads(result.stdout)
    assert row["value"] == 135_932_739_584
    assert row["extrapolated"] is True
    text = cli("eval", QWEN, "flops(S=204800, P=1, extrapolate=true)")
    assert "(extrapolated)" in text.stdout


def test_eval_several_queries(cli):
    result = cli("eval", QWEN, "params()", "state_bytes(H=8192)", "--json")
    assert result.exit_code == 0
    assert [r["value"] for r in json.loads(result.stdout)] == [8_190_735_360, 1_207_959_552]


# ------------------------------------------------------------------ check
def test_check_all_specs(cli):
    specs = sorted((REPO / "specs").glob("*.yaml"))
    assert QWEN in specs and V41 in specs
    result = cli("check", *specs)
    assert result.exit_code == 0, result.output
    for spec in specs:
        assert f"{spec}: ok" in result.stdout


# ------------------------------------------------------------------ graph
def test_graph_json(cli):
    result = cli("graph", QWEN, "--format", "json")
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert data["nodes"] and data["edges"]
    ids = {n["id"] for n in data["nodes"]}
    for edge in data["edges"]:
        assert edge["source"] in ids and edge["target"] in ids
        assert "shape" in edge and len(edge["shape"]) == 2


def test_graph_dot(cli):
    result = cli("graph", QWEN, "--format", "dot")
    assert result.exit_code == 0
    assert result.stdout.startswith("digraph")
    assert result.stdout.rstrip().endswith("}")


def test_graph_option(cli, tmp_path):
    out = tmp_path / "v41.json"
    result = cli("graph", V41, "--option", "mode=reference", "--format", "json", "-o", out)
    assert result.exit_code == 0
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["nodes"] and data["edges"]
    assert all("shape" in e for e in data["edges"])


# ------------------------------------------------------------------ help
@pytest.mark.parametrize("command", [[], ["verify"], ["eval"], ["check"], ["graph"]])
def test_help(cli, command):
    result = cli(*command, "--help")
    assert result.exit_code == 0
    examples = [line.strip() for line in result.stdout.splitlines() if line.strip().startswith("specc ")]
    assert examples, result.stdout
    if command:
        assert any(line.startswith(f"specc {command[0]} ") for line in examples), result.stdout


def test_no_shipped_spec_has_a_dead_end():
    """Every op of every shipped spec feeds another op, a block output or a segment output."""
    from specc.compiler.graph.build import compile_spec
    from specc.compiler.schema.spec import load_spec

    for spec in sorted((REPO / "specs").glob("*.yaml")):
        model = compile_spec(load_spec(spec))
        assert [op.stmt.loc for op in model.dead_ops()] == [], spec


# ------------------------------------------------------------------ what a newcomer meets
def test_times_print_in_a_readable_unit():
    from fractions import Fraction

    from specc.dsl.human import human_seconds, show

    assert human_seconds(Fraction(134002703, 9814453125)) == "13.654 ms"
    assert human_seconds(2) == "2 s"
    assert human_seconds(Fraction(8503, 10 ** 7)) == "850.3 µs"
    assert human_seconds(Fraction(1, 10 ** 12)) == "0.001 ns"
    assert human_seconds(0) == "0 s"
    assert show(Fraction(1, 2), "", False) == ("=", "1/2   ≈ 0.5")
    assert show(Fraction(1, 4), "s", False, exact=True) == ("=", "1/4 s  ≈ 0.25")


def test_eval_prints_times_in_ms_and_json_keeps_the_fraction(cli):
    query = "tpot(H=4095, device=h100_sxm, tp=8)"
    text = cli("eval", REPO / "specs" / "llama2_70b.yaml", query)
    assert re.fullmatch(r"tpot\(H=4095, device=h100_sxm, tp=8\) ≈ \d+\.\d+ ms", text.output.strip()), text.output
    [row] = json.loads(cli("eval", REPO / "specs" / "llama2_70b.yaml", "--json", query).output)
    assert re.fullmatch(r"\d+/\d+", row["value"]) and row["unit"] == "s"
    exact = cli("eval", REPO / "specs" / "llama2_70b.yaml", "--exact", query).output
    assert f"= {row['value']} s" in exact


def test_b_max_zero_says_what_is_short(cli):
    out = cli("eval", REPO / "specs" / "llama2_70b.yaml", "b_max(device=rtx_4090, H=4096)").output
    assert "= 0  (short by " in out and "one request's state is 1,342,177,280 B" in out, out
    [row] = json.loads(cli("eval", REPO / "specs" / "llama2_70b.yaml", "--json",
                           "b_max(device=rtx_4090, H=4096)").output)
    assert row["value"] == 0 and row["note"].startswith("short by ")


def test_sweep_takes_a_shipped_spec_by_name(cli, tmp_path):
    out = tmp_path / "f.csv"
    result = cli("sweep", "qwen3_8b", "flops(P=P)", "--over", "P=1,2", "-o", out)
    assert result.exit_code == 0, result.output
    assert out.read_text().count("\n") >= 3


def test_a_broken_pipe_is_quiet():
    for command in ("coverage", "verify specs/qwen3_8b.yaml --verbose"):
        proc = subprocess.run(f"{sys.executable} -m specc {command} | head -1", shell=True, cwd=REPO,
                              capture_output=True, text=True, timeout=300)
        assert proc.stdout.count("\n") == 1 and proc.stderr == "", (command, proc.stderr)


def test_approximate_arguments_take_floats_and_exact_ones_refuse_them():
    from fractions import Fraction

    import specc

    m = specc.load("qwen3_8b")
    exact = m.tpot(H=8192, device="h100_sxm", mbu=Fraction(4, 5), mfu=Fraction(1, 2)).value
    assert m.tpot(H=8192, device="h100_sxm", mbu=0.8, mfu=0.5).value == exact
    assert m.tpot(H=8192, device="h100_sxm", mbu="0.8", mfu="0.5").value == exact
    with pytest.raises(specc.Error, match="a float is not exact"):
        m.state_bytes(H=8192.0)
    with pytest.raises(specc.Error, match="a float is not exact"):
        m.tpot(H=8192, device="h100_sxm", mbu=float("nan"))


def test_check_warns_about_matrices_and_stores_without_sharding(cli, write_spec):
    path = write_spec("""
        model: unsharded
        imports: [lib/core.yaml]
        dims: {d: 8, f: 16, V: 32}
        stores:
          kv: {tags: [kv], bytes: 2*d*2}
        blocks:
          ffn:
            params: {d: null, f: null}
            inputs: {x: d}
            outputs: [y]
            ops:
              - up = x @ W_up[d, f]; group=dense_shared_ffn
              - y = up @ W_down[f, d]; group=dense_shared_ffn, shard=row
        stack:
          - {name: embed, block: token_embedding, with: {V: V, d: d}}
          - name: layers
            layers: 0..1
            block: ffn
            with: {d: d, f: f}
            state: [{store: kv, entries: H}]
        """)
    result = cli("check", path)
    assert result.exit_code == 0, result.output
    assert "warning: 1 weight matrix declares no sharding (up)" in result.output
    assert "warning: store kv declares no shard:" in result.output
    fixed = path.read_text().replace("group=dense_shared_ffn\n", "group=dense_shared_ffn, shard=column\n")
    path.write_text(fixed.replace("bytes: 2*d*2}", "bytes: 2*d*2, shard: replicated}"))
    assert "warning" not in cli("check", path).output
