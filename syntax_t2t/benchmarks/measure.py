"""Timing and memory primitives: interleaved repetitions, medians, peak RSS.

Interleaving: when several things are compared, each repetition runs every
one of them once, in turn, so that a slow phase of a shared machine slows
them all alike instead of the one that happened to run then.

Memory on a CPU: TensorFlow allocates outside Python's allocator, so
`tracemalloc` sees nothing, and `getrusage`'s maximum RSS only ever grows.
The peak resident set of the process (Linux `VmHWM`) can be reset by writing
`5` to `/proc/self/clear_refs`; the memory of a step is then the peak during
it minus the resident set just before it: what the step allocated on top of
what was already there (weights, optimizer slots). On a GPU TensorFlow's
allocator reports the peak directly (`tf.config.experimental`).
"""

import dataclasses
import os
import statistics
import time

import tensorflow as tf

_CLEAR_REFS = "/proc/self/clear_refs"
_STATUS = "/proc/self/status"


@dataclasses.dataclass(frozen=True)
class Summary:
    """Median and spread of repeated measurements.

    Attributes:
        median: the median.
        low, high: the smallest and largest value.
        count: how many values.
    """

    median: float
    low: float
    high: float
    count: int

    @classmethod
    def of(cls, values):
        values = [float(value) for value in values]
        if not values:
            raise ValueError("no measurements to summarise")
        return cls(statistics.median(values), min(values), max(values), len(values))

    @property
    def spread(self):
        """(high - low) / median: the relative range of the measurements."""
        return (self.high - self.low) / self.median if self.median else 0.0

    def as_dict(self):
        return {"median": self.median, "low": self.low, "high": self.high, "count": self.count,
                "spread": self.spread}


def interleaved(runners, repetitions):
    """Runs every runner once per repetition, in turn; returns their timings.

    Args:
        runners: `{name: callable}`; each call does one timed unit of work
            and returns the seconds it took.
        repetitions: how many rounds.

    Returns:
        `{name: [seconds per repetition]}`.
    """
    timings = {name: [] for name in runners}
    for _ in range(repetitions):
        for name, runner in runners.items():
            timings[name].append(runner())
    return timings


def timed(function, *args):
    """Seconds `function(*args)` takes (wall clock)."""
    start = time.perf_counter()
    function(*args)
    return time.perf_counter() - start


def _status_kib(field):
    with open(_STATUS, encoding="ascii") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise OSError(f"{_STATUS} has no {field} line")


def peak_memory_supported():
    """Whether the peak resident set can be reset (Linux 4.0 and later)."""
    try:
        with open(_CLEAR_REFS, "w", encoding="ascii") as clear_refs:
            clear_refs.write("5")
        _status_kib("VmHWM")
        return True
    except OSError:
        return False


def _gpu_device():
    gpus = tf.config.list_logical_devices("GPU")
    return gpus[0].name.split("device:")[-1] if gpus else None


def memory_method():
    """What `peak_memory_mib` measures here, in words (for the report)."""
    if _gpu_device():
        return "GPU allocator peak during the step minus the allocation before it"
    if peak_memory_supported():
        return "peak resident set (VmHWM) during the step minus the resident set before it"
    return "not available on this system"


def peak_memory_mib(function):
    """Runs `function()`; returns the extra memory at its peak, in MiB (None if unknown)."""
    device = _gpu_device()
    if device:
        tf.config.experimental.reset_memory_stats(device)
        before = tf.config.experimental.get_memory_info(device)["current"]
        function()
        return (tf.config.experimental.get_memory_info(device)["peak"] - before) / 2**20
    if not peak_memory_supported():
        function()
        return None
    before = _status_kib("VmRSS")
    function()
    return max(_status_kib("VmHWM") - before, 0) / 1024


def machine_description():
    """The CPU (or GPU) and thread count, for the report."""
    gpus = tf.config.list_physical_devices("GPU")
    if gpus:
        names = [tf.config.experimental.get_device_details(gpu).get("device_name", gpu.name)
                 for gpu in gpus]
        return f"GPU: {', '.join(names)}"
    model = "unknown CPU"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"CPU: {model}, {os.cpu_count()} cores"
