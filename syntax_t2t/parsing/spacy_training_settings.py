"""What `spacy_training.train_spacy_parser` is told, and how it reports a stop.

Apart from `spacy_training` (which imports spaCy, seconds on a loaded CPU)
so that `bin/train_parser` can define its flags' defaults from
`TrainingSettings` and answer `--help` or a flag error at once.
"""

import dataclasses
from typing import Optional


@dataclasses.dataclass(frozen=True)
class TrainingSettings:
    """How to train (spaCy's defaults, except where a flag of bin/train_parser says otherwise).

    Attributes:
        lang: spaCy language code (`cs`, `de`, `en`, ...; `xx` for any).
        max_steps: stop after this many updates (0: no limit).
        max_epochs: stop after this many passes over the data (0: no limit).
        eval_frequency: evaluate on the dev data every this many steps.
        patience: stop when the dev score has not improved for this many steps (0: never).
        width: width of the shared token vectors.
        depth: CNN layers of the shared token-vector encoder.
        parser_hidden_width: hidden width of the parser's state model.
        sentences_per_doc: sentences per training document.
        max_train_sentences: use at most this many training sentences (None: all).
        seed: random seed.
        dropout: dropout rate.
    """

    lang: str
    max_steps: int = 20_000
    max_epochs: int = 0
    eval_frequency: int = 200
    patience: int = 1600
    width: int = 96
    depth: int = 4
    parser_hidden_width: int = 128
    sentences_per_doc: int = 10
    max_train_sentences: Optional[int] = None
    seed: int = 0
    dropout: float = 0.1


class ParserTrainingInterrupted(Exception):
    """Training stopped on request; the best pipeline so far is in `output_dir`.

    Attributes:
        step: the updates done (and saved in `work_dir` to resume from).
        output_dir: where the best pipeline so far was put.
        work_dir: the training state the same call resumes from.
    """

    def __init__(self, step: int, max_steps: int, best_step: int, output_dir: str,
                 work_dir: str):
        self.step, self.output_dir, self.work_dir = step, output_dir, work_dir
        of = f" of at most {max_steps}" if max_steps else ""
        super().__init__(
            f"training stopped after update {step}{of}; kept the best pipeline so far (step "
            f"{best_step} of {step}) in {output_dir}, and the state to resume from in "
            f"{work_dir}: run the same command again to resume (delete {work_dir} to start "
            f"afresh)")
