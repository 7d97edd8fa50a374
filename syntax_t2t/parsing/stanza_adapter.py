"""stanza pipelines as `Parser`s.

The pipeline runs `tokenize,pos,lemma,depparse`; stanza adds `mwt` for
languages with multiword tokens, and the trees hold the syntactic words
(`zum` -> `zu` `dem`), as CoNLL-U files read by this project do. Pre-tokenised
sentences go through a second pipeline built with `tokenize_pretokenized=True`,
which keeps the words as given and never splits a sentence. Each input
becomes one stanza `Document`; a batch of them goes through
`Pipeline.bulk_process`, whose processors batch sentences across documents.

Nothing is ever downloaded (`download_method=None`): a missing model is an
error that says how to download it.
"""

import itertools
import os
from typing import Callable, Iterable, Iterator, Optional, Sequence

import stanza
from stanza.models.common.doc import Document

from syntax_t2t.data.tree import DependencyTree
from syntax_t2t.parsing.joined_tree import ParsedWord, join_sentences
from syntax_t2t.parsing.parser import (Parser, ParserError, ParserModelNotFoundError,
                                       checked_texts, checked_words, digest_files)

PROCESSORS = "tokenize,pos,lemma,depparse"
#: Input lines per `bulk_process` call.
DEFAULT_BATCH_SIZE = 1000


class StanzaParser(Parser):
    """A stanza pipeline for one language.

    Args:
        lang: stanza language code, e.g. `cs`.
        model_dir: stanza's resources directory; None means stanza's default
            (`$STANZA_RESOURCES_DIR` or `~/stanza_resources`).
        batch_size: input lines per `bulk_process` call.
        pipeline_factory: builds a pipeline from keyword arguments;
            `stanza.Pipeline` unless given.
        pretokenized: which pipeline to build right away (so that a missing
            model is reported before any work); the other one is built when
            first needed.

    Raises:
        ParserModelNotFoundError: the models are not in `model_dir`.
    """

    def __init__(self, lang: str, model_dir: Optional[str] = None,
                 batch_size: int = DEFAULT_BATCH_SIZE,
                 pipeline_factory: Optional[Callable[..., stanza.Pipeline]] = None,
                 pretokenized: bool = False):
        self.lang = lang
        self.model_dir = model_dir
        self.spec = f"stanza:{lang}" + (f":{model_dir}" if model_dir else "")
        self.batch_size = batch_size
        self._factory = pipeline_factory or stanza.Pipeline
        self._pipelines = {}
        self._fingerprints = {}
        self.pipeline(pretokenized)

    def pipeline(self, pretokenized: bool) -> stanza.Pipeline:
        """The pipeline for raw (False) or pre-tokenised (True) input, built once."""
        if pretokenized not in self._pipelines:
            options = dict(lang=self.lang, processors=PROCESSORS, download_method=None,
                           tokenize_pretokenized=pretokenized)
            if self.model_dir is not None:
                options["dir"] = self.model_dir
            try:
                self._pipelines[pretokenized] = self._factory(**options)
            except FileNotFoundError as error:
                raise ParserModelNotFoundError(self._install_hint(error)) from error
            except ValueError as error:
                # stanza's words for a language missing from resources.json.
                if "No processors to load" not in str(error):
                    raise
                raise ParserModelNotFoundError(self._install_hint(error)) from error
        return self._pipelines[pretokenized]

    def parse_texts(self, texts: Iterable[str]) -> Iterator[DependencyTree]:
        # Runs of whitespace carry no information: one space each.
        texts = (" ".join(text.split()) for text in checked_texts(texts))
        for _, tree in self._parse(texts, pretokenized=False):
            yield tree

    def parse_tokens(self, sentences: Iterable[Sequence[str]]) -> Iterator[DependencyTree]:
        # With tokenize_pretokenized, stanza splits a document's text at
        # whitespace into words and at line breaks into sentences.
        texts = (" ".join(words) for words in checked_words(sentences))
        for text, tree in self._parse(texts, pretokenized=True):
            if " ".join(tree.tokens) != text:
                raise ParserError(f"{self.spec} changed the pre-tokenised words {text.split()} "
                                  f"into {list(tree.tokens)}")
            yield tree

    def _parse(self, texts: Iterable[str], pretokenized: bool) -> Iterator[tuple[str, DependencyTree]]:
        """Yields (text, tree), `batch_size` texts per `bulk_process` call."""
        pipeline = self.pipeline(pretokenized)
        texts = iter(texts)
        while batch := list(itertools.islice(texts, self.batch_size)):
            documents = pipeline.bulk_process([Document([], text=text) for text in batch])
            if len(documents) != len(batch):
                raise ParserError(f"{self.spec} returned {len(documents)} documents for "
                                  f"{len(batch)} inputs")
            for text, document in zip(batch, documents):
                yield text, tree_from_document(document)

    def fingerprint(self, pretokenized: bool) -> dict:
        if pretokenized not in self._fingerprints:
            config = self.pipeline(pretokenized).config
            # Every model file the pipeline's configuration names.
            files = {key: path for key, path in config.items()
                     if key.endswith("_path") and isinstance(path, str) and os.path.isfile(path)}
            self._fingerprints[pretokenized] = {
                "library": "stanza", "version": stanza.__version__, "lang": self.lang,
                "processors": sorted(self.pipeline(pretokenized).processors),
                "models_sha256": digest_files(files)}
        return dict(self._fingerprints[pretokenized])

    def _install_hint(self, error: Exception) -> str:
        where = f", model_dir={self.model_dir!r}" if self.model_dir else ""
        return (f"stanza models for {self.lang!r} are not in "
                f"{self.model_dir or 'the default stanza_resources directory'} ({error}). "
                f"Download them with `python -c \"import stanza; stanza.download({self.lang!r}{where})\"` "
                f"(needs network access), or use a spaCy parser: --parser=spacy:MODEL")


def tree_from_document(document: Document) -> DependencyTree:
    """The tree of a parsed stanza `Document`; several sentences are joined under ROOT.

    Raises:
        ParserError: the document has no words or no dependency parse.
    """
    sentences = []
    for number, sentence in enumerate(document.sentences, start=1):
        words = []
        for word in sentence.words:
            if word.head is None:
                raise ParserError(f"sentence {number}: word {word.id} {word.text!r} has no head; "
                                  f"the document was not parsed (no depparse processor?)")
            words.append(ParsedWord(form=word.text, head=word.head, label=word.deprel,
                                    lemma=word.lemma, upos=word.upos, xpos=word.xpos))
        sentences.append(words)
    return join_sentences(sentences)
