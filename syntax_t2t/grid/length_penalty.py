"""The length penalty of each run chosen on the dev set, and its test translations.

The thesis decodes with beam 4 and alpha 0.6, and so does an experiment's
main table (`Experiment.decode_hparams`). But alpha trades brevity against
adequacy differently for each model: on Multi30k, systems whose BLEU differed
by the brevity penalty alone looked different at alpha 0.6 and alike at 1.2
(docs/results.md §0). An experiment that lists `length_penalties` therefore
also decodes its `dev_set` with each candidate alpha (the rest of
`decode_hparams` unchanged), keeps the alpha whose dev translations score the
highest BLEU for that run, and decodes every test set once more with it. The
test set plays no part in the choice.

The choice is per run, as a user tunes the one model they deploy; ties go to
the candidate listed first. A run's files:

    tests/dev/<dev set>.alpha<alpha>.hyp   the dev translations of each candidate
    tests/length_penalty.json              {"dev_set", "bleu": {alpha: BLEU}, "alpha"}
    tests/<test>.dev_alpha.hyp             the test translations at the chosen alpha
"""

import json
import os

from syntax_t2t import io_utils
from syntax_t2t.evaluation import translation
from syntax_t2t.hparams import replace_override

CHOICE_FILE = os.path.join("tests", "length_penalty.json")
#: The key of `scores.json` and the report that holds the scores at the chosen alpha.
SCORES_KEY = "translation_dev_alpha"


def test_output(test):
    """The run-relative path of a test set's translations at the dev-chosen alpha."""
    return os.path.join("tests", f"{test.name}.dev_alpha.hyp")


def dev_output(dev_set, alpha):
    """The run-relative path of the dev translations with the length penalty `alpha`."""
    return os.path.join("tests", "dev", f"{dev_set.name}.alpha{alpha:g}.hyp")


def with_alpha(decode_hparams, alpha):
    """`decode_hparams` (`--decode_hparams` syntax) with its `alpha` set to `alpha`."""
    return replace_override(decode_hparams, "alpha", float(alpha))


def choose(bleu_by_alpha):
    """The alpha of the highest BLEU in `[(alpha, BLEU)]`; the first listed among equals."""
    if not bleu_by_alpha:
        raise ValueError("no length penalty to choose from")
    best_alpha, best_bleu = bleu_by_alpha[0]
    for alpha, bleu in bleu_by_alpha[1:]:
        if bleu > best_bleu:
            best_alpha, best_bleu = alpha, bleu
    return best_alpha


def write_choice(run_directory, dev_set, alphas, reference):
    """Scores the run's dev translations of each alpha, writes `CHOICE_FILE`; returns its dict."""
    bleu = [(alpha, translation.score_files(os.path.join(run_directory, dev_output(dev_set, alpha)),
                                            reference)["BLEU"].score) for alpha in alphas]
    choice = {"dev_set": dev_set.name, "bleu": {f"{alpha:g}": score for alpha, score in bleu},
              "alpha": choose(bleu)}
    # Unsorted: "bleu" keeps the candidates' order, which breaks ties.
    io_utils.atomic_write_text(os.path.join(run_directory, CHOICE_FILE),
                               json.dumps(choice, indent=1) + "\n")
    return choice


def read_choice(run_directory):
    """The run's `CHOICE_FILE`, or None before the choice is made."""
    return io_utils.read_json(os.path.join(run_directory, CHOICE_FILE), None,
                              "delete it to choose the length penalty again")
