"""The `specc` entry point.

`main` is the click group of every command (specc/cli_group.py, whose lazy
command table names each command's module), built the first time it is touched,
so a process that never needs click never imports it. Called as the console
script, `main()` first offers the command line to cli_fast, which answers
`eval` and `verify` from compiled queries when every answer is in the cache
(no click, sympy, yaml or lark); anything else goes to click."""

from __future__ import annotations

import sys


class _Main:
    """A stand-in for the click group that loads it on first use."""

    _group = None

    def _real(self):
        if _Main._group is None:
            from . import cli_group

            _Main._group = cli_group.main
        return _Main._group

    def __getattr__(self, name):
        return getattr(self._real(), name)

    def __call__(self, *args, **kwargs):
        # the command line prints exact answers, bounded by dsl/limits.py (~80,000 digits at
        # most) but beyond Python's 4,300-digit int-to-text guard: lifted for this process
        from .dsl.limits import PRINTED_DIGITS

        if 0 < getattr(sys, "get_int_max_str_digits", lambda: 0)() < PRINTED_DIGITS:
            sys.set_int_max_str_digits(PRINTED_DIGITS)
        if not args and not kwargs:
            from .cli_fast import try_fast

            try:
                code = try_fast(sys.argv[1:])
                if code is not None:
                    sys.stdout.flush()
                    sys.exit(code)
            except BrokenPipeError:         # `specc eval ... | head` answered by the fast path
                from .cli_support import quiet_broken_pipe

                quiet_broken_pipe()
        return self._real()(*args, **kwargs)


main = _Main()


if __name__ == "__main__":  # pragma: no cover
    main()
