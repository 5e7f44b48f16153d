"""specc: LLM architectures as data, every cost an exact symbolic consequence.

    import specc
    m = specc.load("<model>")           # a shipped spec by name, or specc.load("path/to/spec.yaml")
    m.eval("params()").value            # 8190735360 (a Python int)

The API lives in specc/api.py; it is imported on first use, so `import specc`
stays cheap (the CLI and the engine load sympy only when they need it)."""

from .dsl.errors import SpecError

__version__ = "0.1.0"
Error = SpecError      # the one exception type: a located message (file:line:col, text, expected)

_API = {"load", "Model", "Result", "Claim", "ClaimResult"}
__all__ = sorted(_API | {"Error", "SpecError", "__version__"})


def __getattr__(name):
    if name in _API:
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module 'specc' has no attribute '{name}'")


def __dir__():
    return __all__
