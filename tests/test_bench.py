"""Tests of the benchmark harness: the FLOPs formula, the targets logic, and a smoke run.

Nothing here times anything: the smoke run only checks that `bin/bench`
writes a complete report.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from syntax_t2t import registry
from syntax_t2t.benchmarks import flops, report
from syntax_t2t.hparams import HParams

REPO = Path(__file__).resolve().parents[1]


def _tiny_hparams():
    return HParams(hidden_size=4, filter_size=8, num_encoder_layers=1, num_decoder_layers=1)


def test_forward_flops_matches_a_hand_count():
    # One sentence, S = 2 source and T = 3 target positions, D = 4, F = 8, V = 5.
    # Encoder layer: Q, K, V, O projections 4 x (2*S*D*D) = 4 x 64 = 256;
    #   scores Q K^T 2*S*S*D = 32 and weighted sum 32; FFN 2 x (2*S*D*F) = 256.
    encoder = 256 + 32 + 32 + 256
    # Decoder self-attention: 4 x (2*T*D*D) = 384, scores and sum 2 x (2*T*T*D) = 144.
    # Cross-attention: Q and O on the target 2 x (2*T*D*D) = 192, K and V on the
    #   source 2 x (2*S*D*D) = 128, scores and sum 2 x (2*T*S*D) = 96.
    # FFN 2 x (2*T*D*F) = 384. Softmax layer 2*T*D*V = 120.
    decoder = 384 + 144 + 192 + 128 + 96 + 384
    softmax = 120
    assert flops.forward_flops(_tiny_hparams(), 5, 1, 2, 3) == encoder + decoder + softmax
    # A batch of 7 sentences costs 7 times as much; training 3 times the forward.
    assert flops.training_step_flops(_tiny_hparams(), 5, 7, 2, 3) == 3 * 7 * (
        encoder + decoder + softmax)


def test_model_flops_utilisation_is_achieved_rate_over_peak():
    assert flops.model_flops_utilisation(50e9, 0.5, 200e9) == pytest.approx(0.5)


def _summary(values):
    values = sorted(values)
    median = values[len(values) // 2]
    return {"median": median, "low": values[0], "high": values[-1], "count": len(values),
            "spread": (values[-1] - values[0]) / median}


def _case(model, ratio, relative=False, thesis=True):
    return {"model": model, "relative": relative, "thesis_variant": thesis,
            "baseline": "transformer+relative" if relative else "transformer",
            "step_time": _summary([0.1 * ratio]), "tokens_per_second": 100.0 / ratio,
            "ratio": _summary([ratio]), "peak_memory_mib": 12.0, "parameters": 1000}


def _synthetic_results():
    return {
        "date": "2000-01-01T00:00:00", "machine": "CPU: test", "memory_method": "test",
        "command": "bin/bench",
        "settings": {"hparams_set": "transformer_tiny", "precision": "float32", "xla": False,
                     "sentences": 8, "length": 16, "repetitions": 1, "steps_per_repetition": 1,
                     "warmup_steps": 2, "batch_tokens": 128},
        "training": {"cases": {
            "transformer": _case("transformer", 1.0, thesis=False),
            "tree_distance": _case("tree_distance", 1.05),
            "dep_parse+relative": _case("dep_parse", 1.30, relative=True),
            "pascal": _case("pascal", 2.0, thesis=False),
        }, "skipped": {}},
        "torch_peer": {"torch": _summary([0.2]), "ours": _summary([0.1]),
                       "speed_ratio": _summary([0.8, 0.9, 1.2]), "our_parameters": 1000,
                       "torch_parameters": 1000},
        "decoding": {"beam4": {
            "cached": {"seconds": _summary([1.0]), "sentences_per_second": 4.0,
                       "tokens_per_second": 200.0},
            "uncached": {"seconds": _summary([6.0]), "sentences_per_second": 0.7,
                         "tokens_per_second": 33.0},
            "speedup": _summary([6.0]), "identical_outputs": 1.0, "output_tokens": 50,
            "sentences": 4}},
    }


def test_targets_hold_or_miss_by_their_bounds():
    targets = {target.name: target for target in report.evaluate_targets(_synthetic_results())}
    # Only the thesis variants get the step-time target (pascal is not one).
    assert not any("pascal" in name for name in targets)
    assert targets["step time tree_distance / transformer"].holds
    relative = targets["step time dep_parse+relative / transformer+relative"]
    assert not relative.holds and relative.measured == pytest.approx(1.30)
    # The peer's median ratio is 0.9: ours is slower, the target is missed.
    (peer,) = [target for name, target in targets.items() if "torch" in name]
    assert not peer.holds and peer.measured == pytest.approx(0.9)
    (decoding,) = [target for name, target in targets.items() if "beam-4" in name]
    assert decoding.holds and "50 output tokens" in decoding.name


def test_target_bounds_are_inclusive():
    assert report.Target("t", 1.10, 1.10, at_most=True).holds
    assert not report.Target("t", 1.1001, 1.10, at_most=True).holds
    assert report.Target("t", 5.0, 5.0, at_most=False).holds
    assert not report.Target("t", 4.99, 5.0, at_most=False).holds


def test_table_lists_every_case_and_target(tmp_path):
    results = _synthetic_results()
    table = report.format_table(results)
    for label in results["training"]["cases"]:
        assert f"| {label} |" in table
    assert "MISSED" in table and "holds" in table
    report.write_json(results, tmp_path / "bench.json")
    written = json.loads((tmp_path / "bench.json").read_text())
    assert [target["holds"] for target in written["targets"]] == [True, False, False, True]


@pytest.mark.slow
def test_bench_quick_run_reports_every_model(tmp_path):
    output_dir = tmp_path / "bench"
    completed = subprocess.run(
        [sys.executable, str(REPO / "bin" / "bench"), "--quick", "--hparams_set=transformer_tiny",
         "--repetitions=1", "--skip=scaling,decoding,torch", f"--output_dir={output_dir}"],
        cwd=REPO, capture_output=True, text=True, timeout=300,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
    assert completed.returncode == 0, completed.stderr[-3000:]
    results = json.loads((output_dir / "bench.json").read_text())
    png = (output_dir / "bench.png").read_bytes()
    assert png.startswith(b"\x89PNG")
    registry.import_all()
    reported = set(results["training"]["cases"]) | set(results["training"]["skipped"])
    assert set(registry.models.names()) <= reported
    assert results["targets"], "the report evaluates no target"
