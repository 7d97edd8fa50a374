"""Datagen also writes dev/test sources and references as text for decoding and scoring."""

from syntax_t2t import registry
from syntax_t2t.cli import registration
from syntax_t2t.data.conllu_reader import read_conllu
from syntax_t2t.problem import DEV, TEST, TRAIN


def test_dev_and_test_splits_are_written_as_conllu_and_text(tmp_path):
    registration.import_all()
    problem = registry.problems.get("synthetic_syntax_reorder")(
        train_size=30, dev_size=7, test_size=9)
    problem.generate_data(str(tmp_path / "data"), str(tmp_path / "tmp"))
    for split, size in ((DEV, 7), (TEST, 9)):
        samples = list(problem.generate_samples(None, split, None))
        paths = problem.raw_paths(str(tmp_path / "data"), split)
        assert paths["source"].endswith(".src.conllu")
        trees = list(read_conllu(paths["source"]))
        assert trees == [source for source, _ in samples] and len(trees) == size
        with open(paths["reference"], encoding="utf-8") as references:
            assert references.read().splitlines() == [" ".join(t) for _, t in samples]
    assert not any(".src." in name and TRAIN in name for name in
                   (p.name for p in (tmp_path / "data").iterdir()))
