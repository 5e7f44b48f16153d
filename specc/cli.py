"""The `specc` entry point.

`main` is the click group of every command (defined in cli_commands and the
cli_* modules that register on it), built the first time it is touched, so a
process that never needs click never imports it. Called as the console
script, `main()` first offers the command line to cli_fast, which answers
`eval` and `verify` from compiled queries when every answer is in the cache
(no click, sympy, yaml or lark); anything else goes to click."""

from __future__ import annotations

import sys


def _load(path):
    from .compiler.spec import load_spec

    return load_spec(path)


def quiet_broken_pipe():
    """The reader of our output went away (`specc coverage | head`): stop quietly, exit 0.
    Standard output is pointed at /dev/null so the interpreter's final flush cannot complain."""
    import os

    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    sys.exit(0)


def _fail(exc, code: int = 2):
    sys.stderr.write(exc.render() + "\n")
    sys.exit(code)


class _Main:
    """A stand-in for the click group that loads it on first use."""

    _group = None

    def _real(self):
        if _Main._group is None:
            from . import cli_commands

            _Main._group = cli_commands.main
        return _Main._group

    def __getattr__(self, name):
        return getattr(self._real(), name)

    def __call__(self, *args, **kwargs):
        if not args and not kwargs:
            from .cli_fast import try_fast

            try:
                code = try_fast(sys.argv[1:])
                if code is not None:
                    sys.stdout.flush()
                    sys.exit(code)
            except BrokenPipeError:
                quiet_broken_pipe()
        return self._real()(*args, **kwargs)


main = _Main()


if __name__ == "__main__":  # pragma: no cover
    main()
