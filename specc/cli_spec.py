"""The SPEC argument of every command: a spec file, or the name of a spec on the
search path or shipped with specc (`specc eval <model> 'params()'` from any folder),
and the --path option that adds search folders (dsl/search_path.py)."""

from __future__ import annotations

import click


class SpecArgument(click.ParamType):
    name = "spec"

    def convert(self, value, param, ctx):
        from .dsl.errors import SpecError
        from .dsl.search_path import spec_argument

        try:
            return str(spec_argument(str(value)))
        except SpecError as exc:
            self.fail(exc.render(), param, ctx)


SPEC = SpecArgument()


def set_search_path(ctx, param, value):
    """--path DIR (repeatable): folders searched for libraries, devices and specs, before SPECC_PATH."""
    from .dsl.search_path import set_cli_paths

    set_cli_paths(value or ())
    return value


PATH_OPTION = click.option(
    "--path", "search_path", multiple=True, type=click.Path(file_okay=False), expose_value=False,
    is_eager=True, callback=set_search_path, metavar="DIR",
    help="A folder to search for imported libraries, hardware/ devices and specs named by spec=NAME "
         "(repeatable; before SPECC_PATH, then the files shipped with specc).")
