"""Mutation test of the claims: can a claim fail?

For every claim that PASSes with a printed `expect:` value, make two mutants:
the same claim with its printed number one unit of its last printed digit up,
and one unit down ("133.6 TFLOPs" -> 133.7 and 133.5). A mutant is *caught*
when the verifier no longer says PASS. A claim whose mutants survive is one
that could not fail, except in two honest cases, counted apart:

- ties: the computed value lies exactly on the boundary of the printed digit
  (a half-way value rounds either way, so both neighbours are accepted);
- declared tolerances ("about"): an explicit `tolerance:` wider than one unit;
- bounds: an inequality claim (`expect: "> 90 %"`) survives a nudge of its
  bound whenever the value clears the bound by more than a unit; for it the
  mutant that must be caught is the reversed comparison ("<= 90 %").

Usage: python bench/mutation.py [specs/*.yaml]   (exit 1 when a mutant escapes)
"""

from __future__ import annotations

import dataclasses
import glob
import re
import sys
from fractions import Fraction

from specc.compiler.query.queries import QueryEngine
from specc.compiler.schema.spec import load_spec
from specc.dsl.yamlload import Text
from specc.verify.claims import check, load_claims, split_bound

_NUMBER = re.compile(r"[+-]?(\d{1,3}(,\d{3})+|\d+)(\.\d+)?([eE][+-]?\d+)?")


def nudge(expect: str, direction: int) -> str | None:
    """The printed text with its number one unit of the last printed digit further."""
    _, skip = split_bound(expect)
    match = _NUMBER.search(expect, skip)
    if not match:
        return None
    number = match.group()
    mantissa, _, exponent = number.replace(",", "").lower().partition("e")
    decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
    value = Fraction(mantissa) + direction * Fraction(1, 10 ** decimals)
    sign = "-" if value < 0 else ""
    value = abs(value)
    whole, frac = divmod(value * 10 ** decimals, 10 ** decimals)
    text = f"{sign}{int(whole)}" + (f".{int(frac):0{decimals}d}" if decimals else "")
    if exponent:
        text += "e" + exponent
    return expect[:match.start()] + text + expect[match.end():]


def run(paths):
    tally = dict(claims=0, mutants=0, caught=0, ties=0, about=0, bounds=0, escaped=0)
    escaped = []
    for path in paths:
        spec = load_spec(path)
        engine = QueryEngine.shared(spec)
        for claim in load_claims(spec):
            if claim.expect is None or claim.erratum is not None:
                continue
            base = check(engine, claim)
            if base.verdict != "PASS":
                continue
            tally["claims"] += 1
            bound, _ = split_bound(claim.expect)
            bound = None if bound == "about" else bound
            if bound is not None:
                tally["mutants"] += 1
                if check(engine, flipped(claim)).verdict != "PASS":
                    tally["caught"] += 1
                else:
                    tally["escaped"] += 1
                    escaped.append((claim.id, str(flipped(claim).expect)))
            for direction in (1, -1):
                text = nudge(str(claim.expect), direction)
                if text is None:
                    continue
                tally["mutants"] += 1
                mutant = dataclasses.replace(claim, expect=Text(text, claim.expect.loc, claim.expect.quoted))
                result = check(engine, mutant)
                if result.verdict != "PASS":
                    tally["caught"] += 1
                elif bound is not None:
                    tally["bounds"] += 1   # the computed value clears the nudged bound too
                elif claim.tolerance is not None:
                    tally["about"] += 1
                elif result.computed.value in (result.low, result.high):
                    tally["ties"] += 1
                else:
                    tally["escaped"] += 1
                    escaped.append((claim.id, text))
    return tally, escaped


def flipped(claim):
    """The inequality claim with its comparison reversed ('> 90 %' -> '<= 90 %')."""
    bound, skip = split_bound(claim.expect)
    opposite = {">": "<=", ">=": "<", "<": ">=", "<=": ">"}[bound]
    return dataclasses.replace(claim, expect=Text(f"{opposite} {str(claim.expect)[skip:]}", claim.expect.loc,
                                                  claim.expect.quoted))


def main(paths) -> int:
    tally, escaped = run(paths)
    print(f"{tally['claims']} PASS claims, {tally['mutants']} mutants: {tally['caught']} caught, "
          f"{tally['ties']} ties, {tally['about']} declared 'about' tolerances, "
          f"{tally['bounds']} nudges of inequality bounds the value still clears (each bound's reversed "
          f"comparison is a caught mutant), {tally['escaped']} escaped")
    for cid, text in escaped:
        print(f"  escaped: {cid}: expect {text}")
    return 1 if escaped else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or sorted(glob.glob("specs/*.yaml"))))
