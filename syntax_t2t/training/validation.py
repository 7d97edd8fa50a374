"""What a run does after each dev evaluation: history, the best checkpoint, early stopping.

Every evaluation (teacher-forced dev losses, token accuracy, the parse
head's UAS, and with dev-set decoding its BLEU) is appended to
`<output_dir>/validation.json`, the run's learning curve, from which
`<output_dir>/learning_curve.png` is drawn by the plotting function the
caller hands in (`bin/train`: `evaluation.training_plots.plot_learning_curve`;
the trainer draws nothing itself). The evaluation that is best by
`metric` (`bleu` and `uas`: higher is better; `loss`: the dev translation
loss, lower is better) has its model weights saved in `<output_dir>/best/`
(with copies of the run's `hparams.json` and `flags.txt`, so it decodes like a
run directory) besides the last K checkpoints of the run itself. With
`patience` > 0 training stops after that many evaluations in a row without
improvement (fairseq's `--patience`; T2T's `--eval_early_stopping_steps`
counts steps instead). The history is the state: a resumed run reads it back,
so the patience counter and the best value survive interruptions, and a run
that stopped early stays stopped when resumed with the same patience. Resumed
with a patience that would not have stopped it (0, or more evaluations than
it has gone without improvement) it trains on: the run so far is exactly the
start of a run with the larger budget, so a budget can be raised without
retraining (as rerunning T2T or fairseq with more steps and no `--patience`
does).

Writes are atomic: `validation.json` through a temporary file and a rename,
`best/` by the `save_best` the caller hands in (`bin/train`:
`checkpoint_averaging.save_model_directory`), which builds the new
directory beside it and swaps it in; the history names a new best only once
its weights are saved.
"""

import json
import math
import os
from typing import Any, Callable, Optional

from absl import logging

from syntax_t2t import io_utils
from syntax_t2t.errors import InputError

HISTORY_FILE = "validation.json"
BEST_DIR = "best"
PLOT_FILE = "learning_curve.png"
#: metric name -> (results key, whether higher is better)
METRICS = {"bleu": ("bleu", True), "loss": ("loss/nmt", False), "uas": ("uas", True)}


def improved(value: float, best: Optional[float], higher_is_better: bool,
             min_delta: float = 0.0) -> bool:
    """Whether `value` beats `best` (None: nothing yet) by more than `min_delta`."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return False
    if best is None:
        return True
    return value > best + min_delta if higher_is_better else value < best - min_delta


def nothing_to_train(validation: Optional["Validation"], step: int, train_steps: int) -> bool:
    """Whether a run starting (or resuming) at `step` has nothing left to train; logs why."""
    if validation is not None and validation.stopped_early is not None:
        logging.info("this run stopped early at step %d (see %s); nothing to train",
                     validation.stopped_early, validation.output_dir)
        return True
    if step >= train_steps:
        logging.info("global step %d already reaches --train_steps=%d; nothing to train",
                     step, train_steps)
        return True
    return False


def read_history(output_dir: str) -> dict:
    """The run's validation state: `{"evaluations": [...], "best": {...}|None, "stopped_early": step|None}`."""
    empty = {"evaluations": [], "best": None, "stopped_early": None}
    path = os.path.join(output_dir, HISTORY_FILE)
    history = io_utils.read_json(path, empty, "delete it to start the history again")
    if not (isinstance(history, dict) and isinstance(history.get("evaluations", []), list)):
        raise InputError(path, None, f"expected an object with a list of \"evaluations\", got "
                         f"{type(history).__name__}; delete it to start the history again",
                         reason="damaged validation history")
    return {**empty, **history}


class Validation:
    """Keeps a run's history, best checkpoint and patience (see the module docstring).

    Args:
        output_dir: the run directory.
        metric: `"bleu"`, `"loss"` or `"uas"`, what "best" means.
        patience: stop after this many evaluations without improvement (0 = never).
        dev_translation: called as `dev_translation(model)` for the dev-set
            decoding's scores (`decoding.dev_translation.DevTranslation`),
            or None for no dev-set decoding (no BLEU).
        min_delta: how much a value must improve to count.
        save_best: called as `save_best(directory, step)` to replace
            `directory` atomically with the model's weights and the run's
            files.
        plot: called as `plot(evaluations, path, best_step=step)` after each
            evaluation to draw `learning_curve.png` (the history's
            evaluations, the path, the best evaluation's step or None);
            None draws nothing. A failure to draw (OSError, ValueError) is
            logged and training goes on.

    Raises:
        ValueError: an unknown metric, or `bleu` without dev-set decoding.
    """

    def __init__(self, output_dir: str, metric: str = "loss", patience: int = 0,
                 dev_translation: Optional[Callable[[object], dict]] = None,
                 min_delta: float = 0.0,
                 save_best: Optional[Callable[[str, int], None]] = None,
                 plot: Optional[Callable[..., None]] = None):
        if metric not in METRICS:
            raise ValueError(f"unknown best-checkpoint metric {metric!r}; choose one of "
                             f"{', '.join(METRICS)}")
        if metric == "bleu" and dev_translation is None:
            raise ValueError("the best checkpoint by BLEU needs dev-set decoding (--eval_bleu)")
        self.output_dir = output_dir
        self.metric = metric
        self.key, self.higher_is_better = METRICS[metric]
        self.patience = patience
        self.dev_translation = dev_translation
        self.min_delta = min_delta
        self.save_best = save_best
        self.plot = plot
        self.state = read_history(output_dir)
        stopped = self.state.get("stopped_early")
        if stopped is not None and not 0 < patience <= self.evaluations_without_improvement:
            logging.info("this run stopped early at step %d after %d evaluations without "
                         "improvement; with patience %d it trains on", stopped,
                         self.evaluations_without_improvement, patience)
            # Written with the next evaluation.
            self.state["stopped_early"] = None

    @property
    def stopped_early(self) -> Optional[int]:
        """The step at which early stopping ended the run, or None."""
        return self.state.get("stopped_early")

    @property
    def evaluations_without_improvement(self) -> int:
        best = self.state.get("best")
        best_step = best["step"] if best else -1
        return sum(1 for entry in self.state["evaluations"] if entry["step"] > best_step)

    def missing_evaluation(self, step: int, eval_every: int) -> bool:
        """Whether `step`, where a resumed run starts, is an evaluation step with no evaluation.

        A run stopped after saving an evaluation step's checkpoint but before
        (or while) evaluating it resumes past that step; the trainer
        evaluates it first, so the history and the best checkpoint miss
        nothing.
        """
        if step <= 0 or eval_every <= 0 or step % eval_every:
            return False
        return all(entry["step"] != step for entry in self.state["evaluations"])

    def after_evaluation(self, step: int, results: dict[str, float],
                         model: Any) -> tuple[dict[str, float], bool]:
        """Records an evaluation and keeps the best weights.

        Args:
            step: the global step evaluated.
            results: the trainer's dev results (`loss/nmt`, `uas`, ...).
            model: the model being trained (decoded for BLEU, saved when best).

        Returns:
            `(results, stop)`: the results with dev BLEU (and the parse
            head's dev UAS from decoding) added, and whether to stop early.
        """
        results = dict(results)
        if self.dev_translation is not None:
            results.update(self.dev_translation(model))
        entries = [entry for entry in self.state["evaluations"] if entry["step"] < step]
        entries.append({"step": int(step), **{k: float(v) for k, v in results.items()}})
        self.state["evaluations"] = entries
        value = results.get(self.key)
        best = self.state.get("best")
        if best is not None and best["step"] >= step:
            # A resumed run evaluates that step again: the best of the earlier ones stands.
            best = self._best_of(entries[:-1])
        if improved(value, best and best["value"], self.higher_is_better, self.min_delta):
            if self.save_best is not None:
                self.save_best(os.path.join(self.output_dir, BEST_DIR), step)
            self.state["best"] = best = {"step": int(step), "metric": self.metric,
                                         "value": float(value)}
            logging.info("new best %s %.4f at step %d (saved in %s)", self.metric, value, step,
                         os.path.join(self.output_dir, BEST_DIR))
        else:
            self.state["best"] = best
        stop = 0 < self.patience <= self.evaluations_without_improvement
        if stop:
            self.state["stopped_early"] = int(step)
            logging.info("early stopping at step %d: %d evaluations without a better %s than "
                         "%.4f (step %d)", step, self.patience, self.metric, best["value"],
                         best["step"])
        io_utils.atomic_write_text(os.path.join(self.output_dir, HISTORY_FILE),
                                   json.dumps(self.state, indent=1) + "\n")
        if self.plot:
            self._plot()
        return results, stop

    def _best_of(self, entries):
        best = None
        for entry in entries:
            if improved(entry.get(self.key), best and best["value"], self.higher_is_better,
                        self.min_delta):
                best = {"step": entry["step"], "metric": self.metric, "value": entry[self.key]}
        return best

    def _plot(self):
        try:
            self.plot(self.state["evaluations"],
                                os.path.join(self.output_dir, PLOT_FILE),
                                best_step=(self.state.get("best") or {}).get("step"))
        except (OSError, ValueError) as error:  # a plot never stops training
            logging.warning("could not draw the learning curve: %s", error)
