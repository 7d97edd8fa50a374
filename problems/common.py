"""Helpers shared by the problems that read files."""

import os
from typing import Callable, Iterator, Optional, Sequence

from syntax_t2t.errors import InputError, SkipCounter


class _SkipTracker(SkipCounter):
    """Counts skipped records and forwards those `report` accepts to the user's counter."""

    def __init__(self, inner: SkipCounter, report: Callable[[int], bool], position: Callable[[], int]):
        super().__init__()
        self.inner = inner
        self.report = report
        self.position = position
        self.skipped = 0

    def record(self, error: InputError) -> None:
        if self.report(self.position()):
            self.inner.record(error)
        self.skipped += 1


class Positioned:
    """The items of a reader with their positions in the file.

    Readers such as `read_conllu` and `read_czeng` take each record (a
    sentence, a line) in file order and either yield it or record it as
    skipped. So the number yielded plus the number skipped is the position of
    the next record, and files aligned record by record stay aligned when bad
    records are skipped.

    Args:
        read: `read(path, skip=...)`, e.g. `read_conllu`.
        path: the file.
        skip: the user's `SkipCounter`, or None to raise at the first bad record.
        report: which positions' skipped records reach `skip` (e.g. only
            those of the split being generated, so that a file read for
            several splits reports each bad record once); others are
            skipped silently.

    Attributes:
        records: records seen so far, skipped ones included; after a full
            iteration, the number of records in the file.
    """

    def __init__(self, read: Callable, path: str, skip: Optional[SkipCounter],
                 report: Callable[[int], bool] = lambda position: True):
        self.read = read
        self.path = path
        self._skip = skip
        self._report = report
        self.records = 0

    def __iter__(self) -> Iterator[tuple[int, object]]:
        """Yields `(0-based position, item)`."""
        yielded = 0
        tracker = None
        if self._skip is not None:
            tracker = _SkipTracker(self._skip, self._report, lambda: yielded + tracker.skipped)
        for item in self.read(self.path, skip=tracker):
            position = yielded + (tracker.skipped if tracker else 0)
            self.records = position + 1
            yield position, item
            yielded += 1
        self.records = yielded + (tracker.skipped if tracker else 0)


def find_file(directory: str, names: Sequence[str]) -> Optional[str]:
    """The first of `names` that is a file in `directory`, or None."""
    for name in names:
        path = os.path.join(directory, name)
        if os.path.isfile(path):
            return path
    return None
