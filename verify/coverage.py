"""Coverage: which catalog entries the shipped claims encode.

A claim catalog (specs/catalog/NNN.yaml) lists every number a source document
prints, one entry per id, with a `kind` (config entries are architecture facts
a spec encodes; everything else is a claim to verify). An id is *encoded* when
some spec's claims carry it, *not computable* when a not-computable list gives
a reason for it, and *missing* otherwise."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from ..compiler.schema.spec import load_spec, seq, text
from ..dsl.errors import SpecError
from ..dsl.yamlload import Map, load_yaml_file
from .claims import load_claims


@dataclass
class CatalogCoverage:
    path: str
    total: int = 0                                   # non-config entries
    encoded: int = 0
    not_computable: int = 0
    missing: list = field(default_factory=list)      # (id, model, line)
    config_total: int = 0
    config_checked: int = 0
    by_model: dict = field(default_factory=dict)     # model -> Counter(total, encoded, not_computable)

    @property
    def computable(self) -> int:
        """Non-config ids a query could compute: those no not-computable list excuses."""
        return self.total - self.not_computable

    @property
    def percent_encoded(self) -> float:
        """Encoded ids as a share of the computable ones (a date or a tokenizer count, listed as not
        computable with its reason, neither helps nor hurts)."""
        return 100.0 * self.encoded / self.computable if self.computable else 100.0


def load_not_computable(paths) -> dict:
    """id -> reason, from YAML lists of {id, reason}."""
    reasons = {}
    for path in paths:
        raw = load_yaml_file(path)
        for node in seq(raw, f"not-computable list {Path(path).name}") if raw is not None else []:
            if not isinstance(node, Map) or "id" not in node or "reason" not in node:
                raise SpecError("each not-computable entry needs 'id' and 'reason'", getattr(node, "loc", None),
                                expected="- {id: <catalog id>, reason: <why it cannot be computed>}")
            reasons[str(text(node["id"], "id"))] = str(node["reason"])
    return reasons


def encoded_ids(spec_paths) -> set:
    ids = set()
    for path in spec_paths:
        ids.update(c.id for c in load_claims(load_spec(path)))
    return ids


def catalog_coverage(catalog_path, encoded: set, not_computable: dict) -> CatalogCoverage:
    raw = load_yaml_file(catalog_path)
    cov = CatalogCoverage(str(catalog_path))
    for entry in seq(raw, f"catalog {Path(catalog_path).name}"):
        cid, kind = str(entry["id"]), str(entry.get("kind", ""))
        model = str(entry.get("model", ""))
        if kind == "config":
            cov.config_total += 1
            cov.config_checked += cid in encoded
            continue
        counts = cov.by_model.setdefault(model, Counter())
        cov.total += 1
        counts["total"] += 1
        if cid in encoded:
            cov.encoded += 1
            counts["encoded"] += 1
        elif cid in not_computable:
            cov.not_computable += 1
            counts["not_computable"] += 1
        else:
            cov.missing.append((cid, model, str(entry.get("line", ""))))
    return cov
