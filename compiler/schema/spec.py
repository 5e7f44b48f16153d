"""The spec file as structured data: reads the YAML (with positions), checks its
schema and parses every string with the DSL grammar. No costs are computed here;
`build` turns a Spec into a graph."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ...dsl import ast
from ...dsl.errors import Loc, SpecError, did_you_mean, printable
from ...dsl.parser import parse_expr, parse_layer_set, parse_stmt
from ...dsl.search_path import relative_file
from ...dsl.yamlload import Map, Seq, Text, load_yaml_file
from .symbols import RESERVED

TOP_KEYS = {"model", "source", "description", "imports", "dims", "max_context", "sets", "options", "formats",
            "stores", "blocks", "elementwise", "stack", "claims", "claims_files", "notes",
            "training",  # training: checked here (Spec.training), used by compiler/query/training.py
            "pipeline"}  # pipeline: {pp: [layers per stage]}, checked here (Spec.pipeline), used by compiler/deploy/sharding.py
LIB_KEYS = {"description", "imports", "blocks", "elementwise", "notes"}


# ------------------------------------------------------------------ schema helpers
def check_keys(node, allowed: set, required: set = frozenset(), what: str = "mapping") -> Map:
    if not isinstance(node, Map):
        loc = getattr(node, "loc", None)
        raise SpecError(f"{what} must be a mapping", loc, expected=f"keys {', '.join(sorted(allowed))}")
    for key in node:
        if key not in allowed:
            raise SpecError(f"unknown key '{key}' in {what}", node.key_loc(key), span=len(key),
                            expected=did_you_mean(key, allowed))
    for key in sorted(required):
        if key not in node:
            raise SpecError(f"{what} is missing '{key}'", node.loc, expected=f"a '{key}:' entry")
    return node


def text(node, what: str, at=None) -> Text:
    """A scalar; `at` (a Loc) locates the error when the value is missing entirely."""
    if not isinstance(node, Text):
        loc = getattr(node, "loc", None) or at
        problem = "is empty" if node is None else "must be a single value (a string or number)"
        raise SpecError(f"{what} {problem}", loc, expected="a value such as 4096 or an expression")
    return node


def opt_text(node: Map, key: str, what: str, default: str = "") -> str:
    """An optional scalar field: its text, `default` when absent, an error when it is a list or mapping."""
    value = node.get(key)
    if value is None:
        return default
    return str(text(value, f"'{key}:' of {what}"))


def seq(node, what: str) -> Seq:
    if isinstance(node, Text):  # a single item is a list of one
        out = Seq([node])
        out.loc = node.loc
        return out
    if not isinstance(node, Seq):
        raise SpecError(f"{what} must be a list", getattr(node, "loc", None))
    return node


def name(node, what: str) -> Text:
    value = text(node, what)
    if not value.replace("_", "a").isalnum() or value[0].isdigit():
        raise SpecError(f"{what} '{value}' is not a valid name", value.loc, span=len(value),
                        expected="letters, digits and underscores, not starting with a digit")
    return value


# ------------------------------------------------------------------ parsed pieces
@dataclass
class StateDecl:
    store: Text
    entries: ast.Node
    when: ast.Node | None
    loc: Loc


@dataclass
class BlockDef:
    name: str
    doc: str
    params: dict            # name -> default AST or None
    inputs: dict            # tensor name -> width AST
    outputs: list           # tensor names
    ops: list               # ast.Stmt
    state: list             # StateDecl
    reads: list             # StateDecl
    loc: Loc
    file: str
    writes: list = field(default_factory=list)   # StateDecl: entries one decode step writes


@dataclass
class Segment:
    name: str
    block: BlockDef
    layers: ast.LayerSetExpr | str | None   # a layer-set expression, a set name, or None
    bindings: dict          # block param -> AST
    start: ast.Node | None  # first new position this segment processes (default S)
    stage: str
    loc: Loc
    state: list = field(default_factory=list)   # ("state" | "reads" | "writes", StateDecl)
    op_stages: dict = field(default_factory=dict)  # op target name -> stage it is attributed to


@dataclass
class OptionDef:
    name: str
    default: str
    choices: dict           # choice -> {var: AST}
    doc: str
    loc: Loc


@dataclass
class StoreDef:
    name: str
    tags: tuple
    bytes: dict             # format name (or 'default') -> AST bytes per entry
    doc: str
    loc: Loc
    shard: object = None    # tp split: None/'replicated', or an AST counting the pieces (e.g. n_kv)


@dataclass
class FormatDef:
    name: str
    weights: dict           # param group (or 'default') -> AST bytes per parameter
    default: bool
    doc: str
    loc: Loc
    scheme: str | None = None   # a weight scheme of specs/formats/schemes.yaml (the release's format)
    kv: str | None = None       # a KV scheme of specs/formats/schemes.yaml


@dataclass
class Spec:
    path: str
    model: str
    source: str
    description: str
    dims: dict              # name -> AST (or tuple of ASTs for lists), in order
    max_context: ast.Node | None
    sets: dict              # name -> LayerSetExpr
    options: dict           # name -> OptionDef
    formats: dict           # name -> FormatDef
    stores: dict            # name -> StoreDef
    blocks: dict            # name -> BlockDef
    elementwise: set
    stack: list             # Segment
    claims: list = field(default_factory=list)       # raw Map nodes
    claims_files: list = field(default_factory=list)
    raw: Map | None = None
    sources: list = field(default_factory=list)      # the spec file and every library it imports
    # SHA-256 of each source's bytes as parsed into this Spec (caches key answers by these,
    # never by a later read: a file edited while specc runs would lend its new hash)
    source_hashes: dict = field(default_factory=dict)
    training: "TrainingSection | None" = None        # the training: section, checked at load
    pipeline: dict = field(default_factory=dict)     # pp -> PipelineSplit (the pipeline: section)

    @property
    def default_format(self) -> str:
        for fmt in self.formats.values():
            if fmt.default:
                return fmt.name
        return next(iter(self.formats), "default")


# ------------------------------------------------------------------ loading
def _format_schemes(value) -> tuple:
    """A format's `scheme:` and `kv:` names, checked against specs/formats/schemes.yaml."""
    from ..deploy.schemes import kv_scheme, weight_scheme

    out = []
    for key, check in (("scheme", weight_scheme), ("kv", kv_scheme)):
        name_ = value.get(key)
        if name_ is not None:
            check(str(name_), name_.loc)
        out.append(str(name_) if name_ is not None else None)
    return tuple(out)


def _parse_block(block_name: Text, node, file: str) -> BlockDef:
    node = check_keys(node, {"doc", "params", "inputs", "outputs", "ops", "state", "reads", "writes"},
                      {"ops"},
                      f"block '{block_name}'")
    params: dict = {}
    raw_params = node.get("params")
    if isinstance(raw_params, Map):
        for key, default in raw_params.items():
            params[key] = parse_expr(text(default, f"default of '{key}'")) if default is not None else None
    elif raw_params is not None:
        for item in seq(raw_params, "params"):
            params[str(name(item, "block parameter"))] = None
    inputs: dict = {}
    raw_inputs = node.get("inputs", None)
    if raw_inputs is None:
        raise SpecError(f"block '{block_name}' must declare its inputs and their widths", node.loc,
                        expected="inputs: {x: d}")
    for key, width in check_keys(raw_inputs, set(raw_inputs), set(), "inputs").items():
        inputs[key] = parse_expr(text(width, f"width of input '{key}'"))
    outputs = [str(name(o, "output")) for o in seq(node.get("outputs", Seq()), "outputs")] if "outputs" in node else []
    ops = [parse_stmt(text(op, "op statement")) for op in seq(node["ops"], "ops")]
    return BlockDef(str(block_name), opt_text(node, "doc", f"block '{block_name}'"), params, inputs, outputs or [ops[-1].targets[0]],
                    ops, _state_decls(node.get("state")), _state_decls(node.get("reads")), block_name.loc, file,
                    _state_decls(node.get("writes")))


def _state_decls(node) -> list:
    out = []
    if node is None:
        return out
    for item in seq(node, "state declarations"):
        item = check_keys(item, {"store", "entries", "when"}, {"store", "entries"}, "state declaration")
        when = parse_expr(text(item["when"], "when")) if item.get("when") is not None else None
        entries = parse_expr(text(item["entries"], "entries"))
        _check_entries_in_h(entries)
        out.append(StateDecl(name(item["store"], "store"), entries, when, item.loc))
    return out


def _check_entries_in_h(entries) -> None:
    """State entries are per request at context length H; the other scenario letters
    are a query's arguments, unknown when the state is declared (a formula in S or P
    would be printed as the answer, and tables and plots could not evaluate it)."""
    for node in entries.walk():
        if isinstance(node, ast.Name) and node.id in ("B", "S", "P", "G"):
            raise SpecError(f"state entries use '{node.id}', a query's scenario argument", node.loc,
                            span=len(node.id), expected="entries per request in H (the context length), "
                            "dimensions and layer, e.g. 'H' or 'min(H, window)'")


# the block library shipped with specc: always importable
SHIPPED_LIB = Path(__file__).resolve().parents[1] / "specs" / "lib"
_TREE: list = []   # the folder of the spec being loaded (its own tree is importable)


def allowed_import(path) -> bool:
    """Whether a spec may read `path`: inside the loading spec's own folder tree or
    the shipped library (a search path may add roots here). Nothing outside is
    read, so no error message can echo a foreign file's content."""
    from ...dsl.search_path import SHIPPED, roots as search_roots, user_roots

    path = Path(path).resolve()
    # the library and claims folders the search path looks in (a spec in specs/sub/ finds
    # specs/lib/), never the ancestors themselves
    near = [root / sub for root in search_roots(_TREE[-1]) for sub in ("lib", "claims")] if _TREE else []
    roots = [SHIPPED_LIB, SHIPPED, *_TREE[:1], *user_roots(), *near]
    return any(path == root or root in path.parents for root in roots)


def load_library(path: Path, blocks: dict, elementwise: set, seen: set):
    path = path.resolve()
    if not seen:   # a library loaded on its own (the block reference): its folder is the tree
        _TREE[:] = [path.parent, path]
    if path in seen:
        return
    seen.add(path)
    raw = load_yaml_file(path)
    raw = check_keys(raw, LIB_KEYS, set(), f"library {path.name}")
    _collect_common(raw, path, blocks, elementwise, seen)


def _collect_common(raw: Map, path: Path, blocks: dict, elementwise: set, seen: set):
    for imp in seq(raw.get("imports", Seq()), "imports") if "imports" in raw else []:
        # the importing file's folder (and parents), --path/SPECC_PATH, then specc's shipped library
        target = relative_file(str(text(imp, "import")), path, imp.loc, "imported file")
        if not allowed_import(target):
            raise SpecError(f"import '{imp}' leaves the allowed folders (the spec's own folder and the shipped "
                            "library)", imp.loc, span=len(imp), expected="a library file inside the spec's folder tree")
        if not target.is_file():
            raise SpecError(f"import '{imp}' is not a file", imp.loc, span=len(imp), expected="a YAML library file")
        if _TREE and target == _TREE[-1]:
            raise SpecError(f"the spec imports itself ('{imp}')", imp.loc, span=len(imp),
                            expected="library files (blocks, elementwise), not the spec")
        try:
            load_library(target, blocks, elementwise, seen)
        except SpecError as exc:
            if exc.loc is None or exc.loc.file != str(target) or exc.loc.line != 1 or exc.loc.col != 1:
                raise
            # a file-level problem of the import (unreadable, not UTF-8, ...): say which line imported it
            raise SpecError(f"{exc.message} (imported here)", imp.loc, span=len(imp), expected=exc.expected) from None
    for item in seq(raw.get("elementwise", Seq()), "elementwise") if "elementwise" in raw else []:
        elementwise.add(str(name(item, "elementwise op")))
    if "blocks" in raw:
        for block_name, body in check_keys(raw["blocks"], set(raw["blocks"]), set(), "blocks").items():
            key_text = Text(block_name, raw["blocks"].key_loc(block_name))
            if block_name in blocks and blocks[block_name].file != str(path):
                raise SpecError(f"block '{block_name}' is defined twice (also in {blocks[block_name].file})",
                                key_text.loc)
            blocks[block_name] = _parse_block(key_text, body, str(path))


# the shape each top-level key must have: "scalar", "mapping", "list" or "list-or-scalar"
TOP_TYPES = {"model": "scalar", "source": "scalar", "description": "scalar", "max_context": "scalar",
             "imports": "list-or-scalar", "dims": "mapping", "sets": "mapping", "options": "mapping",
             "formats": "mapping", "stores": "mapping", "blocks": "mapping", "elementwise": "list-or-scalar",
             "stack": "list", "claims": "list", "claims_files": "list-or-scalar", "training": "mapping",
             "pipeline": "mapping"}
_SHAPE = {"scalar": (Text,), "mapping": (Map,), "list": (Seq,), "list-or-scalar": (Seq, Text)}
_SHAPE_TEXT = {"scalar": "a single value (a string or number)", "mapping": "a mapping of names to values",
               "list": "a list", "list-or-scalar": "a list (or a single item)"}


def _check_top_types(raw: Map):
    """Every top-level key has one shape; `notes:` is free-form."""
    for key, shape in TOP_TYPES.items():
        if key not in raw:
            continue
        value = raw[key]
        if value is None and key not in ("model", "dims", "stack"):
            continue
        if not isinstance(value, _SHAPE[shape]):
            got = "empty" if value is None else {Map: "a mapping", Seq: "a list", Text: "a single value"}[type(value)]
            raise SpecError(f"'{key}:' must be {_SHAPE_TEXT[shape]}, got {got}", getattr(value, "loc", None)
                            or raw.key_loc(key), span=len(key) if value is None else 1,
                            expected=f"{key}: {_SHAPE_TEXT[shape]}")


# ------------------------------------------------------------------ training: and pipeline:
PRECISION_KEYS = {"weights", "gradients", "master"}


@dataclass
class TrainingSection:
    """The spec's `training:` section, checked at load (expressions stay ASTs; the
    conventions that use it are compiler/query/training.py's). precisions and optimizers are
    the recipes the spec adds or overrides; policies: name -> ({segment: (AST, Loc)},
    recompute AST or None), the first being the default."""
    loc: Loc | None = None
    declared: bool = False
    dtype: ast.Node | None = None
    precisions: dict = field(default_factory=dict)
    optimizers: dict = field(default_factory=dict)
    policies: dict = field(default_factory=dict)


def _training_section(raw, segments: set) -> TrainingSection:
    if raw is None:
        return TrainingSection()
    section = TrainingSection(raw.loc, True)
    raw = check_keys(raw, {"doc", "activation_dtype", "checkpointing", "precisions", "optimizers"}, set(),
                     "training")
    if raw.get("activation_dtype") is not None:
        section.dtype = parse_expr(text(raw["activation_dtype"], "activation_dtype"))
    for key, table, allowed in (("precisions", section.precisions, PRECISION_KEYS),
                                ("optimizers", section.optimizers, None)):
        node = raw.get(key)
        if node is None:
            continue
        for rname, body in check_keys(node, set(node), set(), key).items():
            body = check_keys(body or Map(), allowed or set(body or {}), set(), f"{key[:-1]} '{rname}'")
            table[rname] = {c: parse_expr(text(v, c)) for c, v in body.items()}
    node = raw.get("checkpointing")
    if node is not None:
        for pname, body in check_keys(node, set(node), set(), "checkpointing").items():
            body = check_keys(body, {"saved", "recompute", "doc"}, {"saved"}, f"checkpointing policy '{pname}'")
            saved = check_keys(body["saved"], set(body["saved"]), set(), f"saved of policy '{pname}'")
            for seg in saved:
                if seg not in segments:
                    raise SpecError(f"checkpointing policy '{pname}' names unknown stack segment '{seg}'",
                                    saved.key_loc(seg), span=len(seg), expected=did_you_mean(seg, segments))
            section.policies[pname] = (
                {seg: (parse_expr(text(v, seg)), saved.key_loc(seg)) for seg, v in saved.items()},
                parse_expr(text(body["recompute"], "recompute")) if body.get("recompute") is not None else None)
    return section


@dataclass(frozen=True)
class PipelineSplit:
    """A declared pipeline split: the layers of each stage, in order (their sum is checked
    against the compiled model's layers when a query asks for this pp)."""
    counts: tuple
    loc: Loc | None


def _pipeline_section(raw) -> dict:
    if raw is None:
        return {}
    if not isinstance(raw, Map):
        raise SpecError("pipeline: maps a pp degree to the layers of each stage", getattr(raw, "loc", None),
                        expected="pipeline: {4: [19, 21, 21, 19]}")
    out = {}
    for key, sizes in raw.items():
        where = raw.key_loc(key)
        if not str(key).isdigit() or int(str(key)) < 2:
            raise SpecError(f"pipeline: key '{key}' is not a pp degree", where, span=len(str(key)),
                            expected="an integer of at least 2, e.g. 4: [19, 21, 21, 19]")
        pp = int(str(key))
        at = getattr(sizes, "loc", None) or where
        if not isinstance(sizes, Seq) or not all(isinstance(x, Text) and str(x).isdigit() for x in sizes):
            raise SpecError(f"pipeline split for pp={pp} must list whole layer counts", at, expected="[19, 21, 21, 19]")
        counts = tuple(int(str(x)) for x in sizes)
        if len(counts) != pp or min(counts) < 1:
            raise SpecError(f"pipeline split for pp={pp} must give {pp} stages of at least one layer, got "
                            f"{list(counts)}", at, expected=f"{pp} positive counts")
        out[pp] = PipelineSplit(counts, at)
    return out


def claims_file(spec_path: Path, node) -> str:
    """A claims_files entry, checked where the spec names it: inside the spec's tree, an existing file."""
    from ...dsl.search_path import roots as search_roots

    entry = text(node, "claims file")
    # beside the spec, on the search path, or shipped (the order dsl/search_path.py documents)
    candidates = [root / str(entry) for root in search_roots(spec_path)]
    target = next((c.resolve() for c in candidates if c.is_file()), candidates[0].resolve())
    if not allowed_import(target):
        raise SpecError(f"claims file '{entry}' is outside the spec's folder", entry.loc, span=len(entry),
                        expected="a path inside the spec's folder tree")
    if not target.is_file():
        raise SpecError(f"claims file '{entry}' {'is a folder' if target.is_dir() else 'not found'} "
                        f"(looked for {target})", entry.loc, span=len(entry),
                        expected="a YAML file with a 'claims:' list, relative to the spec")
    return str(entry)


# the explorer's URL and page controls (render/site_assets/explorer.js: spec, device, scenario
# letters, degrees, rates, ...) and the Python API's own keywords (specc/api.py)
PAGE_CONTROLS = {"spec", "device", "memory", "workspace", "format", "overlap", "B", "S", "P", "G", "H",
                 "tp", "pp", "ep", "dp", "mfu", "mbu"}
API_KEYWORDS = {"symbolic", "fast", "overrides", "choices", "query", "self"}


def _check_option_name(key: str, loc) -> None:
    """An option is chosen by name in queries (`params(mode=x)`), on the page and in the
    API: a name that is also a query argument or a page control would capture it
    (`weight_bytes(format=fp8)` choosing the option, not the format)."""
    from ..query.query_registry import ARGUMENT_NAMES   # every argument some query declares

    if not key.isidentifier() or not key.isascii():
        raise SpecError(f"option name {printable(repr(key))} is not a name a query can write", loc,
                        span=max(1, len(key)), expected="letters, digits and '_', not starting with a digit")

    for what, names in (("a query argument", ARGUMENT_NAMES), ("a control of the explorer page", PAGE_CONTROLS),
                        ("a keyword of the Python API", API_KEYWORDS)):
        if key in names:
            raise SpecError(f"option name '{key}' is {what}: `{key}=` would mean both", loc, span=len(key),
                            expected=f"another name for the option (e.g. '{key}_choice')")


def load_spec(path: str | Path) -> Spec:
    path = Path(path)
    _TREE[:] = [path.resolve().parent, path.resolve()]   # its folder (importable) and itself (not)
    if path.is_dir():
        raise SpecError(f"{path} is a folder, not a spec file", Loc(str(path), 1, 1, ""), expected="a .yaml spec file")
    raw = load_yaml_file(path)
    if raw is None:
        raise SpecError("spec file is empty", Loc(str(path), 1, 1), expected="a mapping with 'model:' and 'stack:'")
    raw = check_keys(raw, TOP_KEYS, {"model", "dims", "stack"}, "spec")
    _check_top_types(raw)
    blocks: dict = {}
    elementwise: set = set()
    loaded = {path.resolve()}
    _collect_common(raw, path, blocks, elementwise, loaded)

    dims: dict = {}
    for key, value in check_keys(raw["dims"], set(raw["dims"]), set(), "dims").items():
        if key in RESERVED:
            raise SpecError(f"dimension name '{key}' is reserved", raw["dims"].key_loc(key), span=len(key),
                            expected=f"a name other than {', '.join(sorted(RESERVED))}")
        if isinstance(value, Seq):
            dims[key] = tuple(parse_expr(text(v, key)) for v in value)
        else:
            dims[key] = parse_expr(text(value, f"dimension '{key}'", raw["dims"].key_loc(key)))

    sets = {}
    for key, value in (check_keys(raw["sets"], set(raw["sets"]), set(), "sets").items() if "sets" in raw else []):
        sets[key] = parse_layer_set(text(value, f"layer set '{key}'"))

    options = {}
    for key, value in (raw.get("options") or {}).items():
        _check_option_name(key, raw["options"].key_loc(key))
        value = check_keys(value, {"default", "choices", "doc"}, {"default", "choices"}, f"option '{key}'")
        choices = {}
        for choice, binds in check_keys(value["choices"], set(value["choices"]), set(), "choices").items():
            binds = binds or Map()
            choices[choice] = {var: parse_expr(text(v, var)) for var, v in
                               check_keys(binds, set(binds), set(), f"choice '{choice}'").items()}
        default = text(value["default"], "default")
        if default not in choices:
            raise SpecError(f"default '{default}' is not one of the choices of option '{key}'", default.loc,
                            expected=did_you_mean(default, choices))
        options[key] = OptionDef(key, str(default), choices, opt_text(value, "doc", f"option '{key}'"), value.loc)

    formats = {}
    for key, value in (raw.get("formats") or {}).items():
        if value is not None and not isinstance(value, Map):
            raise SpecError(f"format '{key}' must be a mapping", value.loc,
                            expected="{default: true, weights: {default: 2}}")
        value = check_keys(value or Map(), {"default", "weights", "doc", "scheme", "kv"}, set(), f"format '{key}'")
        if value.get("weights") is not None:
            if not isinstance(value["weights"], Map):
                raise SpecError(f"'weights:' of format '{key}' must be a mapping of parameter groups to bytes per "
                                "parameter", value["weights"].loc, expected="weights: {default: 2}")
            check_keys(value["weights"], set(value["weights"]), set(), f"weights of format '{key}'")
        weights = {g: parse_expr(text(v, g, value["weights"].key_loc(g))) for g, v in (value.get("weights") or {}).items()}
        is_default = opt_text(value, "default", f"format '{key}'", "false").lower()
        if is_default not in ("true", "false"):
            raise SpecError(f"'default:' of format '{key}' must be true or false", value["default"].loc,
                            span=len(is_default), expected="true or false")
        formats[key] = FormatDef(key, weights, is_default == "true",
                                 opt_text(value, "doc", f"format '{key}'"), raw["formats"].key_loc(key),
                                 *_format_schemes(value))

    stores = {}
    for key, value in (raw.get("stores") or {}).items():
        value = check_keys(value, {"tags", "bytes", "doc", "shard"}, {"bytes"}, f"store '{key}'")
        byte_map = value["bytes"]
        if byte_map is None:
            raise SpecError(f"store '{key}' has empty bytes", raw["stores"].key_loc(key),
                            expected="bytes: <expression> or bytes: {format: <expression>}")
        if isinstance(byte_map, Text):
            per_format = {"default": parse_expr(byte_map)}
        else:
            per_format = {f: parse_expr(text(v, f)) for f, v in check_keys(byte_map, set(byte_map), set(), "bytes").items()}
            for fmt_name in per_format:
                if fmt_name != "default" and fmt_name not in formats:
                    raise SpecError(f"store '{key}' gives bytes for unknown format '{fmt_name}'",
                                    byte_map.key_loc(fmt_name), expected=did_you_mean(fmt_name, formats))
        tags = tuple(str(name(t, "tag")) for t in seq(value["tags"], "tags")) if value.get("tags") is not None else ()
        shard = value.get("shard")
        if shard is not None:
            shard = "replicated" if str(shard) == "replicated" else parse_expr(text(shard, "shard"))
        stores[key] = StoreDef(key, tags, per_format, opt_text(value, "doc", f"store '{key}'"), raw["stores"].key_loc(key),
                               shard)

    stack = []
    for item in seq(raw["stack"], "stack"):
        item = check_keys(item, {"name", "layers", "block", "ops", "inputs", "outputs", "with", "start", "stage",
                                 "doc", "state", "reads", "writes", "op_stages"}, {"name"}, "stack entry")
        seg_name = name(item["name"], "segment name")
        if any(seg.name == seg_name for seg in stack):
            raise SpecError(f"stack entry name '{seg_name}' is used twice", seg_name.loc, span=len(seg_name),
                            expected="a distinct name per stack entry (queries select by it)")
        if "block" in item and "ops" in item:
            raise SpecError(f"segment '{seg_name}' has both 'block' and 'ops'", item.loc, expected="one of them")
        if "block" in item:
            block_ref = name(item["block"], "block")
            if block_ref not in blocks:
                raise SpecError(f"unknown block '{block_ref}'", block_ref.loc, span=len(block_ref),
                                expected=did_you_mean(block_ref, blocks))
            block = blocks[block_ref]
        elif "ops" in item:
            inline = Map({k: item[k] for k in ("ops", "inputs", "outputs") if k in item})
            inline.loc, inline.key_locs = item.loc, {}
            block = _parse_block(seg_name, inline, str(path))
        else:
            raise SpecError(f"segment '{seg_name}' needs 'block:' or 'ops:'", item.loc)
        layers = None
        if "layers" in item:
            layer_text = text(item["layers"], "layers")
            layers = str(layer_text) if str(layer_text) in sets else parse_layer_set(layer_text)
        bindings = {}
        if item.get("with") is not None:
            check_keys(item["with"], set(item["with"]) if isinstance(item["with"], Map) else set(), set(),
                       f"'with' of segment '{seg_name}'")
        for key, value in (item.get("with") or {}).items():
            if key not in block.params:
                raise SpecError(f"block '{block.name}' has no parameter '{key}'", item["with"].key_loc(key),
                                span=len(key), expected=did_you_mean(key, block.params))
            bindings[key] = parse_expr(text(value, key))
        start = parse_expr(text(item["start"], "start")) if "start" in item else None
        stage = opt_text(item, "stage", f"stack entry '{seg_name}'", str(seg_name))
        opt_text(item, "doc", f"stack entry '{seg_name}'")
        if item.get("op_stages") is not None and not isinstance(item["op_stages"], Map):
            raise SpecError(f"'op_stages:' of stack entry '{seg_name}' must be a mapping", item["op_stages"].loc,
                            expected="op_stages: {target: stage}")
        seg_state = [("state", d) for d in _state_decls(item.get("state"))] + \
                    [("reads", d) for d in _state_decls(item.get("reads"))] + \
                    [("writes", d) for d in _state_decls(item.get("writes"))]
        op_stages = {str(k): str(text(v, "stage")) for k, v in (item.get("op_stages") or {}).items()}
        stack.append(Segment(str(seg_name), block, layers, bindings, start, stage, item.loc, seg_state, op_stages))

    claims_files = [claims_file(path, c) for c in seq(raw["claims_files"], "claims_files")] \
        if "claims_files" in raw else []
    spec = Spec(str(path), str(text(raw["model"], "model", raw.key_loc("model"))), opt_text(raw, "source", "the spec"), opt_text(raw, "description", "the spec"),
                dims, parse_expr(text(raw["max_context"], "max_context", raw.key_loc("max_context"))) if "max_context" in raw else None,
                sets, options, formats, stores, blocks, elementwise, stack,
                list(seq(raw["claims"], "claims")) if "claims" in raw else [], claims_files, raw,
                sorted(str(p) for p in loaded), training=_training_section(raw.get("training"), {seg.name for seg in stack}),
                pipeline=_pipeline_section(raw.get("pipeline")))
    from ...dsl.yamlload import READ_HASHES

    spec.source_hashes = {p: READ_HASHES.get(p) for p in spec.sources}
    if not spec.formats:
        spec.formats["default"] = FormatDef("default", {"default": parse_expr("2", "<builtin>")}, True, "", raw.loc)
    return spec
