"""Runs of untrained models for the decoding tests: random weights saved as the trainer saves them.

The weights go under `model_weights/` of a `tf.train.Checkpoint`, with the
run files (`flags.txt`, hparams) that `bin/decode` reads its defaults from,
so `bin/decode --output_dir=RUN` works without training.
"""

import itertools

import tensorflow as tf
from absl import flags

from syntax_t2t import registry
from syntax_t2t.cli import registration
from syntax_t2t.training import run_directory
from syntax_t2t.training.checkpoints import model_weights

PROBLEM = "synthetic_syntax_reorder"
EOS_ID = 1


def small_hparams(name="transformer_tiny", **overrides):
    """`name` with a 32-wide model: fast, and enough to tell hypotheses apart."""
    hparams = registry.hparams(name)
    hparams.override(dict(dict(hidden_size=32, filter_size=64), **overrides))
    return hparams


def save_random_run(run_dir, model_name, hparams, data_dir, steps=(10,), stddev=0.1,
                    eos_scale=None, problem_name=PROBLEM):
    """Builds `model_name` and saves one checkpoint per step, each of new random weights.

    Args:
        run_dir: the run directory (created).
        model_name: a registered model.
        hparams: its hparams.
        data_dir: generated data of `PROBLEM`.
        steps: checkpoint numbers; the weights of step `s` are drawn with seed `s`,
            statelessly, so that they do not depend on what ran earlier in the process.
        stddev: of the normal weights; None keeps the model's own initialisation.
        eos_scale: multiplies the `<EOS>` row of the target embedding, which
            is also its softmax row: the larger, the more hypotheses end
            before their maximum length (random weights rarely end them). The
            row is first turned to the side the decoder's states point to, on
            a probe batch: scaling a row they point away from ends fewer. 0
            gives `<EOS>` the logit 0, below the largest of the other random
            logits: no hypothesis ends before its maximum length.
        problem_name: the registered problem whose data `data_dir` holds.

    Returns:
        The model, holding the weights of the last checkpoint.
    """
    problem = registry.problem(problem_name)
    vocab_sizes = problem.vocab_sizes(str(data_dir))
    model = registry.model(model_name)(hparams, vocab_sizes)
    step = tf.Variable(0, dtype=tf.int64)
    manager = tf.train.CheckpointManager(
        tf.train.Checkpoint(model_weights=model_weights(model), step=step), str(run_dir),
        max_to_keep=len(steps), checkpoint_name="ckpt")
    for value in steps:
        step.assign(value)
        if stddev is not None:
            for index, weight in enumerate(model.weights):
                weight.assign(tf.random.stateless_normal(weight.shape, seed=[value, index],
                                                         stddev=stddev))
        if eos_scale is not None:
            table = model.target_embedding.embeddings
            row = table[EOS_ID:EOS_ID + 1]
            if eos_scale and mean_eos_logit(model, vocab_sizes, seed=value) < 0:
                row = -row
            table.assign(tf.tensor_scatter_nd_update(table, [[EOS_ID]], eos_scale * row))
        manager.save(checkpoint_number=value)
    run_directory.write_run_files(str(run_dir), hparams, [
        f"--problem={problem_name}", f"--model={model_name}", f"--data_dir={data_dir}"])
    return model


def mean_eos_logit(model, vocab_sizes, seed, batch_size=8, length=8):
    """The `<EOS>` logit averaged over a batch of random sentences, teacher-forced."""
    def random_ids(name, index):
        return tf.random.stateless_uniform([batch_size, length], seed=[seed, index], minval=2,
                                           maxval=vocab_sizes[name], dtype=tf.int32)
    logits = model({"inputs": random_ids("inputs", 0), "targets": random_ids("targets", 1)},
                   training=False)["logits"]
    return float(tf.reduce_mean(logits[..., EOS_ID]))


def generated_data(root, program, count):
    """Data of `PROBLEM` under `root / "data"` and its first `count` test samples.

    Imports the registry and parses the absl flags as `program` would
    (tests call the programs' `main`).

    Returns:
        `(problem, samples)`: the problem with its vocabularies loaded, and
        `(source tree, target)` pairs.
    """
    registration.import_all()
    if not flags.FLAGS.is_parsed():
        flags.FLAGS([program])
    problem = registry.problem(PROBLEM)
    problem.generate_data(str(root / "data"), str(root / "raw"), max_examples=200)
    return problem, list(itertools.islice(problem.generate_samples(None, "test", None), count))


def write_lines(path, lines):
    """`lines` as a text file, one per line."""
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
