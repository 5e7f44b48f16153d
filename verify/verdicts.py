"""The verdicts a claim can get, in report order (a module of its own so the
output formats need neither sympy nor the claim loader)."""

VERDICTS = ("PASS", "FAIL", "XFAIL", "XPASS", "ERROR")
