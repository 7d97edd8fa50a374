"""Naming the TFRecord shard behind a `tf.errors.DataLossError`.

TensorFlow reports a truncated or corrupt TFRecord as "truncated record at
11484" from deep inside the input pipeline, without the file: the pipeline
interleaves several shards. When training meets such an error, every shard
of the problem's data is read once more, one file at a time, and the first
that fails is named with its byte offset and the command that regenerates
it.
"""

import os
import re
from typing import Optional, Sequence

import tensorflow as tf

from syntax_t2t import registry
from syntax_t2t.errors import InputError

_OFFSET = re.compile(r"(truncated|corrupted) record at (\d+)")


def first_damaged(filenames: Sequence[str]) -> Optional[tuple[str, str]]:
    """The first shard that cannot be read to its end, and what TensorFlow says is wrong.

    Returns:
        `(path, problem)`, e.g. `("data/x-train-00003-of-00010", "truncated
        record at byte offset 11484")`, or None when every shard reads.
    """
    for path in filenames:
        try:
            tf.data.TFRecordDataset([path]).reduce(tf.constant(0, tf.int64), lambda count, _: count + 1)
        except tf.errors.DataLossError as error:
            match = _OFFSET.search(error.message)
            problem = (f"{match.group(1)} record at byte offset {match.group(2)}" if match
                       else " ".join(error.message.split())[:200])
            return path, problem
    return None


def damaged_shard_error(problem_name: str, data_dir: str, error: tf.errors.DataLossError) -> Exception:
    """An `InputError` naming the damaged shard of `problem_name`'s data, or `error` itself.

    Args:
        problem_name: the registered problem whose data was being read.
        data_dir: its data directory.
        error: what the input pipeline raised.

    Returns:
        The `InputError` to raise instead of `error`, or `error` when no
        shard of the problem is damaged (so it came from somewhere else).
    """
    problem = registry.problem(problem_name)
    record = problem.completion_record(data_dir) or {}
    files = [os.path.join(data_dir, name)
             for split in sorted(record.get("shards", {})) for name in record["shards"][split]]
    found = first_damaged(files)
    if found is None:
        return error
    path, what = found
    return InputError(path, None,
                      f"damaged TFRecord shard: {what}; regenerate the data with bin/datagen "
                      f"--problem={problem_name} --data_dir={data_dir} --tmp_dir=<raw data dir> "
                      f"--overwrite", reason="damaged shard")
