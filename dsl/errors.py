"""Located user errors: every mistake in a spec, claim or query is reported as
`file:line:col: message`, followed by the offending source line and a caret."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple


class Loc(NamedTuple):
    """A 1-based position in a source (a file path or a pseudo-file like `<query>`).
    (A named tuple: positions are made by the ten thousand when claims are read.)"""

    file: str
    line: int
    col: int
    source_text: str | None = None  # the text itself, for sources that are not files

    def shifted(self, chars: int) -> "Loc":
        """The position `chars` characters further along the same line."""
        return Loc(self.file, self.line, self.col + chars, self.source_text)

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"

    def line_text(self) -> str | None:
        if self.source_text is not None:
            lines = self.source_text.splitlines() or [""]
        else:
            try:
                lines = Path(self.file).read_text(encoding="utf-8").splitlines()
            except (OSError, UnicodeDecodeError):
                return None
        if 1 <= self.line <= len(lines):
            line = lines[self.line - 1]
            # a caret under a column past 200 is still shown; the line is cut around it
            return line if len(line) <= 240 else line[:240] + " ..."
        return None


class SpecError(Exception):
    """A user mistake, with where it is and what was expected instead."""

    def __init__(self, message: str, loc: Loc | None = None, *, span: int = 1,
                 expected: str | None = None):
        super().__init__(message)
        self.message = message
        self.loc = loc
        self.span = max(1, span)
        self.expected = expected

    def render(self) -> str:
        head = f"{self.loc}: {self.message}" if self.loc else self.message
        parts = [head]
        text = self.loc.line_text() if self.loc else None
        if text is not None:
            parts.append("    " + text)
            parts.append("    " + " " * max(0, self.loc.col - 1) + "^" * self.span)
        if self.expected:
            parts.append(f"  expected {self.expected}")
        return "\n".join(parts)

    def __str__(self) -> str:
        return self.render()


class BeyondContext(SpecError):
    """A query past the spec's maximum context without extrapolate=true: the one
    refusal that depends only on the scenario, so a sweep reports it per point."""


def did_you_mean(name: str, known) -> str:
    """A short 'one of ...' list, closest names first."""
    import difflib

    known = sorted(set(known))
    close = difflib.get_close_matches(name, known, n=3)
    if close:
        return "one of " + ", ".join(close) + (" (or " + str(len(known) - len(close)) + " more)" if len(known) > len(close) else "")
    shown = ", ".join(known[:12]) + (", ..." if len(known) > 12 else "")
    return "one of " + shown if known else "a defined name (none are defined here)"
