"""Timing and memory primitives: interleaved repetitions, medians, peak RSS.

Interleaving: when several things are compared, each repetition runs every
one of them once, in turn, so that a slow phase of a shared machine slows
them all alike instead of the one that happened to run then. Each round
takes them in a fresh (seeded) random order, so that none always runs
first or right after the same other one (a fixed order gave `transformer`,
always first and right after the PyTorch peer, a median step time twice
its relative-position twin's in a run at load average 8).

Memory on a CPU: TensorFlow allocates outside Python's allocator, so
`tracemalloc` sees nothing, and `getrusage`'s maximum RSS only ever grows.
The peak resident set of the process (Linux `VmHWM`) can be reset by writing
`5` to `/proc/self/clear_refs`; the memory of a step is then the peak during
it minus the resident set just before it: what the step allocated on top of
what was already there (weights, optimizer slots). On a GPU TensorFlow's
allocator reports the peak directly (`tf.config.experimental`); JAX's
allocator keeps a peak that cannot be reset, so on a JAX GPU the memory of a
step is not measured.

The backend library is imported where it is asked about (the running Keras
backend's), so that `bin/bench` under JAX runs without TensorFlow.
"""

import dataclasses
import os
import random
import statistics
import time

import keras

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


def interleaved(runners, repetitions, shuffle_seed=0):
    """Runs every runner once per repetition, in turn; returns their timings.

    Args:
        runners: `{name: callable}`; each call does one timed unit of work
            and returns the seconds it took.
        repetitions: how many rounds.
        shuffle_seed: seeds the order of each round (a new random
            permutation per round); None keeps the order of `runners`.

    Returns:
        `{name: [seconds per repetition]}` (index r = round r).
    """
    timings = {name: [] for name in runners}
    rng = random.Random(shuffle_seed) if shuffle_seed is not None else None
    for _ in range(repetitions):
        order = list(runners)
        if rng is not None:
            rng.shuffle(order)
        for name in order:
            timings[name].append(runners[name]())
    return timings


def with_cpu_time(runner, record, units=1):
    """`runner` that also appends the process CPU seconds of each call / `units` to `record`.

    CPU time (all threads of this process) counts the work a step does, not
    the time it waits for a core that another process holds: on a shared
    machine its ratios are steadier than wall-clock ones, which remain the
    measure of record (see docs/performance.md).
    """
    def call():
        start = time.process_time()
        result = runner()
        record.append((time.process_time() - start) / units)
        return result

    return call


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


def _jax_gpus():
    import jax

    return [device for device in jax.devices() if device.platform == "gpu"]


def _gpu_device():
    """TensorFlow's first GPU, by name; None without one or under another backend."""
    if keras.backend.backend() != "tensorflow":
        return None
    import tensorflow as tf

    gpus = tf.config.list_logical_devices("GPU")
    return gpus[0].name.split("device:")[-1] if gpus else None


def memory_method():
    """What `peak_memory_mib` measures here, in words (for the report)."""
    if keras.backend.backend() == "jax" and _jax_gpus():
        return "not measured (JAX's GPU allocator peak cannot be reset)"
    if _gpu_device():
        return "GPU allocator peak during the step minus the allocation before it"
    if peak_memory_supported():
        return "peak resident set (VmHWM) during the step minus the resident set before it"
    return "not available on this system"


def peak_memory_mib(function):
    """Runs `function()`; returns the extra memory at its peak, in MiB (None if unknown)."""
    if keras.backend.backend() == "jax" and _jax_gpus():
        function()
        return None
    device = _gpu_device()
    if device:
        import tensorflow as tf

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


def set_threads(threads):
    """Sizes TensorFlow's intra-op and inter-op thread pools; returns the sizes in effect.

    Must run before TensorFlow executes its first op: afterwards the pools
    exist and keep their sizes (then the sizes in effect are returned, so
    the report says what was really used).

    Returns:
        `{"intra_op": n, "inter_op": n}` (0 = TensorFlow's default, one per core).
    """
    import tensorflow as tf

    try:
        tf.config.threading.set_intra_op_parallelism_threads(threads)
        tf.config.threading.set_inter_op_parallelism_threads(threads)
    except RuntimeError:
        pass
    return {"intra_op": tf.config.threading.get_intra_op_parallelism_threads(),
            "inter_op": tf.config.threading.get_inter_op_parallelism_threads()}


def load_average():
    """The 1, 5 and 15 minute load averages (other processes share the cores), or None."""
    try:
        return [round(value, 2) for value in os.getloadavg()]
    except OSError:
        return None


def _gpu_names():
    """The GPUs the running backend computes on, by name (empty on a CPU)."""
    if keras.backend.backend() == "jax":
        return [device.device_kind for device in _jax_gpus()]
    import tensorflow as tf

    return [tf.config.experimental.get_device_details(gpu).get("device_name", gpu.name)
            for gpu in tf.config.list_physical_devices("GPU")]


def machine_description():
    """The CPU (or GPU) and thread count, for the report."""
    names = _gpu_names()
    if names:
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
