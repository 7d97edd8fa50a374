"""`bin/bench`: the benchmark harness; prints the table and the targets, writes JSON and PNG.

    bin/bench --hparams_set=transformer_small --output_dir=bench_results

In one process and one run it measures: the training step of every
registered model (and the thesis variants with relative positions) against
`transformer` on identical fixed batches; how step time and memory grow with
source length for `transformer` and the tree variants; cached against
uncached greedy and beam-4 decoding; a same-shape PyTorch `nn.Transformer`;
analytic FLOPs against the measured matmul peak; and, when a GPU is present
(or `--mixed_precision`/`--xla` ask for it), mixed precision and XLA
against float32 without XLA; CTranslate2 (float32, and int8 on one thread)
decoding the same batch with the same weights beside our decoder; and MST
parse decoding time per sentence length.
`--quick` shrinks everything to a CI-sized run; `--only=mst` (or any other
parts) runs those parts alone. See docs/performance.md.

Under `KERAS_BACKEND=jax` the parts that time backend-neutral code run
(`OTHER_BACKEND_PARTS`: training with the thesis variants, cached
decoding, precision, the PyTorch peer where torch is installed, MST), and
every report names its backend. Without TensorFlow the synthetic batches
cannot be made (their datagen needs it): a TensorFlow run writes the
training and decoding batches with `--save_batch=FILE` (`--batch_only`
stops there) and the JAX run reads them with `--batch_file=FILE`.
`--backends=tensorflow,jax` runs both side by side from the TensorFlow
environment (the JAX side in `--jax_python`'s environment) and prints the
JAX/TensorFlow ratios (`benchmarks/backends.py`). On a GPU `--mixed_precision`
(auto: mixed_bfloat16) is timed against float32, each with its MFU against
the matmul rate of its compute dtype measured in the same run.
"""

import contextlib
import datetime
import importlib.util
import json
import os
import shlex
import sys
import time

import keras
from absl import flags, logging

from syntax_t2t import io_utils, registry
from syntax_t2t.benchmarks import batches as batches_lib
from syntax_t2t.benchmarks import backends as backends_lib
from syntax_t2t.benchmarks import flops, measure, precision_part, report, training_throughput

try:
    from syntax_t2t.benchmarks import torch_peer
except ModuleNotFoundError as error:
    # PyTorch comes with the optional `stanza` extra; without it --skip=torch.
    if error.name != "torch":
        raise
    torch_peer = None
from syntax_t2t.cli import bench_flags, common, registration
from syntax_t2t.cli.bench_flags import (DEFAULT_HPARAMS_SET, DEFAULT_OUTPUT_DIR, MAKES_BATCHES,
                                        NEEDS_TRAINING, OTHER_BACKEND_PARTS, PARTS)
from syntax_t2t.data import batching
from syntax_t2t.training import precision

FLAGS = flags.FLAGS
# Defined apart, so that bin/bench answers --help and flag errors before Keras loads;
# this module's --help lists them as its own.
flags.adopt_module_key_flags(bench_flags)

#: Flags the other side of --backends does not get as given (it gets its own).
EXCLUDED_FROM_OTHER_SIDE = ("backends", "jax_python", "output_dir", "save_batch", "batch_file",
                            "batch_only", "only", "skip", "threads", "length")

QUICK = {"batch_tokens": 128, "repetitions": 2, "steps_per_repetition": 1,
         "scaling_lengths": ["16", "32"], "mst_lengths": ["10", "80"], "decode_sentences": 1,
         "decode_output_tokens": 20, "matmul_size": 256, "length": 16, "relative": False}

def _setting(name):
    """A flag's value, or its `--quick` value when the flag was not given."""
    if FLAGS.quick and not FLAGS[name].present and name in QUICK:
        return QUICK[name]
    return FLAGS[name].value


def _check_parts(flag, expected):
    unknown = sorted(set(FLAGS[flag].value) - set(expected))
    if unknown:
        raise common.UsageError(f"--{flag}: unknown part(s) {', '.join(unknown)}; expected "
                                f"{', '.join(expected)}")


def _lengths(flag, minimum):
    try:
        lengths = [int(length) for length in _setting(flag)]
    except ValueError as error:
        raise common.UsageError(f"--{flag}: {error}") from error
    if any(length < minimum for length in lengths):
        raise common.UsageError(f"--{flag}: every length must be at least {minimum}, got "
                                f"{lengths}")
    return lengths


def _check_flags():
    """The parts to run, the scaling lengths and the MST lengths."""
    _check_parts("skip", PARTS[1:])
    _check_parts("only", PARTS)
    if FLAGS.only and FLAGS.skip:
        raise common.UsageError("--only and --skip exclude each other")
    for name in FLAGS.models:
        registry.model(name)  # a RegistryError names the registered ones
    backend = keras.backend.backend()
    if backend != "tensorflow":
        default = [part for part in OTHER_BACKEND_PARTS if part != "torch" or torch_peer]
        parts = set(FLAGS.only or default) - set(FLAGS.skip)
        others = sorted(parts - set(OTHER_BACKEND_PARTS))
        if others:
            raise common.UsageError(
                f"under KERAS_BACKEND={backend} bin/bench runs only "
                f"{', '.join(OTHER_BACKEND_PARTS)}; {', '.join(others)} "
                f"time TensorFlow code: run them with KERAS_BACKEND=tensorflow")
        if FLAGS.threads:
            raise common.UsageError(f"--threads: under KERAS_BACKEND={backend} XLA sizes its own "
                                    f"CPU thread pool (one thread per core)")
    else:
        parts = set(FLAGS.only) if FLAGS.only else set(PARTS) - set(FLAGS.skip)
    if FLAGS.batch_file and parts & set(MAKES_BATCHES):
        raise common.UsageError(
            f"--batch_file: {', '.join(sorted(parts & set(MAKES_BATCHES)))} make batches of "
            f"other lengths, which needs the synthetic problem: leave --batch_file out or skip "
            f"them")
    if FLAGS.batch_file and "decoding" in parts and not batches_lib.load_decode_batch(
            FLAGS.batch_file):
        raise common.UsageError(f"--batch_file={FLAGS.batch_file} holds no decoding batch "
                                f"(written by an older bin/bench): write it again with "
                                f"--save_batch, or skip decoding")
    if FLAGS.batch_only and not FLAGS.save_batch:
        raise common.UsageError("--batch_only writes the batches of --save_batch: give it")
    return parts, _lengths("scaling_lengths", 4), _lengths("mst_lengths", 1)


def _model_hparams_sets():
    """`{model: set}` of the models timed with their own hparams set."""
    sets = training_throughput.own_hparams_sets(FLAGS.hparams_set or DEFAULT_HPARAMS_SET)
    for pair in FLAGS.model_hparams_sets:
        model, separator, name = pair.partition(":")
        if not separator or not model or not name:
            raise common.UsageError(f"--model_hparams_sets: expected model:set, got {pair!r}")
        registry.model(model)  # a RegistryError names the registered ones
        registry.hparams_sets.get(name)
        if model == training_throughput.BASELINE:
            raise common.UsageError(f"--model_hparams_sets: {model} is the baseline and always "
                                    f"uses --hparams_set")
        sets[model] = name
    return sets


def _threads():
    """Gives TensorFlow and the PyTorch peer the same thread pools; returns their sizes."""
    threads = FLAGS.threads or os.cpu_count() or 1
    if keras.backend.backend() != "tensorflow":
        sizes = {"requested": threads,
                 keras.backend.backend(): "XLA's own CPU pool, one thread per core"}
        if torch_peer:
            sizes["torch"] = torch_peer.set_threads(threads)
        return sizes
    sizes = {"requested": threads, "tensorflow": measure.set_threads(threads),
             "torch": torch_peer.set_threads(threads) if torch_peer else None}
    if sizes["tensorflow"]["intra_op"] != threads:
        logging.warning("TensorFlow's thread pools were already created: %s", sizes["tensorflow"])
    return sizes


@contextlib.contextmanager
def _part(results, name):
    """Records a part's wall time and the load average after it in `results["run"]`."""
    print(f"{name} (load average {measure.load_average()})", flush=True)
    start = time.perf_counter()
    yield
    run = results["run"]
    run["part_seconds"][name] = time.perf_counter() - start
    run["load_average"][name] = measure.load_average()


def _hparams():
    hparams = registry.hparams(FLAGS.hparams_set or DEFAULT_HPARAMS_SET)
    hparams.parse(FLAGS.hparams)
    return hparams


def _training(vocab_sizes, hparams, batch, settings, seed, torch_enabled, hparams_sets):
    cases = training_throughput.default_cases(FLAGS.models or None, hparams_sets)
    if not _setting("relative"):
        cases = [case for case in cases if not case.relative]
    extra = {}
    peer = None
    if torch_enabled:
        peer = torch_peer.TorchTrainStep(hparams, vocab_sizes, batch, seed=seed)
        peer.run(settings["warmup_steps"])
        extra["torch"] = lambda: peer.run(settings["steps_per_repetition"])
    logging.info("timing %d training cases", len(cases))
    measured = training_throughput.measure_training(
        cases, hparams, vocab_sizes, batch, warmup_steps=settings["warmup_steps"],
        repetitions=settings["repetitions"],
        steps_per_repetition=settings["steps_per_repetition"], seed=seed, extra_runners=extra)
    torch_results = None
    if peer is not None:
        torch_times = measured["extra"]["torch"]
        our_times = measured["timings"][training_throughput.BASELINE]
        our_case = measured["cases"][training_throughput.BASELINE]
        torch_results = {
            "torch": measure.Summary.of(torch_times).as_dict(),
            "ours": our_case["step_time"],
            # Per round, so that a slow phase of the machine cancels out.
            "speed_ratio": measure.Summary.of(
                [t / o for t, o in zip(torch_times, our_times)]).as_dict(),
            "torch_cpu": measure.Summary.of(measured["cpu"]["torch"]).as_dict(),
            "cpu_speed_ratio": measure.Summary.of(
                [t / o for t, o in zip(measured["cpu"]["torch"],
                                       measured["cpu"][training_throughput.BASELINE])]).as_dict(),
            "our_parameters": our_case["parameters"],
            "torch_parameters": peer.parameter_count(),
        }
    return measured, torch_results


def _model_parts(results, parts, synthetic, vocab_sizes, hparams, batch, settings, seed,
                 hparams_sets, decode_batch):
    """The training part and those that reuse its models (scaling, decoding, torch).

    `synthetic` (the `SyntheticBatches`) is None when the batch was read from
    --batch_file; the parts that need it are refused then (`_check_flags`).
    """
    sentences, length = results["settings"]["sentences"], settings["length"]
    with _part(results, "training"):
        measured, torch_results = _training(vocab_sizes, hparams, batch, settings, seed,
                                            "torch" in parts, hparams_sets)
    results["training"] = {"cases": measured["cases"], "skipped": measured["skipped"]}
    if torch_results:
        results["torch_peer"] = torch_results

    with _part(results, "peak matmul rate"):
        peak = max(flops.peak_matmul_flops(settings["matmul_size"]) for _ in range(3))
    step_flops = flops.training_step_flops(hparams, vocab_sizes["targets"], sentences, length,
                                           length)
    # The analytic count is `transformer`'s: not meaningful for another architecture.
    results["efficiency"] = {
        "step_flops": step_flops, "peak_flops": peak, "matmul_size": settings["matmul_size"],
        "mfu": {label: flops.model_flops_utilisation(step_flops, case["step_time"]["median"],
                                                     peak)
                for label, case in measured["cases"].items() if case["hparams_set"] is None}}

    if "scaling" in parts:
        from syntax_t2t.benchmarks import scaling

        with _part(results, "scaling"):
            tree_models = [name for name in scaling.TREE_MODELS if name in registry.models]
            results["scaling"] = scaling.measure_scaling(
                synthetic, hparams, results["settings"]["scaling_lengths"],
                settings["batch_tokens"], models=tree_models,
                repetitions=max(1, settings["repetitions"] - 2), seed=seed,
                steps=measured["steps"])

    if "decoding" in parts:
        from syntax_t2t.benchmarks import ctranslate2_peer, decoding_speed

        with _part(results, "decoding"):
            output_tokens = settings["decode_output_tokens"]
            model = measured["steps"][training_throughput.BASELINE].model
            batch = decode_batch
            peers = None
            if "ctranslate2" in parts:
                if ctranslate2_peer.available():
                    peers = ctranslate2_peer.decoding_runners(
                        model, synthetic.vocabularies, batch["inputs"], output_tokens, (1, 4),
                        results["threads"]["requested"])
                else:
                    logging.warning("CTranslate2 is not installed (the [ctranslate2] extra): "
                                    "no decoding peer rows")
            results["decoding"] = decoding_speed.measure_decoding(
                model, batch, output_tokens, repetitions=max(2, settings["repetitions"] - 2),
                peers=peers)


def _datagen_benchmark():
    """`--datagen`: prints and writes (datagen.json) the data-preparation figures."""
    from syntax_t2t.benchmarks import datagen_speed

    try:
        memory_sizes = [int(size) for size in FLAGS.datagen_memory_sizes]
    except ValueError as error:
        raise common.UsageError(f"--datagen_memory_sizes: {error}") from error
    quick = {"train": 1_000, "parse": 200, "memory": [1_000, 4_000]} if FLAGS.quick else {}
    print(f"datagen benchmark (load average {measure.load_average()})", flush=True)
    results = {
        "command": " ".join(shlex.quote(arg) for arg in sys.argv),
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "machine": measure.machine_description(), "cpu_count": os.cpu_count()}
    # Each part is printed when measured: the memory runs can take an hour.
    parts = (("throughput", lambda: datagen_speed.synthetic_throughput(
                  quick.get("train", FLAGS.datagen_train_size))),
             ("parsing", lambda: datagen_speed.spacy_parse_rate(
                  quick.get("parse", FLAGS.datagen_parse_sentences))),
             ("memory", lambda: datagen_speed.peak_memory(quick.get("memory", memory_sizes))))
    for name, measure_part in parts:
        results[name] = measure_part()
        print(datagen_speed.report({name: results[name]}), flush=True)
    results["load_average_after"] = measure.load_average()
    output_dir = FLAGS.output_dir or DEFAULT_OUTPUT_DIR
    os.makedirs(output_dir, exist_ok=True)
    io_utils.atomic_write_text(os.path.join(output_dir, "datagen.json"),
                               json.dumps(results, indent=2) + "\n")


def main(argv):
    if len(argv) > 1:
        raise common.UsageError(f"unexpected arguments: {' '.join(argv[1:])}")
    backend = keras.backend.backend()
    if FLAGS.datagen:
        if backend != "tensorflow":
            raise common.UsageError(f"--datagen times the TensorFlow datagen: run it with "
                                    f"KERAS_BACKEND=tensorflow, not {backend}")
        return _datagen_benchmark()
    output_dir = FLAGS.output_dir or DEFAULT_OUTPUT_DIR
    if FLAGS.backends:
        _side_by_side(output_dir)
    else:
        _bench(output_dir)


def _side_by_side(output_dir):
    """`--backends`: this run in <output_dir>/tensorflow, the others as subprocesses."""
    try:
        backends = backends_lib.check_backends(FLAGS.backends, keras.backend.backend())
        python = backends_lib.jax_python(FLAGS.jax_python)
    except backends_lib.BackendsError as error:
        raise common.UsageError(str(error)) from error
    for name in ("batch_file", "save_batch", "batch_only"):
        if FLAGS[name].present:
            raise common.UsageError(f"--backends makes and shares the batches itself: leave "
                                    f"--{name} out")
    parts, _, _ = _check_flags()
    batch_file = os.path.join(output_dir, "batch.npz")
    other_parts = backends_lib.other_side_parts(parts, OTHER_BACKEND_PARTS, MAKES_BATCHES,
                                                python)
    if not other_parts:
        raise common.UsageError(f"--backends: none of {', '.join(sorted(parts))} runs off "
                                f"TensorFlow (those that do: {', '.join(OTHER_BACKEND_PARTS)})")
    os.makedirs(output_dir, exist_ok=True)
    FLAGS.save_batch = batch_file
    by_backend = {backends[0]: _bench(os.path.join(output_dir, backends[0]))}
    args = backends_lib.forwarded_flags(FLAGS, bench_flags.__name__, EXCLUDED_FROM_OTHER_SIDE)
    for backend in backends[1:]:
        try:
            by_backend[backend] = backends_lib.run_other_side(
                python, backend, args + [f"--only={','.join(other_parts)}",
                                         f"--batch_file={batch_file}",
                                         f"--output_dir={os.path.join(output_dir, backend)}"])
        except backends_lib.BackendsError as error:
            raise common.UsageError(str(error)) from error
    comparison = backends_lib.compare(by_backend)
    table = backends_lib.format_comparison(comparison)
    io_utils.atomic_write_text(os.path.join(output_dir, "backends.json"),
                               json.dumps(comparison, indent=2, sort_keys=True) + "\n")
    io_utils.atomic_write_text(os.path.join(output_dir, "backends.md"), table)
    print(table)
    print(f"wrote {os.path.join(output_dir, 'backends.md')} and backends.json")


def _bench(output_dir):
    """One backend's benchmark: prints the table, writes it to `output_dir`; returns the results."""
    start = time.perf_counter()
    backend = keras.backend.backend()
    threads = _threads()
    parts, lengths, mst_lengths = _check_flags()
    if torch_peer is None and "torch" in parts:
        raise common.UsageError("the PyTorch peer needs torch, which is not installed: pass "
                                "--skip=torch, or install it (pip install -e '.[stanza]'; see "
                                "README, Set-up)")
    hparams_sets = _model_hparams_sets()
    hparams = _hparams()
    seed = FLAGS.random_seed if FLAGS.random_seed is not None else 0
    settings = {name: _setting(name) for name in
                ("length", "batch_tokens", "warmup_steps", "repetitions",
                 "steps_per_repetition", "decode_sentences", "decode_output_tokens",
                 "matmul_size")}
    synthetic, batch, vocab_sizes, decode_batch = _batch(settings, seed)
    if decode_batch is not None:
        settings["decode_sentences"] = int(decode_batch["inputs"].shape[0])
    length = settings["length"]
    if length not in batching.bucket_boundaries(max(length, getattr(hparams, "max_length", 0))):
        # A length the trainer never produces can favour one model: at 32 a
        # model that prefixes <ROOT> runs at 33, where batched matmuls are
        # 30 % slower per element than at 32 (docs/performance.md).
        logging.warning("--length=%d is not a bucket boundary of the trainer: batches of that "
                        "length do not occur in training", length)
    sentences = int(batch["targets"].shape[0])
    if FLAGS.save_batch:
        batches_lib.save_batch(FLAGS.save_batch, batch, vocab_sizes, seed, decode_batch)
        if FLAGS.batch_only:
            print(f"wrote {FLAGS.save_batch}: training batch {sentences} x {length}, decoding "
                  f"batch {' x '.join(map(str, decode_batch['inputs'].shape))}")
            return None
    results = {
        "command": " ".join(shlex.quote(arg) for arg in sys.argv),
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "machine": measure.machine_description(),
        "cpu_count": os.cpu_count(),
        "threads": threads,
        "memory_method": measure.memory_method(),
        "settings": dict(settings, hparams_set=FLAGS.hparams_set or DEFAULT_HPARAMS_SET,
                         hparams=FLAGS.hparams, sentences=sentences, precision="float32",
                         # JAX compiles the whole step with XLA, always.
                         xla=backend == "jax", quick=FLAGS.quick, scaling_lengths=lengths,
                         model_hparams_sets=hparams_sets, backend=backend,
                         batch_file=FLAGS.batch_file),
        # Other processes share the cores: the load says how noisy the figures are.
        "run": {"part_seconds": {}, "load_average": {"start": measure.load_average()}},
    }

    print(f"{len(registry.models.names())} registered models, batch {sentences} x {length}, "
          f"threads {threads}, Keras backend {backend}", flush=True)
    if parts & set(NEEDS_TRAINING):
        _model_parts(results, parts, synthetic, vocab_sizes, hparams, batch, settings, seed,
                     hparams_sets, decode_batch)

    compared = {}
    if "precision" in parts:  # resolving `auto` asks the backend for its GPUs
        compared = precision_part.compared_settings(FLAGS.mixed_precision, FLAGS.xla, backend)
    if "precision" in FLAGS.only and not compared:
        logging.warning("--only=precision: nothing to compare here (--mixed_precision=%s "
                        "and --xla=%s give float32 alone; auto: on a GPU only)",
                        FLAGS.mixed_precision, FLAGS.xla)
    if compared:
        with _part(results, "precision"):
            results["precision"] = training_throughput.measure_settings(
                compared, hparams, vocab_sizes, batch,
                warmup_steps=settings["warmup_steps"], repetitions=settings["repetitions"],
                steps_per_repetition=settings["steps_per_repetition"], seed=seed)
            precision_part.add_efficiency(results, compared, hparams, vocab_sizes["targets"],
                                          settings["length"], settings["matmul_size"])

    if "mst" in parts:
        from syntax_t2t.benchmarks import mst_speed

        with _part(results, "mst"):
            results["mst"] = mst_speed.measure_mst(mst_lengths,
                                                   repetitions=settings["repetitions"], seed=seed)

    results["run"]["seconds"] = time.perf_counter() - start
    results["run"]["load_average"]["end"] = measure.load_average()
    os.makedirs(output_dir, exist_ok=True)
    table = report.format_table(results)
    report.write_json(results, os.path.join(output_dir, "bench.json"))
    written = ["bench.json", "bench.md"]
    if "training" in results:
        if importlib.util.find_spec("matplotlib") is None:
            # A machine set up for JAX alone (a GPU machine) may lack it; the table is the record.
            logging.warning("matplotlib is not installed: no bench.png")
        else:
            report.write_chart(results, os.path.join(output_dir, "bench.png"))
            written.append("bench.png")
    io_utils.atomic_write_text(os.path.join(output_dir, "bench.md"),
                               f"Command: `{results['command']}`\n\n{table}")
    print(table)
    print(f"wrote {', '.join(os.path.join(output_dir, name) for name in written)}")
    return results


def _batch(settings, seed):
    """`(synthetic batches or None, the training batch, vocab sizes, the decoding batch)`.

    Made from the synthetic problem, or read from --batch_file, whose shape
    then sets the length (a conflicting --length is refused; may set
    settings["length"]). The decoding batch (`decode_sentences` sources of
    half the output length) is None where the file holds none.
    """
    if FLAGS.batch_file:
        batch, vocab_sizes, _ = batches_lib.load_batch(FLAGS.batch_file)
        length = int(batch["targets"].shape[1])
        if FLAGS["length"].present and FLAGS.length != length:
            raise common.UsageError(f"--length={FLAGS.length}, but the batch of --batch_file="
                                    f"{FLAGS.batch_file} is {length} tokens long")
        settings["length"] = length
        return None, batch, vocab_sizes, batches_lib.load_decode_batch(FLAGS.batch_file)
    if importlib.util.find_spec("tensorflow") is None:
        raise common.UsageError(
            "making the synthetic batch needs TensorFlow (the problem's datagen), which is not "
            "installed here: write the batch in an environment with TensorFlow (bin/bench "
            "--only=training --save_batch=batch.npz, with the same --length, --batch_tokens "
            "and --random_seed) and pass --batch_file=batch.npz")
    synthetic = batches_lib.SyntheticBatches(seed=seed)
    length = settings["length"]
    batch = synthetic.batch(length, batches_lib.sentences_for(length, settings["batch_tokens"]))
    decode_batch = synthetic.batch(max(2, settings["decode_output_tokens"] // 2),
                                   settings["decode_sentences"])
    return synthetic, batch, synthetic.vocab_sizes, decode_batch


def entry_point():
    """The program's `main` and the errors it reports as one line (`common.run`'s arguments)."""
    return main, ()


def builtin_modules():
    """The built-in modules to register: off TensorFlow the problems, whose datagen needs it,
    are left out, and only the training part runs there."""
    return None if keras.backend.backend() == "tensorflow" else registration.MODELING_MODULES
