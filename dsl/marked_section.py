"""Generated sections of hand-written files (the README's query and schemes tables):
the text between a begin and an end marker is replaced by what a declaration prints.
Standard library only, so the registry that uses it stays import-light."""

from __future__ import annotations


def replace_marked(path: str, begin: str, end: str, body: str) -> bool:
    """Rewrite the text between the markers `begin` and `end` of the file at `path` with
    `body`; True when the file changed (a drift test calls it on a copy)."""
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    start, stop = text.index(begin) + len(begin), text.index(end)
    new = text[:start] + "\n" + body + "\n" + text[stop:]
    if new != text:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(new)
    return new != text
