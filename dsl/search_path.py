"""Where specc looks for the files a spec names: imported libraries
(`imports: [lib/core.yaml]`), claim files, devices (`device=h100_sxm`), other
specs (`spec=<name>`, or a spec name on the command line).

One order for all of them, so a spec works the same in any folder:

1. the folder of the file that names it, and up to three of its parents
   (a spec in specs/sub/ still finds specs/lib/ and specs/hardware/);
2. the user's folders: `--path DIR` on the command line, then `SPECC_PATH`
   (folders separated by os.pathsep);
3. the data shipped with specc: the `specs/` folder of the checkout, which is
   also installed as package data (`specc/specs/`), so a non-editable
   `pip install .` carries the block library, the devices and the shipped specs.

Every lookup that fails raises a located SpecError listing the places it tried.
Every lookup that succeeds is recorded (resolutions()): the file found and every
candidate tried before it, per file that named it, so a cache of answers can
notice a closer file appearing (a new lib/, hardware/ or same-named spec) as
well as an edit of the file it used."""

from __future__ import annotations

import os
from pathlib import Path

from .errors import Loc, SpecError, did_you_mean

ENV = "SPECC_PATH"
# the checkout's specs/ (dsl/ and specs/ are siblings) or, installed, specc/specs/
SHIPPED = Path(__file__).resolve().parent.parent / "specs"
ANCESTORS = 3          # how many parent folders of a spec are searched (as before the search path)

_cli_paths: list[Path] = []    # --path folders, set once by the CLI


def set_cli_paths(paths) -> None:
    """The folders given with --path (they come before SPECC_PATH)."""
    _cli_paths[:] = [Path(p).expanduser() for p in paths]


def user_roots() -> list[Path]:
    env = [Path(p).expanduser() for p in os.environ.get(ENV, "").split(os.pathsep) if p.strip()]
    return _unique(_cli_paths + env)


def roots(near: str | Path | None = None) -> list[Path]:
    """Every folder searched, in order, for a file named by `near` (a file path)."""
    # asked for every import and claims file: resolving the same folders again each
    # time was a few percent of a first verify
    key = (str(near), tuple(_cli_paths), os.environ.get(ENV, ""))
    found = _ROOTS.get(key)
    if found is None:
        local = []
        if near is not None:
            here = Path(near).resolve().parent
            local = [here, *here.parents][:ANCESTORS + 1]
        found = _ROOTS[key] = _unique(local + user_roots() + [SHIPPED])
    return list(found)


_ROOTS: dict = {}


def allowed_roots(near: str | Path | None = None) -> list[Path]:
    """The folders a spec's imports may come from (for an import-confinement check)."""
    return roots(near)


def _unique(paths) -> list[Path]:
    out, seen = [], set()
    for path in paths:
        key = Path(path).resolve()
        if key not in seen:
            seen.add(key)
            out.append(key)
    return out


def _looked(candidates) -> str:
    return "looked in " + ", ".join(str(c) for c in candidates)


def _first(candidates, near=None, name: str = "", loc: Loc | None = None, what: str = "file"):
    """The first candidate that is a file (resolved), recording the lookup for `near`.
    A candidate that is a symbolic link leading out of its own folder and out of every
    allowed root is refused (without saying where it leads: nothing outside is read)."""
    tried = []
    for path in candidates:
        if path.is_file():
            found = path.resolve()
            _confine(path, found, near, name, loc, what)
            _record(near, tried, found)
            return found
        tried.append(path)
    return None


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def allowed_link_roots(near) -> list[Path]:
    """Where a file found through a link may lead: the naming file's own folder, the
    user's search folders and the shipped data (as for imports)."""
    local = [Path(near).resolve().parent] if near is not None else []
    return _unique(local + user_roots() + [SHIPPED])


def _confine(candidate: Path, found: Path, near, name: str, loc: Loc | None, what: str) -> None:
    if _inside(found, candidate.parent.resolve()):
        return                                  # no link, or one that stays in its folder
    if any(_inside(found, root) for root in allowed_link_roots(near)):
        return
    raise SpecError(f"{what} '{name or candidate.name}' is a link that leads outside the allowed folders",
                    loc, span=len(name) if name else 0,
                    expected="a file inside the spec's folder, a --path/SPECC_PATH folder or specc's shipped "
                             "data (a link's target is not read)")


# how each name was resolved, per file that named it: {naming file: {path: found?}}
_RESOLUTIONS: dict = {}


def _record(near, tried, found) -> None:
    if near is None:
        return
    log = _RESOLUTIONS.setdefault(str(Path(near).resolve()), {})
    for path in tried:
        log.setdefault(str(path), False)
    log[str(found)] = True


def resolutions(naming_files) -> dict:
    """{path: True (the file a name resolved to) or False (a candidate tried before
    it, absent then: it must stay absent for the answer to stand)} for every
    lookup made on behalf of the given files, in this process."""
    out: dict = {}
    for near in naming_files:
        for path, found in _RESOLUTIONS.get(str(near), {}).items():
            out[path] = out.get(path, False) or found
    return out


def roots_signature() -> str:
    """The user's search folders as they are now (--path, SPECC_PATH) and the shipped
    data's place: answers found through one search path are not answers for another."""
    return os.pathsep.join([str(p) for p in user_roots()] + ["|", str(SHIPPED)])


# ------------------------------------------------------------------ relative files
def relative_file(name: str, near: str | Path, loc: Loc | None, what: str) -> Path:
    """A file named by a relative path (an import, a claims file), from `near`'s
    folder, its parents, the user's folders or the shipped data."""
    if Path(name).is_absolute():
        candidates = [Path(name)]
    else:
        candidates = [root / name for root in roots(near)]
    found = _first(candidates, near, name, loc, what)
    folder = next((c for c in candidates if c.is_dir()), None) if found is None else None
    if folder is not None:
        raise SpecError(f"{what} '{name}' is a folder, not a file ({folder})", loc, span=len(name),
                        expected="the path of a YAML file")
    if found is None:
        raise SpecError(f"{what} '{name}' not found", loc, span=len(name),
                        expected=f"a path relative to the importing file or to a search folder ({_looked(candidates)})")
    return found


# ------------------------------------------------------------------ devices
def _hardware_dirs(near) -> list[Path]:
    dirs = []
    for root in roots(near):
        dirs.append(root / "hardware")
        if root.name == "hardware":
            dirs.append(root)
    return _unique(dirs)


def device_files(near: str | Path | None) -> list[Path]:
    """Every device file a spec at `near` can name, by name: the first file of each name
    along the search path, as device=NAME resolves it (a page or table of devices lists these)."""
    first: dict = {}
    for folder in _hardware_dirs(near):
        if folder.is_dir():
            for path in sorted(folder.glob("*.yaml")):
                first.setdefault(path.stem, path)
    return [first[name] for name in sorted(first)]


def hardware_file(device: str, near: str | Path | None, loc: Loc | None) -> Path:
    """specs/hardware/<device>.yaml, wherever the search path finds it first."""
    dirs = _hardware_dirs(near)
    found = _first((d / f"{device}.yaml" for d in dirs), near, device, loc, "device file")
    if found is None:
        known = sorted({p.stem for d in dirs if d.is_dir() for p in d.glob("*.yaml")})
        raise SpecError(f"unknown device '{device}' ({_looked(dirs)})",
                        loc, span=len(device), expected=did_you_mean(device, known))
    return found


# ------------------------------------------------------------------ specs by name
def _spec_dirs(near) -> list[Path]:
    local = [Path(near).resolve().parent] if near is not None else []
    return _unique(local + user_roots() + [SHIPPED])


def shipped_specs() -> list[str]:
    """The names of the specs shipped with specc."""
    return sorted(p.stem for p in SHIPPED.glob("*.yaml"))


def spec_file(name: str, near: str | Path | None, loc: Loc | None) -> Path:
    """The spec NAME (file NAME.yaml): next to `near`, then in the user's folders,
    then among the shipped specs."""
    stem = name[:-5] if name.endswith(".yaml") else name
    dirs = _spec_dirs(near)
    found = _first((d / f"{stem}.yaml" for d in dirs), near, name, loc, "spec")
    if found is None:
        known = sorted({p.stem for d in dirs if d.is_dir() for p in d.glob("*.yaml")})
        raise SpecError(f"no spec '{stem}' ({_looked(dirs)})", loc, span=len(name),
                        expected=did_you_mean(stem, known))
    return found


def is_spec_name(text: str) -> bool:
    """A bare spec name (no folder part, no .yaml), as opposed to a path."""
    return bool(text) and os.sep not in text and "/" not in text and not Path(text).is_file()


def spec_argument(text: str) -> Path:
    """A spec given on the command line or to specc.load(): an existing file, or
    the name of a spec on the search path or shipped with specc."""
    path = Path(text).expanduser()
    if path.is_file():
        return path
    if is_spec_name(text):
        # a spec name: the current folder counts as the place it is named from
        return spec_file(text, Path.cwd() / "_", None)
    raise SpecError(f"spec file '{text}' not found", None,
                    expected=f"an existing file, or the name of a spec ({', '.join(shipped_specs()[:6])}, ...)")
