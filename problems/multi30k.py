"""Multi30k with parsed source sentences: `multi30k_syntax_cs_en`, `_de_en`, `_en_cs`.

Multi30k task 1 (Elliott et al., 2016; Czech added in 2018) gives English
descriptions of Flickr30k images with German and Czech translations: raw,
untokenised text, one sentence per line, line-aligned across languages.
Splits and files (in `<tmp_dir>/multi30k/`, plain or gzip):

    train             train.{cs,de,en}[.gz]              29,000 sentences
    dev               val.{cs,de,en}[.gz]                 1,014
    test              test_2016_flickr.{cs,de,en}[.gz]    1,000
    (no split)        test_2018_flickr.{cs,de,en}[.gz]    1,071

Files already there are used as they are; missing ones are downloaded from
the dataset's public repository, e.g.
https://raw.githubusercontent.com/multi30k/dataset/master/data/task1/raw/train.cs.gz
`test_2018_flickr` belongs to no split: datagen fetches it with the test
split (`EXTRA_TEST_SETS`) so that it is there, untouched, for an
experiment that keeps it sealed until every run has finished
(docs/preregistration.md); `bin/grid` parses it with the data's parser.

Source side: every line is parsed by the problem's `parser` option
(`bin/datagen --parser=...`): `stanza:<source language>` by default,
`stanza:LANG:MODEL_DIR` for models elsewhere, or `spacy:MODEL` for a spaCy
pipeline such as one trained by `bin/train_parser`. The parser tokenises the
raw text itself (stanza's neural tokenizer; for spaCy the pipeline's
tokenizer, which for a pipeline from `bin/train_parser` is the rule-based
tokenizer of `spacy.blank(lang)`). A line the parser splits into several
sentences gives one tree with several ROOT dependents. Parses are cached as
CoNLL-U in `<tmp_dir>/multi30k/parses/` (`syntax_t2t.parsing.parse_cache`),
so a re-run does not parse again and an interrupted parse resumes; another
parser gets its own cache file. `bin/datagen --num_workers=N` parses with a
spaCy pipeline in N processes.

Target side: tokenised by the rule-based tokenizer of `spacy.blank(target
language)`, which needs no model. `bin/decode --detokenize` undoes it
(`syntax_t2t.data.detokenize`), for BLEU against the raw references.
"""

import functools
import math
import os
from typing import Callable, Iterator, Optional

from absl import logging

from syntax_t2t.problems.common import find_file
from syntax_t2t import registry
from syntax_t2t.data.detokenize import spacy_detokenizer
from syntax_t2t.data.download import DownloadError, maybe_download
from syntax_t2t.data.parallel_text import read_parallel
from syntax_t2t.data.tree import DependencyTree
from syntax_t2t.errors import InputError
from syntax_t2t.parsing import parse_cache
from syntax_t2t.parsing.parser import Parser
from syntax_t2t.parsing.parser_spec import load_parser, parse_parser_spec
from syntax_t2t.problem import DEV, TEST, TRAIN, Problem

#: File name stem of each split in the Multi30k repository.
SPLIT_FILES = {TRAIN: "train", DEV: "val", TEST: "test_2016_flickr"}
#: Test sets of the repository outside the splits, fetched with the test split.
EXTRA_TEST_SETS = ("test_2018_flickr",)
URL_TEMPLATE = "https://raw.githubusercontent.com/multi30k/dataset/master/data/task1/raw/{filename}"


class Multi30kSyntax(Problem):
    """Parsed source sentences -> target tokens over Multi30k (see the module docstring).

    Subclasses set `source_language` and `target_language` (`cs`, `de`,
    `en`). Options: `parser` (a `--parser` value), `data_subdir` (directory
    under `tmp_dir`, default `multi30k`) and `url_template` (formatted with
    `filename`, e.g. `train.cs.gz`).

    Raises:
        ParserSpecError: `parser` is not `spacy:MODEL` or `stanza:LANG[:MODEL_DIR]`.
    """

    source_language = ""
    target_language = ""
    #: spacy:MODEL or stanza:LANG[:MODEL_DIR], the parser of the source text.
    parser = ""
    #: Directory under --tmp_dir holding (or receiving) the raw files.
    data_subdir = "multi30k"
    #: URL of a missing raw file, formatted with `filename` (e.g. train.cs.gz).
    url_template = URL_TEMPLATE
    num_shards = {TRAIN: 10, DEV: 1, TEST: 1}

    option_names = Problem.option_names + ("parser", "data_subdir", "url_template")

    def __init__(self, **options):
        super().__init__(**options)
        parse_parser_spec(self.parser)  # a malformed spec fails now, not after a download
        self._loaded_parser: Optional[Parser] = None

    def raw_path(self, tmp_dir: str, split: str, language: str) -> str:
        """The raw text of `split` in `language`, downloaded if missing."""
        return self.raw_file(tmp_dir, SPLIT_FILES[split], language)

    def raw_file(self, tmp_dir: str, stem: str, language: str) -> str:
        """The raw text `<stem>.<language>[.gz]` (a split's or `EXTRA_TEST_SETS`'), downloaded if missing."""
        directory = os.path.join(tmp_dir, self.data_subdir)
        name = f"{stem}.{language}"
        found = find_file(directory, (name, name + ".gz"))
        if found:
            return found
        return maybe_download(directory, name + ".gz", self.url_template.format(filename=name + ".gz"))

    def check_raw_files(self, tmp_dir: str) -> None:
        """Finds (or downloads) every split's files in both languages, then loads the parser.

        Datagen parses the training split first: without this, a dev file that
        cannot be had, or a parser that does not load, would show only after it.
        """
        for split in SPLIT_FILES:
            for language in (self.source_language, self.target_language):
                self.raw_path(tmp_dir, split, language)
        self.source_parser()

    def parse_cache_dir(self, tmp_dir: str) -> str:
        """Where the source parses are cached."""
        return os.path.join(tmp_dir, self.data_subdir, "parses")

    def source_parser(self) -> Parser:
        """The parser of the `parser` option, loaded once, in `datagen_workers` processes."""
        if self._loaded_parser is None:
            self._loaded_parser = load_parser(self.parser, num_processes=self.datagen_workers)
        return self._loaded_parser

    def parse_source_texts(self, texts) -> list[DependencyTree]:
        """Trees of new raw source sentences, parsed as the data's were (`source_parsing`)."""
        return list(self.source_parser().parse_texts(texts))

    def fetch_extra_test_sets(self, tmp_dir: str) -> list[str]:
        """The files of `EXTRA_TEST_SETS` in both languages, downloaded where missing.

        The data does not need them: one that cannot be had is a warning (and
        left out of the list), not a failed datagen.
        """
        paths = []
        for stem in EXTRA_TEST_SETS:
            for language in (self.source_language, self.target_language):
                try:
                    paths.append(self.raw_file(tmp_dir, stem, language))
                except DownloadError as error:
                    logging.warning("%s: test set %s is not in %s and was not downloaded (%s); "
                                    "the data does not need it, an experiment testing on it does",
                                    self.name, stem, os.path.join(tmp_dir, self.data_subdir), error)
        return paths

    def generate_samples(self, tmp_dir, split, skip) -> Iterator[tuple[DependencyTree, list[str]]]:
        if split == TEST:
            self.fetch_extra_test_sets(tmp_dir)
        source_path = self.raw_path(tmp_dir, split, self.source_language)
        cache_path = parse_cache.parse_file(self.source_parser(), source_path,
                                            self.parse_cache_dir(tmp_dir))
        parses = parse_cache.read_parses(cache_path)
        parsed_line, tree = 0, None
        for number, _, target in self.unparsed_records(tmp_dir, split, skip):
            # The cache holds a tree for every line read_parallel can yield,
            # and for lines it skips because of their target, in line order.
            while parsed_line < number:
                parsed_line, tree = next(parses, (math.inf, None))
            if parsed_line != number:
                raise InputError(cache_path, None,
                                 f"has no parse of line {number} of {source_path}; it is not the "
                                 f"parse of that file. Delete it to parse again",
                                 reason="bad parse cache")
            yield tree, target

    def unparsed_records(self, tmp_dir, split, skip) -> Iterator[tuple[int, str, list[str]]]:
        """`(line number, raw source text, target tokens)` of the split's lines (`Problem`)."""
        source_path = self.raw_path(tmp_dir, split, self.source_language)
        target_path = self.raw_path(tmp_dir, split, self.target_language)
        tokenize = target_tokenizer(self.target_language)
        for number, source_text, target_text in read_parallel(source_path, target_path, skip):
            yield number, source_text, tokenize(target_text)

    def detokenize_target(self, tokens) -> str:
        """Undoes `target_tokenizer` (Moses rules; see `syntax_t2t.data.detokenize`)."""
        return spacy_detokenizer(self.target_language)(tokens)


@functools.lru_cache(maxsize=None)
def target_tokenizer(language: str) -> Callable[[str], list[str]]:
    """Splits raw text into words with the rule-based tokenizer of `spacy.blank(language)`."""
    import spacy  # only problems that tokenise need it

    tokenizer = spacy.blank(language).tokenizer

    def tokenize(text: str) -> list[str]:
        return [token.text for token in tokenizer(" ".join(text.split()))]

    return tokenize


@registry.register_problem
class Multi30kSyntaxCsEn(Multi30kSyntax):
    """Czech trees -> English tokens (the thesis's cs2en direction on Multi30k)."""

    source_language = "cs"
    target_language = "en"
    parser = "stanza:cs"


@registry.register_problem
class Multi30kSyntaxDeEn(Multi30kSyntax):
    """German trees -> English tokens."""

    source_language = "de"
    target_language = "en"
    parser = "stanza:de"


@registry.register_problem
class Multi30kSyntaxEnCs(Multi30kSyntax):
    """English trees -> Czech tokens."""

    source_language = "en"
    target_language = "cs"
    parser = "stanza:en"
