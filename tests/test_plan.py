"""specc plan and specc simulate: figures equal specc eval, the choice is minimal
(brute force through specc eval), the planner agrees with the simulator."""

from __future__ import annotations

import json
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest

import specc
from specc.plan import report, serving
from specc.plan.queries import Asker, Layout
from specc.plan.run import plan as run_plan
from specc.plan.simulate import simulate

ROOT = Path(__file__).resolve().parent.parent
SPECS = ROOT / "specs"


class EvalAsker(Asker):
    """Every exact answer through specc's public eval (the symbolic engine), not the fast lane."""

    def __init__(self, spec_path):
        super().__init__(spec_path)
        self.model = specc.load(str(spec_path))

    def exact(self, text):
        if text not in self._exact:
            self._exact[text] = self.model.eval(text).value
        return self._exact[text]


# ------------------------------------------------------------------ every figure is its query
@pytest.mark.parametrize("name, devices, fmts", [
    ("llama2_70b", ("h200", "h100_sxm"), ["fp16", "int8"]),
    ("qwen3_8b", ("h100_sxm", "a100_80gb"), None),
    ("mixtral_8x7b", ("h200",), None),
])
def test_every_json_figure_equals_specc_eval_of_its_query(name, devices, fmts):
    spec = SPECS / f"{name}.yaml"
    found = run_plan(spec, 8, 1000, 200, ttft="1 s", tpot="40 ms", devices=devices, max_gpus=8, formats=fmts)
    assert found.chosen is not None
    data = json.loads(report.to_json(found))
    model = specc.load(str(spec))
    checked = 0
    for dep in [data["chosen"]] + data["front"][:2]:
        for fig_name, fig in dep["figures"].items():
            value = model.eval(fig["query"]).value
            assert Fraction(value) == Fraction(fig["exact"]), (fig_name, fig["query"])
            checked += 1
    assert checked >= 20
    chosen = data["chosen"]
    assert chosen["figures"]["ttft"]["value"] <= 1 and chosen["figures"]["tpot"]["value"] <= 0.040
    assert "--tensor-parallel-size" in chosen["engines"]["vllm"][0]


def test_chosen_deployment_is_minimal_by_brute_force_through_eval():
    spec = SPECS / "qwen3_8b.yaml"
    targets = serving.Targets(Fraction(1, 2), Fraction(12, 1000))
    found = run_plan(spec, 60, 1000, 200, ttft="500 ms", tpot="12 ms", devices=("h100_sxm",), max_gpus=4,
                     tp=(1, 2), pp=(1, 2), formats=["bf16"])
    assert found.chosen is not None and found.chosen.deployment.gpus == 4
    asker = EvalAsker(spec)
    traffic, rules = found.traffic, found.rules
    again = serving.evaluate(serving.LayoutFacts(asker, found.chosen.deployment.layout, traffic, rules),
                             found.chosen.deployment, targets)
    assert again.feasible and again.batch == found.chosen.batch
    tried = 0
    for tp in (1, 2):
        for pp in (1, 2):
            lay = Layout("h100_sxm", tp, pp, 1, (("format", "bf16"),))
            facts = serving.LayoutFacts(asker, lay, traffic, rules)
            for n in range(1, found.chosen.deployment.gpus):
                deps = []
                if n % lay.gpus == 0:
                    deps.append(serving.Deployment(lay, serving.AGGREGATED, n // lay.gpus))
                    for p in range(1, n // lay.gpus):
                        deps.append(serving.Deployment(lay, serving.DISAGGREGATED, n // lay.gpus - p, p))
                for dep in deps:
                    tried += 1
                    assert not serving.evaluate(facts, dep, targets).feasible, dep
    assert tried >= 8


# ------------------------------------------------------------------ the planner against the simulator
_GRID = [
    # (spec, layout, mode, rate) — 28 cases over three models, five layouts, both modes, four rates
    *[("llama2_70b", Layout("h200", tp=8), m, r) for m in ("aggregated", "disaggregated") for r in (5, 10, 20)],
    *[("llama2_70b", Layout("h100_sxm", tp=4), m, r) for m in ("aggregated", "disaggregated") for r in (2, 5, 10)],
    *[("qwen3_8b", Layout("a100_80gb", tp=2), m, r) for m in ("aggregated", "disaggregated") for r in (5, 10, 15)],
    *[("mixtral_8x7b", Layout("h100_sxm", tp=2, ep=2), m, r) for m in ("aggregated", "disaggregated")
      for r in (5, 10, 20)],
    # data-parallel attention: 2 ranks, each serving its own requests, experts spread over both
    *[("mixtral_8x7b", Layout("h100_sxm", tp=2, ep=4, dp=2), m, r) for m in ("aggregated", "disaggregated")
      for r in (5, 10)],
]


@pytest.mark.parametrize("name, lay, mode, rate", _GRID)
def test_planner_steady_state_matches_the_simulation(name, lay, mode, rate):
    asker = Asker(SPECS / f"{name}.yaml")
    traffic = serving.Traffic(Fraction(rate), 1000, 200)
    facts = serving.LayoutFacts(asker, lay, traffic, serving.EngineRules())
    dep = serving.Deployment(lay, mode, 1, 1 if mode == "disaggregated" else 0)
    ev = serving.evaluate(facts, dep, serving.Targets())
    assert ev.feasible and "ttft" in ev.figures
    sim = simulate(asker, facts, dep, requests=4000, seed=1)
    assert abs(sim.throughput / float(ev.figures["throughput"].value) - 1) <= 0.05
    for what in ("ttft", "tpot"):
        assert abs(sim.mean(what) / float(ev.figures[what].value) - 1) <= 0.15, what


def test_a_fragile_fixed_point_is_refused_by_the_stability_limit():
    """Long prompts make each running request lengthen every step (KV reads): the decode
    loop gain is 0.78, and the simulation's TPOT is far above the steady state's, which
    is why the planner refuses such deployments (limit 'stability', gain > 1/4)."""
    asker = Asker(SPECS / "qwen3_8b.yaml")
    lay = Layout("h100_sxm", tp=2)
    traffic = serving.Traffic(Fraction(2), 20000, 500)
    facts = serving.LayoutFacts(asker, lay, traffic, serving.EngineRules())
    dep = serving.Deployment(lay, "aggregated", 1)
    ev = serving.evaluate(facts, dep, serving.Targets())
    assert ev.binding == "stability" and ev.figures["decode_loop_gain"].value > Fraction(3, 4)
    sim = simulate(asker, facts, dep, requests=2000, seed=2)
    assert sim.mean("tpot") > 1.3 * float(ev.figures["tpot"].value)
    model = specc.load(str(SPECS / "qwen3_8b.yaml"))
    assert model.eval(ev.figures["decode_loop_gain"].text).value == ev.figures["decode_loop_gain"].value


def test_simulator_fixed_arrivals_and_replicas():
    asker = Asker(SPECS / "llama2_70b.yaml")
    lay = Layout("h200", tp=4)
    traffic = serving.Traffic(Fraction(12), 2000, 300, "fixed")
    facts = serving.LayoutFacts(asker, lay, traffic, serving.EngineRules())
    dep = serving.Deployment(lay, "aggregated", 2)
    ev = serving.evaluate(facts, dep, serving.Targets())
    sim = simulate(asker, facts, dep, requests=3000, seed=3)
    for what in ("ttft", "tpot"):
        assert abs(sim.mean(what) / float(ev.figures[what].value) - 1) <= 0.15
    assert sim.samples and all(len(s) == 3 for s in sim.samples)


# ------------------------------------------------------------------ nothing fits
def test_nothing_fits_names_memory():
    found = run_plan(SPECS / "llama2_70b.yaml", 1, 1000, 200, tpot="50 ms", devices=("l4",), max_gpus=1,
                     formats=["fp16"])
    assert found.chosen is None
    text = report.no_fit_message(found)
    assert "binding limit is memory" in text and "--max-gpus 1" in text


def test_nothing_fits_names_tpot_and_how_far():
    found = run_plan(SPECS / "qwen3_8b.yaml", 1, 1000, 200, tpot="1 ms", devices=("h100_sxm",), max_gpus=2)
    assert found.chosen is None
    text = report.no_fit_message(found)
    assert "binding limit is TPOT" in text and "against 1 ms" in text and "×" in text


# ------------------------------------------------------------------ the commands
def _specc(*args):
    return subprocess.run([sys.executable, "-m", "specc", *args], capture_output=True, text=True, cwd=ROOT)


def test_cli_plan_json_and_errors():
    out = _specc("plan", "specs/qwen3_8b.yaml", "--rate", "5", "--isl", "1000", "--osl", "200", "--tpot", "30ms",
                 "--devices", "h100_sxm", "--max-gpus", "2", "--format", "json", "--quiet")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["chosen"]["gpus"] == 1 and data["chosen"]["figures"]["tpot"]["query"].startswith("(tpot(H=1099, B=")
    bad = _specc("plan", "specs/qwen3_8b.yaml", "--rate", "fast", "--isl", "1000", "--osl", "200")
    assert bad.returncode == 2 and "--rate:1:1" in bad.stderr and "Traceback" not in bad.stderr
    far = _specc("plan", "specs/llama2_70b.yaml", "--rate", "1", "--isl", "4000", "--osl", "200")
    assert far.returncode == 2 and "max_context" in far.stderr
    csv = _specc("plan", "specs/qwen3_8b.yaml", "--rate", "5", "--isl", "1000", "--osl", "200", "--tpot", "30ms",
                 "--devices", "h100_sxm", "--max-gpus", "2", "--format", "csv", "--price", "h100_sxm=2.50")
    assert csv.returncode == 0 and csv.stdout.startswith("rank,device") and ",2.5," in csv.stdout


def test_cli_simulate(tmp_path):
    png = tmp_path / "q.png"
    out = _specc("simulate", "specs/qwen3_8b.yaml", "--rate", "5", "--isl", "1000", "--osl", "200",
                 "--device", "h100_sxm", "--requests", "500", "--format", "json", "--plot", str(png))
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["requests"] == 500 and set(data["ttft"]) == {"mean", "p50", "p90", "p99"}
    assert png.stat().st_size > 1000


def test_api_plan_and_simulate():
    m = specc.load("qwen3_8b")
    p = m.plan(rate=5, isl=1000, osl=200, tpot="30 ms", devices=["h100_sxm"], max_gpus=2)
    assert p.chosen.deployment.gpus == 1
    s = m.simulate(rate=5, isl=1000, osl=200, device="h100_sxm", requests=300)
    assert s.requests == 300 and s.mean("tpot") > 0


def test_percentile_targets_are_checked_by_simulation():
    kw = dict(ttft="500 ms", tpot="30 ms", devices=("h100_sxm", "h200"), max_gpus=16, formats=["fp16"])
    by_mean = run_plan(SPECS / "llama2_70b.yaml", 20, 2000, 300, **kw)
    at_p99 = run_plan(SPECS / "llama2_70b.yaml", 20, 2000, 300, percentile=99, **kw)
    s = at_p99.chosen.simulated
    assert s["percentile"] == 99 and s["ttft"] <= 0.5 and s["tpot"] <= 0.030 and s["meets"]
    assert at_p99.chosen.deployment.gpus >= by_mean.chosen.deployment.gpus
    data = json.loads(report.to_json(at_p99))
    assert data["targets"]["statistic"] == "p99 (simulated)" and data["chosen"]["simulated"]["requests"] == 4000
    with pytest.raises(specc.Error, match="percentile"):
        run_plan(SPECS / "llama2_70b.yaml", 20, 2000, 300, percentile=20, **kw)


def test_unknown_device_is_a_located_error():
    with pytest.raises(specc.Error, match="unknown device 'h300'"):
        run_plan(SPECS / "qwen3_8b.yaml", 5, 1000, 200, tpot="30 ms", devices=("h100_sxm", "h300"), max_gpus=2)


def test_an_expression_beyond_specc_input_limits_says_so():
    # a 30,000-token prompt in 2,048-token chunks: 15 chunk calls, repeated in TTFT's formula
    found = run_plan(SPECS / "qwen3_8b.yaml", 1, 30000, 200, ttft="30 s", devices=("h200",), max_gpus=2,
                     chunk=2048, mode="aggregated")
    data = json.loads(report.to_json(found))
    ttft = data["chosen"]["figures"]["ttft"]
    assert ttft["query"] is None and "input limits" in ttft["note"] and ttft["expression"].count("call_time(") >= 14
    model = specc.load(str(SPECS / "qwen3_8b.yaml"))
    prefill = data["chosen"]["figures"]["prefill_time"]
    if prefill["query"] is not None:
        assert Fraction(model.eval(prefill["query"]).value) == Fraction(prefill["exact"])


# ------------------------------------------------------------------ a weighted list of request classes
_MIXES = [
    ("llama2_70b", Layout("h200", tp=8), "1000:200:3,3000:500:1", 5, "aggregated"),
    ("llama2_70b", Layout("h200", tp=8), "1000:200:3,3000:500:1", 5, "disaggregated"),
    ("qwen3_8b", Layout("h100_sxm", tp=2), "200:100:1,2000:300:1,6000:200:1", 6, "aggregated"),
    ("qwen3_8b", Layout("h100_sxm", tp=2), "200:100:1,2000:300:1,6000:200:1", 6, "disaggregated"),
    ("mixtral_8x7b", Layout("h200", tp=4), "500:500:1,4000:100:1", 8, "aggregated"),
]


@pytest.mark.parametrize("name, lay, mix, rate, mode", _MIXES)
def test_a_request_mix_matches_the_simulation(name, lay, mix, rate, mode):
    from specc.plan.run import parse_mix

    asker = Asker(SPECS / f"{name}.yaml")
    classes = parse_mix(mix)
    isl, osl = max((i, g) for _, i, g in classes)
    traffic = serving.Traffic(Fraction(rate), isl, osl, "poisson", classes)
    facts = serving.LayoutFacts(asker, lay, traffic, serving.EngineRules())
    dep = serving.Deployment(lay, mode, 1, 1 if mode == "disaggregated" else 0)
    ev = serving.evaluate(facts, dep, serving.Targets())
    assert ev.feasible
    sim = simulate(asker, facts, dep, requests=4000, seed=3)
    assert abs(sim.throughput / float(ev.figures["throughput"].value) - 1) <= 0.05
    for what in ("ttft", "tpot"):
        assert abs(sim.mean(what) / float(ev.figures[what].value) - 1) <= 0.15, what


def test_a_request_mix_plan_and_its_queries():
    found = run_plan(SPECS / "qwen3_8b.yaml", 6, None, None, mix="200:100:1,2000:300:1,6000:200:2", tpot="30 ms",
                     ttft="2 s", devices=("h100_sxm",), max_gpus=4)
    data = json.loads(report.to_json(found))
    assert [c["share"] for c in data["traffic"]["mix"]] == ["1/4", "1/4", "1/2"]
    model = specc.load(str(SPECS / "qwen3_8b.yaml"))
    for name, fig in data["chosen"]["figures"].items():
        if fig["query"] is None:      # three classes' E[s²] in TTFT's formula: beyond eval's input limits
            assert name == "ttft" and fig["expression"].count("ttft(P=6000") >= 3
            continue
        assert Fraction(model.eval(fig["query"]).value) == Fraction(fig["exact"])
    assert "--max-model-len 6200" in data["chosen"]["engines"]["vllm"][0]
    with pytest.raises(specc.Error, match="request class"):
        run_plan(SPECS / "qwen3_8b.yaml", 6, None, None, mix="200:1:1", tpot="30 ms")


# ------------------------------------------------------------------ the deployment model the planner searches
def test_layouts_follow_the_engine_deployment_model():
    """An instance is tp·pp·dp devices; ep is 1 or tp·dp (vLLM's --enable-expert-parallel);
    dp and ep only for specs with routed experts; tp within a node (gpus_per_node)."""
    from specc.plan.search import Space, layouts

    moe = Asker(SPECS / "mixtral_8x7b.yaml")
    found = layouts(moe, Space(("h200", "a100_80gb_pcie"), 16))
    assert found and all(lay.gpus == lay.tp * lay.pp * lay.dp <= 16 for lay in found)
    assert all(lay.ep in (1, lay.tp * lay.dp) for lay in found)
    assert {(lay.tp, lay.dp, lay.ep) for lay in found} >= {(8, 1, 8), (1, 8, 8), (1, 8, 1), (2, 4, 8), (8, 1, 1)}
    assert max(lay.tp for lay in found if lay.device == "h200") == 8                 # gpus_per_node: 8
    assert max(lay.tp for lay in found if lay.device == "a100_80gb_pcie") == 2       # an NVLink pair
    dense = layouts(Asker(SPECS / "qwen3_8b.yaml"), Space(("h200",), 16))
    assert all(lay.dp == 1 and lay.ep == 1 for lay in dense)
    chosen = layouts(moe, Space(("h200",), 8, ep=(2, 4)))
    assert all(lay.ep in (2, 4) and (lay.tp * lay.dp) % lay.ep == 0 for lay in chosen)


def test_engine_command_lines_map_the_degrees_and_formats():
    from specc.plan import engines

    traffic, rules = serving.Traffic(Fraction(4), 2000, 300), serving.EngineRules()

    def lines(lay, n_fit=64):
        dep = serving.Deployment(lay, serving.AGGREGATED, 2)
        return engines.vllm(dep, traffic, rules, n_fit)[0], engines.sglang(dep, traffic, rules, n_fit)[0]

    v, s = lines(Layout("h200", tp=8, ep=8, fmt=(("format", "fp8"),)))
    assert "--tensor-parallel-size 8 --enable-expert-parallel" in v and "--data-parallel-size" not in v
    assert "--tp-size 8 --ep-size 8" in s and "--enable-dp-attention" not in s and "--quantization fp8" in v
    v, s = lines(Layout("h200", tp=1, ep=8, dp=8, fmt=(("weights", "fp8"), ("kv", "fp8"))))
    assert "--tensor-parallel-size 1 --data-parallel-size 8 --enable-expert-parallel" in v
    assert "--max-num-seqs 8 " in v and "--kv-cache-dtype fp8" in v        # vLLM's limit is per dp rank
    assert "--tp-size 8 --dp-size 8 --enable-dp-attention --ep-size 8" in s and "--max-running-requests 64" in s
    assert "--kv-cache-dtype fp8_e4m3" in s
    v, s = lines(Layout("h200", tp=2, ep=1, dp=4, pp=2))
    assert "--tensor-parallel-size 2 --pipeline-parallel-size 2 --data-parallel-size 4 --max" in v
    assert "--tp-size 8 --pp-size 2 --dp-size 4 --enable-dp-attention --max" in s
    v, _ = lines(Layout("h200", tp=2, ep=4, dp=4))
    assert "ep=4 has no flag" in v


def test_kv_transfer_crosses_the_scale_out_link():
    asker = Asker(SPECS / "llama2_70b.yaml")
    lay = Layout("h200", tp=8)
    facts = serving.LayoutFacts(asker, lay, serving.Traffic(Fraction(5), 1000, 200), serving.EngineRules())
    kv = facts.kv_transfer_of(1000)
    assert "device_link(device=h200, link=scale_out)" in kv.text
    state = asker.exact("state_bytes(H=1000, B=1, tp=8, per_device=true)")
    assert kv.value == Fraction(state) / asker.exact("device_link(device=h200, link=scale_out)")
    assert Fraction(specc.load(str(SPECS / "llama2_70b.yaml")).eval(kv.text).value) == kv.value


def test_a_layout_the_engine_refuses_for_fit_is_no_candidate():
    """DeepSeek-V3 in BF16 does not fit on 8×H200 (the engine's time queries refuse it); as
    released (FP8 blocks) it does: the plan chooses the release, and its decode probes beyond
    what fits say ignore_fit=true while every reported figure is a deployment that fits."""
    spec = SPECS / "deepseek_v3.yaml"
    model = specc.load(str(spec))
    with pytest.raises(specc.Error, match="does not fit"):
        model.eval("tpot(H=1100, B=1, device=h200, tp=8, ep=8)")
    found = run_plan(spec, 2, 1000, 200, tpot="100 ms", devices=("h200",), max_gpus=8, tp=(8,), dp=(1,),
                     formats=["bf16", "fp8"], mode="aggregated")
    assert found.chosen is not None
    lay = found.chosen.deployment.layout
    assert lay.fmt == (("format", "fp8"),) and lay.tp == 8 and lay.ep in (1, 8)
    data = json.loads(report.to_json(found))
    for name, fig in data["chosen"]["figures"].items():     # the loop gain's slope may look past the fit
        assert name == "decode_loop_gain" or fig["query"] is None or "ignore_fit" not in fig["query"]
    bf16 = run_plan(spec, 2, 1000, 200, tpot="100 ms", devices=("h200",), max_gpus=8, tp=(8,), dp=(1,),
                    formats=["bf16"], mode="aggregated")
    assert bf16.chosen is None and "binding limit is memory" in report.no_fit_message(bf16)


def test_a_device_without_a_scale_out_link_has_no_disaggregated_candidates():
    """mi300x's device file gives no scale-out NIC: the KV transfer cannot be timed, so its
    disaggregated deployments are left out, and the plan says so."""
    found = run_plan(SPECS / "qwen3_8b.yaml", 5, 1000, 200, tpot="30 ms", devices=("mi300x",), max_gpus=2)
    assert found.chosen is not None and found.chosen.deployment.mode == "aggregated"
    assert found.notes and "no disaggregated deployments" in found.notes[0] and "scale_out_link" in found.notes[0]
    assert json.loads(report.to_json(found))["notes"] == found.notes
    with pytest.raises(specc.Error, match="scale_out_link"):
        specc.load("qwen3_8b").simulate(rate=5, isl=1000, osl=200, device="mi300x", mode="disaggregated",
                                        prefill_replicas=1, requests=100)
