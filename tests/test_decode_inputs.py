"""Decoding inputs: one entry per input sentence, unusable ones kept in place."""

import gzip

import pytest

from syntax_t2t.data.conllu_reader import format_conllu
from syntax_t2t.data.czeng_reader import format_czeng_line
from syntax_t2t.data.tree import DependencyTree
from syntax_t2t.decoding.inputs import block_start_lines, guess_format, read_sources

TREE = DependencyTree.from_heads(["Udělali", "jsme", "průzkum", "."], [0, 1, 1, 0],
                                 labels=["Pred", "AuxV", "Obj", "AuxK"])
OTHER = DependencyTree.from_heads(["Ano", "."], [0, 1])


def test_text_lines_keep_their_places(tmp_path):
    path = tmp_path / "in.txt"
    path.write_bytes(b"a b c\n\n  \nbad \xff\nd e\n")
    entries = read_sources(path)
    assert [e.usable for e in entries] == [True, False, False, False, True]
    assert entries[0].tokens == ("a", "b", "c") and entries[4].tokens == ("d", "e")
    assert entries[1].problem == f"{path}:2: empty line"
    assert entries[3].problem.startswith(f"{path}:4: invalid UTF-8")
    assert not entries[0].has_tree


def test_a_bad_conllu_sentence_becomes_an_unusable_entry_in_its_place(tmp_path):
    broken = "1\tX\t_\t_\t_\t_\t7\t_\t_\t_\n\n"  # head out of range
    text = format_conllu([TREE]) + broken + format_conllu([OTHER])
    path = tmp_path / "in.conllu.gz"
    path.write_bytes(gzip.compress(text.encode("utf-8")))
    assert guess_format(path) == "conllu"
    assert block_start_lines(path) == [1, 6, 8]
    entries = read_sources(path)
    assert [e.usable for e in entries] == [True, False, True]
    assert entries[0].source == TREE and entries[2].source == OTHER
    assert entries[2].location == f"{path}:8"
    assert f"{path}:6: HEAD 7 of word 1 is out of range" in entries[1].problem


def test_czeng_lines_give_their_source_trees(tmp_path):
    good = format_czeng_line(TREE, OTHER, "pair-1")
    path = tmp_path / "export.txt"
    path.write_text(good + "\nnot an export line\n" + good + "\n", encoding="utf-8")
    assert guess_format(path) == "czeng"
    entries = read_sources(path)
    assert [e.usable for e in entries] == [True, False, True]
    assert entries[0].tokens == TREE.tokens and entries[0].has_tree
    assert entries[1].problem.startswith(f"{path}:2: ")
    assert entries[2].location == f"{path}:3"


@pytest.mark.parametrize("first_line, expected", [
    ("# sent_id = 1", "conllu"),
    ("1\tA\t_\t_\t_\t_\t0\troot\t_\t_", "conllu"),
    ("the cat sat", "text"),
])
def test_format_is_guessed_from_the_first_line(tmp_path, first_line, expected):
    path = tmp_path / "input"
    path.write_text("\n" + first_line + "\n", encoding="utf-8")
    assert guess_format(path) == expected


def test_unknown_format_is_rejected(tmp_path):
    path = tmp_path / "in.txt"
    path.write_text("a\n", encoding="utf-8")
    with pytest.raises(ValueError, match="unknown input format 'xml'"):
        read_sources(path, "xml")
