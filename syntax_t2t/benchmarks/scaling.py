"""How training cost grows with sentence length.

For each source length (every batch has about the same number of tokens,
`batch_tokens // length` sentences), the train steps of `transformer` and
the tree variants are built on the same batch and timed interleaved;
self-attention and the T x T tree label matrices grow quadratically with the
length while the rest of the step grows linearly with the tokens, so the
ratio to `transformer` shows where the tree terms start to dominate.
"""

from syntax_t2t.benchmarks import batches as batches_lib
from syntax_t2t.benchmarks import training_throughput

#: The tree variants of the thesis (their encoder biases are T x T matrices).
TREE_MODELS = ("tree_distance", "tree_traversal")


def measure_scaling(synthetic, base_hparams, lengths, batch_tokens, models=TREE_MODELS,
                    repetitions=3, steps_per_repetition=1, policy_name="float32",
                    jit_compile=False, seed=0):
    """Step time and peak memory against source length.

    Args:
        synthetic: a `batches.SyntheticBatches`.
        base_hparams: the hparams set.
        lengths: padded source lengths to measure.
        batch_tokens: tokens per batch (padding included).
        models: the models measured besides `transformer`.
        repetitions, steps_per_repetition, policy_name, jit_compile, seed:
            see `training_throughput.measure_training`.

    Returns:
        `{str(length): {"sentences": B, "cases": {label: result}}}` with the
        results of `measure_training` per length.
    """
    cases = [training_throughput.Case(name) for name in
             (training_throughput.BASELINE,) + tuple(models)]
    results = {}
    for length in lengths:
        sentences = batches_lib.sentences_for(length, batch_tokens)
        batch = synthetic.batch(length, sentences)
        measured = training_throughput.measure_training(
            cases, base_hparams, synthetic.vocab_sizes, batch, warmup_steps=2,
            repetitions=repetitions, steps_per_repetition=steps_per_repetition,
            policy_name=policy_name, jit_compile=jit_compile, seed=seed)
        results[str(length)] = {"sentences": sentences, "cases": measured["cases"]}
    return results
