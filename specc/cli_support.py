"""What every command module shares: loading a spec and failing with a located
error. Imports no other cli module, so the command modules form no import cycle."""

from __future__ import annotations

import sys


def load_spec_file(path):
    from .compiler.schema.spec import load_spec

    return load_spec(path)


def fail(exc, code: int = 2):
    """Print a located error (SpecError.render) to stderr and exit with `code`."""
    sys.stderr.write(exc.render() + "\n")
    sys.exit(code)


def quiet_broken_pipe():
    """The reader of our output went away (`specc coverage | head`): stop quietly, exit 0.
    Standard output is pointed at /dev/null so the interpreter's final flush cannot complain."""
    import os

    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    sys.exit(0)
