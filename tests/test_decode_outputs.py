"""bin/decode's n-best lists and forced scoring, on an untrained `transformer` run.

Scores are checked against teacher-forced log-probabilities computed here
from `model.call` (the whole target at once), independently of the
incremental decoder that the search and the forced scoring step through.
"""


import numpy as np
import pytest
import tensorflow as tf
from absl.testing import flagsaver
from decode_runs import generated_data, save_random_run, small_hparams, write_lines

from syntax_t2t.cli import decode
from syntax_t2t.decoding.beam_search import length_penalty
from syntax_t2t.errors import InputError
from syntax_t2t.hparams import HParamsError

EOS_ID = 1
ALPHA = 0.6
EXTRA_LENGTH = 1


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    """Data, 8 test sentences as text (line 3 empty, line 4 one word) and two `transformer` runs.

    Random weights rarely end a hypothesis. The `ending` run's `<EOS>` is
    boosted so that most hypotheses end; the `unending` run's is zeroed: its
    logit 0 stays below the largest of the 281 other random logits, so every
    hypothesis is cut off at the maximum length.
    """
    root = tmp_path_factory.mktemp("decode_outputs")
    problem, samples = generated_data(root, "decode", 8)
    lines = [" ".join(tree.tokens) for tree, _ in samples]
    lines[2] = ""
    lines[3] = lines[3].split()[0]
    write_lines(root / "test.txt", lines)
    models = {run: save_random_run(root / run, "transformer", small_hparams(), root / "data",
                                   eos_scale=scale)
              for run, scale in (("ending", 6.0), ("unending", 0.0))}
    vocabularies = problem.load_vocabularies(str(root / "data"))
    return {"root": root, "models": models, "vocabularies": vocabularies, "sources": lines,
            "targets": [" ".join(target.tokens if hasattr(target, "tokens") else target)
                        for _, target in samples]}


def run_decode(workspace, run="ending", **flag_values):
    flag_values.setdefault("decode_from_file", str(workspace["root"] / "test.txt"))
    with flagsaver.flagsaver(output_dir=str(workspace["root"] / run), **flag_values):
        decode.main(["decode"])


def teacher_forced_log_probs(workspace, source, target_tokens, with_eos=True, run="ending"):
    """log p(token) of every target token (and <EOS>) from one `model.call`."""
    vocabularies = workspace["vocabularies"]
    inputs = vocabularies["inputs"].encode(source.split()) + [EOS_ID]
    targets = vocabularies["targets"].encode(list(target_tokens)) + ([EOS_ID] if with_eos else [])
    logits = workspace["models"][run]({"inputs": tf.constant([inputs]),
                                       "targets": tf.constant([targets])},
                                      training=False)["logits"]
    log_probs = tf.nn.log_softmax(logits[0], axis=-1).numpy()
    return log_probs[np.arange(len(targets)), targets]


def nbest_blocks(path):
    """The n-best file as one list of (hypothesis, score) per input sentence."""
    blocks, block = [], []
    for line in path.read_text(encoding="utf-8").split("\n")[:-1]:
        if not line:  # the blank line after an input sentence's hypotheses
            blocks.append(block)
            block = []
            continue
        hypothesis, score = line.split("\t")
        block.append((hypothesis, float(score)))
    assert block == [], "the last hypotheses lack their blank line"
    return blocks


@pytest.mark.parametrize("run", ["ending", "unending"])
def test_nbest_lists_hold_every_beam_with_the_search_score(workspace, run):
    output = workspace["root"] / f"nbest_{run}.txt"
    run_decode(workspace, run, decode_to_file=str(output),
               decode_hparams=f"beam_size=3,alpha={ALPHA},extra_length={EXTRA_LENGTH},"
                              f"return_beams=true,write_beam_scores=true")
    blocks = nbest_blocks(output)
    assert len(blocks) == len(workspace["sources"])
    kinds = set()
    assert blocks[2] == []  # the empty input line: the blank line alone
    for source, block in zip(workspace["sources"], blocks):
        if not source:
            continue
        assert 1 <= len(block) <= 3 and len({hypothesis for hypothesis, _ in block}) == len(block)
        scores = [score for _, score in block]
        assert scores == sorted(scores, reverse=True)
        max_length = len(source.split()) + 1 + EXTRA_LENGTH
        for hypothesis, score in block:
            tokens = hypothesis.split()
            # Shorter than the maximum: ended with <EOS>, which is scored and
            # counted in the penalty; else cut off at the maximum length.
            finished = len(tokens) < max_length
            kinds.add(finished)
            log_prob = teacher_forced_log_probs(workspace, source, tokens, finished, run).sum()
            penalty = float(length_penalty(len(tokens) + finished, ALPHA))
            assert score == pytest.approx(log_prob / penalty, abs=2e-5), hypothesis
    # Both kinds of hypothesis are checked: mostly ended, or all cut off.
    if run == "ending":
        assert True in kinds
    else:
        assert kinds == {False}


@pytest.mark.parametrize("run", ["ending", "unending"])
def test_nbest_flag_keeps_the_best_n_of_the_same_lists(workspace, run):
    settings = f"beam_size=3,alpha={ALPHA},extra_length={EXTRA_LENGTH}"
    every, best_two = workspace["root"] / f"every_{run}.txt", workspace["root"] / f"best2_{run}.txt"
    run_decode(workspace, run, decode_to_file=str(every),
               decode_hparams=settings + ",return_beams=true,write_beam_scores=true")
    run_decode(workspace, run, decode_to_file=str(best_two), decode_hparams=settings, nbest=2)
    assert nbest_blocks(best_two) == [block[:2] for block in nbest_blocks(every)]
    if run == "unending":  # three cut-off hypotheses in every list: the best two are kept
        assert [len(block) for block in nbest_blocks(best_two)] == [2, 2, 0, 2, 2, 2, 2, 2]


def test_nbest_options_that_cannot_hold_are_refused(workspace):
    output = workspace["root"] / "refused.txt"
    with pytest.raises(HParamsError, match=r"--nbest=5 asks for more hypotheses than the beam "
                                           r"holds \(beam_size=4\)"):
        run_decode(workspace, decode_to_file=str(output), nbest=5)
    with pytest.raises(HParamsError, match="write_beam_scores=true .* needs return_beams=true"):
        run_decode(workspace, decode_to_file=str(output), decode_hparams="write_beam_scores=true")
    with pytest.raises(HParamsError, match="eos_candidates=first must be one of all, beam"):
        run_decode(workspace, decode_to_file=str(output), decode_hparams="eos_candidates=first")
    assert not output.exists()


def read_scores(path):
    """`[(total, per_token) or None]`, one per output line."""
    return [tuple(float(value) for value in line.split("\t")) if line else None
            for line in path.read_text(encoding="utf-8").split("\n")[:-1]]


def test_forced_scores_are_teacher_forced_log_probabilities(workspace):
    root, sources, targets = workspace["root"], workspace["sources"], workspace["targets"]
    targets = targets[:-1] + [""]  # an empty translation scores <EOS> alone
    pairs = root / "pairs.tsv"
    pairs.write_text("".join(f"{source}\t{target}\n" if source else "\n"
                             for source, target in zip(sources, targets)), encoding="utf-8")
    output = root / "scores.txt"
    run_decode(workspace, decode_from_file=None, score_file=str(pairs),
               decode_to_file=str(output))
    scores = read_scores(output)
    assert len(scores) == len(sources) and scores[2] is None
    for source, target, score in zip(sources, targets, scores):
        if not source:
            continue
        expected = teacher_forced_log_probs(workspace, source, target.split())
        assert score[0] == pytest.approx(expected.sum(), abs=1e-4)
        assert score[1] == pytest.approx(expected.mean(), abs=1e-5)
    assert len(teacher_forced_log_probs(workspace, sources[-1], [])) == 1

    # fairseq's form: the same pairs from the decoding input and a reference file.
    references, from_references = root / "references.txt", root / "reference_scores.txt"
    references.write_text("".join(target + "\n" for target in targets), encoding="utf-8")
    run_decode(workspace, score_reference=True, reference_file=str(references),
               decode_to_file=str(from_references))
    assert read_scores(from_references) == scores


def test_bad_scoring_inputs_name_the_file_and_line(workspace):
    root = workspace["root"]
    pairs = root / "bad_pairs.tsv"
    pairs.write_text("a b\tc\nno tab here\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"bad_pairs\.tsv:2: expected source<TAB>target, "
                                         r"found 0 tab\(s\)"):
        run_decode(workspace, decode_from_file=None, score_file=str(pairs),
                   decode_to_file=str(root / "never.txt"))
    short = root / "short_references.txt"
    short.write_text("one line\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"short_references\.txt: has 1 line, but the sources "
                                         r"to score have 8 sentences"):
        run_decode(workspace, score_reference=True, reference_file=str(short),
                   decode_to_file=str(root / "never.txt"))
    assert not (root / "never.txt").exists()
