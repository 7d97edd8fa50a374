"""HParams: typed overrides, suggestions, JSON round trip, differences."""

import pytest
from hypothesis import given, strategies as st

from syntax_t2t import registry
from syntax_t2t.cli import registration
from syntax_t2t.hparams import (HParams, HParamsError, parse_literal, parse_overrides,
                                replace_override)


def make():
    hp = HParams(a=0, b=0.0, c=False, d=[0], e="x", hidden_size=512)
    hp.define("maybe", None, "int")
    hp.define("anything", None)
    return hp


def test_parse_example_from_the_issue():
    hp = make().parse("a=1,b=0.5,c=true,d=[1,2],e=name")
    assert (hp.a, hp.b, hp.c, hp.d, hp.e) == (1, 0.5, True, [1, 2], "name")
    assert type(hp.b) is float


def test_int_widens_to_float_and_nothing_else_converts():
    hp = make().parse("b=2")
    assert hp.b == 2.0 and type(hp.b) is float
    for bad, pattern in [("a=0.5", "'a' is int, got float"),
                         ("a=true", "'a' is int, got bool"),
                         ("c=1", "'c' is bool, got int"),
                         ("e=3", "'e' is str, got int"),
                         ("d=[1,x]", r"'d\[1\]' is int, got str"),
                         ("d=5", "'d' is list, got int")]:
        with pytest.raises(HParamsError, match=pattern):
            make().parse(bad)


def test_quoted_strings_keep_numbers_as_text():
    assert make().parse("e='2019'").e == "2019"


def test_none_defaults_accept_typed_overrides():
    hp = make().parse("maybe=3,anything=0.25")
    assert hp.maybe == 3 and hp.anything == 0.25
    with pytest.raises(HParamsError, match="'maybe' is int"):
        make().parse("maybe=x")
    # Once set, a None-default parameter keeps the type it took.
    with pytest.raises(HParamsError, match="'anything' is float, got str"):
        hp.parse("anything=x")


def test_unknown_names_are_rejected_with_suggestions():
    with pytest.raises(HParamsError, match="unknown hparam 'hiden_size'; did you mean hidden_size"):
        make().parse("hiden_size=3")
    with pytest.raises(AttributeError, match="unknown hparam 'hiddensize'"):
        make().hiddensize  # noqa: B018


@pytest.mark.parametrize("text, pattern", [
    ("a", "expected name=value"),
    ("a=1,,b=[1", "unbalanced"),
    ("d=[1,2", "unbalanced"),
    ("1a=2", "malformed hparam name"),
    ("a=1,a=2", "given twice"),
    ("e=x]y", "unbalanced"),
    ("e=", "malformed value"),
])
def test_malformed_override_strings(text, pattern):
    with pytest.raises(HParamsError, match=pattern):
        make().parse(text)


def test_failed_parse_changes_nothing():
    hp = make()
    with pytest.raises(HParamsError):
        hp.parse("a=5,c=7")
    assert hp.a == 0


def test_parse_literal_is_not_eval():
    with pytest.raises(HParamsError):
        parse_literal("__import__('os').system('true')")
    assert parse_literal("none") is None
    assert parse_literal("[]") == []
    assert parse_literal("1e-9") == 1e-9
    assert parse_overrides("") == {}


def test_json_round_trip_keeps_values_and_types():
    hp = make().parse("maybe=4")
    back = HParams.from_json(hp.to_json())
    assert back == hp
    with pytest.raises(HParamsError, match="'maybe' is int"):
        back.parse("maybe=0.5")
    with pytest.raises(HParamsError, match="'d\\[0\\]' is int"):
        back.parse("d=[a]")


def test_differences_names_each_changed_value():
    base = make()
    other = make().parse("a=2,e=y")
    assert base.differences(other) == {"a": (0, 2), "e": ("x", "y")}
    assert base.differences(make()) == {}


values = st.one_of(st.integers(-10**6, 10**6), st.booleans(),
                   st.floats(allow_nan=False, allow_infinity=False, width=32),
                   st.from_regex(r"[a-z][a-z_]{0,8}", fullmatch=True).filter(
                       lambda s: s not in ("true", "false", "none")))


@given(st.dictionaries(st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True), values, max_size=6))
def test_override_strings_round_trip(mapping):
    text = ",".join(f"{k}={v!r}" if isinstance(v, float) else
                    f"{k}={str(v).lower() if isinstance(v, bool) else v}"
                    for k, v in mapping.items())
    assert parse_overrides(text) == mapping



@given(st.dictionaries(st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True), values, max_size=6),
       st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True),
       st.floats(0, 10, allow_nan=False))
def test_replacing_an_override_changes_that_one_only(mapping, name, value):
    text = ",".join(f"{k}={v!r}" if isinstance(v, (float, str)) else
                    f"{k}={str(v).lower() if isinstance(v, bool) else v}"
                    for k, v in mapping.items())
    replaced = replace_override(text, name, value)
    assert parse_overrides(replaced) == {**mapping, name: value}
    assert list(parse_overrides(replaced)) == list({**mapping, name: value})  # order kept


def test_replacing_an_override_keeps_brackets_and_quotes_whole():
    assert replace_override("beam_size=4,alpha=0.6", "alpha", 1.5) == "beam_size=4,alpha=1.5"
    assert replace_override("", "alpha", 1.0) == "alpha=1.0"
    assert replace_override("a=[1,2],s='x,y'", "alpha", 2.0) == "a=[1,2],s='x,y',alpha=2.0"

def test_registered_sets_build_on_each_other():
    registration.import_all()
    base = registry.hparams("transformer_base")
    relative = registry.hparams("transformer_relative")
    assert base.differences(relative) == {
        "max_relative_position": (0, 20), "position_encoding": ("sinusoid", "none"),
        "relative_value_bias": (False, True)}
    assert (base.hidden_size, base.filter_size, base.num_heads, base.batch_size,
            base.learning_rate, base.learning_rate_warmup_steps, base.adam_beta2) == (
        512, 2048, 8, 3072, 0.2, 8000, 0.997)
    # A fresh object each time: overriding one does not leak into the next.
    base.parse("hidden_size=8")
    assert registry.hparams("transformer_base").hidden_size == 512


def test_none_is_a_string_for_string_parameters_and_an_error_elsewhere():
    hp = make().parse("e=none")
    assert hp.e == "none"
    with pytest.raises(HParamsError, match="'a' is int and cannot be none"):
        make().parse("a=none")
    hp = make().parse("maybe=none")
    assert hp.maybe is None
    assert HParams.from_json(hp.to_json()).parse("maybe=none").maybe is None
    registration.import_all()
    assert registry.hparams("transformer_base").parse(
        "position_encoding=none").position_encoding == "none"
