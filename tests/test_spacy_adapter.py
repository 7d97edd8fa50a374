"""Tests for syntax_t2t.parsing.spacy_adapter (and joined_tree, which it uses)."""

import importlib.util
import itertools
import shutil

import pytest
import spacy
from spacy.tokens import Doc

from parser_fixtures import CZECH_UD, needs_czech_ud, tiny_czech_parser, untrained_pipeline_dir
from syntax_t2t.data.conllu_reader import read_conllu
from syntax_t2t.parsing.parser import ParserError, ParserModelNotFoundError
from syntax_t2t.parsing.parser_spec import load_parser
from syntax_t2t.parsing.spacy_adapter import SpacyParser, tree_from_doc


@pytest.fixture(scope="module")
def vocab():
    return spacy.blank("cs").vocab


@pytest.fixture(scope="module")
def untrained(tmp_path_factory):
    return untrained_pipeline_dir(tmp_path_factory.mktemp("untrained") / "cs")


def test_one_sentence_doc_becomes_a_tree_with_all_annotations(vocab):
    doc = Doc(vocab, words=["Pes", "běží", "."], heads=[1, 1, 1], deps=["nsubj", "ROOT", "punct"],
              pos=["NOUN", "VERB", "PUNCT"], tags=["NNMS1", "VB-S3", "Z:"], lemmas=["pes", "běžet", "."])
    tree = tree_from_doc(doc)
    assert tree.tokens == ("Pes", "běží", ".")
    assert tree.heads.tolist() == [2, 0, 2]
    assert tree.labels == ("nsubj", "ROOT", "punct")
    assert tree.upos == ("NOUN", "VERB", "PUNCT")
    assert tree.xpos == ("NNMS1", "VB-S3", "Z:")
    assert tree.lemmas == ("pes", "běžet", ".")


def test_sentences_of_one_doc_are_joined_under_root_with_offset_heads(vocab):
    # Three sentences: "Pes běží ." / "Ano" / "Kočka spí tiše ." (doc-absolute heads).
    words = ["Pes", "běží", ".", "Ano", "Kočka", "spí", "tiše", "."]
    heads = [1, 1, 1, 3, 5, 5, 5, 5]
    deps = ["nsubj", "ROOT", "punct", "ROOT", "nsubj", "ROOT", "advmod", "punct"]
    doc = Doc(vocab, words=words, heads=heads, deps=deps)
    assert [len(sentence) for sentence in doc.sents] == [3, 1, 4]
    tree = tree_from_doc(doc)
    # Naive reference: spaCy's doc-absolute heads, 1-based, roots to 0.
    assert tree.heads.tolist() == [0 if head == i else head + 1 for i, head in enumerate(heads)]
    assert tree.heads.tolist() == [2, 0, 2, 0, 6, 0, 6, 6]
    assert tree.labels == tuple(deps)


def test_root_label_is_put_back_only_on_roots_labelled_ROOT(vocab):
    doc = Doc(vocab, words=["a", "b", "c", "d"], heads=[1, 1, 3, 3], deps=["dep", "ROOT", "dep", "top"])
    assert tree_from_doc(doc, root_label="root").labels == ("dep", "root", "dep", "top")
    assert tree_from_doc(doc).labels == ("dep", "ROOT", "dep", "top")


def test_missing_annotations_are_underscores(vocab):
    doc = Doc(vocab, words=["x", "y"], heads=[1, 1], deps=["dep", "ROOT"])
    tree = tree_from_doc(doc)
    assert tree.lemmas == tree.upos == tree.xpos == ("_", "_")


def test_pretokenised_words_are_kept_exactly(untrained):
    parser = SpacyParser.load(untrained)
    sentences = [["Do", "U.S.A.", "don't", "(", "je", ")"], ["jedno"], ["a", "b,c", "d!"]]
    trees = list(parser.parse_tokens(sentences))
    assert [list(tree.tokens) for tree in trees] == sentences
    assert all(len(tree.heads) == len(words) for tree, words in zip(trees, sentences))


def test_raw_text_goes_through_the_pipeline_tokenizer_one_tree_per_text(untrained):
    parser = SpacyParser.load(untrained, batch_size=2)
    texts = ["Kočka spí,  ale\tpes ne!", "Pes běží.", " Jedna ", "Dva (tři) čtyři.", "Pět"]
    tokenizer = spacy.blank("cs").tokenizer
    expected = [[token.text for token in tokenizer(" ".join(text.split()))] for text in texts]
    assert expected[0] == ["Kočka", "spí", ",", "ale", "pes", "ne", "!"]
    assert [list(tree.tokens) for tree in parser.parse_texts(texts)] == expected


def test_bad_inputs_are_value_errors(untrained):
    parser = SpacyParser.load(untrained)
    with pytest.raises(ValueError, match="input 1 is blank"):
        list(parser.parse_texts(["a", "  "]))
    with pytest.raises(ValueError, match="input 0 has no words"):
        list(parser.parse_tokens([[]]))
    with pytest.raises(ValueError, match="word 'a b' is empty or contains whitespace"):
        list(parser.parse_tokens([["a b"]]))
    with pytest.raises(ValueError, match="word '' is empty"):
        list(parser.parse_tokens([["a", ""]]))


def test_pipeline_without_parser_is_rejected(tmp_path):
    directory = untrained_pipeline_dir(tmp_path / "tagger_only", parser=False)
    with pytest.raises(ParserError, match=r"has no dependency parser \(its components: tagger\)"):
        SpacyParser.load(directory)


def test_missing_models_say_how_to_install_or_train_one(tmp_path):
    with pytest.raises(ParserModelNotFoundError) as package:
        load_parser("spacy:xx_no_such_pipeline")
    assert "python -m spacy download xx_no_such_pipeline" in str(package.value)
    assert "bin/train_parser --lang=LANG --train_files=" in str(package.value)
    assert isinstance(package.value, FileNotFoundError)  # reported by the CLIs without traceback

    missing_dir = str(tmp_path / "parsers" / "cs")
    with pytest.raises(ParserModelNotFoundError) as directory:
        load_parser(f"spacy:{missing_dir}")
    assert f"no spaCy pipeline in {missing_dir}" in str(directory.value)
    assert f"--output_dir={missing_dir}" in str(directory.value)


def test_fingerprint_follows_the_model_files(tmp_path):
    first = untrained_pipeline_dir(tmp_path / "a", seed=0)
    shutil.copytree(first, tmp_path / "copy")
    other = untrained_pipeline_dir(tmp_path / "b", seed=1)
    fingerprint = SpacyParser.load(first).fingerprint(pretokenized=False)
    assert fingerprint["library"] == "spacy"
    assert SpacyParser.load(first).fingerprint(pretokenized=True) == fingerprint
    assert SpacyParser.load(str(tmp_path / "copy")).fingerprint(False) == fingerprint
    assert SpacyParser.load(other).fingerprint(False)["model_sha256"] != fingerprint["model_sha256"]


@pytest.mark.real_data
@needs_czech_ud
def test_trained_parser_beats_the_previous_word_baseline_with_learned_tags():
    summary = tiny_czech_parser()
    parser = load_parser(f"spacy:{summary['output_dir']}")
    nlp = parser.nlp
    gold = list(itertools.islice(read_conllu(CZECH_UD), 80))  # training sentences
    trees = list(parser.parse_tokens(tree.tokens for tree in gold))

    tags = set(nlp.get_pipe("tagger").labels)
    upos = {label.split("POS=")[1] for label in nlp.get_pipe("morphologizer").labels}
    labels = set(nlp.get_pipe("parser").labels) - {"ROOT"} | {"root"}
    correct = previous_word = total = 0
    for gold_tree, tree in zip(gold, trees):
        assert tree.tokens == gold_tree.tokens
        assert set(tree.xpos) <= tags and set(tree.upos) <= upos and set(tree.labels) <= labels
        correct += int((tree.heads == gold_tree.heads).sum())
        previous_word += sum(int(head) == i for i, head in enumerate(gold_tree.heads))
        total += len(tree)
    assert correct / total > previous_word / total + 0.2
    assert "root" in set().union(*(tree.labels for tree in trees))

    text = gold[0].comments["text"]
    (tree,) = parser.parse_texts([text])
    assert "".join(tree.tokens) == "".join(text.split())


def test_pipelines_without_a_recorded_root_label_get_uds(untrained, vocab):
    # A pretrained pipeline (cs_core_news_sm) records no root label: its roots
    # become UD's `root`, so that LAS against UD treebanks counts them.
    parser = SpacyParser.load(untrained)
    assert parser.root_label == "root"
    assert parser.fingerprint(pretokenized=True)["root_label"] == "root"
    doc = Doc(vocab, words=["Pes", "běží"], heads=[1, 1], deps=["nsubj", "ROOT"])
    assert tree_from_doc(doc, parser.root_label).labels == ("nsubj", "root")


@pytest.mark.skipif(importlib.util.find_spec("cs_core_news_sm") is None,
                    reason="the teacher extra is not installed: pip install -e '.[teacher_cs]'")
def test_the_czech_teacher_gives_ud_roots_upos_and_no_xpos():
    parser = load_parser("spacy:cs_core_news_sm")
    (tree,) = parser.parse_texts(["Muž v modrém tričku stojí na žebříku."])
    assert tree.tokens[-1] == "." and list(tree.heads).count(0) == 1
    assert tree.labels[list(tree.heads).index(0)] == "root" and "ROOT" not in tree.labels
    assert set(tree.xpos) == {"_"}  # no tagger
    assert "VERB" in tree.upos
