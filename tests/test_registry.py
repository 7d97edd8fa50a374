"""Registry: default names, clashes, re-imports, unknown-name suggestions, usr_dir."""

import importlib
import sys
import textwrap

import pytest

from syntax_t2t import registry
from syntax_t2t.cli import registration


@pytest.mark.parametrize("name, expected", [
    ("TransformerBase", "transformer_base"),
    ("SyntheticSyntaxReorder", "synthetic_syntax_reorder"),
    ("PUDSyntaxCsEn", "pud_syntax_cs_en"),
    ("transformer_tiny", "transformer_tiny"),
    ("DepParse2", "dep_parse2"),
])
def test_snake_case(name, expected):
    assert registry.snake_case(name) == expected


def test_default_name_is_snake_case_and_explicit_name_wins():
    table = registry.Registry("thing")

    @table.register
    class MyFancyModel:
        pass

    @table.register("custom")
    def other():
        pass

    assert table.get("my_fancy_model") is MyFancyModel
    assert table.get("custom") is other
    assert table.names() == ["custom", "my_fancy_model"]


def test_registering_a_different_object_under_a_taken_name_fails():
    table = registry.Registry("model")

    @table.register("dup")
    class First:
        pass

    class Second:
        pass

    with pytest.raises(registry.RegistryError, match="'dup' is already registered"):
        table.register("dup")(Second)
    assert table.get("dup") is First


def test_unknown_name_lists_registered_and_suggests_closest():
    table = registry.Registry("problem")
    for name in ("czeng_syntax", "pud_syntax_cs_en", "synthetic_syntax_reorder"):
        table.register(name)(type(name, (), {}))
    with pytest.raises(registry.RegistryError) as error:
        table.get("czeng_syntx")
    message = str(error.value)
    assert "unknown problem 'czeng_syntx'" in message
    assert "Did you mean czeng_syntax" in message
    assert "pud_syntax_cs_en" in message and "synthetic_syntax_reorder" in message


def _write_user_module(directory, body):
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "my_hparams.py").write_text(textwrap.dedent(body))


USER_MODULE = """
    from syntax_t2t import registry
    from syntax_t2t.hparams import HParams

    @registry.register_hparams
    def my_user_set_for_tests():
        return HParams(hidden_size=7)
"""


def test_usr_dir_registers_and_reimport_is_not_a_clash(tmp_path):
    usr_dir = tmp_path / "usr_plugins"
    _write_user_module(usr_dir, USER_MODULE)
    registration.import_usr_dir(str(usr_dir))
    assert registry.hparams("my_user_set_for_tests").hidden_size == 7
    # Reloading the same module re-registers an equal object: no error.
    importlib.reload(sys.modules["usr_plugins.my_hparams"])
    assert registry.hparams("my_user_set_for_tests").hidden_size == 7


def test_usr_dir_errors_name_the_directory_and_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such directory"):
        registration.import_usr_dir(str(tmp_path / "missing"))
    broken = tmp_path / "broken_plugins"
    broken.mkdir()
    (broken / "bad.py").write_text("raise RuntimeError('boom')\n")
    with pytest.raises(ImportError, match=r"bad\.py failed: RuntimeError: boom"):
        registration.import_usr_dir(str(broken))


def test_builtins_are_registered():
    registration.import_all()
    assert {"transformer_base", "transformer_relative", "transformer_small",
            "transformer_tiny"} <= set(registry.hparams_sets.names())
    help_text = registry.help_string()
    assert "hparams sets (" in help_text and "  transformer_base" in help_text


@pytest.mark.parametrize("doc, expected", [
    ("Encoder-decoder Transformer (Vaswani et al. 2017) with T2T's choices.\n\n    Args: x",
     "Encoder-decoder Transformer (Vaswani et al. 2017) with T2T's choices."),
    ("Shaw et al. relative positions (max 20). More text.", "Shaw et al. relative positions (max 20)."),
    ("One line\n    that wraps. Second sentence.", "One line that wraps."),
    ("No full stop", "No full stop"),
    (None, ""),
])
def test_summary_is_the_first_sentence(doc, expected):
    def thing():
        pass
    thing.__doc__ = doc
    assert registry.summary(thing) == expected


def test_every_builtin_has_a_one_line_description_in_registry_help():
    # A user finds `transformer_tiny` from --registry_help, not by reading hparams/ (#34 item 4).
    registration.import_all()
    lines = registry.help_string().splitlines()
    for table in (registry.problems, registry.models, registry.hparams_sets, registry.experiments):
        for name in table.names():
            if not table.get(name).__module__.startswith("syntax_t2t."):
                continue  # a user's, registered by another test (a --usr_dir)
            line = next(line for line in lines if line.split()[:1] == [name])
            description = line.split(None, 1)[1] if len(line.split()) > 1 else ""
            assert len(description) > 10, f"{table.kind} {name} has no description"
            assert description == registry.summary(table.get(name))
