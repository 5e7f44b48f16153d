"""Deployment formats as query-time knobs: the quantization schemes of
specs/formats/schemes.yaml applied to any spec.

`weights=SCHEME` stores every matrix its recipe names (the linear layers, or the
routed experts only) in the scheme — codes plus scales plus zero points, counted
exactly from the matrix's shape — while every other tensor (embeddings, head,
norms, biases, routers) keeps the bytes per parameter of the spec's format.
`kv=SCHEME` re-sizes the entries of the kv-tagged stores. A spec's named format
may name a scheme itself (`scheme:` / `kv:` in `formats:`); the knobs override it.

The chosen format travels through the query families as a `FormatChoice`: a str
(the spec format's name, so every existing lookup keeps working) that also carries
the weight and KV schemes."""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

import sympy as sp

from ...dsl.errors import SpecError, did_you_mean
from ...dsl.search_path import SHIPPED
from ...dsl.yamlload import Map, Seq, load_yaml_file

SCHEMES_FILE = SHIPPED / "formats" / "schemes.yaml"
# element type names a KV scheme rebinds in a store's entry size (scale types fp4/e8m0 stay)
_ELEMENT_NAMES = ("fp32", "bf16", "fp16", "fp8", "e4m3", "e5m2", "int8")
_SUFFIX = re.compile(r"^(?P<base>[a-z0-9_]+?)_g(?P<group>[1-9][0-9]{0,5})$")


@dataclass(frozen=True)
class WeightScheme:
    name: str
    element: Fraction          # bytes per value
    group: object              # "tensor" | "channel" | int (inputs per scale) | (b0, b1)
    scale: Fraction            # bytes per scale
    zero: Fraction             # bytes per zero point (per scale group)
    tensor_scale: Fraction     # bytes per matrix copy
    compute: str               # math type a time query uses by default
    groups: tuple              # parameter groups the recipe quantizes
    recipe: str
    doc: str
    source: str

    def scales(self, i, o):
        """Scale groups of one copy of a matrix W[i, o] (i inputs, o outputs)."""
        if self.group == "tensor":
            return sp.Integer(1) if self.scale or self.zero else sp.Integer(0)
        if self.group == "channel":
            return o
        if isinstance(self.group, tuple):
            return sp.ceiling(sp.sympify(i) / self.group[0]) * sp.ceiling(sp.sympify(o) / self.group[1])
        return sp.ceiling(sp.sympify(i) / self.group) * o

    def matrix_bytes(self, i, o, copies):
        """Exact bytes of `copies` copies of W[i, o] in this scheme."""
        per_copy = (i * o * _r(self.element) + self.scales(i, o) * (_r(self.scale) + _r(self.zero))
                    + _r(self.tensor_scale))
        return copies * per_copy

    def quantizes(self, op, weight) -> bool:
        return op.kind == "matmul" and len(weight.shape) == 2 and weight.group in self.groups


@dataclass(frozen=True)
class KVScheme:
    name: str
    element: Fraction          # bytes per element (a layout's: of kv stores without its tag)
    tag: str | None            # a layout replaces the entries of stores with this tag
    layout: tuple              # ((elements, bytes, is_scale), ...)
    doc: str
    source: str
    block: int | None = None   # the page size (tokens) the engine's kernels for it require

    @property
    def entry_bytes(self) -> Fraction:
        return sum((Fraction(n) * b for n, b, _ in self.layout), Fraction(0))

    @property
    def values(self) -> int:
        return sum(n for n, _, scale in self.layout if not scale)


def _r(value: Fraction):
    return sp.Rational(value.numerator, value.denominator)


class FormatChoice(str):
    """A spec format's name carrying the weight and KV schemes a query applies."""

    weights: WeightScheme | None
    kv: KVScheme | None
    compute: str | None

    def __new__(cls, name: str, weights=None, kv=None, compute=None, loc=None):
        obj = super().__new__(cls, name)
        obj.weights, obj.kv, obj.compute, obj.loc = weights, kv, compute, loc
        return obj


# ------------------------------------------------------------------ the table
def _fraction(node, what: str) -> Fraction:
    try:
        value = Fraction(str(node).strip())
    except (ValueError, ZeroDivisionError):
        raise SpecError(f"{what} must be an exact number such as 1/2, got {str(node)!r}",
                        getattr(node, "loc", None), expected="an integer or a fraction") from None
    if value < 0:
        raise SpecError(f"{what} must not be negative", getattr(node, "loc", None), expected="a value >= 0")
    return value


def _int(node, what: str) -> int:
    text = str(node).strip()
    if not text.isdigit() or int(text) < 1:
        raise SpecError(f"{what} must be a positive integer, got {text!r}", getattr(node, "loc", None),
                        expected="e.g. 128")
    return int(text)


def _text(entry: Map, key: str, what: str, default=None) -> str:
    value = entry.get(key, default)
    if value is None:
        raise SpecError(f"{what} has no '{key}:'", entry.loc, expected=f"{key}: ...")
    return " ".join(str(value).split())


@lru_cache(maxsize=None)
def table(path: str = str(SCHEMES_FILE)) -> tuple[dict, dict, frozenset]:
    """(weight schemes, KV schemes, schemes that take a _gN group suffix) of the schemes file."""
    raw = load_yaml_file(path)
    recipes = {}
    for name, entry in (raw.get("recipes") or {}).items():
        recipes[name] = tuple(str(g) for g in entry.get("groups") or ())
    weights = {}
    for name, entry in (raw.get("weights") or {}).items():
        what = f"weight scheme '{name}'"
        group = entry.get("group")
        if isinstance(group, Seq):
            if len(group) != 2:
                raise SpecError(f"{what}'s group tile must be two sizes", group.loc, expected="[128, 128]")
            group = tuple(_int(g, f"{what}'s group") for g in group)
        elif str(group) not in ("tensor", "channel"):
            group = _int(group, f"{what}'s group (tensor, channel, N or [b0, b1])")
        else:
            group = str(group)
        recipe = _text(entry, "recipe", what)
        if recipe not in recipes:
            raise SpecError(f"{what} names unknown recipe '{recipe}'", entry["recipe"].loc,
                            expected=did_you_mean(recipe, recipes))
        weights[str(name)] = WeightScheme(
            str(name), _fraction(entry["element"], f"{what}'s element"), group,
            _fraction(entry.get("scale", "0"), f"{what}'s scale"), _fraction(entry.get("zero", "0"), f"{what}'s zero"),
            _fraction(entry.get("tensor_scale", "0"), f"{what}'s tensor_scale"), _text(entry, "compute", what),
            recipes[recipe], recipe, _text(entry, "doc", what), _text(entry, "source", what))
    kv = {}
    for name, entry in (raw.get("kv") or {}).items():
        what = f"KV scheme '{name}'"
        if entry.get("layout") is not None:
            parts = tuple((_int(p["elements"], f"{what}'s layout elements"), _fraction(p["bytes"], f"{what}'s layout bytes"),
                           str(p.get("scale", "false")) == "true") for p in entry["layout"])
            kv[str(name)] = KVScheme(str(name), _fraction(entry["element"], f"{what}'s element"),
                                     _text(entry, "tag", what), parts,
                                     _text(entry, "doc", what), _text(entry, "source", what),
                                     _int(entry["block"], f"{what}'s block") if entry.get("block") is not None else None)
        else:
            kv[str(name)] = KVScheme(str(name), _fraction(entry["element"], f"{what}'s element"), None, (),
                                     _text(entry, "doc", what), _text(entry, "source", what))
    suffixed = {str(n) for n, e in (raw.get("weights") or {}).items() if str(e.get("group_suffix", "false")) == "true"}
    return weights, kv, frozenset(suffixed)


def weight_scheme(name: str, loc) -> WeightScheme:
    """The weight scheme NAME (int4_g64: the int4 scheme with groups of 64 inputs)."""
    weights, _, suffixed = table()
    if name in weights:
        return weights[name]
    m = _SUFFIX.match(name)
    if m and m["base"] in suffixed:
        base = weights[m["base"]]
        return WeightScheme(name, base.element, int(m["group"]), base.scale, base.zero, base.tensor_scale,
                            base.compute, base.groups, base.recipe, base.doc, base.source)
    names = list(weights) + [f"{s}_g64" for s in suffixed]
    raise SpecError(f"unknown weight scheme '{name}'", loc, span=len(name),
                    expected=did_you_mean(name, names) + " (specs/formats/schemes.yaml)")


def kv_scheme(name: str, loc) -> KVScheme:
    _, kv, _ = table()
    if name not in kv:
        raise SpecError(f"unknown KV scheme '{name}'", loc, span=len(name),
                        expected=did_you_mean(name, kv) + " (specs/formats/schemes.yaml)")
    return kv[name]


# ------------------------------------------------------------------ applied to a spec
def choose(engine, args) -> FormatChoice:
    """The format of a query call: the spec format (format=, else its default) with the
    weights=/kv=/compute= knobs, each defaulting to what the spec format names."""
    fmt = args.name("format") or engine.spec.default_format
    if fmt not in engine.spec.formats:
        raise SpecError(f"unknown format '{fmt}'", args.node_loc("format") if args.raw("format") else args.loc,
                        expected=did_you_mean(fmt, engine.spec.formats))
    fdef = engine.spec.formats[fmt]
    # a query takes the knobs that change its answer (weight_bytes no kv=, kv_bytes_per_token no weights=)
    w_name = args.name("weights") if args.declares("weights") else None
    kv_name = args.name("kv") if args.declares("kv") else None
    w_loc = args.node_loc("weights") if w_name else getattr(fdef, "loc", None)
    kv_loc = args.node_loc("kv") if kv_name else getattr(fdef, "loc", None)
    w_name = w_name or getattr(fdef, "scheme", None)
    kv_name = kv_name or getattr(fdef, "kv", None)
    weights = weight_scheme(str(w_name), w_loc) if w_name else None
    kv = kv_scheme(str(kv_name), kv_loc) if kv_name else None
    compute = args.name("compute") if args.declares("compute") else None
    return FormatChoice(fmt, weights, kv, compute, kv_loc if args.declares("kv") and args.raw("kv") else args.loc)


def compute_dtype(fmt) -> tuple[str | None, str]:
    """(math type for a time query, why): compute= wins, else the weight scheme's, else None
    (the device's default rate)."""
    if getattr(fmt, "compute", None):
        return fmt.compute, "compute="
    if getattr(fmt, "weights", None) is not None:
        return fmt.weights.compute, f"weights={fmt.weights.name}"
    return None, "default"


def weight_bytes(engine, model, fmt, op, weight):
    """Stored bytes of one weight of an op (all its copies) in the chosen format."""
    scheme = getattr(fmt, "weights", None)
    if scheme is not None and scheme.quantizes(op, weight):
        i, o = weight.shape
        return scheme.matrix_bytes(i, o, weight.copies)
    return weight.params * engine.bytes_per_param(model, fmt, weight.group)


def store_entry_bytes(engine, model, store: str, fmt, node):
    """Bytes of one entry of a store in the chosen format: the spec's expression, or with
    a KV scheme the same expression with its element types bound to the scheme's size
    (a layout scheme replaces the entry of a store that carries its tag)."""
    from ..schema.expressions import Evaluator
    from ..schema.symbols import model_env

    scheme = getattr(fmt, "kv", None)
    sdef = engine.spec.stores[store]
    if scheme is None or "kv" not in sdef.tags:
        return engine.constant(model, node)
    key = (id(model), id(node), scheme.name)
    if key in engine.sums:
        return engine.sums[key]
    env = model_env(model)
    if scheme.layout and not any(scheme.tag in s.tags for s in engine.spec.stores.values()):
        raise SpecError(f"kv={scheme.name} is the layout of a store tagged '{scheme.tag}' (an MLA latent cache); "
                        f"{engine.spec.model} has none", getattr(fmt, "loc", None), span=len(scheme.name),
                        expected="kv=fp8, or a spec whose latent store carries tags: [kv, latent]")
    if scheme.layout and scheme.tag not in sdef.tags and any(scheme.tag in s.tags for s in engine.spec.stores.values()):
        tagged = next(n for n, s in engine.spec.stores.items() if scheme.tag in s.tags)
        raise SpecError(f"kv={scheme.name} lays out store '{tagged}' (tag {scheme.tag}), but under these options "
                        f"the cache is store '{store}'", getattr(fmt, "loc", None), span=len(scheme.name),
                        expected=f"the spec option that caches '{tagged}' (e.g. the compressed MLA path), or kv=fp8")
    if scheme.layout and scheme.tag in sdef.tags:
        elements = Evaluator(dict(env, **{n: sp.Integer(1) for n in _ELEMENT_NAMES}), what="name")(node)
        if elements != scheme.values:
            raise SpecError(f"KV scheme '{scheme.name}' lays out {scheme.values} values per entry; store "
                            f"'{store}' holds {elements}", sdef.loc,
                            expected=f"a {scheme.values}-value latent entry (latent and rotary values together)")
        value = _r(scheme.entry_bytes)
    else:
        value = Evaluator(dict(env, **{n: _r(scheme.element) for n in _ELEMENT_NAMES}), what="name")(node)
        if _names_no_type(node):
            raise SpecError(f"store '{store}' gives its entry size without an element type, so kv={scheme.name} "
                            "cannot re-size it", sdef.loc, expected="bytes written with bf16/fp16/fp32, "
                            "e.g. 2*n_kv*d_h*bf16")
    engine.sums[key] = value
    return value


def _names_no_type(node) -> bool:
    from ...dsl import ast

    def walk(n):
        if isinstance(n, ast.Name):
            yield n.id
        for child in getattr(n, "__dict__", {}).values():
            if isinstance(child, ast.Node):
                yield from walk(child)
            elif isinstance(child, (tuple, list)):
                for c in child:
                    if isinstance(c, ast.Node):
                        yield from walk(c)

    return not any(name in _ELEMENT_NAMES for name in walk(node))


def markdown_table() -> str:
    """The README's table of schemes (generated from specs/formats/schemes.yaml)."""
    weights, kv, suffixed = table()
    lines = ["| knob | scheme | bytes per value | scales | recipe | compute | source |", "|---|---|---|---|---|---|---|"]
    for s in weights.values():
        group = {"tensor": "per matrix", "channel": "per output channel"}.get(s.group) if isinstance(s.group, str) \
            else (f"per {s.group[0]}×{s.group[1]} tile" if isinstance(s.group, tuple) else f"per {s.group} inputs")
        scales = "none" if not (s.scale or s.zero) else f"{s.scale} B {group}"
        if s.zero:
            scales += f" + {s.zero} B zero point"
        if s.tensor_scale:
            scales += f" + {s.tensor_scale} B per matrix"
        name = f"`{s.name}`" + (f", `{s.name}_gN`" if s.name in suffixed else "")
        lines.append(f"| weights= | {name} | {s.element} | {scales} | {s.recipe} | {s.compute} | {s.source} |")
    for s in kv.values():
        size = f"{s.element}" if not s.layout else \
            " + ".join(f"{n}×{b}" for n, b, _ in s.layout) + f" = {s.entry_bytes} B per entry"
        lines.append(f"| kv= | `{s.name}` | {size} | {'layout' if s.layout else 'per-layer scales'} | "
                     f"{'stores tagged ' + s.tag if s.tag else 'kv-tagged stores'} | — | {s.source} |")
    return "\n".join(lines)


README_BEGIN = "<!-- schemes table: generated from specs/formats/schemes.yaml by `python -m specc.compiler.deploy.schemes README.md`; do not edit -->"
README_END = "<!-- end of schemes table -->"


def update_readme(path: str) -> bool:
    """Rewrite the marked schemes table of a README from specs/formats/schemes.yaml; True if it changed."""
    from ...dsl.marked_section import replace_marked

    return replace_marked(path, README_BEGIN, README_END, markdown_table())


if __name__ == "__main__":  # pragma: no cover
    import sys

    for readme in sys.argv[1:] or ["README.md"]:
        print(f"{readme}: {'updated' if update_readme(readme) else 'up to date'}")
