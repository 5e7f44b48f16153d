"""The source documents behind the claims, in English.

`specs/sources/sources.yaml` names each source document a claim's `source:` cites
(its file name is a place in the project's source set, not a title): what it is, its
language and title, where it is published, what it covers, its tables. A claim's quote
is in the source's language; its English *gloss* is the `claim:` statement of the
catalog entry with the claim's id (specs/catalog/NNN.yaml), or, for a claim no catalog
lists, the claim's own `gloss:`. The reports print both beside the quote."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from ..dsl.search_path import SHIPPED
from ..dsl.yamlload import load_yaml_file

SOURCES = SHIPPED / "sources" / "sources.yaml"
CATALOGS = SHIPPED / "catalog"


@lru_cache(maxsize=None)
def sources() -> dict:
    """file name -> its entry (a dict of the fields sources.yaml documents)."""
    raw = load_yaml_file(SOURCES) or {}
    return {str(entry["file"]): {str(k): v for k, v in entry.items()} for entry in raw.get("sources") or []}


def source_file(source: str) -> str:
    """'000_f4a9f3652d679e1f.txt:636' -> '000_f4a9f3652d679e1f.txt' (a claim's source without its line)."""
    head = str(source).split()[0] if str(source).split() else ""
    return head.rsplit(":", 1)[0] if ":" in head and head.rsplit(":", 1)[1].replace("–", "").isdigit() else head


def source_entry(source: str) -> dict | None:
    return sources().get(source_file(source))


def source_name(source: str) -> str:
    """The English name of the document a claim cites ('' when the table does not list it)."""
    entry = source_entry(source)
    return str(entry["name"]) if entry else ""


@lru_cache(maxsize=None)
def catalog_glosses() -> dict:
    """catalog id -> the catalog's English statement of the number (its `claim:` field)."""
    glosses = {}
    for path in sorted(Path(CATALOGS).glob("*.yaml")):
        for entry in load_yaml_file(path) or []:
            if entry.get("claim"):
                glosses[str(entry["id"])] = str(entry["claim"])
    return glosses


def gloss(claim) -> str:
    """The claim's quote in English: the catalog's statement of its id, else its own `gloss:`."""
    return catalog_glosses().get(str(claim.id)) or str(getattr(claim, "gloss", None) or "")
