"""Re-run every troubleshooting case of docs/writing-specs.md and paste what specc
prints now (run after a change to an error message; tests/test_api.py checks them).

    python tests/data/guide/refresh.py
Paths are written as a user in /tmp/models would see them, with the shipped data as <specc>."""

import os
import re
import tempfile
from pathlib import Path

import yaml
from click.testing import CliRunner

from specc.cli import main

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
GUIDE = REPO / "docs" / "writing-specs.md"


def _worked_example(text: str) -> str:
    """Section 1's `$ specc ...` lines, run from the checkout, with what they print now."""
    import shlex

    lo, hi = text.index("## 1."), text.index("## 2.")
    section = text[lo:hi]

    def block(match):
        lines, out = match.group(1).rstrip("\n").split("\n"), []
        i = 0
        while i < len(lines):
            out.append(lines[i])
            if lines[i].startswith("$ specc "):
                result = CliRunner().invoke(main, shlex.split(lines[i][2:])[1:]).output
                out += [l.rstrip() for l in result.rstrip().splitlines()]
                i += 1
                while i < len(lines) and not lines[i].startswith("$ "):
                    i += 1
                continue
            i += 1
        return "```text\n" + "\n".join(out) + "\n```"

    os.chdir(REPO)
    return text[:lo] + re.sub(r"```text\n(.*?)```", block, section, flags=re.S) + text[hi:]


def main_() -> None:
    text = _worked_example(GUIDE.read_text(encoding="utf-8"))
    base = (HERE / "gemma2_2b.yaml").read_text(encoding="utf-8")
    cases = yaml.safe_load((HERE / "errors.yaml").read_text(encoding="utf-8"))["cases"]
    with tempfile.TemporaryDirectory() as tmp:
        os.chdir(tmp)
        for case in cases:
            old, new = case.get("replace", (None, None))
            spec = base if old is None else ("" if old == "ALL" else base.replace(old, new, 1))
            Path(tmp, "gemma2.yaml").write_text(spec, encoding="utf-8")
            out = CliRunner().invoke(main, [case["run"][0], "gemma2.yaml", *case["run"][1:]]).output
            printed = "\n".join(l.rstrip() for l in out.rstrip().splitlines())
            printed = printed.replace(str(Path(tmp).resolve()), "/tmp/models").replace(str(REPO), "<specc>")
            marker = f"<!-- case: {case['id']} -->"
            at = text.index(marker)
            start = text.index("```text\n", at) + len("```text\n")
            start = text.index("\n", start) + 1                  # keep the $ line
            end = text.index("```", start)
            text = text[:start] + printed + "\n" + text[end:]
    GUIDE.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main_()
