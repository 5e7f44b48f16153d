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
        # every part echoes user text (a name, a value, a source line): control characters
        # are shown escaped, so an error can neither forge a log line (or a CI workflow
        # command) with a newline nor drive the terminal with an escape sequence
        head = f"{self.loc}: {self.message}" if self.loc else self.message
        parts = [printable(head)]
        text = self.loc.line_text() if self.loc else None
        if text is not None:
            parts.append("    " + printable(text, keep="\t"))
            parts.append("    " + " " * max(0, self.loc.col - 1) + "^" * self.span)
        if self.expected:
            parts.append(f"  expected {printable(self.expected)}")
        return "\n".join(parts)

    def __str__(self) -> str:
        return self.render()


_CONTROL = None


def printable(text, keep: str = "") -> str:
    """`text` with its control characters (newlines, escapes, Unicode line breaks) as
    visible escapes: \\n, \\x1b, \\u2028 (the characters in `keep` stay)."""
    global _CONTROL
    if _CONTROL is None:
        import re

        _CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
    text = str(text)
    if not _CONTROL.search(text):
        return text

    def escape(m):
        char = m.group()
        if char in keep:
            return char
        return {"\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(char) or (
            f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}")

    return _CONTROL.sub(escape, text)


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
