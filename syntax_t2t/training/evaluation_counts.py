"""A dev batch's losses and metric counts on `keras.ops`, for trainers of any backend.

The JAX trainer's dev evaluation (`jax_trainer.py`); it counts what the
TensorFlow trainer's `_eval_counts` counts (the losses, the criterion's
diagnostics and counts, such as a supervised head's attachments, and the
teacher-forced token accuracy that `metrics.py` counts with TensorFlow), as
float32 scalars whose sums over the dev batches give the dev-set means and
ratios.
"""

from typing import Any, Mapping

from keras import ops

PAD_ID = 0


def token_accuracy_counts(logits, targets) -> tuple:
    """`(correct, total)`: teacher-forced argmax predictions equal to non-padding targets."""
    real = ops.not_equal(targets, PAD_ID)
    predicted = ops.cast(ops.argmax(logits, axis=-1), targets.dtype)
    correct = ops.logical_and(real, ops.equal(predicted, targets))
    return ops.sum(ops.cast(correct, "float32")), ops.sum(ops.cast(real, "float32"))


def evaluation_counts(model, criterion, batch: Mapping[str, Any]) -> dict:
    """One dev batch's `loss/<name>` and `diagnostics/<name>` means and metric counts.

    Args:
        model: the model, called with `training=False`.
        criterion: its criterion (`criteria.Criterion`): the losses, the
            diagnostics and the counts of a supervised head.
        batch: its features.

    Returns:
        float32 scalars: the losses and diagnostics, `batches` (1),
        `correct_tokens` and `target_tokens`, and the criterion's counts
        (`correct_heads` and `words` for a supervised head).
    """
    outputs = model(batch, training=False)
    losses = criterion(batch, outputs)
    counts = {f"loss/{name}": ops.cast(value, "float32") for name, value in losses.items()}
    counts.update({f"diagnostics/{name}": ops.cast(value, "float32")
                   for name, value in criterion.diagnostics(batch, outputs, losses).items()})
    counts["batches"] = ops.convert_to_tensor(1.0, "float32")
    counts["correct_tokens"], counts["target_tokens"] = token_accuracy_counts(
        outputs["logits"], batch["targets"])
    counts.update({name: ops.cast(value, "float32")
                   for name, value in criterion.eval_counts(batch, outputs).items()})
    return counts


def results_of(totals: Mapping[str, float]) -> dict:
    """The dev results from counts summed over the batches (the TensorFlow trainer's keys)."""
    if not totals:
        raise ValueError("the evaluation dataset is empty")
    results = {name: totals[name] / totals["batches"] for name in totals
               if name.startswith(("loss/", "diagnostics/"))}
    results["token_accuracy"] = totals["correct_tokens"] / max(totals["target_tokens"], 1.0)
    if "words" in totals:
        results["uas"] = totals["correct_heads"] / max(totals["words"], 1.0)
    return results
