"""Collection for the two test passes.

`make test` runs the suite under TensorFlow, then the modules marked
`backends` again under `KERAS_BACKEND=jax` in an environment without
TensorFlow. There, the other modules (which import TensorFlow or test the
TensorFlow-only tools) are not collected at all rather than failing to import.
"""

import importlib.util
import pathlib

import pytest

from syntax_t2t import directory_lock

MARK = "pytest.mark.backends"
HAS_TENSORFLOW = importlib.util.find_spec("tensorflow") is not None


def pytest_ignore_collect(collection_path: pathlib.Path, config):
    if HAS_TENSORFLOW or collection_path.suffix != ".py" or not collection_path.name.startswith("test_"):
        return None
    return MARK not in collection_path.read_text(encoding="utf-8")


@pytest.fixture(autouse=True)
def _directory_locks_end_with_the_test():
    """A program's run and data directory locks go when it ends (`cli/common.py`); tests that
    call a program's `main`, or a function that locks, directly end it here."""
    yield
    directory_lock.release_all()
