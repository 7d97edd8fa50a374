"""Tests for problems.czeng (`czeng_syntax`) on export files written with `format_czeng_line`."""

import gzip
from pathlib import Path

import numpy as np
import pytest

from syntax_t2t.problems.czeng import CzengSyntax, package_number
from syntax_t2t.problems.synthetic import SyntheticSyntaxReorder
from syntax_t2t.data.conllu_reader import read_conllu
from syntax_t2t.data.czeng_reader import format_czeng_line
from syntax_t2t.data.tree import DependencyTree
from syntax_t2t.errors import SkipCounter
from syntax_t2t.problem import DEV, TEST, TRAIN, RawDataError

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
PUD = DATA / "pud"
needs_pud = pytest.mark.skipif(not PUD.is_dir(), reason=f"real data folder {PUD} is absent")


@pytest.mark.parametrize("name, number", [
    ("00train.gz", 0), ("data.export-format.05train.gz", 5), ("czeng17-export-03.gz", 3),
    ("09", 9), ("czeng17.txt", 17), ("2016.gz", None), ("readme.txt", None), ("a-123-45.gz", 45),
])
def test_package_number(name, number):
    assert package_number(name) == number


def _pairs(count, seed=1):
    """Synthetic source trees with their targets as flat trees (export lines need trees)."""
    problem = SyntheticSyntaxReorder(train_size=count, random_seed=seed)
    pairs = []
    for tree, target in problem.generate_samples(None, TRAIN, None):
        pairs.append((tree, DependencyTree.from_heads(target, np.zeros(len(target), dtype=np.int32))))
    return pairs


def _write_packages(directory, pairs, per_package, gzipped=True):
    directory.mkdir(parents=True, exist_ok=True)
    for number in range(10):
        chunk = pairs[number * per_package:(number + 1) * per_package]
        lines = "".join(format_czeng_line(s, t, f"p{number}-{i}") + "\n" for i, (s, t) in enumerate(chunk))
        name = f"{number:02d}train" + (".gz" if gzipped else "")
        if gzipped:
            with gzip.open(directory / name, "wt", encoding="utf-8") as stream:
                stream.write(lines)
        else:
            (directory / name).write_text(lines, encoding="utf-8")


def test_thesis_splits_over_packages(tmp_path):
    pairs = _pairs(100)
    _write_packages(tmp_path / "czeng", pairs, per_package=10)
    problem = CzengSyntax(dev_size=3, test_size=5)
    samples = {split: list(problem.generate_samples(str(tmp_path), split, None))
               for split in (TRAIN, DEV, TEST)}
    # Packages 00-08 train; package 09: first 3 dev, next 5 test, last 2 unused.
    assert [s.tokens for s, _ in samples[TRAIN]] == [s.tokens for s, _ in pairs[:90]]
    assert [s.tokens for s, _ in samples[DEV]] == [s.tokens for s, _ in pairs[90:93]]
    assert [s.tokens for s, _ in samples[TEST]] == [s.tokens for s, _ in pairs[93:98]]
    source, target = samples[TEST][0]
    assert source == DependencyTree(pairs[93][0].tokens, pairs[93][0].heads, pairs[93][0].labels,
                                    pairs[93][0].lemmas, ("_",) * len(source), pairs[93][0].xpos,
                                    {"sent_id": "p9-3"})
    assert target == list(pairs[93][1].tokens)


def test_missing_packages_say_what_to_put_where(tmp_path):
    _write_packages(tmp_path / "czeng", _pairs(20), per_package=2)
    (tmp_path / "czeng" / "04train.gz").unlink()
    with pytest.raises(FileNotFoundError) as error:
        list(CzengSyntax().generate_samples(str(tmp_path), TRAIN, None))
    message = str(error.value)
    assert f"{tmp_path / 'czeng'}/" in message and "missing: 04" in message
    assert "https://ufal.mff.cuni.cz/czeng" in message and "register" in message


def test_two_files_for_one_package_are_an_error(tmp_path):
    _write_packages(tmp_path / "czeng", _pairs(20), per_package=2)
    (tmp_path / "czeng" / "czeng-export-03.txt").write_text("", encoding="utf-8")
    with pytest.raises(RawDataError,
                       match="both 03train.gz and czeng-export-03.txt look like CzEng package 03"):
        CzengSyntax().package_files(str(tmp_path))


def test_single_file_splits(tmp_path):
    pairs = _pairs(12)
    (tmp_path / "all.txt").write_text("".join(format_czeng_line(s, t) + "\n" for s, t in pairs),
                                      encoding="utf-8")
    problem = CzengSyntax(single_file="all.txt", dev_size=2, test_size=3)
    tokens = {split: [s.tokens for s, _ in problem.generate_samples(str(tmp_path), split, None)]
              for split in (TRAIN, DEV, TEST)}
    assert tokens[DEV] == [s.tokens for s, _ in pairs[:2]]
    assert tokens[TEST] == [s.tokens for s, _ in pairs[2:5]]
    assert tokens[TRAIN] == [s.tokens for s, _ in pairs[5:]]
    with pytest.raises(FileNotFoundError, match="single_file .*absent.txt does not exist"):
        list(CzengSyntax(single_file="absent.txt").generate_samples(str(tmp_path), TRAIN, None))


def test_bad_lines_are_skipped_once_and_keep_the_split_positions(tmp_path):
    pairs = _pairs(12)
    lines = [format_czeng_line(s, t) for s, t in pairs]
    lines[1] = "only\tthree\tblocks"  # dev
    lines[6] = "broken"              # train
    (tmp_path / "all.txt").write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    problem = CzengSyntax(single_file="all.txt", dev_size=2, test_size=3)
    skip = SkipCounter()
    record = problem.generate_data(str(tmp_path / "data"), str(tmp_path), skip=skip)
    assert record["counts"] == {TRAIN: 6, DEV: 1, TEST: 3}
    # Line 2 lies in the dev range: the test split reads past it silently.
    assert skip.counts == {"wrong block count": 2}


@pytest.mark.real_data
@needs_pud
def test_datagen_from_export_files_built_from_pud(tmp_path):
    czech = list(read_conllu(PUD / "cs_pud-ud-test.conllu.gz"))
    english = {t.comments["parallel_id"]: t for t in read_conllu(PUD / "en_pud-ud-test.conllu.gz")}
    pairs = []
    for tree in czech:
        pair = (tree, english[tree.comments["parallel_id"]])
        try:
            format_czeng_line(*pair)
        except ValueError:
            continue  # a form with a space ("25 000") cannot be an a-layer factor
        pairs.append(pair)
    assert len(pairs) > 900
    per_package = len(pairs) // 10
    _write_packages(tmp_path / "tmp" / "czeng", pairs, per_package=per_package, gzipped=False)
    problem = CzengSyntax(dev_size=40, test_size=per_package - 40)
    record = problem.generate_data(str(tmp_path / "data"), str(tmp_path / "tmp"))
    assert record["counts"] == {TRAIN: 9 * per_package, DEV: 40, TEST: per_package - 40}
    sizes = problem.vocab_sizes(str(tmp_path / "data"))
    # CzEng a-layers carry no UPOS: the tag vocabulary holds "_" only.
    assert sizes["upos"] == 5 and sizes["xpos"] > 300
    first_dev, first_english = pairs[9 * per_package]
    source, target = next(iter(problem.generate_samples(str(tmp_path / "tmp"), DEV, None)))
    assert source.tokens == first_dev.tokens and list(source.heads) == list(first_dev.heads)
    assert source.xpos == first_dev.xpos and source.labels == first_dev.labels
    assert target == list(first_english.tokens)
