"""The length model of Eriguchi et al. (2016, eq. 16-17) for beam search.

With `--decode_hparams=length_model=true` a finished hypothesis y of a
source x is scored

    score(x, y) = log p(y | x) + log p(len(y) | len(x))

instead of by the GNMT length penalty, so that a long translation is not
beaten by a short one only because every word costs log-probability.
Lengths count the tokens of `inputs` and `targets` (words, or subwords for
subword problems) without `<EOS>`.

p(m | n) is estimated from the training pairs as the paper does ("statistics
collected in the training dataset"), with add-one smoothing over the target
lengths the search can produce (0 .. max_steps - 1) so that no length is
impossible:

    p(m | n) = (c(n', m) + 1) / (c(n') + max_steps)

where c counts training pairs and n' is the source length closest to n that
occurs in training (the shorter one on a tie), so that sources longer than
any training sentence still get a distribution.

The counts are collected once from the training shards of the problem and
kept beside the run's checkpoints as `length_model.json`
(`load_or_collect`).
"""

import collections
import json
import os
from typing import Iterable, Mapping, Optional, Sequence

import numpy as np
import tensorflow as tf
from absl import logging

from syntax_t2t import io_utils
from syntax_t2t.data import pipeline
from syntax_t2t.errors import InputError

FILE_NAME = "length_model.json"
FORMAT = "syntax_t2t length model"
FORMAT_VERSION = 1


class LengthModel:
    """p(target length | source length), smoothed as the module docstring says.

    Args:
        counts: `{(source length, target length): number of training pairs}`,
            lengths without `<EOS>`.

    Raises:
        ValueError: no pairs, a negative length or a non-positive count.
    """

    def __init__(self, counts: Mapping[tuple[int, int], int]):
        counts = {(int(n), int(m)): int(count) for (n, m), count in counts.items()}
        if not counts:
            raise ValueError("a length model needs at least one training pair")
        bad = [(pair, count) for pair, count in counts.items() if min(pair) < 0 or count <= 0]
        if bad:
            raise ValueError(f"lengths must be >= 0 and counts > 0, got {bad[0][0]}: {bad[0][1]}")
        self.counts = counts
        max_source = max(n for n, _ in counts)
        max_target = max(m for _, m in counts)
        self._matrix = np.zeros((max_source + 1, max_target + 1), np.float32)
        for (n, m), count in counts.items():
            self._matrix[n, m] = count
        seen = np.flatnonzero(self._matrix.sum(axis=1) > 0)
        lengths = np.arange(max_source + 1)
        # argmin takes the first of equal distances: the shorter seen length.
        self._nearest = seen[np.argmin(np.abs(lengths[:, None] - seen[None, :]), axis=1)]

    @classmethod
    def from_pairs(cls, pairs: Iterable[tuple[int, int]]) -> "LengthModel":
        """Counts `(source length, target length)` pairs."""
        return cls(collections.Counter((int(n), int(m)) for n, m in pairs))

    @classmethod
    def from_shards(cls, filenames: Sequence[str]) -> "LengthModel":
        """Counts the lengths of every example of TFRecord shards (`inputs`, `targets`)."""
        records = tf.data.TFRecordDataset(list(filenames))
        lengths = records.map(
            lambda record: tuple(tf.size(value) - 1 for value in
                                 pipeline.parse_example(record, ("inputs", "targets")).values()),
            num_parallel_calls=tf.data.AUTOTUNE).batch(4096)
        counts = collections.Counter()
        for source, target in lengths.as_numpy_iterator():
            counts.update(zip(source.tolist(), target.tolist()))
        return cls(counts)

    def to_json(self) -> str:
        pairs = [[n, m, count] for (n, m), count in sorted(self.counts.items())]
        return json.dumps({"format": FORMAT, "version": FORMAT_VERSION, "pairs": pairs}) + "\n"

    def save(self, path: str) -> None:
        """Writes the counts as JSON, atomically."""
        io_utils.atomic_write_text(path, self.to_json())

    @classmethod
    def load(cls, path: str) -> "LengthModel":
        """Reads a file written by `save`.

        Raises:
            InputError: the file is not such a file.
        """
        with io_utils.open_text(path) as stream:
            text = stream.read()
        try:
            data = json.loads(text)
        except json.JSONDecodeError as error:
            raise InputError(path, error.lineno, f"not JSON: {error.msg}") from None
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise InputError(path, None, f"not a length model file (no \"format\": \"{FORMAT}\")")
        if data.get("version") != FORMAT_VERSION:
            raise InputError(path, None, f"length model version {data.get('version')!r}; this code "
                                         f"reads version {FORMAT_VERSION}")
        pairs = data.get("pairs")
        if (not isinstance(pairs, list)
                or not all(isinstance(p, list) and len(p) == 3 and all(type(v) is int for v in p)
                           for p in pairs)):
            raise InputError(path, None, "\"pairs\" must be a list of [source length, target "
                                         "length, count] integer triples")
        try:
            return cls({(n, m): count for n, m, count in pairs})
        except ValueError as error:
            raise InputError(path, None, str(error)) from None

    def log_probs(self, source_lengths, num_lengths: int) -> np.ndarray:
        """log p(m | n) for target lengths m = 0 .. num_lengths - 1.

        Args:
            source_lengths: int [B], n per sentence.
            num_lengths: how many target lengths the search can produce.

        Returns:
            float32 [B, num_lengths].
        """
        rows = self._nearest[np.clip(np.asarray(source_lengths), 0, len(self._nearest) - 1)]
        counts = np.zeros((len(rows), num_lengths), np.float64)
        kept = min(num_lengths, self._matrix.shape[1])
        counts[:, :kept] = self._matrix[rows, :kept]
        totals = counts.sum(axis=1, keepdims=True) + num_lengths
        return np.log((counts + 1.0) / totals).astype(np.float32)

    def search_scores(self, source_lengths, max_steps):
        """The table the beam search adds to finished hypotheses: float32 [B, max_steps + 1].

        Column l is log p(l - 1 | n): a hypothesis of l tokens counting its
        `<EOS>` has l - 1 words. Column 0 (no hypothesis is empty) is -inf.
        This is `log_probs` in TensorFlow ops, for use inside the search's
        compiled function.

        Args:
            source_lengths: int32 [B], n per sentence.
            max_steps: int32 scalar, the search's output buffer size.
        """
        matrix = tf.constant(self._matrix)
        nearest = tf.constant(self._nearest, tf.int32)
        rows = tf.gather(nearest, tf.clip_by_value(tf.cast(source_lengths, tf.int32), 0,
                                                   len(self._nearest) - 1))
        counts = tf.gather(matrix, rows)
        max_steps = tf.cast(max_steps, tf.int32)
        counts = tf.pad(counts, [[0, 0], [0, tf.maximum(max_steps - tf.shape(counts)[1], 0)]])
        counts = counts[:, :max_steps]
        totals = tf.reduce_sum(counts, axis=1, keepdims=True) + tf.cast(max_steps, tf.float32)
        log_probs = tf.math.log((counts + 1.0) / totals)
        empty = tf.fill([tf.shape(log_probs)[0], 1], float("-inf"))
        return tf.concat([empty, log_probs], axis=1)


def load_or_collect(run_dir: Optional[str], problem, data_dir: str) -> LengthModel:
    """The length model of a training run: read from `run_dir`, or counted and saved there.

    Args:
        run_dir: the run's directory (None: count without saving).
        problem: the run's problem.
        data_dir: its generated data, whose training shards are counted.

    Raises:
        InputError: a bad `length_model.json`.
        DataNotGeneratedError: no file and no training shards to count.
    """
    path = os.path.join(run_dir, FILE_NAME) if run_dir else None
    if path and os.path.isfile(path):
        return LengthModel.load(path)
    model = LengthModel.from_shards(problem.filepaths(data_dir, "train"))
    logging.info("length model: counted %d training pairs of %s", sum(model.counts.values()),
                 problem.name)
    if path:
        try:
            model.save(path)
        except OSError as error:
            logging.warning("could not save the length model to %s: %s", path, error)
    return model
