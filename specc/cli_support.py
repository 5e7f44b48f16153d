"""What every command module shares: loading a spec and failing with a located
error. Imports no other cli module, so the command modules form no import cycle."""

from __future__ import annotations

import sys


def load_spec_file(path):
    from .compiler.spec import load_spec

    return load_spec(path)


def fail(exc, code: int = 2):
    """Print a located error (SpecError.render) to stderr and exit with `code`."""
    sys.stderr.write(exc.render() + "\n")
    sys.exit(code)
