"""The noam learning-rate schedule against its formula, and its config round trip."""

import math

import keras
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from syntax_t2t.hparams import HParams
from syntax_t2t.training.schedules import NoamSchedule, learning_rate_schedule


def reference_rate(learning_rate, hidden_size, warmup_steps, updates_done):
    """The T2T formula written out, with the 1-based update number."""
    step = updates_done + 1
    return learning_rate * hidden_size ** -0.5 * min(step * warmup_steps ** -1.5, step ** -0.5)


@settings(max_examples=60, deadline=None)
@given(learning_rate=st.floats(0.01, 5.0), hidden_size=st.integers(8, 2048),
       warmup_steps=st.integers(1, 20_000), updates_done=st.integers(0, 1_000_000))
def test_matches_the_formula(learning_rate, hidden_size, warmup_steps, updates_done):
    schedule = NoamSchedule(learning_rate, hidden_size, warmup_steps)
    expected = reference_rate(learning_rate, hidden_size, warmup_steps, updates_done)
    assert float(schedule(updates_done)) == pytest.approx(expected, rel=1e-5)


def test_worked_example_of_transformer_base():
    # learning_rate 0.2, hidden 512, warm-up 8000: the peak at update 8000 is
    # 0.2 / sqrt(512 * 8000).
    schedule = NoamSchedule(0.2, 512, 8000)
    assert float(schedule(7999)) == pytest.approx(0.2 / math.sqrt(512 * 8000), rel=1e-6)
    # The first update is step 1 of the warm-up, not a wasted zero rate.
    assert float(schedule(0)) == pytest.approx(0.2 / math.sqrt(512) / 8000 ** 1.5, rel=1e-6)
    # After the peak the rate falls as 1/sqrt(step): 4x the steps, half the rate.
    assert float(schedule(4 * 8000 - 1)) == pytest.approx(float(schedule(7999)) / 2, rel=1e-6)


def test_rises_during_warmup_then_decays():
    schedule = NoamSchedule(1.0, 64, 100)
    rates = np.array([float(schedule(step)) for step in range(300)])
    assert np.all(np.diff(rates[:100]) > 0)
    assert np.all(np.diff(rates[100:]) < 0)
    assert int(np.argmax(rates)) == 99


def test_config_round_trip():
    schedule = NoamSchedule(0.5, 256, 2000)
    clone = NoamSchedule.from_config(schedule.get_config())
    assert clone.get_config() == {"learning_rate": 0.5, "hidden_size": 256, "warmup_steps": 2000}
    serialized = keras.optimizers.schedules.serialize(schedule)
    restored = keras.optimizers.schedules.deserialize(serialized)
    assert isinstance(restored, NoamSchedule)
    for step in (0, 10, 5000):
        assert float(restored(step)) == float(schedule(step))


def test_built_from_hparams():
    hparams = HParams(learning_rate=0.3, hidden_size=128, learning_rate_warmup_steps=50)
    schedule = learning_rate_schedule(hparams)
    assert float(schedule(20)) == pytest.approx(10 * reference_rate(0.3, 128, 50, 20), rel=1e-6)


def test_transformer_base_peaks_where_t2t_1_5_6_peaked():
    # Popel & Bojar (2018): transformer_base with learning_rate 0.2 and 8000
    # warm-up steps peaks at about 9.9e-4 in T2T 1.5.6.
    from syntax_t2t import registry
    from syntax_t2t.cli import registration
    registration.import_all()
    schedule = learning_rate_schedule(registry.hparams("transformer_base"))
    assert float(schedule(7999)) == pytest.approx(9.882e-4, rel=1e-3)


@pytest.mark.parametrize("warmup, hidden", [(0, 512), (100, 0)])
def test_rejects_non_positive_sizes(warmup, hidden):
    with pytest.raises(ValueError, match="must be positive"):
        NoamSchedule(1.0, hidden, warmup)
