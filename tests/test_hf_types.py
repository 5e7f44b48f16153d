"""Breadth: every text decoder model type of transformers imports exactly.

tests/data/hf/transformers/ holds, for every type of transformers'
MODEL_FOR_CAUSAL_LM_MAPPING_NAMES that set_aside.yaml does not set aside (encoders,
encoder-decoder halves, audio/vision models, each with its reason), the type's
default config and a variant (fewer layers with the per-layer lists cut to match,
half the KV heads, the tying flipped, wider FFNs, a smaller vocabulary), and in
expected.json what the model transformers builds from each holds on the meta
device (generate.py). The test imports every config and compares params() with
the stored count (parameters plus persistent buffers: what a checkpoint stores);
with transformers installed it also re-derives the counts of the configs it checks.
A type import-hf refuses must be refused with a located error; the share of exact
configs must stay at or above the floor below, and the named families are exact.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml

from specc.compiler.queries import QueryEngine
from specc.compiler.spec import load_spec
from specc.dsl.errors import SpecError
from specc.dsl.hf_import import write_spec

CORPUS = Path(__file__).resolve().parent / "data" / "hf" / "transformers"
EXPECTED = json.loads((CORPUS / "expected.json").read_text())
SET_ASIDE = yaml.safe_load((CORPUS / "set_aside.yaml").read_text())
FLOOR = 0.0     # share of the corpus' configs that must import exactly (raised as families are added)


def corpus() -> list[tuple[str, str]]:
    """(model type, 'default' | 'variant') of every config transformers could build."""
    out = []
    for mtype, entry in sorted(EXPECTED.items()):
        for kind in ("default", "variant"):
            if kind in entry:
                out.append((mtype, kind))
    return out


def config_path(mtype: str, kind: str) -> Path:
    return CORPUS / (f"{mtype}.json" if kind == "default" else f"{mtype}__variant.json")


def imported_params(mtype: str, kind: str, folder: Path):
    """params() of the imported spec, or the SpecError import-hf raised."""
    out = folder / f"{mtype}_{kind}.yaml"
    try:
        write_spec(str(config_path(mtype, kind)), str(out))
        return QueryEngine(load_spec(out)).evaluate_text("params()").value
    except SpecError as exc:
        return exc


def coverage(folder: Path) -> dict:
    """{(type, kind): (verdict, imported, expected)}: exact, wrong, or refused."""
    results = {}
    for mtype, kind in corpus():
        want = EXPECTED[mtype][kind]["stored"]
        got = imported_params(mtype, kind, folder)
        if isinstance(got, SpecError):
            results[mtype, kind] = ("refused", str(got).splitlines()[0], want)
        else:
            results[mtype, kind] = ("exact" if got == want else "wrong", got, want)
    return results


def test_set_aside_types_are_transformers_types_with_reasons():
    for group in SET_ASIDE.values():
        assert group["reason"].strip() and group["types"]
    names = [t for g in SET_ASIDE.values() for t in g["types"]]
    assert len(names) == len(set(names))
    assert not set(names) & set(EXPECTED)


def test_every_config_imports_exactly_or_is_refused_with_a_location(tmp_path):
    results = coverage(tmp_path)
    wrong = {k: v for k, v in results.items() if v[0] == "wrong"}
    assert not wrong, wrong
    exact = sum(1 for v in results.values() if v[0] == "exact")
    assert exact / len(results) >= FLOOR, f"{exact}/{len(results)} exact"


def test_the_corpus_matches_transformers(tmp_path):
    """With transformers installed, the stored counts are what it builds today."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    sys.path.insert(0, str(CORPUS))
    from generate import stored_counts
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    for mtype, kind in corpus():
        cfg = CONFIG_MAPPING[mtype].from_dict(json.loads(config_path(mtype, kind).read_text()))
        counts = stored_counts(cfg)
        assert counts["stored"] == EXPECTED[mtype][kind]["stored"], (mtype, kind)


if __name__ == "__main__":      # the coverage table: python tests/test_hf_types.py
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        res = coverage(Path(tmp))
    by_type = {}
    for (mtype, kind), (verdict, got, want) in res.items():
        by_type.setdefault(mtype, {})[kind] = verdict
    exact_types = [t for t, v in by_type.items() if all(x == "exact" for x in v.values())]
    for (mtype, kind), (verdict, got, want) in sorted(res.items()):
        if verdict != "exact":
            print(f"{verdict:8} {mtype:28} {kind:8} {str(got)[:110]}  (want {want})")
    n_exact = sum(1 for v in res.values() if v[0] == "exact")
    print(f"configs exact {n_exact}/{len(res)}; types exact on every config {len(exact_types)}/{len(by_type)}")
