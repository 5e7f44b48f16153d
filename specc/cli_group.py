"""The click group of every `specc` command, with a lazy command table: a command's
module is imported only when that command runs (or help lists it). The command
modules import neither this module nor specc/cli.py, so the CLI has no import cycle
(tests/test_query_registry.py computes the package's import graph)."""

from __future__ import annotations

import importlib

import click

from .cli_spec import PATH_OPTION
from .cli_support import fail, quiet_broken_pipe
from .dsl.errors import SpecError

# command name -> "module:function" of its click command (in specc/)
COMMANDS = {
    "verify": "cli_commands:verify",
    "eval": "cli_commands:eval_",
    "check": "cli_commands:check",
    "graph": "cli_render:graph",
    "table": "cli_render:table",
    "plot": "cli_render:plot",
    "report": "cli_render:report",
    "docs": "cli_render:docs",
    "import-hf": "cli_hf:import_hf",
    "crosscheck": "cli_hf:crosscheck",
    "coverage": "cli_coverage:coverage",
    "blocks": "cli_blocks:blocks",
    "site": "cli_site:site",
    "sweep": "cli_sweep:sweep",
    "plan": "cli_plan:plan_command",
    "simulate": "cli_plan:simulate_command",
    "ship-compiled": "cli_ship:ship_compiled",
}


class _LazyGroup(click.Group):
    def list_commands(self, ctx):
        return sorted(COMMANDS)

    def get_command(self, ctx, name):
        target = COMMANDS.get(name)
        if target is None:
            return None
        module, function = target.split(":")
        return getattr(importlib.import_module(f"{__package__}.{module}"), function)

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except SpecError as exc:
            fail(exc)
        except BrokenPipeError:     # `specc ... | head`: the reader has all it wanted
            quiet_broken_pipe()
        except OSError as exc:   # e.g. -o into a missing folder or a read-only place
            where = f" '{exc.filename}'" if exc.filename else ""
            fail(SpecError(f"cannot write or read{where}: {exc.strerror or exc}",
                           expected="an existing, writable folder for -o (create it first)"))


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="specc")
@PATH_OPTION
def main():
    """specc — LLM architectures as data; every cost exact; every printed number checked.

    \b
    specc verify specs/*.yaml                      check every claim of the shipped specs
    specc eval specs/<model>.yaml 'flops(P=8192)'  one exact number
    specc check specs/<model>.yaml               parse and validate only
    specc graph specs/<model>.yaml --format dot    the compiled graph
    """
