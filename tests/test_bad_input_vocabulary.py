"""Issue 35, item 4: a run used with vocabularies or problem options it was not trained with.

Same harness and promise as `test_bad_input.py` (status 1 and one `error:`
line naming what is wrong, or success with the reported warning). Before
runs kept their vocabularies (`training/run_vocabulary.py`), every refused
row here exited 0, decoding or training with every embedding row meaning
another word.
"""

import json
import os
import shutil

import pytest
from bad_input_harness import (PROBLEM, Case, Workspace, check_case, decode_input, run_program,
                               shared, train_with, untrained_run)
from test_bad_input_runs import SHARED_DATA_OPTIONS, copy_data

from syntax_t2t import problem_options, registry
from syntax_t2t.training import run_vocabulary

assert shared  # the harness's module fixture, imported for pytest to find

HEX = "[0-9a-f]{16}"


def refused_file(data, run="run"):
    """The one-line refusal of a vocabulary file of `data`, with both fingerprints and the ways on."""
    return (rf"vocabulary file .*/{data}/{PROBLEM}\.vocab\.\w+\.txt \(sha256 {HEX}\) "
            rf"is not the one the run in .*/{run} was trained with \(sha256 {HEX}\): every "
            rf"embedding row would mean another (word|tag or label)\. The run keeps a copy of its vocabularies in "
            rf".*/{run}/vocabularies/; give the --data_dir the run was trained on \(or data "
            rf"regenerated with its options, recorded in .*/{run}/vocabularies\.json\), or train a "
            rf"new run on this data")


def regenerate(ws, data_dir, **options):
    """Generates the shared data's problem into `data_dir` again (bin/datagen --overwrite's work),
    with `options` changed."""
    problem_class = registry.problems.get(PROBLEM)
    values = problem_options.parse(problem_class, SHARED_DATA_OPTIONS)
    problem_class(**{**values, **options}).generate_data(str(data_dir), str(ws.tmp / "raw"),
                                                     overwrite=True)
    return str(data_dir)


def recorded_run(ws, data_dir):
    """An untrained run on `data_dir` that keeps its vocabularies, as bin/train records them."""
    run = untrained_run(ws.tmp / "run", data_dir)
    run_vocabulary.record(run, problem_options.problem_for_data(PROBLEM, data_dir), data_dir)
    return run


def regenerated_after_training(**options):
    """A recorded run whose data directory was then regenerated in place with `options`."""
    def make(ws):
        data = copy_data(ws)
        run = recorded_run(ws, data)
        regenerate(ws, data, **options)
        return run
    return make


def decode_run(make_run, **flag_values):
    def run(ws, capsys):
        return decode_input("a b\nb c\n", output_dir=make_run(ws), **{
            name: value(ws) if callable(value) else value for name, value in flag_values.items()})(
                ws, capsys)
    return run


def other_data(ws):
    """Data of the same problem and sizes with another lexicon: same file names, other words."""
    return regenerate(ws, ws.tmp / "other_data", lexicon_seed=7)


def shared_data_run(ws):
    return recorded_run(ws, ws.shared.data_dir)


def repointed_link(ws):
    """A run trained through a symbolic link that now points at other data."""
    link = ws.tmp / "current"
    os.symlink(copy_data(ws), link)
    run = recorded_run(ws, str(link))
    target = other_data(ws)
    os.remove(link)
    os.symlink(target, link)
    return run


def copy_of_shared_data(ws):
    return copy_data(ws)


def average_after_regeneration(ws, capsys):
    run = regenerated_after_training(train_size=150)(ws)
    return run_program("average_checkpoints", capsys, output_dir=run, num_last_checkpoints=1)


def decode_averaged_with_other_data(ws, capsys):
    """The averaged directory carries the run's record: decoding it checks the data too."""
    run = shared_data_run(ws)
    status, _, err = run_program("average_checkpoints", capsys, output_dir=run,
                                 num_last_checkpoints=1)
    assert status == 0, err[-3000:]
    assert sorted(os.listdir(os.path.join(run, "averaged", "vocabularies"))) == sorted(
        os.listdir(os.path.join(run, "vocabularies")))
    return decode_input("a b\n", output_dir=os.path.join(run, "averaged"),
                        data_dir=other_data(ws))(ws, capsys)


def export_with_other_data(ws, capsys):
    run = shared_data_run(ws)
    return run_program("export", capsys, output_dir=run, format="saved_model",
                       export_dir=str(ws.tmp / "export"), data_dir=other_data(ws))


def trained(ws, capsys, data):
    """A run of one step on `data` (bin/train records its vocabularies)."""
    status, _, err = train_with(data_dir=data, train_steps=1)(ws, capsys)
    assert status == 0, err[-3000:]
    assert os.path.isfile(ws.tmp / "run" / run_vocabulary.RECORD_FILE)


def resume_after_overwrite(**options):
    def run(ws, capsys):
        # The refusal comes before the checkpoint is read: a recorded run's weights do for one.
        regenerated_after_training(**options)(ws)
        data = str(ws.tmp / "data")
        return train_with(data_dir=data, train_steps=2)(ws, capsys)
    return run


def resume_old_run(ws, capsys):
    """A run trained before runs kept their vocabularies: no record, no copy."""
    data = copy_data(ws)
    trained(ws, capsys, data)
    os.remove(ws.tmp / "run" / run_vocabulary.RECORD_FILE)
    shutil.rmtree(ws.tmp / "run" / run_vocabulary.COPY_DIR)
    return train_with(data_dir=data, train_steps=2)(ws, capsys)


def recorded_now(ws):
    record = json.loads((ws.tmp / "run" / run_vocabulary.RECORD_FILE).read_text("utf-8"))
    # The derived features' vocabularies too: dependency labels, UPOS, XPOS.
    names = {"inputs", "targets", "deprel", "upos", "xpos"}
    assert set(record["vocabularies"]) == names, record
    assert record["options"]["train_size"] == 200, record
    copies = sorted(os.listdir(ws.tmp / "run" / run_vocabulary.COPY_DIR))
    assert copies == sorted(f"{PROBLEM}.vocab.{name}.txt" for name in names), copies


def not_decoded(ws):
    assert not (ws.tmp / "output.txt").exists(), "decoded"


VOCABULARY_CASES = [
    Case("vocabulary: decode after the data was regenerated with another train_size",
         decode_run(regenerated_after_training(train_size=150)), refused_file("data"),
         check=not_decoded),
    Case("vocabulary: decode with a --data_dir of other data",
         decode_run(shared_data_run, data_dir=other_data), refused_file("other_data"),
         check=not_decoded),
    Case("vocabulary: decode through a symbolic link repointed at other data",
         decode_run(repointed_link), refused_file("current"), check=not_decoded),
    Case("vocabulary: decode of an averaged directory with a --data_dir of other data",
         decode_averaged_with_other_data, refused_file("other_data", "run/averaged"),
         check=not_decoded),
    Case("vocabulary: averaging after the data was regenerated", average_after_regeneration,
         refused_file("data"),
         check=lambda ws: not (ws.tmp / "run" / "averaged").exists() or pytest.fail("averaged")),
    Case("vocabulary: export with a --data_dir of other data", export_with_other_data,
         refused_file("other_data"),
         check=lambda ws: not (ws.tmp / "export").exists() or pytest.fail("exported")),
    Case("vocabulary: resume after datagen --overwrite with other options",
         resume_after_overwrite(dev_size=10),
         rf"--data_dir=.*/data holds {PROBLEM} data generated with other options than the run in "
         r".*/run was trained on: dev_size=10 \(the run: 20\)\. The run keeps a copy of its "
         r"vocabularies in .*/run/vocabularies/; give the --data_dir .*, or train a new run on "
         r"this data",
         check=lambda ws: not (ws.tmp / "run" / "ckpt-2").exists() or pytest.fail("trained")),
    Case("vocabulary: resume after datagen --overwrite with another lexicon",
         resume_after_overwrite(lexicon_seed=3), refused_file("data"),
         check=lambda ws: not (ws.tmp / "run" / "ckpt-2").exists() or pytest.fail("trained")),
    # What must keep working.
    Case("vocabulary: decode with a copy of the data it was trained on",
         decode_run(shared_data_run, data_dir=copy_of_shared_data),
         output=r"decoded 2 sentences to "),
    Case("vocabulary: decode of a run trained before runs kept their vocabularies",
         decode_run(lambda ws: ws.shared.run_dir), output=r"decoded 2 sentences to ",
         warning=r"the run in .*/run records no vocabularies \(it was trained before runs kept "
                 r"them\): cannot check"),
    # Two trainings of a step: seconds on an idle machine, more under load.
    pytest.param(Case(
        "vocabulary: resuming a run trained before runs kept their vocabularies records them",
        resume_old_run,
        warning=r"records no vocabularies \(it was trained before runs kept them\): cannot check "
                r"that the steps trained so far used those of --data_dir=.*/data; recording them "
                r"now", check=recorded_now), marks=pytest.mark.slow),
]


def _case(row):
    return row.values[0] if hasattr(row, "values") else row


IDS = [_case(row).id for row in VOCABULARY_CASES]


@pytest.mark.parametrize("case", VOCABULARY_CASES, ids=IDS)
def test_run_vocabulary(case, shared, tmp_path, capsys):
    check_case(case, Workspace(tmp=tmp_path, shared=shared, index=IDS.index(case.id)), capsys)


def test_every_row_is_distinct():
    ids = IDS
    assert len(ids) == len(set(ids))
