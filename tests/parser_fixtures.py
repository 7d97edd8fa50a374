"""Parsers for the parsing tests (imported by test modules; not a test module itself).

* `ChainParser`: a stand-in parser without a model (each word attached to
  the one before it), optionally slow, crashing or losing lines;

* `tiny_czech_parser()`: a spaCy tagger and parser trained by
  `train_spacy_parser` on 200 sentences of Czech CAC (UD) for 100 steps,
  once per test process (~30 s on 2 cores), whichever test module asks first;
* `untrained_pipeline_dir(...)`: a spaCy pipeline with an initialised but
  untrained tagger and parser, saved in a second: its trees are valid but
  arbitrary, enough for tests of plumbing rather than of parsing.
"""

import atexit
import functools
import io
import os
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest

from syntax_t2t.data.tree import DependencyTree
from syntax_t2t.parsing.parser import Parser

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
CZECH_UD = DATA / "ud" / "cs_cac-ud-dev.conllu.gz"
MULTI30K = DATA / "multi30k"
TRAIN_SENTENCES = 200

needs_czech_ud = pytest.mark.skipif(not CZECH_UD.is_file(),
                                    reason=f"real data file {CZECH_UD} is absent")


class ChainParser(Parser):
    """A reference parser: words are the whitespace-separated pieces, each attached to
    the one before it (the first to ROOT); records the sentences it parses.

    Args:
        version: part of its fingerprint.
        fail_after: raise after parsing this many sentences.
        drop_last: `parse_texts` loses the last sentence.
        delay: seconds per sentence, to be interrupted while parsing.
    """

    def __init__(self, version="1", fail_after=None, drop_last=False, delay=0.0):
        self.spec = f"chain:{version}"
        self.version = version
        self.fail_after = fail_after
        self.drop_last = drop_last
        self.delay = delay
        self.parsed = []

    def _tree(self, words):
        if self.fail_after is not None and len(self.parsed) >= self.fail_after:
            raise RuntimeError("parser crashed")
        time.sleep(self.delay)
        self.parsed.append(list(words))
        return DependencyTree.from_heads(words, np.arange(len(words)), labels=["dep"] * len(words))

    def parse_texts(self, texts):
        texts = list(texts)
        for text in texts[:-1] if self.drop_last else texts:
            yield self._tree(text.split())

    def parse_tokens(self, sentences):
        for words in sentences:
            yield self._tree(list(words))

    def fingerprint(self, pretokenized):
        return {"library": "chain", "version": self.version}


@functools.lru_cache(maxsize=None)
def tiny_czech_parser() -> dict:
    """Trains (once per process) and returns `train_spacy_parser`'s summary; the
    pipeline is in `summary["output_dir"]`, removed when the process exits."""
    from syntax_t2t.parsing.spacy_training import TrainingSettings, train_spacy_parser

    directory = tempfile.mkdtemp(prefix="tiny_czech_parser.")
    atexit.register(shutil.rmtree, directory, True)
    settings = TrainingSettings(lang="cs", max_steps=100, eval_frequency=100, width=64, depth=2,
                                parser_hidden_width=64, max_train_sentences=TRAIN_SENTENCES, seed=1)
    summary = train_spacy_parser([str(CZECH_UD)], os.path.join(directory, "cs_tiny"), settings,
                                 log=io.StringIO())
    return summary


def untrained_pipeline_dir(directory, lang: str = "cs", seed: int = 0, parser: bool = True) -> str:
    """Saves a spaCy pipeline with an initialised, untrained tagger (and parser) to `directory`."""
    import spacy
    from spacy.util import fix_random_seed

    fix_random_seed(seed)
    nlp = spacy.blank(lang)
    tagger = nlp.add_pipe("tagger")
    for tag in ("NN", "VB", "Z:"):
        tagger.add_label(tag)
    if parser:
        dependency_parser = nlp.add_pipe("parser")
        for label in ("nsubj", "obj", "punct"):
            dependency_parser.add_label(label)
    nlp.initialize()
    nlp.to_disk(directory)
    return str(directory)
