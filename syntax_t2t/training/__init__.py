"""Training: the loop and everything it saves and reads back.

| module | concept |
|---|---|
| `trainer.py` | `Trainer`: compiled (XLA, distributed) train step, dev evaluation, resume |
| `schedules.py` | `NoamSchedule`, T2T's learning-rate schedule |
| `optimizers.py` | Adam with T2T's settings, loss scaling, clipping by global norm |
| `precision.py` | `--mixed_precision` / `--xla`, resolving `auto` |
| `distribution.py` | `--distribution`: the `tf.distribute` strategy, the chief task |
| `checkpoints.py` | checkpoint layout (`model_weights/<path>`, optimizer, step, dropout state, input position), save and restore, clearing killed saves; `restore_model` (a model's weights alone, for decoding and averaging) |
| `checkpoint_averaging.py` | averaging a run's last checkpoints; a model directory (`best/`, `averaged/`) written atomically |
| `stop_signals.py` | SIGINT/SIGTERM as a request to save and stop (`TrainingInterrupted`) |
| `nonfinite.py` | refusing non-finite updates: stop naming the step, or skip the batch |
| `run_directory.py` | `hparams.json` and `flags.txt` of a run, conflicts on resume |
| `metrics.py` | token accuracy of dev batches (a criterion counts attachments: `criteria/`) |
| `progress.py` | progress lines and TensorBoard scalars |
| `validation.py` | the history of dev evaluations, the best checkpoint, early stopping; dev decoding, plots and saving are handed in |
"""
