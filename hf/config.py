"""A Hugging Face `config.json`, read safely and able to say where each field is.

The file is decoded as UTF-8 and parsed with `json` (never evaluated); nesting
deeper than the json_depth limit (dsl/limits.py) is refused before parsing (json would recurse). Fields are
read through the family's attribute map (`fields`, e.g. n_embd for
hidden_size) and its class defaults (`defaults`, what transformers assumes when a
config omits a field). Every problem is a SpecError located in config.json.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

from ..dsl.errors import Loc, SpecError

MAX_LAYERS = 10_000     # more layers than any model has: a typo or a hostile file
MAX_DIM = 1 << 24       # widths, heads, vocabularies, positions
# fields of a wrapper config (one with a text_config) that describe the whole checkpoint
OUTER_FIELDS = ("torch_dtype", "dtype", "quantization_config", "_name_or_path")


def _depth_error(text: str, path: str):
    """The error at the position where nesting first exceeds the `json_depth` limit
    (strings skipped), or None: json.loads recurses once per level."""
    from ..dsl.limits import limit, limit_error

    max_depth = limit("json_depth")
    depth, in_str, esc = 0, False, False
    for i, ch in enumerate(text):
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch in "[{":
            depth += 1
            if depth > max_depth:
                line = text.count("\n", 0, i) + 1
                col = i - (text.rfind("\n", 0, i) + 1) + 1
                return limit_error("json_depth", Loc(path, line, col))
        elif ch in "]}":
            depth -= 1
    return None


def _confine_model_file(path: Path) -> None:
    """A config.json that is a link may lead only within its model folder, or, for a
    Hugging Face cache snapshot (models--org--name/snapshots/<rev>/), within that
    model's cache folder (where the snapshot's links point, into blobs/). A link
    leading elsewhere is refused and its target never read or echoed."""
    if not path.is_symlink():
        return
    folder = path.parent.resolve()
    root = folder.parent.parent if folder.parent.name == "snapshots" else folder
    target = path.resolve()
    if target != root and root not in target.parents:
        raise SpecError(f"{path} is a link that leads outside its model folder", Loc(str(path), 1, 1, ""),
                        expected="a config.json inside the model folder (or a Hugging Face cache "
                                 "snapshot's link into its blobs/); the link's target is not read")


class Config:
    """A parsed config.json that can say where each key is."""

    def __init__(self, path: str):
        self.path = str(path)
        self.aliases: dict = {}      # canonical field -> the family's config field
        self.defaults: dict = {}     # config field -> value when omitted
        self.within: tuple = ()      # ("text_config",) when the fields read are a wrapper's text model's
        _confine_model_file(Path(path))
        try:
            raw = Path(path).read_bytes()
        except OSError as exc:
            raise SpecError(f"cannot read {path}: {exc.strerror}", None) from None
        # size, BOM, UTF-16, NUL bytes and invalid UTF-8: the same located errors as a spec's
        from ..dsl.yamlload import decode_bytes

        self.text = decode_bytes(raw, self.path)
        deep = _depth_error(self.text, self.path)
        if deep:
            raise deep
        try:
            self.data = json.loads(self.text)
        except json.JSONDecodeError as exc:
            raise SpecError(f"not valid JSON: {exc.msg}", Loc(self.path, exc.lineno, exc.colno),
                            expected="a Hugging Face config.json") from None
        if not isinstance(self.data, dict):
            raise SpecError("config.json must be a JSON object", Loc(self.path, 1, 1), expected="{...}")

    def enter(self, key: str) -> None:
        """Read the fields of the object `key` from now on (a wrapper's text_config);
        fields it lacks that describe the whole checkpoint (dtype, quantization) are
        still read from the wrapper."""
        self.outer = self.data
        self.data = {k: v for k, v in self.outer.items() if k in OUTER_FIELDS} | self.data[key]
        self.within = (key,)

    # ------------------------------------------------------------ positions
    def loc(self, *keys: str) -> Loc:
        """Where `"key":` is (nested keys are searched after their parent; a wrapper's
        text fields are searched inside its text_config)."""
        offset = 0
        for key in (*self.within, *(part for k in keys for part in k.split("."))):
            found = re.compile(r'"%s"\s*:' % re.escape(key)).search(self.text, offset)
            if not found:
                break
            offset = found.start()
        line = self.text.count("\n", 0, offset) + 1
        col = offset - (self.text.rfind("\n", 0, offset) + 1) + 1
        return Loc(self.path, line, col)

    def error(self, key: str, message: str, expected: str | None = None, *parents: str):
        key = self.name(key)
        return SpecError(message, self.loc(*parents, key), span=len(key) + 2, expected=expected)

    # ------------------------------------------------------------ values
    def name(self, key: str) -> str:
        """The config field a canonical name is read from: the name itself when the
        config has it, else the first of the family's spellings of it that the config
        has (hidden_size → n_embd; transformers 5: num_experts → num_local_experts)."""
        if self._raw(key) is not None or key not in self.aliases:
            return key
        names = self.aliases[key]
        names = [names] if isinstance(names, str) else list(names)
        for alt in names:
            if self._raw(alt) is not None:
                return alt
        return names[0]

    def _raw(self, key: str):
        """The value of `key` in the config; `a.b` is field b of the object a
        (transformers 5 moved e.g. partial_rotary_factor into rope_parameters)."""
        value = self.data
        for part in key.split("."):
            if not isinstance(value, dict):
                return None
            value = value.get(part)
        return value

    def has(self, key: str) -> bool:
        return self._raw(self.name(key)) is not None

    def get(self, key: str, default=None):
        key = self.name(key)
        value = self._raw(key)
        if value is None:
            value = self.defaults.get(key)
        return default if value is None else value

    def int(self, key: str, default=None, *, minimum: int = 1, maximum: int = MAX_DIM, family: str = "") -> int:
        value = self.get(key)
        if value is None:
            if default is not None:
                return default
            raise SpecError(f"config has no '{self.name(key)}' (model_type {family} needs it)", Loc(self.path, 1, 1),
                            expected=f'a "{self.name(key)}": <integer> field')
        if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= maximum:
            raise self.error(key, f"'{self.name(key)}' must be an integer >= {minimum} (at most {maximum}), "
                             f"got {json.dumps(value)}", f"an integer >= {minimum}")
        return value

    def flag(self, key) -> bool:
        if isinstance(key, bool):
            return key
        value = self.get(key)
        if value is None:
            return False
        if not isinstance(value, bool):
            raise self.error(key, f"'{self.name(key)}' must be true or false, got {json.dumps(value)}",
                             "true or false")
        return value

    def number(self, key: str, default):
        value = self.get(key, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
            raise self.error(key, f"'{self.name(key)}' must be a fraction from 0 to 1, got {json.dumps(value)}",
                             "a number from 0 to 1")
        return value

    # ------------------------------------------------------------ rules (see specs/hf/families.yaml)
    def rule(self, rule, default=None):
        """(value, field) of a family rule: a constant, a field name, {field, default,
        default_times_hidden} or a list of {if: FLAG, value: RULE} cases."""
        if rule is None:
            return default, None
        if isinstance(rule, bool) or isinstance(rule, (int, float)):
            return rule, None
        if isinstance(rule, str):
            return self.get(rule, default), rule
        if isinstance(rule, dict) and "length" in rule:            # a per-layer list's length
            key = rule["length"]
            value = self.get(key)
            if not isinstance(value, (list, str)) or not value:
                raise self.error(key, f"'{self.name(key)}' must list the layers", "a non-empty list or string")
            return len(value), None
        if isinstance(rule, dict) and "auto_ffn" in rule:          # the ⅔·size FFN sizing rule
            return self._auto_ffn(rule["auto_ffn"]), None
        if isinstance(rule, dict) and "scale_hidden" in rule:      # a factor × hidden_size, maybe rounded up
            from fractions import Fraction

            key = rule["scale_hidden"]
            factor = self.get(key)
            if isinstance(factor, bool) or not isinstance(factor, (int, float)) or factor <= 0:
                raise self.error(key, f"'{self.name(key)}' must be a positive number", "a number > 0")
            value = Fraction(factor) * self.int("hidden_size")
            step = self.int(rule["multiple_of"]) if "multiple_of" in rule else None
            return (math.ceil(value / step) * step if step else math.floor(value)), None
        if isinstance(rule, dict) and "product" in rule:           # e.g. heads × head width
            value = 1
            for key in rule["product"]:
                value *= self.int(key)
            return value, None
        if isinstance(rule, dict) and "hidden_per" in rule:        # K·hidden_size // FIELD (a derived head width)
            return rule.get("times", 1) * self.int("hidden_size") // self.int(rule["hidden_per"]), None
        if isinstance(rule, dict) and "times_hidden" in rule:      # e.g. expansion_ratio × d_model
            key = rule["times_hidden"]
            return self.int(key) * self.int("hidden_size"), None
        if isinstance(rule, dict):
            key = rule["field"]
            if isinstance(key, list):       # the first spelling the config has
                key = next((k for k in key if self.get(k) is not None), key[0])
            if self.get(key) is not None:
                return self.get(key), key
            if "divide" in rule and self.get(key) is not None:    # e.g. intermediate_size // 2
                return self.int(key) // rule["divide"], key
            if "plus" in rule:            # e.g. a position table of max_position_embeddings + 2
                return self.int(key) + rule["plus"] if self.get(key) is not None else rule.get("default", default), key
            if "default_times_hidden" in rule:
                return rule["default_times_hidden"] * self.int("hidden_size"), key
            return rule.get("default", default), key
        for case in rule:
            if "if_set" in case:          # the case applies when the field is present (not null)
                if self.get(case["if_set"]) is not None:
                    return self.rule(case["value"], default)
            elif "if" not in case or self.flag(case["if"]):
                return self.rule(case["value"], default)
        return default, None

    def _auto_ffn(self, r: dict) -> int:
        """The ⅔·size FFN sizing rule: f = ⌊2·size/3⌋ when `auto` is set, then ⌊multiplier·f⌋
        rounded up to a multiple of `multiple_of` when a multiplier is given (exact:
        the multiplier's binary value as a Fraction)."""
        from fractions import Fraction

        f = self.int(r["size"])
        if not self.flag(r["auto"]):
            return f
        f = 2 * f // 3
        mult = self.get(r["multiplier"])
        if mult is None:
            return f
        if isinstance(mult, bool) or not isinstance(mult, (int, float)) or mult <= 0:
            raise self.error(r["multiplier"], f"'{r['multiplier']}' must be a positive number", "a number > 0")
        f = math.floor(Fraction(mult) * f)
        step = self.int(r["multiple_of"])
        return step * ((f + step - 1) // step)

    def rule_flag(self, rule, default=False) -> bool:
        value, key = self.rule(rule, default)
        if not isinstance(value, bool):
            if key is None and isinstance(value, int) and value in (0, 1):
                return bool(value)
            raise self.error(key or "model_type", f"'{key}' must be true or false, got {json.dumps(value)}",
                             "true or false")
        return value

    def rule_int(self, rule, default=None, *, minimum: int = 1, family: str = "") -> int:
        value, key = self.rule(rule, default)
        if key is not None and self.get(key) is not None:
            base = self.int(key, minimum=minimum, family=family)
            if isinstance(rule, dict) and "divide" in rule:
                return base // rule["divide"]
            if isinstance(rule, dict) and "times" in rule:      # e.g. sub-layers per configured layer
                return base * rule["times"]
            return base + rule["plus"] if isinstance(rule, dict) and "plus" in rule else base
        if value is None:
            raise SpecError(f"config has no '{key}' (model_type {family} needs it)", Loc(self.path, 1, 1),
                            expected=f'a "{key}": <integer> field')
        return value
