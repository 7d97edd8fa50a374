"""Tests for problems.de2cs (`de2cs_syntax`: CoNLL-U source, plain target)."""

import gzip

import pytest

from syntax_t2t.problems.de2cs import De2csSyntax
from syntax_t2t import registry
from syntax_t2t.cli import registration
from syntax_t2t.errors import InputError, SkipCounter
from syntax_t2t.problem import DEV, SPLITS, TEST, TRAIN


def _sentence(words, heads=None):
    heads = heads or [0] + [1] * (len(words) - 1)
    rows = ["\t".join([str(i), w, w.lower(), "X", "XY", "_", str(h), "root" if h == 0 else "dep", "_", "_"])
            for i, (w, h) in enumerate(zip(words, heads), start=1)]
    return "\n".join(rows) + "\n\n"


def _write_split(directory, split, sentences, lines, gzipped=False):
    directory.mkdir(parents=True, exist_ok=True)
    conllu, text = "".join(sentences), "".join(line + "\n" for line in lines)
    if gzipped:
        with gzip.open(directory / f"{split}.de.conllu.gz", "wt", encoding="utf-8") as stream:
            stream.write(conllu)
        with gzip.open(directory / f"{split}.cs.gz", "wt", encoding="utf-8") as stream:
            stream.write(text)
    else:
        (directory / f"{split}.de.conllu").write_text(conllu, encoding="utf-8")
        (directory / f"{split}.cs").write_text(text, encoding="utf-8")


def test_is_registered():
    registration.import_all()
    assert type(registry.problem("de2cs_syntax")) is De2csSyntax


def test_pairs_sentence_k_with_line_k(tmp_path):
    directory = tmp_path / "de2cs"
    _write_split(directory, TRAIN, [_sentence(["Hallo", "Welt"]), _sentence(["Danke"])],
                 ["Ahoj světe", "Děkuji"])
    _write_split(directory, DEV, [_sentence(["Ja"])], ["Ano"], gzipped=True)
    pairs = list(De2csSyntax().generate_samples(str(tmp_path), TRAIN, None))
    assert [(tree.tokens, target) for tree, target in pairs] == [
        (("Hallo", "Welt"), ["Ahoj", "světe"]), (("Danke",), ["Děkuji"])]
    assert pairs[0][0].xpos == ("XY", "XY")
    dev = list(De2csSyntax().generate_samples(str(tmp_path), DEV, None))
    assert [(t.tokens, target) for t, target in dev] == [(("Ja",), ["Ano"])]


def test_a_skipped_sentence_keeps_the_alignment(tmp_path):
    directory = tmp_path / "de2cs"
    bad = _sentence(["kaputt", "Satz"], heads=[2, 1])  # a cycle, no root
    _write_split(directory, TRAIN, [_sentence(["eins"]), bad, _sentence(["drei"]), _sentence(["vier"])],
                 ["jedna", "dva", "", "čtyři"])
    skip = SkipCounter()
    pairs = list(De2csSyntax().generate_samples(str(tmp_path), TRAIN, skip))
    assert [(t.tokens, target) for t, target in pairs] == [(("eins",), ["jedna"]), (("vier",), ["čtyři"])]
    assert skip.counts == {"cycle": 1, "empty sentence": 1}
    with pytest.raises(InputError, match="do not form a tree"):
        list(De2csSyntax().generate_samples(str(tmp_path), TRAIN, None))


@pytest.mark.parametrize("lines, message", [
    (["jedna"], r"train.cs: has 1 line, but .*train.de.conllu has at least 2 sentences"),
    (["jedna", "dva", "tři"], r"train.cs: has 3 lines, but .*train.de.conllu has 2 sentences"),
])
def test_different_lengths_are_errors(tmp_path, lines, message):
    _write_split(tmp_path / "de2cs", TRAIN, [_sentence(["eins"]), _sentence(["zwei"])], lines)
    with pytest.raises(InputError, match=message):
        list(De2csSyntax().generate_samples(str(tmp_path), TRAIN, SkipCounter()))


def test_missing_files_name_what_to_put_where(tmp_path):
    _write_split(tmp_path / "de2cs", TRAIN, [_sentence(["eins"])], ["jedna"])
    with pytest.raises(FileNotFoundError) as error:
        list(De2csSyntax().generate_samples(str(tmp_path), TEST, None))
    message = str(error.value)
    assert str(tmp_path / "de2cs" / "test.de.conllu") in message
    for split in SPLITS:
        assert f"{split}.de.conllu[.gz] + {split}.cs[.gz]" in message


def test_datagen(tmp_path):
    for split in SPLITS:
        _write_split(tmp_path / "de2cs", split, [_sentence(["Guten", "Tag"])], ["Dobrý den"])
    record = De2csSyntax().generate_data(str(tmp_path / "data"), str(tmp_path))
    assert record["counts"] == {TRAIN: 1, DEV: 1, TEST: 1}
    assert De2csSyntax().vocab_sizes(str(tmp_path / "data"))["targets"] == 6
