"""`bin/train`: trains a registered model on a registered problem.

    bin/train --problem=synthetic_syntax_reorder --model=dep_parse \\
        --hparams_set=transformer_tiny --hparams='parse_layer=0' \\
        --data_dir=data --output_dir=runs/dep_parse --train_steps=2000

Everything that can be wrong with the command is checked before the first
step: unknown names, a model needing features the problem lacks, missing
generated data, and an output directory that holds another run (a different
model or problem, or other hyper-parameters). Running the same command again
resumes from the newest checkpoint and trains up to `--train_steps` (the
global step to stop at, as in T2T).

Faults: SIGINT or SIGTERM saves a checkpoint at the step reached and exits
with status 128 + the signal's number; a non-finite loss stops training,
naming the step, before anything after the last good step is saved (or,
with `--skip_nonfinite_batches`, skips and counts such batches). With
`--deterministic` and `--random_seed`, TensorFlow's ops and the input
pipeline run deterministically, and a run interrupted and resumed any number
of times ends with the same weights as an uninterrupted one (on the same
machine and software). Training examples longer than `max_length` are
dropped; how many is reported at the end.

Backends. On TensorFlow (the default) the trainer is `training/trainer.py`
on `tf.data` input, under a `tf.distribute` strategy. With
`KERAS_BACKEND=jax` it is `training/jax_trainer.py` on the NumPy input
pipeline (`data/numpy_pipeline.py`), and TensorFlow is never imported: every
flag means what it means on TensorFlow, except those the JAX trainer cannot
honour, which are refused with the reason (`--xla=false`: JAX compiles
everything with XLA). Several devices are `keras.distribution.DataParallel`
there (`backend/jax_distribution.py`): `--distribution=mirrored` or
`--worker_gpu=N` over this host's devices, `multi_worker` over the hosts
that `keras.distribution.initialize` joins (configured by the
`KERAS_DISTRIBUTION_*` environment variables, not `TF_CONFIG`).
Checkpoints are in the format both backends read, so a run can be resumed,
decoded or averaged on either.

The flags are defined in `cli/train_flags.py`, which also holds the entry
point: the command line is parsed before this module loads Keras.
"""

import os
import sys
import tempfile

import keras
from absl import flags, logging

from syntax_t2t.hparams_sets import descriptions
from syntax_t2t import problem_options, registry
from syntax_t2t.cli import common, train_flags
from syntax_t2t.data import tfrecord
from syntax_t2t.errors import InputError
from syntax_t2t.hparams import parse_overrides
from syntax_t2t.problem import DEV, TRAIN, WORD_POSITION_FEATURE
from syntax_t2t.decoding.decode_hparams import decode_hparams
from syntax_t2t.decoding.dev_translation import DevTranslation
from syntax_t2t.evaluation.training_plots import plot_learning_curve
from syntax_t2t.training import (checkpoint_averaging, checkpoints, distribution, precision,
                                 run_directory, run_vocabulary, validation)
from syntax_t2t.training.checkpoints import CheckpointError, restore_model
from syntax_t2t.training.nonfinite import NonFiniteLossError
from syntax_t2t.training.stop_signals import TrainingInterrupted

FLAGS = flags.FLAGS
# Defined apart, so that bin/train answers --help and flag errors before Keras loads; this
# module's --help (common.run) lists them as its own.
flags.adopt_module_key_flags(train_flags)


# What flags.txt records: everything that defines the run.
SAVED_FLAGS = ("problem", "problem_options", "model", "hparams_set", "hparams", "data_dir", "output_dir", "usr_dir",
               "train_steps", "eval_steps", "eval_every", "save_checkpoints_steps",
               "keep_checkpoint_max", "log_step_count_steps", "random_seed", "mixed_precision",
               "xla", "distribution", "worker_gpu", "deterministic", "skip_nonfinite_batches",
               "schedule", "eval_bleu", "eval_bleu_max_sentences", "decode_hparams",
               "best_checkpoint_metric", "early_stopping_patience")


def _flag_lines():
    """The run's flags as `--name=value` lines (an absl flagfile); unset ones are left out."""
    return [FLAGS[name].serialize() for name in SAVED_FLAGS if FLAGS[name].value is not None]


def _check_features(problem, train_features, data_keys=None):
    available = problem.feature_keys if data_keys is None else data_keys
    missing = sorted(set(train_features) - set(available))
    if missing:
        where = f" in {FLAGS.data_dir}" if data_keys is not None else ""
        raise common.UsageError(
            f"model {FLAGS.model} needs the features {', '.join(missing)}, which problem "
            f"{FLAGS.problem} does not provide (it provides {', '.join(available)}{where})")


def _warn_unread_word_positions(data_keys, model, hparams):
    """Warns when a subword problem gives word boundaries that the model could read but will not.

    Models with `reads_word_positions` (pascal, sisa, tree_distance,
    tree_traversal, sennrich_haddow with the subword_tag factor) read
    `src_word_position` only with `source_word_positions=true`; without it
    every subword is taken for a word of its own.
    """
    if (WORD_POSITION_FEATURE in data_keys
            and not hparams.get("source_word_positions", False)
            and getattr(model, "reads_word_positions", False)):
        logging.warning(
            "problem %s gives %s (the word of each subword) but source_word_positions=false: "
            "model %s will treat every subword as a word of its own (Pascal's parent middles, "
            "SISA's root targets, S&H's subword tags, tree labels between pieces of one word); "
            "add --hparams=source_word_positions=true to read the word boundaries",
            FLAGS.problem, WORD_POSITION_FEATURE, FLAGS.model)


def _check_data(problem):
    """Fails unless the data is complete (naming the datagen command) and has examples."""
    problem.filepaths(FLAGS.data_dir, TRAIN)
    problem.filepaths(FLAGS.data_dir, DEV)
    counts = problem.completion_record(FLAGS.data_dir).get("counts", {})
    if counts.get(TRAIN) == 0:
        raise common.UsageError(
            f"the train split of problem {FLAGS.problem} in {FLAGS.data_dir} holds no examples")
    if counts.get(DEV) == 0:
        raise common.UsageError(
            f"the dev split of problem {FLAGS.problem} in {FLAGS.data_dir} holds no examples; "
            f"training evaluates on it")


def _shortest_training_example(files, max_length):
    """None when a training example fits `max_length`, else the shortest example's length."""
    if _on_tensorflow():
        import tensorflow as tf
        from syntax_t2t.data import pipeline

        examples = tf.data.TFRecordDataset(files).map(
            lambda record: pipeline.parse_example(record, ("inputs", "targets")))
        fits = examples.filter(lambda example: pipeline.example_length(example) <= max_length)
        if next(iter(fits.take(1)), None) is not None:
            return None
        return min(int(pipeline.example_length(example)) for example in examples)
    shortest = None
    for path in files:
        for data in tfrecord.read_records(path):
            features = tfrecord.parse_int_lists(data, ("inputs", "targets"))
            length = max(len(values) for values in features.values())
            if length <= max_length:
                return None
            shortest = length if shortest is None else min(shortest, length)
    return shortest


def _check_lengths(problem, hparams):
    """Fails when no training example fits `max_length`: training would wait forever for a batch."""
    files = problem.filepaths(FLAGS.data_dir, TRAIN)
    shortest = _shortest_training_example(files, hparams.max_length)
    if shortest is not None:
        raise common.UsageError(
            f"no example of the train split of problem {FLAGS.problem} in {FLAGS.data_dir} fits "
            f"max_length={hparams.max_length}: the shortest is {shortest} tokens long (with "
            f"<EOS>); training drops longer ones, so raise --hparams=max_length")


def _requested_hparams(saved):
    """The hparams the command line asks for, or None to keep the saved ones."""
    if FLAGS.hparams_set:
        return common.hparams_from_flags()
    if saved is not None and FLAGS.hparams:
        return saved.copy().parse(FLAGS.hparams)
    return None


def input_report(counters, max_length):
    """One line on what the training input read and dropped in this process."""
    counts = counters.as_dict()
    return (f"training input: read {counts['examples_read']} examples in this session (the input "
            f"reads ahead), dropped {counts['dropped_too_long']} longer than "
            f"max_length={max_length}")


def _validation(problem, model, output_dir):
    """The run's `validation.Validation`: history, dev BLEU, best checkpoint, early stopping."""
    if FLAGS.best_checkpoint_metric == "bleu" and not FLAGS.eval_bleu:
        raise common.UsageError("--best_checkpoint_metric=bleu needs --eval_bleu (dev-set "
                                "decoding)")
    dev_translation = None
    if FLAGS.eval_bleu:
        overrides = FLAGS.decode_hparams
        if "beam_size" not in parse_overrides(overrides):
            overrides = ",".join(filter(None, ("beam_size=1", overrides)))
        settings = decode_hparams(overrides)
        dev_translation = DevTranslation(problem, FLAGS.data_dir, settings,
                                         FLAGS.eval_bleu_max_sentences)

    def save_best(directory, step):
        checkpoint_averaging.save_model_directory(model, output_dir, directory, step)

    return validation.Validation(output_dir, FLAGS.best_checkpoint_metric,
                                 FLAGS.early_stopping_patience, dev_translation,
                                 save_best=save_best, plot=plot_learning_curve)


def _evaluate_newest_checkpoint(trainer, dev_dataset):
    """`--schedule=evaluate`: the dev results of the run's newest checkpoint, printed."""
    prefix = checkpoints.latest_checkpoint(FLAGS.output_dir)
    if prefix is None:
        raise common.UsageError(f"--schedule=evaluate: --output_dir={FLAGS.output_dir} holds no "
                                f"checkpoint to evaluate")
    trainer.evaluate(dev_dataset, 1)  # creates the variables the checkpoint restores
    restore_model(trainer.model, prefix)
    results = trainer.evaluate(dev_dataset, FLAGS.eval_steps)
    print(f"dev evaluation of {prefix}: " + "  ".join(
        f"{name} {value:.4f}" for name, value in sorted(results.items())))


def _on_tensorflow():
    return keras.backend.backend() == "tensorflow"


def _check_jax_flags():
    """Refuses, with the reason, the flags the JAX trainer cannot honour."""
    if FLAGS.xla == "false":
        raise common.UsageError("--xla=false: under KERAS_BACKEND=jax every step is compiled with "
                                "XLA (JAX has no other way to run it); leave --xla at auto or true")
    if FLAGS.distribution == "multi_worker" and FLAGS.random_seed is None:
        raise common.UsageError("--distribution=multi_worker under KERAS_BACKEND=jax needs "
                                "--random_seed: every process reads the whole input stream "
                                "and hands its devices their rows, so all must draw the same "
                                "stream and the same initial weights")
    if (FLAGS.distribution == "multi_worker" and FLAGS.output_dir
            and checkpoints.latest_checkpoint(FLAGS.output_dir) is not None):
        # Only process 0 keeps its checkpoints (the others save to temporary
        # directories), so the others would start again while it resumed.
        raise common.UsageError(f"--distribution=multi_worker under KERAS_BACKEND=jax starts "
                                f"runs but does not resume them: --output_dir="
                                f"{FLAGS.output_dir} holds a checkpoint. Resume on one host "
                                f"(--worker_gpu) or start a new --output_dir")
    if distribution.cluster_size() > 1:
        raise common.UsageError("TF_CONFIG names a cluster of several tasks: that configures "
                                "tf.distribute, which KERAS_BACKEND=jax does not have. Several "
                                "hosts train under JAX with --distribution=multi_worker and "
                                "KERAS_DISTRIBUTION_JOB_ADDRESSES, "
                                "KERAS_DISTRIBUTION_NUM_PROCESSES and "
                                "KERAS_DISTRIBUTION_PROCESS_ID. Unset TF_CONFIG or use the "
                                "TensorFlow backend")


def _jax_distribution():
    """`--distribution`/`--worker_gpu` as a `keras.distribution` (None: one device), set globally.

    Set before the model is built, so that its variables are created replicated.
    """
    from syntax_t2t.backend import jax_distribution

    try:
        parallel = jax_distribution.make_distribution(FLAGS.distribution,
                                                      num_devices=FLAGS.worker_gpu)
    except jax_distribution.JaxDistributionError as error:
        raise distribution.DistributionError(str(error)) from None
    if parallel is None:
        return None, "one device", True
    keras.distribution.set_distribution(parallel)
    count = jax_distribution.device_count(parallel)
    return parallel, f"data parallel over {count} devices", jax_distribution.is_chief()


def _make_deterministic():
    """Deterministic kernels (the input order is the seeded pipeline's own)."""
    if _on_tensorflow():
        import tensorflow as tf

        tf.config.experimental.enable_op_determinism()
        return
    # XLA on a CPU is deterministic; on a GPU it must be asked to be, before
    # JAX starts its backends (nothing has touched a device yet).
    flag = "--xla_gpu_deterministic_ops=true"
    xla_flags = os.environ.get("XLA_FLAGS", "")
    if flag not in xla_flags:
        os.environ["XLA_FLAGS"] = f"{xla_flags} {flag}".strip()


def _make_trainer(model_class, hparams, vocab_sizes, output_dir, policy_name, strategy,
                  jit_compile):
    """The backend's trainer: `Trainer` (TensorFlow) or `JaxTrainer`."""
    options = dict(policy_name=policy_name, keep_checkpoint_max=FLAGS.keep_checkpoint_max,
                   save_checkpoints_steps=FLAGS.save_checkpoints_steps,
                   log_step_count_steps=FLAGS.log_step_count_steps,
                   skip_nonfinite_batches=FLAGS.skip_nonfinite_batches)
    if _on_tensorflow():
        from syntax_t2t.training.trainer import Trainer

        return Trainer(lambda: model_class(hparams, vocab_sizes), hparams, output_dir,
                       strategy=strategy, jit_compile=jit_compile, **options)
    from syntax_t2t.training.jax_trainer import JaxTrainer

    # Under JAX, `strategy` is the keras.distribution (or None).
    return JaxTrainer(lambda: model_class(hparams, vocab_sizes), hparams, output_dir,
                      distribution=strategy, **options)


def _datasets(problem, hparams, model, row_multiple=1):
    """The training and dev input of the backend, and the training input's counters.

    TensorFlow: `tf.data` pipelines (`Problem.dataset`); other backends: the
    NumPy pipeline's datasets of the same batches, with the features the
    model trains on and those it derives; training batches padded with
    all-padding rows to a multiple of `row_multiple` (the devices they are
    split over).
    """
    if _on_tensorflow():
        from syntax_t2t.data import pipeline

        counters = pipeline.PipelineCounters()
        train = problem.dataset("train", FLAGS.data_dir, hparams, counters=counters,
                                seed=FLAGS.random_seed, deterministic=FLAGS.deterministic)
        return train, problem.dataset("eval", FLAGS.data_dir, hparams), counters
    from syntax_t2t.data import numpy_pipeline

    counters = numpy_pipeline.PipelineCounters()
    keys = sorted(model.train_features)
    derived = model.derived_features
    train = numpy_pipeline.NumpyDataset(problem.filepaths(FLAGS.data_dir, TRAIN), keys, "train",
                                        hparams, counters=counters, seed=FLAGS.random_seed,
                                        derived=derived, row_multiple=row_multiple)
    dev = numpy_pipeline.NumpyDataset(problem.filepaths(FLAGS.data_dir, DEV), keys, "eval",
                                      hparams, derived=derived)
    return train, dev, counters


def main(argv):
    if len(argv) > 1:
        raise common.UsageError(f"unexpected arguments: {' '.join(argv[1:])}")
    if FLAGS.print_hparams:
        print(descriptions.describe(common.hparams_from_flags()))
        return
    common.require("problem", "model", "data_dir", "output_dir")
    if FLAGS.deterministic and FLAGS.random_seed is None:
        raise common.UsageError("--deterministic needs --random_seed: an unseeded run differs "
                                "from the next one anyway")
    problem = problem_options.problem_for_data(FLAGS.problem, FLAGS.data_dir,
                                               FLAGS.problem_options)
    model_class = registry.model(FLAGS.model)
    _check_features(problem, model_class.train_features)

    output_dir = FLAGS.output_dir
    # Names and overrides are checked before the run directory is taken (and perhaps created):
    # a refused command leaves it as it was.
    requested = _requested_hparams(run_directory.load_hparams(output_dir))
    _check_data(problem)
    run_directory.check_same_run(output_dir, {"model": FLAGS.model, "problem": FLAGS.problem})
    saved = run_directory.load_hparams(output_dir)
    hparams = run_directory.reconcile_hparams(output_dir, saved, requested)
    # A resumed run's embedding rows mean the words of the data it started on.
    run_vocabulary.check_for_training(output_dir, problem, FLAGS.data_dir)
    vocab_sizes = problem.vocab_sizes(FLAGS.data_dir)

    if _on_tensorflow():
        policy_name = precision.resolve_precision(FLAGS.mixed_precision)
        jit_compile = precision.resolve_xla(FLAGS.xla)
        # Multi-worker strategies must exist before TensorFlow runs any op.
        strategy = distribution.make_strategy(FLAGS.distribution, num_devices=FLAGS.worker_gpu)
        logging.info("precision %s, XLA %s, %s", policy_name, "on" if jit_compile else "off",
                     f"{type(strategy).__name__} with {strategy.num_replicas_in_sync} replicas"
                     if strategy.num_replicas_in_sync > 1 else "one device")
    else:
        _check_jax_flags()
        if FLAGS.deterministic:
            _make_deterministic()  # before anything starts JAX's backends
        policy_name = precision.resolve_precision(FLAGS.mixed_precision)
        strategy, devices, chief = _jax_distribution()
        jit_compile = True
        logging.info("precision %s, XLA on (JAX), %s", policy_name, devices)
        if not chief:
            # As tf.distribute's non-chief workers do (distribution.writable_directory):
            # every process saves, only process 0's files are kept.
            output_dir = tempfile.mkdtemp(prefix="process_checkpoints_")

    _check_lengths(problem, hparams)
    if FLAGS.deterministic and _on_tensorflow():
        _make_deterministic()
    if FLAGS.random_seed is not None:
        keras.utils.set_random_seed(FLAGS.random_seed)
    trainer = _make_trainer(model_class, hparams, vocab_sizes, output_dir, policy_name, strategy,
                            jit_compile)
    # Some models need more features with some hparams (known once built);
    # the data's own keys (bracketed trees, target trees) are in its record.
    _check_features(problem, trainer.model.train_features,
                    problem.data_feature_keys(FLAGS.data_dir))
    _warn_unread_word_positions(problem.data_feature_keys(FLAGS.data_dir), trainer.model, hparams)
    row_multiple = 1
    if not _on_tensorflow() and strategy is not None:
        from syntax_t2t.backend import jax_distribution

        row_multiple = jax_distribution.device_count(strategy)
    train_dataset, dev_dataset, counters = _datasets(problem, hparams, trainer.model,
                                                     row_multiple)

    if FLAGS.schedule == "evaluate":
        _evaluate_newest_checkpoint(trainer, dev_dataset)
        return
    validator = _validation(problem, trainer.model, output_dir)
    if output_dir == FLAGS.output_dir and (strategy is None or distribution.is_chief(strategy)):
        run_directory.write_run_files(output_dir, hparams, _flag_lines())
        run_vocabulary.record(output_dir, problem, FLAGS.data_dir)
    try:
        evaluating = FLAGS.schedule != "train"
        results = trainer.train(train_dataset, FLAGS.train_steps,
                                eval_dataset=dev_dataset if evaluating else None,
                                eval_every=FLAGS.eval_every, eval_steps=FLAGS.eval_steps,
                                validation=validator if evaluating else None)
    except TrainingInterrupted as interrupted:
        logging.info("%s", input_report(counters, hparams.max_length))
        print(f"stopped: {interrupted}", file=sys.stderr)
        sys.exit(interrupted.exit_status)
    print(input_report(counters, hparams.max_length))
    if trainer.nonfinite_batches:
        print(f"skipped {trainer.nonfinite_batches} batches whose loss or gradient was not finite")
    if results:
        print("final dev evaluation: " + "  ".join(
            f"{name} {value:.4f}" for name, value in sorted(results.items())))


def _main_naming_damaged_shards(argv):
    if not _on_tensorflow():
        # The NumPy pipeline names a damaged shard itself (tfrecord.DamagedRecordError).
        return main(argv)
    import tensorflow as tf
    from syntax_t2t.data import shard_check

    try:
        return main(argv)
    except tf.errors.DataLossError as error:
        raise shard_check.damaged_shard_error(FLAGS.problem, FLAGS.data_dir, error) from error


def entry_point():
    """The program's `main` and the errors it reports as one line (`common.run`'s arguments)."""
    return _main_naming_damaged_shards, (
        InputError, run_directory.RunDirectoryError, checkpoints.CheckpointMismatchError,
        checkpoints.CorruptCheckpointError,
        NonFiniteLossError, distribution.DistributionError, CheckpointError)


def run():
    """Runs the program on `sys.argv` in a process that has imported this module already.

    `bin/train` and `syntax-t2t-train` start at `train_flags.run`, which
    parses the command line before this module is imported.
    """
    main_function, user_errors = entry_point()
    common.run(main_function, extra_user_errors=user_errors)
