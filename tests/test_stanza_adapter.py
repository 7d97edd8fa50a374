"""Tests for syntax_t2t.parsing.stanza_adapter.

No stanza models can be downloaded here: the conversion is tested on real
stanza `Document`s built from CoNLL-U by stanza's own reader, the batching on
a pipeline factory that returns such documents, and the error for missing
models on a real `stanza.Pipeline`. A full pipeline is run only where models
are installed.
"""

import os
from pathlib import Path

import pytest
import stanza
from stanza.models.common.doc import Document
from stanza.utils.conll import CoNLL

from syntax_t2t.parsing.parser import ParserError, ParserModelNotFoundError
from syntax_t2t.parsing.parser_spec import load_parser
from syntax_t2t.parsing.stanza_adapter import PROCESSORS, StanzaParser, tree_from_document

TWO_SENTENCES = """\
# text = Šel do lesa. Zpíval.
1\tŠel\tjít\tVERB\tVpYS---XR-AA---\t_\t0\troot\t_\t_
2\tdo\tdo\tADP\tRR--2----------\t_\t3\tcase\t_\t_
3\tlesa\tles\tNOUN\tNNIS2-----A----\t_\t1\tobl\t_\tSpaceAfter=No
4\t.\t.\tPUNCT\tZ:-------------\t_\t1\tpunct\t_\t_

1\tZpíval\tzpívat\tVERB\tVpYS---XR-AA---\t_\t0\troot\t_\tSpaceAfter=No
2\t.\t.\tPUNCT\tZ:-------------\t_\t1\tpunct\t_\t_

"""

MULTIWORD = """\
1-2\tzum\t_\t_\t_\t_\t_\t_\t_\t_
1\tzu\tzu\tADP\tAPPR\t_\t2\tcase\t_\t_
2\tdem\tder\tDET\tART\t_\t3\tdet\t_\t_
3\tHaus\tHaus\tNOUN\tNN\t_\t0\troot\t_\t_

"""


def _chain_document(text: str) -> Document:
    """A parsed stanza Document for whitespace-separated `text`: word 1 the root, each
    further word attached to the one before (a naive stand-in for a parse)."""
    lines = [f"{i}\t{word}\t{word.lower()}\tX\tXX\t_\t{i - 1}\t{'root' if i == 1 else 'dep'}\t_\t_"
             for i, word in enumerate(text.split(), start=1)]
    return CoNLL.conll2doc(input_str="\n".join(lines) + "\n\n")


class _StandInPipeline:
    """Records what it is given and answers with chain parses (see `_chain_document`)."""

    def __init__(self, **options):
        self.options = options
        self.batches = []

    def bulk_process(self, documents):
        assert all(isinstance(document, Document) for document in documents)
        self.batches.append([document.text for document in documents])
        return [_chain_document(document.text) for document in documents]


def test_document_words_become_a_tree():
    tree = tree_from_document(CoNLL.conll2doc(input_str=MULTIWORD))
    assert tree.tokens == ("zu", "dem", "Haus")  # syntactic words, not the token "zum"
    assert tree.heads.tolist() == [2, 3, 0]
    assert tree.labels == ("case", "det", "root")
    assert tree.lemmas == ("zu", "der", "Haus")
    assert tree.upos == ("ADP", "DET", "NOUN")
    assert tree.xpos == ("APPR", "ART", "NN")


def test_sentences_of_one_document_are_joined_under_root():
    document = CoNLL.conll2doc(input_str=TWO_SENTENCES)
    assert len(document.sentences) == 2
    tree = tree_from_document(document)
    assert tree.tokens == ("Šel", "do", "lesa", ".", "Zpíval", ".")
    # The second sentence's heads move by the 4 words before it; its root stays at ROOT.
    assert tree.heads.tolist() == [0, 3, 1, 1, 0, 5]
    assert tree.labels == ("root", "case", "obl", "punct", "root", "punct")


def test_unparsed_document_is_an_error():
    document = Document([[{"id": (1,), "text": "Ahoj"}]], text="Ahoj")
    with pytest.raises(ParserError, match="word 1 'Ahoj' has no head"):
        tree_from_document(document)


def test_missing_annotations_are_underscores():
    document = Document([[{"id": (1,), "text": "Ahoj", "head": 0, "deprel": "root"}]], text="Ahoj")
    tree = tree_from_document(document)
    assert (tree.lemmas, tree.upos, tree.xpos, tree.labels) == (("_",), ("_",), ("_",), ("root",))


def test_pipelines_are_built_without_downloads_and_batched():
    built = []

    def factory(**options):
        built.append(_StandInPipeline(**options))
        return built[-1]

    parser = StanzaParser("cs", model_dir="/models/stanza", batch_size=2, pipeline_factory=factory)
    assert parser.spec == "stanza:cs:/models/stanza"
    assert len(built) == 1  # the raw-text pipeline, built right away
    assert built[0].options == dict(lang="cs", processors=PROCESSORS, download_method=None,
                                    tokenize_pretokenized=False, dir="/models/stanza")

    texts = ["Pes  běží .", "A", "b c", "d", "e f g"]
    trees = list(parser.parse_texts(texts))
    assert built[0].batches == [["Pes běží .", "A"], ["b c", "d"], ["e f g"]]
    assert [" ".join(tree.tokens) for tree in trees] == [" ".join(text.split()) for text in texts]
    assert trees[0].heads.tolist() == [0, 1, 2] and trees[0].lemmas == ("pes", "běží", ".")

    words = [["Do", "U.S.A."], ["x"]]
    assert [list(tree.tokens) for tree in parser.parse_tokens(words)] == words
    assert len(built) == 2 and built[1].options["tokenize_pretokenized"] is True
    assert built[1].batches == [["Do U.S.A.", "x"]]
    list(parser.parse_tokens([["y"]]))
    assert len(built) == 2  # each pipeline is built once


def test_changed_pretokenised_words_are_an_error():
    class Expanding(_StandInPipeline):
        def bulk_process(self, documents):
            return [_chain_document(document.text.replace("zum", "zu dem")) for document in documents]

    parser = StanzaParser("de", pipeline_factory=Expanding, pretokenized=True)
    with pytest.raises(ParserError, match=r"changed the pre-tokenised words \['zum', 'Haus'\] into "
                                          r"\['zu', 'dem', 'Haus'\]"):
        list(parser.parse_tokens([["zum", "Haus"]]))


def test_missing_models_say_how_to_download_them_and_nothing_is_downloaded(tmp_path):
    empty = tmp_path / "stanza_resources"
    empty.mkdir()
    with pytest.raises(ParserModelNotFoundError) as error:
        load_parser(f"stanza:cs:{empty}")
    message = str(error.value)
    assert f"stanza models for 'cs' are not in {empty}" in message
    assert f"stanza.download('cs', model_dir='{empty}')" in message
    assert "resources.json" in message  # stanza's own reason
    assert os.listdir(empty) == []  # download_method=None: nothing was fetched


@pytest.mark.skipif(
    not (Path(os.environ.get("STANZA_RESOURCES_DIR", Path.home() / "stanza_resources"))
         / "en" / "depparse").is_dir(),
    reason="no stanza English models installed (python -c \"import stanza; stanza.download('en')\")")
def test_full_pipeline_parses_raw_and_pretokenised_text():
    parser = load_parser("stanza:en")
    raw, two = parser.parse_texts(["The dog barks.", "The dog barks. The cat sleeps."])
    assert raw.tokens == ("The", "dog", "barks", ".") and list(raw.heads).count(0) == 1
    assert list(two.heads).count(0) == 2 and len(two) == 8
    (pretokenised,) = parser.parse_tokens([["The", "dog", "barks", "."]])
    assert pretokenised.tokens == raw.tokens
    assert stanza.__version__ == parser.fingerprint(False)["version"]
