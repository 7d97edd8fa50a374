"""Tests for syntax_t2t.data.czeng_reader."""

import gzip
import re
from pathlib import Path

import pytest

from syntax_t2t import io_utils
from syntax_t2t.data.conllu_reader import read_conllu
from syntax_t2t.data.czeng_reader import CzengLayout, format_czeng_line, read_czeng
from syntax_t2t.data.tree import DependencyTree
from syntax_t2t.errors import InputError, SkipCounter

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
needs_data = pytest.mark.skipif(not DATA.is_dir(), reason=f"real data folder {DATA} is absent")

# Thesis Table 5.1, with the factors as the export writes them.
SOURCE = (
    "Udělali|udělat_:_W|VpMP---XR-AA---|1|0|Pred "
    "jsme|být|VB-P---1P-AA---|2|1|AuxV "
    "si|se_^(zvr._zájmeno/částice)|P7-X3----------|3|1|Adv malý|malý|AAIS4----1A----|4|5|Atr "
    "průzkum|průzkum|NNIS4-----A----|5|1|Obj .|.|Z:-------------|6|0|AuxK"
)
TARGET = (
    "We|we|PRP|1|2|Sb did|do|VBD|2|0|Pred a|a|DT|3|5|AuxA little|little|JJ|4|5|Atr "
    "research|research|NN|5|2|Obj .|.|.|6|0|AuxK"
)


def line(source=SOURCE, target=TARGET, sentence_id="train-f00001-s1", blocks=15):
    fields = [sentence_id, "0.93"] + [f"other{i}" for i in range(2, 15)]
    fields[2], fields[6] = source, target
    return "\t".join(fields[:blocks])


def test_reads_the_thesis_example(tmp_path):
    path = tmp_path / "czeng.txt"
    path.write_text(line() + "\n", encoding="utf-8")
    ((source, target),) = read_czeng(path)
    assert source.tokens == ("Udělali", "jsme", "si", "malý", "průzkum", ".")
    assert source.heads.tolist() == [0, 1, 1, 5, 1, 0]
    assert source.labels == ("Pred", "AuxV", "Adv", "Atr", "Obj", "AuxK")
    assert source.lemmas[0] == "udělat_:_W" and source.lemmas[2] == "se_^(zvr._zájmeno/částice)"
    assert source.xpos[0] == "VpMP---XR-AA---" and all(len(tag) == 15 for tag in source.xpos)
    assert source.upos == ("_",) * 6
    assert target.tokens == ("We", "did", "a", "little", "research", ".")
    assert target.heads.tolist() == [2, 0, 5, 5, 2, 0]
    assert target.xpos == ("PRP", "VBD", "DT", "JJ", "NN", ".")
    assert dict(source.comments) == dict(target.comments) == {"sent_id": "train-f00001-s1"}


def test_format_czeng_line_round_trips_the_example(tmp_path):
    path = tmp_path / "czeng.txt.gz"
    path.write_bytes(gzip.compress((line() + "\n").encode("utf-8")))
    ((source, target),) = read_czeng(path)
    formatted = format_czeng_line(source, target, sentence_id="train-f00001-s1")
    blocks = formatted.split("\t")
    assert len(blocks) == 15
    assert (blocks[0], blocks[2], blocks[6]) == ("train-f00001-s1", SOURCE, TARGET)
    assert all(block == "" for i, block in enumerate(blocks) if i not in (0, 2, 6))


def test_configurable_layout_and_direction(tmp_path):
    path = tmp_path / "small.txt"
    path.write_text(f"id7\t{SOURCE}\t{TARGET}\n", encoding="utf-8")
    ((cs, en),) = read_czeng(path, expected_blocks=3, source_block=1, target_block=2)
    ((en2, cs2),) = read_czeng(path, expected_blocks=3, source_block=2, target_block=1)
    assert (cs.tokens[0], en.tokens[0]) == ("Udělali", "We")
    assert (en2, cs2) == (en, cs)
    ((no_id_source, _),) = read_czeng(path, expected_blocks=3, source_block=1, target_block=2, id_block=None)
    assert dict(no_id_source.comments) == {}
    formatted = format_czeng_line(cs, en, "id7", expected_blocks=3, source_block=1, target_block=2)
    assert formatted == f"id7\t{SOURCE}\t{TARGET}"


@pytest.mark.parametrize(
    "layout, fragment",
    [
        (dict(source_block=15), "source_block=15 is outside the 15 blocks"),
        (dict(target_block=-1), "target_block=-1"),
        (dict(source_block=6), "must differ"),
        (dict(id_block=2), "must differ"),
    ],
)
def test_inconsistent_layout_is_rejected(layout, fragment):
    with pytest.raises(ValueError, match=re.escape(fragment)):
        CzengLayout(**layout)


def with_source(old, new):
    return line(source=SOURCE.replace(old, new))


def with_target(old, new):
    return line(target=TARGET.replace(old, new))


def case(bad, fragment, name):
    return pytest.param(bad, fragment, id=name)


# Each case: the bad line (line 2, after a good line 1) and what the message must say.
MALFORMED = [
    case(line(blocks=14), "expected 15 tab-separated blocks, found 14", "fourteen-blocks"),
    case(line() + "\textra", "expected 15 tab-separated blocks, found 16", "sixteen-blocks"),
    case("", "empty line; expected 15 tab-separated blocks", "empty-line"),
    case(line(target=""), "block 7 (target a-layer) is empty", "empty-target"),
    case(line(source=""), "block 3 (source a-layer) is empty", "empty-source"),
    case(with_source("malý|malý|AAIS4", "malý|AAIS4"),
         "block 3 (source a-layer): token 4 'malý|AAIS4----1A----|4|5|Atr' has 5 factors, expected 6",
         "five-factors"),
    case(with_target("did|do|", "did|do|x|"),
         "block 7 (target a-layer): token 2 'did|do|x|VBD|2|0|Pred' has 7 factors", "seven-factors"),
    case(with_source("|4|5|Atr", "|5|5|Atr"), "token 4 'malý' has index factor '5', expected 4", "index-mismatch"),
    case(with_source("|4|5|Atr", "|4|x|Atr"),
         "token 4 'malý' has head factor 'x', expected a non-negative integer", "non-integer-head"),
    case(with_source("|4|5|Atr", "|4|-1|Atr"), "token 4 'malý' has head factor '-1'", "negative-head"),
    case(with_source("|4|5|Atr", "|4|7|Atr"),
         "token 4 'malý' has head 7, but the sentence has 6 tokens", "head-out-of-range"),
    case(with_source("|4|5|Atr", "|4|4|Atr"), "token 4 'malý' is its own head", "self-head"),
    case(with_target("|2|0|Pred", "|2|5|Pred"), "block 7 (target a-layer): heads do not form a tree", "cycle"),
    case(with_source(" jsme", "  jsme"),
         "token 2 is empty (a leading, trailing or doubled space)", "double-space"),
    case(line(target=TARGET + " "), "token 7 is empty", "trailing-space"),
    case(with_target("We|we", "|we"), "token 1 '|we|PRP|1|2|Sb' has an empty form", "empty-form"),
]


@pytest.mark.parametrize("bad, fragment", MALFORMED)
def test_malformed_line_names_file_line_and_problem(tmp_path, bad, fragment):
    path = tmp_path / "bad.txt"
    path.write_text(line() + "\n" + bad + "\n" + line() + "\n", encoding="utf-8")
    pairs = read_czeng(path)
    assert next(pairs)[0].tokens[0] == "Udělali"
    with pytest.raises(InputError) as caught:
        next(pairs)
    assert str(caught.value).startswith(f"{path}:2: ")
    assert fragment in str(caught.value)


def test_invalid_utf8_names_file_and_line(tmp_path):
    path = tmp_path / "bad.gz"
    bad = (line() + "\n").encode("utf-8").replace("průzkum".encode(), b"pr\xc5zkum")
    data = (line() + "\n").encode("utf-8") + bad
    path.write_bytes(gzip.compress(data))
    with pytest.raises(InputError, match=re.escape(f"{path}:2: invalid UTF-8")):
        list(read_czeng(path))


def test_skip_bad_examples_keeps_the_good_ones(tmp_path):
    path = tmp_path / "mixed.txt"
    bad_lines = [
        line(blocks=3),
        line(source=SOURCE.replace("|4|5|Atr", "|4|9|Atr")),
        line(target=TARGET.replace("|2|0|Pred", "|2|5|Pred")),
        line(target=""),
    ]
    text = "\n".join([line(sentence_id="a")] + bad_lines + [line(sentence_id="b")]) + "\n"
    path.write_bytes(text.encode("utf-8") + b"\xff\n" + line(sentence_id="c").encode("utf-8") + b"\n")
    skip = SkipCounter()
    ids = [source.comments["sent_id"] for source, _ in read_czeng(path, skip=skip)]
    assert ids == ["a", "b", "c"]
    assert skip.counts == {
        "wrong block count": 1,
        "head out of range": 1,
        "cycle": 1,
        "empty a-layer": 1,
        "invalid UTF-8": 1,
    }


@pytest.mark.parametrize(
    "tokens, lemmas, fragment",
    [
        (["25 000", "lidí"], ["25 000", "člověk"], "token 1 has form '25 000'"),
        (["Rechte", "gewährt"], ["Recht", "gewähren|währen"], "token 2 has lemma 'gewähren|währen'"),
    ],
)
def test_format_czeng_line_rejects_unrepresentable_factors(tokens, lemmas, fragment):
    tree = DependencyTree.from_heads(tokens, [2, 0], labels=["Sb", "Pred"], lemmas=lemmas)
    with pytest.raises(ValueError, match=re.escape(fragment)):
        format_czeng_line(tree, tree, "x")


@pytest.mark.real_data
@needs_data
def test_round_trip_of_pud_pairs_with_pdt_tags(tmp_path):
    czech = list(read_conllu(DATA / "pud" / "cs_pud-ud-test.conllu.gz"))
    english_trees = read_conllu(DATA / "pud" / "en_pud-ud-test.conllu.gz")
    english = {tree.comments["parallel_id"]: tree for tree in english_trees}
    pairs, unrepresentable = [], 0
    for cs_tree in czech:
        en_tree = english[cs_tree.comments["parallel_id"]]
        fields = cs_tree.tokens + cs_tree.lemmas + en_tree.tokens + en_tree.lemmas
        if any(" " in value for value in fields):
            unrepresentable += 1  # e.g. the Czech number "25 000" is one word with a space
            with pytest.raises(ValueError):
                format_czeng_line(cs_tree, en_tree)
            continue
        pairs.append((cs_tree, en_tree))
    assert len(pairs) + unrepresentable == 1000 and len(pairs) > 950

    path = tmp_path / "pud.export.gz"
    io_utils.atomic_write_text(
        path, "".join(format_czeng_line(cs, en, cs.comments["parallel_id"]) + "\n" for cs, en in pairs)
    )
    read_back = list(read_czeng(path))
    assert len(read_back) == len(pairs)
    for (cs, en), (cs_read, en_read) in zip(pairs, read_back):
        for original, copy in ((cs, cs_read), (en, en_read)):
            assert copy.tokens == original.tokens
            assert copy.heads.tolist() == original.heads.tolist()
            assert copy.labels == original.labels
            assert copy.lemmas == original.lemmas
            assert copy.xpos == original.xpos
        assert cs_read.comments["sent_id"] == cs.comments["parallel_id"]
        assert all(len(tag) == 15 for tag in cs_read.xpos)
