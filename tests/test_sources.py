"""The sources table (specs/sources/sources.yaml) and the English glosses: every claim
of the shipped specs cites a listed document (or a file of the repository) and has
an English gloss of its quote, from its catalog entry or its own `gloss:`."""

from __future__ import annotations

import glob
from pathlib import Path

from specc.compiler.schema.spec import load_spec
from specc.verify import sources as S
from specc.verify.claims import load_claims

REPO = Path(__file__).resolve().parents[1]
FIELDS = {"file", "name", "what", "language", "title", "published", "catalog", "covers"}


def _shipped_claims():
    for path in sorted(glob.glob(str(REPO / "specs" / "*.yaml"))):
        yield from load_claims(load_spec(path))


def test_every_source_entry_says_what_it_is():
    table = S.sources()
    assert len(table) == 6
    for entry in table.values():
        assert FIELDS <= set(entry), entry["file"]
        assert (REPO / entry["catalog"]).is_file(), entry["catalog"]


def test_every_claim_cites_a_known_document_and_has_an_english_gloss():
    unknown, unglossed = set(), []
    for claim in _shipped_claims():
        file = S.source_file(claim.source)
        if not (S.source_entry(claim.source) or (REPO / file).is_file()):
            unknown.add(file)
        if claim.quote and not S.gloss(claim):
            unglossed.append(claim.id)
    assert not unknown, sorted(unknown)
    assert not unglossed, unglossed[:10]


def test_source_file_drops_only_a_line_number():
    assert S.source_file("000_f4a9f3652d679e1f.txt:636") == "000_f4a9f3652d679e1f.txt"
    assert S.source_file("tests/data/hf/real/README.md:19") == "tests/data/hf/real/README.md"
    assert S.source_name("003_7c96002bd7720814.txt:218") == "the DeepSeek family lesson"
