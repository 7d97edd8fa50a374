"""Typed hyper-parameters with T2T-style `--hparams` overrides.

    hp = HParams(hidden_size=512, dropout=0.1, pos="xpos", layers=[0, 1])
    hp.parse("hidden_size=256,dropout=0,layers=[2]")

Every parameter has a type fixed when it is defined (inferred from the
default, or given explicitly for `None` defaults). Overrides are checked
against it: an int may widen to a float, nothing else converts silently.
Override strings are parsed by a small literal grammar, never by `eval`:
integers, floats, `true`/`false`, `none`, bare or quoted strings, and
bracketed lists of those.
"""

import difflib
import json
import re

_TYPES = {"int": int, "float": float, "bool": bool, "str": str, "list": list}
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_INT = re.compile(r"[+-]?\d+\Z")
_FLOAT = re.compile(r"[+-]?(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?\Z")


class HParamsError(ValueError):
    """A malformed override, an unknown name or a wrong type."""


def _type_name(value):
    if value is None:
        return None
    for name, type_ in _TYPES.items():
        # bool is a subclass of int: test the exact type.
        if type(value) is type_:
            return name
    raise HParamsError(
        f"unsupported hparam value {value!r} of type {type(value).__name__}; "
        f"use int, float, bool, str or list")


def _check(name, type_name, value, element_type=None, noun="hparam"):
    """Returns `value` converted to `type_name` where that is lossless."""
    if value is None or type_name is None:
        return value
    if type_name == "float" and type(value) is int:
        return float(value)
    if type_name == "list" and type(value) is list:
        if element_type is not None:
            return [_check(f"{name}[{i}]", element_type, v, noun=noun)
                    for i, v in enumerate(value)]
        return value
    if _type_name(value) != type_name:
        raise HParamsError(
            f"{noun} {name!r} is {type_name}, got {_type_name(value)} {value!r}")
    return value


def parse_literal(text, context=""):
    """Parses one override value: int, float, bool, none, str or [list]."""
    text = text.strip()
    where = f" in {context!r}" if context else ""
    if text.startswith("["):
        if not text.endswith("]"):
            raise HParamsError(f"unclosed list {text!r}{where}")
        inner = text[1:-1].strip()
        return [parse_literal(item, context) for item in _split(inner, context)] if inner else []
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered == "none":
        return None
    if _INT.match(text):
        return int(text)
    if _FLOAT.match(text):
        return float(text)
    if not text or any(c in text for c in "[],=\"'"):
        raise HParamsError(f"malformed value {text!r}{where}")
    return text


def format_literal(value):
    """`value` as `parse_literal` reads it back: what `--hparams` takes."""
    if isinstance(value, list):
        return "[" + ",".join(format_literal(item) for item in value) + "]"
    if value is None or isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, str):
        if value and value.strip() == value and not any(c in value for c in "[],=\"'"):
            if parse_literal(value) == value:
                return value
        return f'"{value}"' if "'" in value else f"'{value}'"
    return repr(value)


def _split(text, context):
    """Splits on commas that are not inside brackets or quotes."""
    parts, depth, quote, start = [], 0, None, 0
    for i, char in enumerate(text):
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
            if depth < 0:
                raise HParamsError(f"unbalanced ']' in {context or text!r}")
        elif char == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    if depth or quote:
        raise HParamsError(f"unbalanced brackets or quotes in {context or text!r}")
    parts.append(text[start:])
    return parts


def parse_overrides(text):
    """`'a=1,b=[1,2]'` -> `{'a': 1, 'b': [1, 2]}` (values not type-checked)."""
    overrides = {}
    if not text or not text.strip():
        return overrides
    for part in _split(text, text):
        if not part.strip():
            continue
        if "=" not in part:
            raise HParamsError(f"malformed override {part.strip()!r} in {text!r}: expected name=value")
        name, value = part.split("=", 1)
        name = name.strip()
        if not _NAME.match(name):
            raise HParamsError(f"malformed hparam name {name!r} in {text!r}")
        if name in overrides:
            raise HParamsError(f"hparam {name!r} given twice in {text!r}")
        overrides[name] = parse_literal(value, text)
    return overrides



def replace_override(text, name, value):
    """`text` (`--hparams` syntax) with `name` set to `value`, its other overrides as they were.

    `replace_override("beam_size=4,alpha=0.6", "alpha", 1.5)` is
    `"beam_size=4,alpha=1.5"`; a name that `text` lacks is appended.
    """
    parts = [part.strip() for part in _split(text, text) if part.strip()] if text else []
    setting = f"{name}={value!r}"
    replaced = [setting if part.split("=", 1)[0].strip() == name else part for part in parts]
    if setting not in replaced:
        replaced.append(setting)
    return ",".join(replaced)

# Ranges of the hyper-parameters every model shares, checked before a run starts
# (`HParams.validate`): name -> (lowest allowed, highest allowed or None, whether
# the highest is excluded). Every `*dropout` name is a probability in [0, 1).
_RANGES = {
    "hidden_size": (1, None, False),
    "filter_size": (1, None, False),
    "num_heads": (1, None, False),
    "num_encoder_layers": (1, None, False),
    "num_decoder_layers": (0, None, False),
    "batch_size": (1, None, False),
    "max_length": (1, None, False),
    "learning_rate": (0, None, False),
    "learning_rate_warmup_steps": (0, None, False),
    "clip_grad_norm": (0, None, False),
    "label_smoothing": (0, 1, True),
}
_PROBABILITY = (0, 1, True)


def _range_of(name):
    return _RANGES.get(name, _PROBABILITY if name.endswith("dropout") else None)


class HParams:
    """A set of typed hyper-parameters, read as attributes.

    Args:
        **defaults: name=value pairs; each value fixes the parameter's type.
            Use `define` for parameters whose default is `None`.
    """

    # What messages call a parameter (subclasses hold other typed settings).
    _noun = "hparam"

    def __init__(self, **defaults):
        object.__setattr__(self, "_values", {})
        object.__setattr__(self, "_types", {})
        object.__setattr__(self, "_element_types", {})
        object.__setattr__(self, "_nullable", set())
        for name, value in defaults.items():
            self.define(name, value)

    def define(self, name, default, type_name=None, element_type=None):
        """Adds a parameter.

        Args:
            name: a Python identifier.
            default: the default value (may be None).
            type_name: "int", "float", "bool", "str" or "list"; inferred from
                `default` when omitted. A `None` default with no type accepts
                the type of the first value it is given.
            element_type: for lists, the type of the elements; inferred from a
                non-empty default.
        Returns:
            self, for chaining.
        """
        if not _NAME.match(name) or name.startswith("_"):
            raise HParamsError(f"invalid hparam name {name!r}")
        if name in self._values:
            raise HParamsError(f"hparam {name!r} is already defined")
        type_name = type_name or _type_name(default)
        if type_name is not None and type_name not in _TYPES:
            raise HParamsError(f"unknown hparam type {type_name!r} for {name!r}")
        if type_name == "list" and element_type is None and default:
            element_type = _type_name(default[0])
        self._types[name] = type_name
        self._element_types[name] = element_type
        if default is None:
            self._nullable.add(name)
        self._values[name] = _check(name, type_name, default, element_type)
        return self

    def define_like(self, other: "HParams", name: str) -> "HParams":
        """Adds `other`'s parameter `name`: its value, type and nullability."""
        self.define(name, other._values[name], other._types[name], other._element_types[name])
        if name not in other._nullable:
            self._nullable.discard(name)
        return self

    def __getattr__(self, name):
        values = object.__getattribute__(self, "_values")
        if name in values:
            return values[name]
        raise AttributeError(self._unknown_message(name))

    def __setattr__(self, name, value):
        self.set(name, value)

    def __contains__(self, name):
        return name in self._values

    def __eq__(self, other):
        return isinstance(other, HParams) and self._values == other._values

    def __repr__(self):
        body = ", ".join(f"{k}={v!r}" for k, v in sorted(self._values.items()))
        return f"HParams({body})"

    def _unknown_message(self, name):
        close = difflib.get_close_matches(name, sorted(self._values), n=3, cutoff=0.6)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        return f"unknown {self._noun} {name!r}{hint}"

    def get(self, name, default=None):
        return self._values.get(name, default)

    def set(self, name, value):
        """Sets an existing parameter with type checking.

        `None` is accepted only by parameters whose default is `None`; for a
        string parameter the override text `none` stays the string "none"
        (e.g. `position_encoding=none`).
        """
        if name not in self._values:
            raise HParamsError(self._unknown_message(name))
        type_name = self._types[name]
        if value is None and name not in self._nullable:
            if type_name == "str":
                value = "none"
            else:
                raise HParamsError(f"{self._noun} {name!r} is {type_name} and cannot be none")
        if type_name is None and value is not None:
            type_name = _type_name(value)
            self._types[name] = type_name
        self._values[name] = _check(name, type_name, value, self._element_types[name], self._noun)

    def override(self, values):
        """Sets several parameters from a dict; all are checked before any is set."""
        trial = self.copy()
        for name, value in values.items():
            trial.set(name, value)
        self._values.update(trial._values)
        self._types.update(trial._types)
        return self

    def parse(self, text):
        """Applies a T2T-style override string, e.g. `'a=1,b=0.5,c=true,d=[1,2],e=name'`."""
        return self.override(parse_overrides(text))

    def validate(self):
        """Raises `HParamsError` for a value outside its range (`_RANGES`), naming them all.

        Returns:
            self.
        """
        problems = []
        for name, value in sorted(self._values.items()):
            bounds = _range_of(name)
            if bounds is None or isinstance(value, bool) or not isinstance(value, (int, float)):
                continue
            low, high, open_high = bounds
            if value < low or (high is not None and (value >= high if open_high else value > high)):
                allowed = (f"at least {low}" if high is None else
                           f"in [{low}, {high}{')' if open_high else ']'}")
                problems.append(f"{name}={value} (must be {allowed})")
        if problems:
            raise HParamsError(f"hparam values out of range: {'; '.join(problems)}")
        return self

    def values(self):
        """A plain dict copy of the values."""
        return {k: (list(v) if isinstance(v, list) else v) for k, v in self._values.items()}

    def copy(self):
        clone = type(self)()
        clone._values.update(self.values())
        clone._types.update(self._types)
        clone._element_types.update(self._element_types)
        clone._nullable.update(self._nullable)
        return clone

    def differences(self, other):
        """`{name: (self value, other value)}` for every parameter that differs."""
        names = sorted(set(self._values) | set(other._values))
        missing = object()
        diff = {}
        for name in names:
            mine, theirs = self._values.get(name, missing), other._values.get(name, missing)
            if mine != theirs:
                diff[name] = (None if mine is missing else mine,
                              None if theirs is missing else theirs)
        return diff

    def to_json(self, indent=2):
        return json.dumps({"values": self._values, "types": self._types,
                           "element_types": self._element_types,
                           "nullable": sorted(self._nullable)},
                          indent=indent, sort_keys=True)

    @classmethod
    def from_json(cls, text):
        data = json.loads(text)
        hparams = cls()
        for name in sorted(data["values"]):
            hparams.define(name, data["values"][name], data["types"].get(name),
                           data.get("element_types", {}).get(name))
        hparams._nullable.clear()
        hparams._nullable.update(data.get("nullable", []))
        return hparams
