"""spaCy pipelines as `Parser`s.

Raw text goes through the pipeline's tokenizer (for a pipeline trained by
`bin/train_parser`, the rule-based tokenizer of `spacy.blank(lang)`).
Pre-tokenised sentences become `Doc(nlp.vocab, words=...)`, which `nlp.pipe`
runs through the components without tokenising again, so the words stay as
given. Batching is `nlp.pipe`'s, and so are several processes
(`n_process`; their trees come back in input order).

Annotations: `tag_` is the XPOS, `pos_` the UPOS, `lemma_` the lemma and
`dep_` the label. spaCy labels every sentence root `ROOT`; roots get the
root label of the pipeline's training data back, so that their trees match
the treebanks they are scored against (LAS) and the labels models read:
the one a pipeline trained by `bin/train_parser` records in its meta, else
UD's `root` (pretrained pipelines such as `cs_core_news_sm` are trained on
UD). Annotations a pipeline does not predict are `"_"`: `cs_core_news_sm`,
for one, has a morphologizer (UPOS and features) but no tagger, so every
XPOS is `"_"` (datagen says so, `Problem.vocabularies_from_counts`;
`spec_pos` reads UPOS with `pos=upos`).
"""

import hashlib
import os
from typing import Iterable, Iterator, Optional, Sequence

import spacy
from spacy.language import Language
from spacy.tokens import Doc

from syntax_t2t.data.tree import DependencyTree
from syntax_t2t.parsing.joined_tree import ParsedWord, join_sentences
from syntax_t2t.parsing.parser import (Parser, ParserError, ParserModelNotFoundError,
                                       checked_texts, checked_words, digest_directory)

DEFAULT_BATCH_SIZE = 256
#: spaCy's label of sentence roots.
SPACY_ROOT = "ROOT"
#: Where in a pipeline's meta `bin/train_parser` records the root label of its training data.
META_KEY, ROOT_LABEL_KEY = "syntax_t2t", "root_label"
#: The root label of pipelines that do not record theirs (UD's).
UD_ROOT = "root"
#: Pretrained pipelines that the toolkit's optional extras install (setup.cfg).
EXTRAS = {"cs_core_news_sm": "teacher_cs"}


class SpacyParser(Parser):
    """A spaCy pipeline with a dependency parser.

    Args:
        nlp: the pipeline; one of its components must assign `token.dep`.
        spec: the `--parser` text naming it, e.g. `spacy:en_core_web_sm`.
        batch_size: documents per `nlp.pipe` batch.
        n_process: processes `nlp.pipe` parses in.

    Raises:
        ParserError: the pipeline has no dependency parser.
    """

    def __init__(self, nlp: Language, spec: str, batch_size: int = DEFAULT_BATCH_SIZE,
                 n_process: int = 1):
        if not any("token.dep" in nlp.get_pipe_meta(name).assigns for name in nlp.pipe_names):
            raise ParserError(
                f"{spec}: the spaCy pipeline has no dependency parser (its components: "
                f"{', '.join(nlp.pipe_names) or 'none'}); use a pipeline with a 'parser', e.g. one "
                f"trained by bin/train_parser")
        self.nlp = nlp
        self.spec = spec
        self.batch_size = batch_size
        self.n_process = n_process
        recorded = nlp.meta.get(META_KEY, {}).get(ROOT_LABEL_KEY)
        self.root_label = recorded or UD_ROOT
        # Parses cached before roots were relabelled carry `ROOT`: a key of
        # its own keeps them from being read as this parser's.
        self._relabels_by_default = recorded is None
        self._fingerprint = None

    @classmethod
    def load(cls, model: str, batch_size: int = DEFAULT_BATCH_SIZE,
             n_process: int = 1) -> "SpacyParser":
        """Loads an installed pipeline package or a pipeline directory.

        Raises:
            ParserModelNotFoundError: `model` is neither; says how to get one.
        """
        try:
            nlp = spacy.load(model)
        except OSError as error:
            raise ParserModelNotFoundError(_install_hint(model, error)) from error
        return cls(nlp, f"spacy:{model}", batch_size, n_process)

    def parse_texts(self, texts: Iterable[str]) -> Iterator[DependencyTree]:
        # Runs of whitespace would become whitespace tokens: one space each.
        normalised = (" ".join(text.split()) for text in checked_texts(texts))
        for doc in self.nlp.pipe(normalised, batch_size=self.batch_size,
                                  n_process=self.n_process):
            yield tree_from_doc(doc, self.root_label)

    def parse_tokens(self, sentences: Iterable[Sequence[str]]) -> Iterator[DependencyTree]:
        docs = (Doc(self.nlp.vocab, words=list(words)) for words in checked_words(sentences))
        for doc in self.nlp.pipe(docs, batch_size=self.batch_size, n_process=self.n_process):
            yield tree_from_doc(doc, self.root_label)

    def fingerprint(self, pretokenized: bool) -> dict:
        # The digest covers the tokenizer too, so it serves both input forms.
        if self._fingerprint is None:
            if self.nlp.path is not None:
                model_digest = digest_directory(os.fspath(self.nlp.path))
            else:
                model_digest = hashlib.sha256(self.nlp.to_bytes()).hexdigest()
            self._fingerprint = {"library": "spacy", "version": spacy.__version__,
                                 "pipeline": list(self.nlp.pipe_names), "model_sha256": model_digest}
            if self._relabels_by_default:
                self._fingerprint["root_label"] = self.root_label
        return dict(self._fingerprint)


def tree_from_doc(doc: Doc, root_label: Optional[str] = None) -> DependencyTree:
    """The tree of a parsed `Doc`; several sentences are joined under ROOT.

    Args:
        doc: a `Doc` with dependency annotation.
        root_label: replaces spaCy's `ROOT` label of sentence roots; None keeps it.

    Raises:
        ParserError: the doc has no words.
    """
    sentences = []
    for sentence in doc.sents:
        words = []
        for token in sentence:
            is_root = token.head.i == token.i
            label = root_label if is_root and root_label and token.dep_ == SPACY_ROOT else token.dep_
            words.append(ParsedWord(form=token.text,
                                    head=0 if is_root else token.head.i - sentence.start + 1,
                                    label=label, lemma=token.lemma_, upos=token.pos_,
                                    xpos=token.tag_))
        sentences.append(words)
    return join_sentences(sentences)


def _install_hint(model: str, error: OSError) -> str:
    train = ("bin/train_parser --lang=LANG --train_files=TRAIN.conllu[,...] "
             "--output_dir=MODEL_DIR")
    if os.sep in model or model.startswith(".") or os.path.exists(model):
        return (f"no spaCy pipeline in {model} ({error}). Train one there from UD CoNLL-U files with "
                f"`{train.replace('MODEL_DIR', model)}`, or install a pretrained pipeline with "
                f"`python -m spacy download NAME` and use --parser=spacy:NAME")
    if model in EXTRAS:
        return (f"spaCy pipeline {model!r} is not installed ({error}). It is the optional extra "
                f"{EXTRAS[model]!r}: pip install -e '.[{EXTRAS[model]}]'")
    return (f"spaCy pipeline {model!r} is not installed ({error}). Install it with "
            f"`python -m spacy download {model}` (needs network access), or train a pipeline from "
            f"UD CoNLL-U files with `{train}` and use --parser=spacy:MODEL_DIR")
