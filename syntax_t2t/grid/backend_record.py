"""Which Keras backend trained each run of a grid, so that tables never mix them silently.

The grid's programs run under the grid's own backend (`KERAS_BACKEND`,
passed on to them explicitly by `grid/child_process.py`). Each time a run's
training stage starts, the backend is added to the run's `grid.json`
(`"backends"`, in order of use): a run begun on TensorFlow and resumed on
JAX (checkpoints are read by both) lists both. Its scores carry the list,
and the report gives each run's backend in its training table and, when
the scored runs were not all trained on one backend, says so at the top
and which runs were trained on which (`mixture`). Mixing is marked, not
refused: the two backends compute the same models to float rounding
(tests/test_backend_parity.py), and a grid whose runs were spread over a
TensorFlow CPU and a JAX GPU machine is a use the archive exists for; but
a reader comparing systems should know.

Runs scored before this record existed say "unrecorded".
"""

import keras

STATE_KEY = "backends"
SCORES_KEY = "backends"
UNRECORDED = "unrecorded"


def current() -> str:
    """The backend this process (and so the grid's programs) runs: "tensorflow", "jax", ..."""
    return keras.backend.backend()


def record(state: dict) -> None:
    """Adds this process's backend to a run's `grid.json` state (before its training runs)."""
    used = state.setdefault(STATE_KEY, [])
    if current() not in used:
        used.append(current())


def of_state(state: dict) -> list:
    """The backends that trained a run, from its `grid.json` state (empty: unrecorded)."""
    return list(state.get(STATE_KEY, []))


def label(scores: dict) -> str:
    """A run's backends as the report writes them: "jax", "tensorflow+jax", "unrecorded"."""
    return "+".join(scores.get(SCORES_KEY) or [UNRECORDED])


def mixture(runs_scores: list) -> dict:
    """`{backend label: [run names]}` of scored runs, over `[(run name, scores)]`.

    More than one key means the report's tables mix backends.
    """
    grouped = {}
    for name, scores in runs_scores:
        grouped.setdefault(label(scores), []).append(name)
    return grouped
