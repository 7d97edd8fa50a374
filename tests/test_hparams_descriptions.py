"""`bin/train --print_hparams`: every registered parameter is described, values print as --hparams takes them."""

import os
import subprocess
import sys
from pathlib import Path

from hypothesis import given, strategies as st

from syntax_t2t.hparams_sets.descriptions import DESCRIPTIONS, describe
from syntax_t2t import registry
from syntax_t2t.cli import registration
from syntax_t2t.hparams import HParams, format_literal, parse_literal, parse_overrides

REPO = Path(__file__).resolve().parents[1]


def registered_parameters():
    registration.import_all()
    return {name: set(registry.hparams(name).values()) for name in registry.hparams_sets.names()}


def test_every_parameter_of_every_registered_set_is_described():
    undescribed = {name: sorted(parameters - set(DESCRIPTIONS))
                   for name, parameters in registered_parameters().items()
                   if parameters - set(DESCRIPTIONS)}
    assert not undescribed


def test_no_description_outlives_its_parameter():
    used = set().union(*registered_parameters().values())
    assert set(DESCRIPTIONS) <= used


def test_descriptions_are_one_line():
    assert all(text and "\n" not in text and len(text) < 100 for text in DESCRIPTIONS.values())


def test_describe_lines_parse_back_to_the_hparams():
    hparams = HParams(pos="upos", spec_heads=[1, 2], nsd_side="none", dropout_of_mine=0.5)
    lines = describe(hparams).splitlines()
    settings = ",".join(line.split("  # ")[0].strip() for line in lines)
    assert parse_overrides(settings) == hparams.values()
    by_name = {line.split("=")[0]: line for line in lines}
    assert by_name["pos"].endswith("# " + DESCRIPTIONS["pos"])
    assert by_name["dropout_of_mine"].endswith("# (no description)")


literals = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-10**9, 10**9),
              st.floats(allow_nan=False, allow_infinity=False),
              st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=8).filter(
                  lambda s: not ("'" in s and '"' in s))),
    lambda children: st.lists(children, max_size=4), max_leaves=8)


@given(literals)
def test_format_literal_round_trips(value):
    assert parse_literal(format_literal(value)) == value


def test_print_hparams_prints_the_resolved_set_and_exits():
    env = {key: value for key, value in os.environ.items()}
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    result = subprocess.run(
        [str(REPO / "bin" / "train"), "--hparams_set=transformer_tiny",
         "--hparams=pos=upos,spec_heads=[1,2]", "--print_hparams"],
        capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    registration.import_all()
    assert len(lines) == len(registry.hparams("transformer_tiny").values())
    assert "pos=upos" in lines[[line.split("=")[0] for line in lines].index("pos")]
    assert any(line.startswith("spec_heads=[1,2] ") for line in lines)
    assert any(line.startswith("hidden_size=64 ") for line in lines)
