"""bin/bench's rows per Keras backend: decoding timed on the running backend, the
precision targets, and the side-by-side comparison of two backends' results.

Runs under TensorFlow and, without TensorFlow, under JAX (`make test-jax`).
"""

import keras
import numpy as np
import pytest

from syntax_t2t import registry
from syntax_t2t.benchmarks import backends, decoding_speed, flops, precision_part, report
from syntax_t2t.cli import registration
from syntax_t2t.hparams import HParams

pytestmark = pytest.mark.backends

registration.import_all(registration.MODELING_MODULES)


def _tiny_transformer():
    hparams = registry.hparams("transformer_tiny")
    hparams.parse("hidden_size=8,filter_size=16,num_heads=2,num_encoder_layers=1,"
                  "num_decoder_layers=1")
    keras.utils.set_random_seed(0)
    model = registry.model("transformer")(hparams, {"inputs": 20, "targets": 20})
    batch = {"inputs": np.array([[5, 6, 7, 1], [8, 9, 10, 1]], np.int32),
             "targets": np.array([[5, 6, 1, 0], [7, 1, 0, 0]], np.int32)}
    model(batch, training=False)
    return model, batch


def test_decoding_is_timed_on_the_running_backend():
    model, batch = _tiny_transformer()
    results = decoding_speed.measure_decoding(model, batch, output_tokens=5, beam_sizes=(2,),
                                              repetitions=1)
    assert sorted(results) == ["beam2"]
    for entry in results.values():
        assert entry["sentences"] == 2 and entry["output_tokens"] == 5
        assert entry["cached"]["sentences_per_second"] > 0
        assert entry["cached"]["tokens_per_second"] == pytest.approx(
            5 * entry["cached"]["sentences_per_second"])
        # The uncached reference is TensorFlow's: timed there, left out elsewhere.
        tensorflow = keras.backend.backend() == "tensorflow"
        assert ("uncached" in entry) == ("speedup" in entry) == tensorflow
        if tensorflow:
            assert entry["identical_outputs"] == 1.0


def _summary(value):
    return {"median": value, "low": value, "high": value, "count": 1, "spread": 0.0}


def _case(model, step, ratio):
    return {"model": model, "step_time": _summary(step * ratio), "ratio": _summary(ratio),
            "thesis_variant": model != "transformer", "baseline": "transformer",
            "relative": False, "hparams_set": None, "tokens_per_second": 100.0,
            "peak_memory_mib": 1.0, "parameters": 10}


def _results(backend, step, variant_ratio, sentences_per_second, precision=None):
    results = {
        "date": "2000-01-01T00:00:00", "machine": "CPU: test", "memory_method": "test",
        "settings": {"backend": backend, "hparams_set": "transformer_tiny",
                     "precision": "float32", "xla": backend == "jax", "sentences": 8,
                     "length": 16, "repetitions": 1, "steps_per_repetition": 1,
                     "warmup_steps": 2, "batch_tokens": 128},
        "training": {"cases": {
            "transformer": _case("transformer", step, 1.0),
            "tree_distance": _case("tree_distance", step, variant_ratio)}, "skipped": {}},
        "efficiency": {"mfu": {"transformer": 0.1}, "step_flops": 1e9, "peak_flops": 1e10,
                       "matmul_size": 256},
        "decoding": {"beam4": {"cached": {"sentences_per_second": sentences_per_second,
                                          "tokens_per_second": 20 * sentences_per_second,
                                          "seconds": _summary(1 / sentences_per_second)},
                               "peers": {}, "output_tokens": 20, "sentences": 1}},
    }
    if precision:
        results["precision"] = precision
    return results


def test_the_comparison_gives_each_backend_its_rows_and_the_ratio_to_the_first():
    comparison = backends.compare({
        "tensorflow": _results("tensorflow", 0.040, 1.05, 10.0),
        "jax": _results("jax", 0.010, 1.20, 25.0)})
    rows = comparison["rows"]
    step = rows["training step transformer"]
    assert step["values"] == {"tensorflow": pytest.approx(40.0), "jax": pytest.approx(10.0)}
    assert step["ratios"] == {"jax": pytest.approx(0.25)}
    assert rows["step time tree_distance / transformer"]["ratios"]["jax"] == pytest.approx(
        1.20 / 1.05)
    assert rows["decoding beam4 cached"]["ratios"]["jax"] == pytest.approx(2.5)
    assert rows["decoding beam4 cached"]["unit"] == "sentences/s"
    table = backends.format_comparison(comparison)
    assert "| training step transformer | ms | 40.00 | 10.00 | 0.25 |" in table
    assert "jax / tensorflow" in table


def test_a_row_one_backend_lacks_has_no_ratio():
    jax = _results("jax", 0.010, 1.2, 25.0)
    del jax["decoding"]
    comparison = backends.compare({"tensorflow": _results("tensorflow", 0.04, 1.05, 10.0),
                                   "jax": jax})
    row = comparison["rows"]["decoding beam4 cached"]
    assert row["values"] == {"tensorflow": 10.0} and row["ratios"] == {}
    assert "| decoding beam4 cached | sentences/s | 10.00 | n/a | n/a |" in (
        backends.format_comparison(comparison))


def test_backends_are_checked():
    assert backends.check_backends(["jax", "tensorflow"], "tensorflow") == ["tensorflow", "jax"]
    with pytest.raises(backends.BackendsError, match="runs from the TensorFlow environment"):
        backends.check_backends(["tensorflow", "jax"], "jax")
    with pytest.raises(backends.BackendsError, match="unknown backend"):
        backends.check_backends(["tensorflow", "torch"], "tensorflow")
    with pytest.raises(backends.BackendsError, match="two or more"):
        backends.check_backends(["tensorflow"], "tensorflow")
    with pytest.raises(backends.BackendsError, match="no Python at"):
        backends.jax_python("/nonexistent/python")


def test_the_bfloat16_targets_come_from_the_precision_part():
    precision = {"float32": {"step_time": _summary(0.030), "ratio": _summary(1.0)},
                 "mixed_bfloat16": {"step_time": _summary(0.010), "ratio": _summary(1 / 3)}}
    results = _results("jax", 0.03, 1.05, 10.0, precision)
    results["efficiency"].update(precision_mfu={"float32": 0.5, "mixed_bfloat16": 0.35},
                                 peak_flops_by_dtype={"float32": 1e14, "bfloat16": 5e14})
    targets = {target.name: target for target in report.evaluate_targets(results)}
    speed = targets["speed mixed_bfloat16 / float32 (step time float32 / mixed_bfloat16)"]
    assert speed.measured == pytest.approx(3.0) and speed.holds
    mfu = targets["MFU of mixed_bfloat16 against the bfloat16 matmul rate (%)"]
    assert mfu.measured == pytest.approx(35.0) and not mfu.holds
    table = report.format_table(results)
    assert "| mixed_bfloat16 | 10 ±0% | 0.33 | 35.0% |" in table
    assert "float32 100.00 TFLOP/s, bfloat16 500.00 TFLOP/s" in table
    # JAX's decoding rows say that the uncached reference was not timed there.
    assert "| beam4 (1 × 20 tokens) | cached | 10.00 | 200 | not measured" in table
    # Without a bfloat16 setting there is no such target.
    del results["precision"]["mixed_bfloat16"]
    assert not [name for name in (t.name for t in report.evaluate_targets(results))
                if "bfloat16" in name]


def test_the_precision_part_compares_policies_and_under_jax_never_xla_off():
    assert precision_part.compared_settings("mixed_bfloat16", "false", "jax") == {
        "float32": ("float32", True), "mixed_bfloat16": ("mixed_bfloat16", True)}
    assert precision_part.compared_settings("float32", "true", "jax") == {}
    assert precision_part.compared_settings("mixed_bfloat16", "true", "tensorflow") == {
        "float32": ("float32", False), "mixed_bfloat16": ("mixed_bfloat16", False),
        "float32 + XLA": ("float32", True), "mixed_bfloat16 + XLA": ("mixed_bfloat16", True)}
    assert precision_part.compared_settings("float32", "false", "tensorflow") == {}


def test_each_policy_is_measured_against_the_matmul_rate_of_its_compute_dtype():
    rates = {"float32": 1000.0, "bfloat16": 4000.0}
    mfu = flops.policies_mfu(100, {"a": ("float32", 1.0), "b": ("mixed_bfloat16", 0.5)}, 16,
                             rates)
    assert mfu == {"a": pytest.approx(0.1), "b": pytest.approx(0.05)}
    assert rates == {"float32": 1000.0, "bfloat16": 4000.0}  # nothing measured again
