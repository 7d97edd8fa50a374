"""Tests for syntax_t2t.data.conllu_reader."""

import gzip
import re
from pathlib import Path

import numpy as np
import pytest

from syntax_t2t.data.conllu_reader import format_conllu, parse_conllu_text, read_conllu, write_conllu
from syntax_t2t.data.tree import DependencyTree
from syntax_t2t.errors import InputError, SkipCounter

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
needs_data = pytest.mark.skipif(not DATA.is_dir(), reason=f"real data folder {DATA} is absent")


def row(token_id, form, head, deprel="dep", upos="X", xpos="_", lemma=None):
    lemma = form.lower() if lemma is None else lemma
    return "\t".join([str(token_id), form, lemma, upos, xpos, "_", str(head), deprel, "_", "_"])


# A valid sentence occupying lines 1-6 (5 lines + blank), used before each bad one
# so that the reported line numbers are not trivially small.
GOOD = "\n".join(
    [
        "# sent_id = s1",
        "# text = Dogs bark .",
        row(1, "Dogs", 2, "nsubj", "NOUN"),
        row(2, "bark", 0, "root", "VERB"),
        row(3, ".", 2, "punct", "PUNCT"),
        "",
    ]
) + "\n"


def test_reads_words_comments_and_tags(tmp_path):
    path = tmp_path / "a.conllu"
    path.write_text(GOOD, encoding="utf-8")
    (tree,) = read_conllu(path)
    assert tree.tokens == ("Dogs", "bark", ".")
    assert tree.heads.tolist() == [2, 0, 2]
    assert tree.labels == ("nsubj", "root", "punct")
    assert tree.lemmas == ("dogs", "bark", ".")
    assert tree.upos == ("NOUN", "VERB", "PUNCT")
    assert tree.xpos == ("_", "_", "_")
    assert dict(tree.comments) == {"sent_id": "s1", "text": "Dogs bark ."}


def test_multiword_tokens_and_empty_nodes_are_skipped(tmp_path):
    # French "du" = "de le"; an empty node 3.1 as in enhanced UD.
    text = "\n".join(
        [
            "# text = Il parle du chat",
            row(1, "Il", 2),
            row(2, "parle", 0, "root"),
            "3-4\tdu\t_\t_\t_\t_\t_\t_\t_\t_",
            row(3, "de", 5, "case"),
            "3.1\tparle\tparler\tVERB\t_\t_\t_\t_\t2:conj\t_",
            row(4, "le", 5, "det"),
            row(5, "chat", 2, "obl"),
            "",
            "",  # several blank lines between sentences are tolerated
            row(1, "Oui", 0, "root"),
            "",
        ]
    ) + "\n"
    path = tmp_path / "fr.conllu"
    path.write_text(text, encoding="utf-8")
    first, second = read_conllu(path)
    assert first.tokens == ("Il", "parle", "de", "le", "chat")
    assert first.heads.tolist() == [2, 0, 5, 5, 2]
    assert second.tokens == ("Oui",)
    assert parse_conllu_text(text, "fr") == [first, second]


def test_gzip_and_windows_line_endings(tmp_path):
    path = tmp_path / "a.conllu.gz"
    path.write_bytes(gzip.compress(GOOD.replace("\n", "\r\n").encode("utf-8")))
    (tree,) = read_conllu(path)
    assert tree.labels == ("nsubj", "root", "punct")
    assert tree.comments["text"] == "Dogs bark ."


def _lines(*rows):
    return "\n".join(rows) + "\n"


def _range(first, last, form):
    return "\t".join([f"{first}-{last}", form] + ["_"] * 8)


def case(bad, line, fragment, name):
    return pytest.param(bad, line, fragment, id=name)


# Each case: the bad sentence (it starts on line 7, after GOOD), the line the
# error must name, and a fragment the message must contain.
A, B_ROOTED, C_ROOTED = row(1, "a", 0), row(2, "b", 1), row(3, "c", 1)
MALFORMED = [
    case(_lines(A, "2\tb\tb\tX\t_\t_\t1\tdep\t_", ""), 8,
         "expected 10 tab-separated columns, found 9", "nine-columns"),
    case(_lines(A, row(2, "b", "x"), ""), 8, "HEAD of word 2 must be an integer, found 'x'", "non-integer-head"),
    case(_lines(A, row(2, "b", "_"), ""), 8, "HEAD of word 2 must be an integer, found '_'", "underscore-head"),
    case(_lines(A, B_ROOTED, row(3, "c", 4), ""), 9,
         "HEAD 4 of word 3 is out of range: the sentence has 3 words", "head-out-of-range"),
    case(_lines(A, row(2, "b", -1), ""), 8, "HEAD -1 of word 2 is out of range", "negative-head"),
    case(_lines(A, row(2, "b", 2), ""), 8, "word 2 'b' is its own head", "self-head"),
    case(_lines("# sent_id = c", A, row(2, "b", 3), row(3, "c", 2), ""), 8, "cycle", "cycle"),
    case(_lines("# sent_id = empty", "# text = nothing", ""), 7, "sentence has no words", "no-words"),
    case(_lines(_range(1, 2, "ab"), ""), 7, "sentence has no words", "only-a-range"),
    case(_lines(_range(1, 1, "a"), A, ""), 7, "range 1-1 must have start < end", "range-start-equals-end"),
    case(_lines(_range(2, 1, "a"), A, ""), 7, "range 2-1 must have start < end", "range-backwards"),
    case(_lines(A, _range(3, 4, "cd"), B_ROOTED, C_ROOTED, row(4, "d", 1), ""), 8,
         "must come directly before word 3, but the next word is 2", "range-misplaced"),
    case(_lines(_range(1, 2, "ab"), A, _range(2, 3, "bc"), B_ROOTED, C_ROOTED, ""), 9,
         "overlaps the range 1-2 on line 7", "range-overlap"),
    case(_lines(A, _range(2, 3, "bc"), B_ROOTED, ""), 8,
         "range 2-3 covers word 3, but the sentence has only 2 words", "range-past-end"),
    case(_lines(A, row("x", "b", 1), ""), 8, "invalid ID 'x'", "bad-id"),
    case(_lines(A, row(3, "b", 1), ""), 8, "expected word ID 2, found 3", "skipped-id"),
    case(_lines(A, "# late = comment", B_ROOTED, ""), 8, "comment line after the token lines", "late-comment"),
    case(_lines(A, row(2, "", 1), ""), 8, "column FORM is empty", "empty-form"),
    case(_lines(A, "   ", B_ROOTED, ""), 8, "line of only whitespace", "whitespace-line"),
    case(_lines(A, B_ROOTED), 8, "file ends in the middle of a sentence", "no-final-blank-line"),
    case(_lines(A, B_ROOTED)[:-1], 8, "file ends in the middle of a sentence", "no-final-newline"),
]


@pytest.mark.parametrize("bad, line, fragment", MALFORMED)
def test_malformed_input_names_file_line_and_problem(tmp_path, bad, line, fragment):
    path = tmp_path / "bad.conllu"
    path.write_text(GOOD + bad, encoding="utf-8")
    trees = read_conllu(path)
    assert next(trees).tokens == ("Dogs", "bark", ".")  # the good sentence before it is fine
    with pytest.raises(InputError) as caught:
        next(trees)
    assert str(caught.value).startswith(f"{path}:{line}: ")
    assert fragment in str(caught.value)
    assert caught.value.line == line
    # Text input reports the same problem under its source name.
    with pytest.raises(InputError, match=re.escape(f"pasted:{line}: ")):
        parse_conllu_text(GOOD + bad, "pasted")


def test_invalid_utf8_names_file_and_line(tmp_path):
    path = tmp_path / "bad.conllu.gz"
    bad_line = row(2, "b\xe9d", 1).encode("latin-1")
    data = GOOD.encode("utf-8") + row(1, "ok", 0).encode() + b"\n" + bad_line + b"\n\n"
    path.write_bytes(gzip.compress(data))
    with pytest.raises(InputError, match=re.escape(f"{path}:8: invalid UTF-8")):
        list(read_conllu(path))


def test_skip_bad_examples_keeps_the_good_ones(tmp_path):
    path = tmp_path / "mixed.conllu"
    good_two = _lines(row(1, "Yes", 0, "root"), "")
    data = (
        GOOD
        + _lines(row(1, "a", 0), row(2, "b", 3), row(3, "c", 2), "")  # cycle
        + good_two
        + _lines(row(1, "a", 0), "2\tb", "")  # wrong column count
        + _lines(row(1, "a", 0), row(2, "b", 1), "")  # fine, but replaced below by bad bytes
        + _lines(row(1, "a", 0), row(2, "b", 9), "")  # head out of range
        + _lines(row(1, "cut", 0))  # truncated at the end of file
    ).encode("utf-8")
    data = data.replace(b"\tb\tb\tX\t_\t_\t1\t", b"\tb\xff\tb\tX\t_\t_\t1\t")
    path.write_bytes(data)
    skip = SkipCounter()
    trees = list(read_conllu(path, skip=skip))
    assert [tree.tokens for tree in trees] == [("Dogs", "bark", "."), ("Yes",)]
    assert skip.counts == {
        "cycle": 1,
        "wrong column count": 1,
        "invalid UTF-8": 1,
        "head out of range": 1,
        "truncated sentence": 1,
    }
    assert skip.summary().startswith("skipped 5 examples: ")


def test_format_conllu_worked_example():
    tree = DependencyTree(
        tokens=("Pes", "štěká"),
        heads=np.array([2, 0]),
        labels=("nsubj", "root"),
        lemmas=("pes", "štěkat"),
        upos=("NOUN", "VERB"),
        xpos=("NNMS1-----A----", "VB-S---3P-AA---"),
        comments={"sent_id": "x1", "text": "Pes štěká", "newdoc": ""},
    )
    assert format_conllu([tree, tree]) == 2 * (
        "# sent_id = x1\n# text = Pes štěká\n# newdoc\n"
        "1\tPes\tpes\tNOUN\tNNMS1-----A----\t_\t2\tnsubj\t_\t_\n"
        "2\tštěká\tštěkat\tVERB\tVB-S---3P-AA---\t_\t0\troot\t_\t_\n\n"
    )
    assert parse_conllu_text(format_conllu([tree])) == [tree]


@pytest.mark.parametrize("field, value", [("tokens", "a\tb"), ("labels", ""), ("lemmas", "x\ny")])
def test_format_conllu_rejects_unrepresentable_fields(field, value):
    tree = DependencyTree.from_heads(["a", "b"], [0, 1])
    values = list(getattr(tree, field))
    values[1] = value
    fields = {name: getattr(tree, name) for name in ("tokens", "heads", "labels", "lemmas", "upos", "xpos")}
    fields[field] = tuple(values)
    with pytest.raises(ValueError, match="tree 0"):
        format_conllu([DependencyTree(**fields)])


def _count_matching_lines(path, pattern):
    regex = re.compile(pattern)
    with gzip.open(path, "rt", encoding="utf-8") as stream:
        return sum(1 for line in stream if regex.match(line))


@pytest.mark.real_data
@needs_data
def test_pud_files_read_and_align():
    trees = {
        lang: list(read_conllu(DATA / "pud" / f"{lang}_pud-ud-test.conllu.gz")) for lang in ("cs", "de", "en")
    }
    assert {lang: len(value) for lang, value in trees.items()} == {"cs": 1000, "de": 1000, "en": 1000}
    ids = {lang: [tree.comments["parallel_id"] for tree in value] for lang, value in trees.items()}
    assert ids["cs"] == ids["de"] == ids["en"]
    assert len(set(ids["cs"])) == 1000
    czech = trees["cs"]
    assert all(len(tag) == 15 for tree in czech for tag in tree.xpos)
    assert all(tree.comments.get("text_en") for tree in czech)
    # The English text of a Czech sentence is the text of its English twin, up to
    # spacing and a few editorial fixes; a misalignment would break almost all.
    differing = [
        cs_tree.comments["text_en"]
        for cs_tree, en_tree in zip(czech, trees["en"])
        if cs_tree.comments["text_en"].split() != en_tree.comments["text"].split()
    ]
    assert len(differing) <= 5, differing
    # Naive reference: one word per line whose ID is a plain integer.
    for lang, value in trees.items():
        path = DATA / "pud" / f"{lang}_pud-ud-test.conllu.gz"
        assert sum(len(tree) for tree in value) == _count_matching_lines(path, r"\d+\t")


UD_COUNTS = {
    "cs_cac-ud-dev": 603,
    "cs_cac-ud-test": 628,
    "cs_fictree-ud-dev": 1309,
    "de_gsd-ud-dev": 799,
    "de_gsd-ud-test": 977,
    "en_ewt-ud-dev": 2001,
    "en_ewt-ud-test": 2077,
}


@pytest.mark.real_data
@needs_data
@pytest.mark.parametrize("name, expected", sorted(UD_COUNTS.items()))
def test_ud_files_read_with_multiword_tokens_and_empty_nodes(name, expected):
    path = DATA / "ud" / f"{name}.conllu.gz"
    trees = list(read_conllu(path))
    assert len(trees) == expected
    assert sum(len(tree) for tree in trees) == _count_matching_lines(path, r"\d+\t")
    assert all(tree.comments["sent_id"] for tree in trees)


@pytest.mark.real_data
@needs_data
@pytest.mark.parametrize("suffix", [".conllu", ".conllu.gz"])
def test_round_trip_of_real_czech_trees(tmp_path, suffix):
    trees = list(read_conllu(DATA / "pud" / "cs_pud-ud-test.conllu.gz"))[:200]
    out = tmp_path / f"pred{suffix}"
    write_conllu(trees, out)
    assert list(read_conllu(out)) == trees
