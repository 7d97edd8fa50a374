"""Errors for bad input files, and the bookkeeping of `--skip_bad_examples`.

Every reader reports bad input as an `InputError` that names the file, the
1-based line and what is wrong. Readers take an optional `SkipCounter`: without
one they raise at the first bad example; with one they log it, count it by
reason and go on with the next example.
"""

import collections
import os
from typing import Optional, Union

from absl import logging

PathLike = Union[str, os.PathLike]


def counted(count: int, one: str, several: str = "") -> str:
    """`count` with its noun in the singular or the plural ("1 line", "2 lines").

    Args:
        count: how many.
        one: the noun in the singular.
        several: the plural; `one` + "s" when empty.
    """
    return f"{count} {one if count == 1 else (several or one + 's')}"


class InputError(ValueError):
    """A problem in an input file, located as precisely as the format allows.

    Attributes:
        path: the file, as a string.
        line: 1-based line number, or None when the problem concerns the
            whole file (for example an empty file).
        message: what is wrong, without the location.
        reason: a short category such as `"wrong column count"`, used to
            group skipped examples; defaults to `message`.
    """

    def __init__(self, path: PathLike, line: Optional[int], message: str, reason: Optional[str] = None):
        self.path = os.fspath(path)
        self.line = line
        self.message = message
        self.reason = reason if reason is not None else message
        super().__init__(str(self))

    def __str__(self) -> str:
        location = self.path if self.line is None else f"{self.path}:{self.line}"
        return f"{location}: {self.message}"

    def __reduce__(self):
        # Keeps the error picklable (multiprocessing data generation).
        return (type(self), (self.path, self.line, self.message, self.reason))


class MissingExtraError(ImportError):
    """A feature needs an optional extra that is not installed; the message says how to install it."""


class WorkerError(RuntimeError):
    """A worker of a distributed run (a Beam worker) stopped at one of the project's errors
    (bad input, a parser failing); the message is that error's, as the runner reported it."""


class OutputPathError(ValueError):
    """An output that cannot be written, found before the work starts.

    Attributes:
        path: the output as the user gave it.
        what: the flag or role that named it (e.g. `"--decode_to_file"`).
        message: what is wrong.
    """

    def __init__(self, path: PathLike, what: str, message: str):
        self.path = os.fspath(path)
        self.what = what
        self.message = message
        super().__init__(str(self))

    def __str__(self) -> str:
        return f"{self.what}={self.path}: cannot write the output: {self.message}"

    def __reduce__(self):
        return (type(self), (self.path, self.what, self.message))


class SkipCounter:
    """Counts and logs the examples dropped under `--skip_bad_examples`.

    Example:
        skip = SkipCounter()
        trees = list(read_conllu(path, skip=skip))
        logging.info(skip.summary())  # "skipped 3 examples: 2 not a tree, 1 wrong column count"
    """

    def __init__(self):
        self._counts = collections.Counter()

    def record(self, error: InputError) -> None:
        """Logs `error` as a warning and counts it under `error.reason`."""
        logging.warning("skipping bad example: %s", error)
        self._counts[error.reason] += 1

    def add(self, counts: dict) -> None:
        """Adds the counts per reason of another counter (another process's `counts`)."""
        self._counts.update(counts)

    @property
    def total(self) -> int:
        """How many examples were skipped."""
        return sum(self._counts.values())

    @property
    def counts(self) -> dict:
        """Skipped examples per reason."""
        return dict(self._counts)

    def summary(self) -> str:
        """A one-line report, most frequent reason first."""
        skipped = f"skipped {counted(self.total, 'example')}"
        if not self.total:
            return skipped
        ordered = sorted(self._counts.items(), key=lambda item: (-item[1], item[0]))
        reasons = ", ".join(f"{count} {reason}" for reason, count in ordered)
        return f"{skipped}: {reasons}"


def raise_or_skip(error: InputError, skip: Optional[SkipCounter]) -> None:
    """Raises `error` when not skipping, otherwise records it in `skip`.

    Args:
        error: the problem found in an example.
        skip: the counter of `--skip_bad_examples`, or None to fail fast.

    Raises:
        InputError: `error` itself, when `skip` is None.
    """
    if skip is None:
        raise error
    skip.record(error)


class IgnoreSkipped(SkipCounter):
    """Skips bad examples without logging or counting them.

    For passes over data whose bad examples are reported by another pass.
    """

    def record(self, error: InputError) -> None:
        pass
