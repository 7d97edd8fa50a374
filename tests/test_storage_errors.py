"""TensorFlow's errors on a full disk become one line, as Python's OSErrors do (#35 item 8)."""

import os

import pytest

from syntax_t2t.cli import common


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux)")
def test_a_tfrecord_writer_on_a_full_disk_is_one_line():
    tf = pytest.importorskip("tensorflow")
    with pytest.raises(tf.errors.OpError) as caught:
        writer = tf.io.TFRecordWriter("/dev/full")  # every write: ENOSPC
        for _ in range(1000):
            writer.write(b"x" * 10_000)
        writer.close()
    assert common.tensorflow_storage_error(caught.value) == (
        "cannot write /dev/full: No space left on device; the disk is full: free some space, "
        "or write elsewhere")


def test_other_errors_are_not_taken_for_storage_errors():
    assert common.tensorflow_storage_error(OSError(28, "No space left on device")) is None
    assert common.tensorflow_storage_error(ValueError("No space left on device")) is None
