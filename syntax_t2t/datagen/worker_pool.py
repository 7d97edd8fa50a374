"""An order-keeping, memory-bounded map over worker processes, for datagen.

`ordered_map(function, items, num_workers)` gives `function(item)` for every
item, in input order, like `map`; with more than one worker the calls run in
forked processes. Unlike `multiprocessing.Pool.imap`, whose feeder thread
reads the whole input at once, at most `window` items are in flight, so a
corpus of any size is read in constant memory.

Workers are forked: they inherit the parent's state (a problem with its
vocabularies already loaded), which therefore never has to be pickled; only
the items and results cross between processes. Exceptions raised in a
worker are re-raised in the parent (they must be picklable, as the project's
errors are).
"""

import collections
import multiprocessing
from concurrent import futures
from typing import Callable, Iterable, Iterator, TypeVar

Item = TypeVar("Item")
Result = TypeVar("Result")

#: Items in flight per worker: enough to keep every worker busy while the
#: parent writes, few enough to keep memory flat.
ITEMS_IN_FLIGHT_PER_WORKER = 4


def ordered_map(function: Callable[[Item], Result], items: Iterable[Item], num_workers: int,
                window: int = 0) -> Iterator[Result]:
    """`map(function, items)`, computed by `num_workers` processes.

    Args:
        function: a module-level function (workers find it by name).
        items: read lazily, at most `window` ahead of the results consumed.
        num_workers: 1 runs everything in this process, without a pool.
        window: items in flight; 0 means `ITEMS_IN_FLIGHT_PER_WORKER * num_workers`.

    Raises:
        ValueError: `num_workers` is below 1.
    """
    if num_workers < 1:
        raise ValueError(f"num_workers must be at least 1, got {num_workers}")
    if num_workers == 1:
        yield from map(function, items)
        return
    window = window or ITEMS_IN_FLIGHT_PER_WORKER * num_workers
    context = multiprocessing.get_context("fork")
    with futures.ProcessPoolExecutor(num_workers, mp_context=context) as executor:
        pending = collections.deque()
        try:
            for item in items:
                pending.append(executor.submit(function, item))
                if len(pending) >= window:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
        finally:
            for future in pending:
                future.cancel()
