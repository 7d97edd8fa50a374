"""`training/run_vocabulary.py` on its own: the record, the copy and the checks (no TensorFlow).

The programs' rows (decode, resume, averaging, export) are in
`test_bad_input_vocabulary.py`.
"""

import hashlib
import json
import os

import pytest

from syntax_t2t.errors import InputError
from syntax_t2t.training import run_vocabulary

pytestmark = pytest.mark.backends


class FakeProblem:
    """What the module reads of a `Problem`: its name, options and vocabulary files."""

    name = "fake_problem"

    def __init__(self, names=("inputs", "targets", "deprel"), **options):
        self.names = names
        self.values = {"vocab_size": 100, "num_shards": 1, "tree_source": ("a", "b"), **options}

    def options(self):
        return dict(self.values)

    def vocabulary_paths(self, data_dir):
        return {name: os.path.join(data_dir, f"{self.name}.vocab.{name}.txt") for name in self.names}


def data(directory, problem=None, **contents):
    problem = problem or FakeProblem()
    os.makedirs(directory, exist_ok=True)
    for name, path in problem.vocabulary_paths(str(directory)).items():
        with open(path, "w", encoding="utf-8") as stream:
            stream.write(contents.get(name, f"<pad>\n<EOS>\n{name}-word\n"))
    return str(directory)


@pytest.fixture
def recorded(tmp_path):
    """(run directory, data directory) after `record`."""
    run, data_dir = tmp_path / "run", data(tmp_path / "data")
    run.mkdir()
    run_vocabulary.record(str(run), FakeProblem(), data_dir)
    return str(run), data_dir


def test_record_keeps_fingerprints_options_and_a_copy(recorded):
    run, data_dir = recorded
    record = run_vocabulary.load_record(run)
    path = os.path.join(data_dir, "fake_problem.vocab.deprel.txt")
    with open(path, "rb") as stream:
        expected = hashlib.sha256(stream.read()).hexdigest()
    assert record["vocabularies"]["deprel"] == {"file": "fake_problem.vocab.deprel.txt",
                                                "sha256": expected}
    assert record["options"] == {"vocab_size": 100, "num_shards": 1, "tree_source": ["a", "b"]}
    assert sorted(os.listdir(os.path.join(run, run_vocabulary.COPY_DIR))) == [
        f"fake_problem.vocab.{name}.txt" for name in ("deprel", "inputs", "targets")]
    assert not [name for name in os.listdir(run) if name.startswith(".")]


def test_the_same_data_elsewhere_passes(recorded, tmp_path):
    run, _ = recorded
    run_vocabulary.check(run, FakeProblem(), data(tmp_path / "copy"))
    run_vocabulary.check(run, FakeProblem(num_shards=8), data(tmp_path / "copy"))  # storage only


def test_another_vocabulary_file_is_refused_with_both_fingerprints(recorded, tmp_path):
    run, _ = recorded
    other = data(tmp_path / "other", deprel="<pad>\n<EOS>\nnsubj\n")
    with pytest.raises(run_vocabulary.RunVocabularyError) as error:
        run_vocabulary.check(run, FakeProblem(), other)
    message = str(error.value)
    assert message.startswith(f"vocabulary file {other}/fake_problem.vocab.deprel.txt (sha256 ")
    assert "every embedding row would mean another tag or label" in message
    digests = [part.split(")")[0] for part in message.split("sha256 ")[1:]]
    assert len(digests) == 2 and digests[0] != digests[1], message
    assert f"{run}/vocabularies/" in message and "\n" not in message


def test_other_options_and_other_vocabularies_are_refused(recorded, tmp_path):
    run, _ = recorded
    with pytest.raises(run_vocabulary.RunVocabularyError,
                       match=r"generated with other options than the run in .* was trained on: "
                             r"vocab_size=50 \(the run: 100\)"):
        run_vocabulary.check(run, FakeProblem(vocab_size=50), data(tmp_path / "copy"))
    more = FakeProblem(names=("inputs", "targets", "deprel", "const"))
    with pytest.raises(run_vocabulary.RunVocabularyError,
                       match=r"has a const vocabulary \(fake_problem\.vocab\.const\.txt\) that "
                             r"the run in .* was not trained with"):
        run_vocabulary.check(run, more, data(tmp_path / "more", more))


def test_a_run_without_record_is_used_with_a_warning(tmp_path, caplog):
    (tmp_path / "run").mkdir()
    run_vocabulary.check(str(tmp_path / "run"), FakeProblem(), data(tmp_path / "data"))
    assert "records no vocabularies" in caplog.text


def test_training_replaces_the_record_of_a_run_without_checkpoint(recorded, tmp_path, caplog):
    run, _ = recorded
    other = data(tmp_path / "other", inputs="<pad>\n<EOS>\nanother\n")
    run_vocabulary.check_for_training(run, FakeProblem(), other)
    assert "holds no checkpoint: replacing its record of the data" in caplog.text
    run_vocabulary.record(run, FakeProblem(), other)
    run_vocabulary.check(run, FakeProblem(), other)
    with open(os.path.join(run, "vocabularies", "fake_problem.vocab.inputs.txt"),
              encoding="utf-8") as stream:
        assert "another" in stream.read()


def test_training_refuses_other_data_once_the_run_has_a_checkpoint(recorded, tmp_path):
    run, _ = recorded
    (tmp_path / "run" / "checkpoint").write_text('model_checkpoint_path: "ckpt-5"\n')
    (tmp_path / "run" / "ckpt-5.index").write_bytes(b"")
    other = data(tmp_path / "other", targets="<pad>\n<EOS>\nanother\n")
    with pytest.raises(run_vocabulary.RunVocabularyError, match="fake_problem.vocab.targets.txt"):
        run_vocabulary.check_for_training(run, FakeProblem(), other)


def test_a_damaged_record_is_named(recorded):
    run, data_dir = recorded
    with open(run_vocabulary.record_path(run), "w", encoding="utf-8") as stream:
        stream.write('{"vocabularies": ')
    with pytest.raises(InputError, match="vocabularies.json:1: not the run's vocabulary record"):
        run_vocabulary.check(run, FakeProblem(), data_dir)


def test_copy_into_a_model_directory(recorded, tmp_path):
    run, data_dir = recorded
    best = tmp_path / "best"
    best.mkdir()
    run_vocabulary.copy_into(run, str(best))
    run_vocabulary.check(str(best), FakeProblem(), data_dir)
    assert json.loads((best / "vocabularies.json").read_text()) == run_vocabulary.load_record(run)
    assert len(os.listdir(best / "vocabularies")) == 3


def test_a_vocabulary_the_data_lacks_is_refused(recorded, tmp_path):
    run, _ = recorded
    fewer = FakeProblem(names=("inputs", "targets"))
    with pytest.raises(run_vocabulary.RunVocabularyError,
                       match=r"vocabulary file .*/fewer/fake_problem\.vocab\.deprel\.txt \(missing\) "
                             r"is not the one the run in .* was trained with \(sha256 [0-9a-f]{16}\)"):
        run_vocabulary.check(run, fewer, data(tmp_path / "fewer", fewer))
