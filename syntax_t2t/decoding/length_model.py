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

The counts are collected once from the training shards of the problem
(read without TensorFlow, `syntax_t2t.data.tfrecord`) and kept beside the
run's checkpoints as `length_model.json` (`load_or_collect`). The table the
search adds (`search_scores`) is computed with `keras.ops` inside the
compiled decoding function, on every backend.
"""

import collections
import json
import os
from typing import Iterable, Mapping, Optional, Sequence

import numpy as np
from absl import logging
from keras import ops

from syntax_t2t import io_utils
from syntax_t2t.backend import Tensor
from syntax_t2t.data import tfrecord
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
        """Counts the lengths of every example of TFRecord shards (`inputs`, `targets`).

        Raises:
            tfrecord.DamagedRecordError: a damaged shard, named with the
                offset of the damage.
        """
        counts = collections.Counter()
        for filename in filenames:
            for record in tfrecord.read_records(filename):
                lists = tfrecord.parse_int_lists(record, ("inputs", "targets"))
                # Lengths without the <EOS> that the problem writes after each sequence.
                counts[(len(lists["inputs"]) - 1, len(lists["targets"]) - 1)] += 1
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

    def search_scores(self, source_lengths: Tensor, max_steps) -> Tensor:
        """The table the beam search adds to finished hypotheses: float32 [B, max_steps + 1].

        Column l is log p(l - 1 | n): a hypothesis of l tokens counting its
        `<EOS>` has l - 1 words. Column 0 (no hypothesis is empty) is -inf.
        This is `log_probs` in `keras.ops`, for use inside the search's
        compiled function.

        Args:
            source_lengths: int32 [B], n per sentence.
            max_steps: the search's output buffer size: a Python int, or on
                TensorFlow without XLA an int32 scalar tensor.
        """
        rows = ops.take(ops.convert_to_tensor(self._nearest.astype(np.int32)),
                        ops.clip(ops.cast(source_lengths, "int32"), 0, len(self._nearest) - 1))
        counts = ops.take(ops.convert_to_tensor(self._matrix), rows, axis=0)
        # Lengths past the longest training target have no counts: a take of
        # clipped columns, zeroed, rather than a pad whose width is traced.
        known = self._matrix.shape[1]
        lengths = ops.arange(max_steps, dtype="int32")
        counts = ops.take(counts, ops.minimum(lengths, known - 1), axis=1)
        counts = ops.where(lengths[None, :] < known, counts, 0.0)
        totals = ops.sum(counts, axis=1, keepdims=True) + ops.cast(max_steps, "float32")
        log_probs = ops.log((counts + 1.0) / totals)
        empty = ops.full((ops.shape(log_probs)[0], 1), float("-inf"), "float32")
        return ops.concatenate([empty, log_probs], axis=1)

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
