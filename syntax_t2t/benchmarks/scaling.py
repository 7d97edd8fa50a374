"""How training cost grows with sentence length.

For each source length (every batch has about the same number of tokens,
`batch_tokens // length` sentences), the train steps of `transformer` and
the tree variants are built on the same batch and timed interleaved;
self-attention and the T x T tree label matrices grow quadratically with the
length while the rest of the step grows linearly with the tokens, so the
ratio to `transformer` shows where the tree terms start to dominate.

The tree variants' label matrices (`model.source_labels`, computed on the
device from `src_heads` once per batch) are also timed on their own, so the
table shows how much of a step they take.
"""

import tensorflow as tf

from syntax_t2t.benchmarks import batches as batches_lib
from syntax_t2t.benchmarks import measure, training_throughput

#: The tree variants of the thesis (their encoder biases are T x T matrices).
TREE_MODELS = ("tree_distance", "tree_traversal")


def measure_scaling(synthetic, base_hparams, lengths, batch_tokens, models=TREE_MODELS,
                    repetitions=3, steps_per_repetition=1, policy_name="float32",
                    jit_compile=False, seed=0, steps=None):
    """Step time and peak memory against source length.

    Args:
        synthetic: a `batches.SyntheticBatches`.
        base_hparams: the hparams set.
        lengths: padded source lengths to measure.
        batch_tokens: tokens per batch (padding included).
        models: the models measured besides `transformer`.
        repetitions, steps_per_repetition, policy_name, jit_compile, seed:
            see `training_throughput.measure_training`.
        steps: `{label: TrainStep}` already built (the training part's):
            reused, so that only the models missing from it are compiled.

    Returns:
        `{str(length): {"sentences": B, "cases": {label: result},
        "label_seconds": {model: Summary dict}}}` with the results of
        `measure_training` per length and the time of the tree models'
        label computation (forward only, as in a step).
    """
    cases = [training_throughput.Case(name) for name in
             (training_throughput.BASELINE,) + tuple(models)]
    steps = {case.label: steps[case.label] for case in cases if case.label in (steps or {})}
    results = {}
    label_functions = {}
    for length in lengths:
        sentences = batches_lib.sentences_for(length, batch_tokens)
        batch = synthetic.batch(length, sentences)
        # Each model's step is traced once for every length (see `TrainStep`).
        measured = training_throughput.measure_training(
            cases, base_hparams, synthetic.vocab_sizes, batch, warmup_steps=2,
            repetitions=repetitions, steps_per_repetition=steps_per_repetition,
            policy_name=policy_name, jit_compile=jit_compile, seed=seed, steps=steps)
        steps = measured["steps"]
        label_functions = {label: label_functions.get(label) or _label_function(steps[label])
                           for label in models if label in steps}
        label_seconds = measure.interleaved(
            {label: (lambda function=function, step=steps[label]: measure.timed(
                lambda: tf.nest.map_structure(lambda x: x.numpy(), function(step.batch))))
             for label, function in label_functions.items()}, repetitions + 2)
        results[str(length)] = {
            "sentences": sentences, "cases": measured["cases"],
            "label_seconds": {label: measure.Summary.of(times[1:]).as_dict()  # 1st: untimed
                              for label, times in label_seconds.items()}}
    return results


def _label_function(step):
    """`step.model.source_labels` on a batch, traced once for every shape."""
    model = step.model
    signature = {key: tf.TensorSpec([None] * len(value.shape), value.dtype, name=key)
                 for key, value in step.batch.items()}

    @tf.function(input_signature=[signature])
    def labels(batch):
        return model.source_labels(batch, model.source_ids(batch))

    return labels
