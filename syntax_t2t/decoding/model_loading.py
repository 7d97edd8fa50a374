"""A trained model for decoding or analysis: its run's settings and its checkpoint.

A training run's directory (`bin/train --output_dir`) holds `hparams.json`,
`flags.txt` (model, problem, data_dir, ...) and checkpoints `ckpt-<step>`.
A model is restored from the newest checkpoint of a directory (found from
its files, `checkpointing/discovery.py`), or from an explicit checkpoint
(such as the one `bin/average_checkpoints` writes); only the model's
weights are read, so the optimizer's state in a training checkpoint is
ignored.

Checkpoints hold the model's weights by their Keras path
(`checkpointing/variables.py` explains why), in the directory format every
backend reads or, for runs trained before it, TensorFlow's format (read on
the TensorFlow backend). Reading them into a model is
`checkpointing/weights.py`'s `restore_model`, which refuses saved weights
that the model would leave unused as firmly as weights without a value.
"""

import dataclasses
import os
from typing import Optional

from absl import logging

from syntax_t2t import problem_options, registry
from syntax_t2t.checkpointing import discovery
from syntax_t2t.checkpointing.errors import CheckpointError
from syntax_t2t.checkpointing.weights import restore_model
from syntax_t2t.hparams import HParams
from syntax_t2t.training import run_directory, run_vocabulary


def resolve_checkpoint(output_dir: Optional[str], checkpoint_path: Optional[str]) -> str:
    """The checkpoint to restore.

    Args:
        output_dir: a run directory; its newest checkpoint is used.
        checkpoint_path: an explicit checkpoint (`.../ckpt-1000`); wins over
            `output_dir`.

    Raises:
        CheckpointError: neither is given, or there is no such checkpoint.
    """
    if checkpoint_path:
        if discovery.checkpoint_at(checkpoint_path) is None:
            raise CheckpointError(f"--checkpoint_path={checkpoint_path}: "
                                  f"{discovery.no_checkpoint_message(checkpoint_path)}")
        return checkpoint_path
    if not output_dir:
        raise CheckpointError("give --output_dir (a training run) or --checkpoint_path")
    latest = discovery.latest_checkpoint(output_dir)
    if latest is None:
        raise CheckpointError(f"--output_dir={output_dir} holds no checkpoint; train first "
                              f"(bin/train) or give --checkpoint_path")
    return latest


def run_dir_of(output_dir: Optional[str], checkpoint_path: Optional[str]) -> Optional[str]:
    """The directory whose `hparams.json` and `flags.txt` describe the checkpoint."""
    if checkpoint_path:
        return os.path.dirname(os.path.abspath(checkpoint_path))
    return output_dir


def check_checkpoint_of_run(output_dir: Optional[str], checkpoint_path: Optional[str]) -> None:
    """Refuses a `--checkpoint_path` whose run differs from `--output_dir`'s.

    With both flags the checkpoint's own directory describes it; when that
    directory records another model, problem or other hparams than
    `--output_dir`, the user most likely mixed up two runs.

    Raises:
        RunDirectoryError: the two runs' records differ (named).
    """
    if not (output_dir and checkpoint_path):
        return
    checkpoint_run = run_dir_of(output_dir, checkpoint_path)
    if os.path.realpath(checkpoint_run) == os.path.realpath(output_dir):
        return
    ours, theirs = run_directory.load_flags(output_dir), run_directory.load_flags(checkpoint_run)
    if not ours or not theirs:
        logging.warning("--checkpoint_path=%s is outside --output_dir=%s and one of them records "
                        "no flags.txt: cannot check that both are of the same model",
                        checkpoint_path, output_dir)
        return
    differences = [f"--{name}={theirs.get(name)} (--output_dir: {ours.get(name)})"
                   for name in ("model", "problem") if ours.get(name) != theirs.get(name)]
    saved_hparams = run_directory.load_hparams(checkpoint_run), run_directory.load_hparams(output_dir)
    if None not in saved_hparams and saved_hparams[0].values() != saved_hparams[1].values():
        differences.append("other hparams")
    if differences:
        raise run_directory.RunDirectoryError(
            f"--checkpoint_path={checkpoint_path} is a checkpoint of another run than "
            f"--output_dir={output_dir}: {checkpoint_run} records {', '.join(differences)}; give "
            f"only --checkpoint_path, or a checkpoint of --output_dir's run")


def saved_flag(run_dir: Optional[str], name: str) -> Optional[str]:
    """The value of flag `name` the run was trained with, or None."""
    if not run_dir:
        return None
    return run_directory.load_flags(run_dir).get(name)


@dataclasses.dataclass
class TrainedModel:
    """A restored model with what it was trained on.

    Attributes:
        model: the model, weights restored.
        model_name: its registered name.
        problem: the problem, vocabularies loaded.
        hparams: the model's hyper-parameters.
        checkpoint: the checkpoint the weights come from.
        data_dir: the directory of the problem's generated data.
    """

    model: object
    model_name: str
    problem: object
    hparams: HParams
    checkpoint: str
    data_dir: str


def _from_flag_or_run(name: str, given: Optional[str], run_dir: Optional[str]) -> str:
    saved = saved_flag(run_dir, name)
    if given and saved and given != saved:
        raise run_directory.RunDirectoryError(
            f"--{name}={given}, but the checkpoint's run in {run_dir} was trained with --{name}={saved}")
    value = given or saved
    if not value:
        flags_file = run_directory.flags_path(run_dir) if run_dir else None
        why = ("its flags.txt lacks the line (cut short?)" if flags_file and os.path.exists(flags_file)
               else "no flags.txt")
        raise run_directory.RunDirectoryError(
            f"missing --{name}: the run directory {run_dir} does not record it ({why})")
    return value


def load_trained_model(output_dir: Optional[str] = None, checkpoint_path: Optional[str] = None,
                       model_name: Optional[str] = None, problem_name: Optional[str] = None,
                       data_dir: Optional[str] = None, hparams_set: Optional[str] = None,
                       hparams_overrides: str = "", problem_options_text: str = "") -> TrainedModel:
    """Builds a registered model as it was trained and restores its weights.

    Model, problem, data directory and hparams default to what the run
    recorded (`flags.txt`, `hparams.json`); values given explicitly must
    agree with the record.

    Args:
        output_dir: the training run (newest checkpoint).
        checkpoint_path: an explicit checkpoint instead; its directory holds
            the run's files.
        model_name, problem_name, data_dir: registered names and the data
            directory, when not (or not only) taken from the run.
        hparams_set, hparams_overrides: `--hparams_set` and `--hparams`.
        problem_options_text: `--problem_options`; the problem takes the
            options its data was generated with, which these must match.

    Raises:
        CheckpointError: no checkpoint, or one that does not fit.
        RunDirectoryError: given values contradict the run's record, or
            something needed is neither given nor recorded.
        RunVocabularyError: the data's vocabularies or options are not those the
            run was trained with (`training/run_vocabulary.py`).
        RegistryError, HParamsError, DataNotGeneratedError: as their names say.
    """
    checkpoint = resolve_checkpoint(output_dir, checkpoint_path)
    check_checkpoint_of_run(output_dir, checkpoint_path)
    run_dir = run_dir_of(output_dir, checkpoint_path)
    model_name = _from_flag_or_run("model", model_name, run_dir)
    problem_name = _from_flag_or_run("problem", problem_name, run_dir)
    # Data may have moved since training: a given --data_dir needs no agreement.
    data_dir = data_dir or _from_flag_or_run("data_dir", None, run_dir)

    saved = run_directory.load_hparams(run_dir)
    if hparams_set:
        requested = registry.hparams(hparams_set).parse(hparams_overrides)
    elif saved is not None and hparams_overrides:
        requested = saved.copy().parse(hparams_overrides)
    else:
        requested = None
    hparams = run_directory.reconcile_hparams(run_dir, saved, requested)

    problem = problem_options.problem_for_data(problem_name, data_dir, problem_options_text)
    problem.load_vocabularies(data_dir)
    # Another data directory (or the same one regenerated) may number the words otherwise.
    run_vocabulary.check(run_dir, problem, data_dir)
    model = registry.model(model_name)(hparams, problem.vocab_sizes(data_dir))
    restore_model(model, checkpoint)
    return TrainedModel(model=model, model_name=model_name, problem=problem, hparams=hparams,
                        checkpoint=checkpoint, data_dir=data_dir)
