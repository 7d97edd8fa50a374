"""Resolving --mixed_precision and --xla, and the scoped Keras dtype policy."""

import keras
import pytest
import tensorflow as tf

from syntax_t2t.training import precision


@pytest.mark.parametrize("capabilities, expected", [
    ([], "float32"),                    # CPU only
    ([(8, 0)], "mixed_bfloat16"),       # A100
    ([(9, 0), (9, 0)], "mixed_bfloat16"),
    ([(7, 0)], "mixed_float16"),        # V100: no native bfloat16
    ([(8, 6), (7, 5)], "mixed_float16"),  # the weakest GPU decides
])
def test_auto_precision_follows_the_hardware(capabilities, expected):
    assert precision.resolve_precision("auto", capabilities) == expected


@pytest.mark.parametrize("choice", ["float32", "mixed_float16", "mixed_bfloat16"])
def test_explicit_precision_is_kept_whatever_the_hardware(choice):
    assert precision.resolve_precision(choice, []) == choice
    assert precision.resolve_precision(choice, [(9, 0)]) == choice


def test_auto_follows_the_devices_tensorflow_sees():
    if tf.config.list_physical_devices("GPU"):
        assert precision.resolve_precision("auto").startswith("mixed_")
        assert precision.resolve_xla("auto") is True
    else:
        assert precision.resolve_precision("auto") == "float32"
        assert precision.resolve_xla("auto") is False


@pytest.mark.parametrize("choice, has_gpu, expected", [
    ("auto", True, True), ("auto", False, False),
    ("true", False, True), ("false", True, False)])
def test_xla(choice, has_gpu, expected):
    assert precision.resolve_xla(choice, has_gpu) is expected


def test_unknown_choices_are_rejected():
    with pytest.raises(ValueError, match="--mixed_precision='float64'"):
        precision.resolve_precision("float64", [])
    with pytest.raises(ValueError, match="--xla='yes'"):
        precision.resolve_xla("yes", False)


def test_only_float16_needs_loss_scaling():
    assert precision.needs_loss_scaling("mixed_float16")
    assert not precision.needs_loss_scaling("mixed_bfloat16")
    assert not precision.needs_loss_scaling("float32")


def test_dtype_policy_applies_inside_the_block_and_is_restored():
    before = keras.config.dtype_policy().name
    with precision.dtype_policy("mixed_bfloat16"):
        layer = keras.layers.Dense(2)
    assert layer.compute_dtype == "bfloat16" and layer.variable_dtype == "float32"
    assert keras.config.dtype_policy().name == before
    with pytest.raises(RuntimeError):
        with precision.dtype_policy("mixed_float16"):
            raise RuntimeError("boom")
    assert keras.config.dtype_policy().name == before
