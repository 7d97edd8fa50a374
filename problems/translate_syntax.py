"""`translate_syntax`: a user's own parallel files, with source trees, from the command line.

    bin/datagen --problem=translate_syntax --data_dir=D --tmp_dir=T \\
        --problem_options='source_language=cs,target_language=en' --parser=spacy:parsers/cs
    bin/train   --problem=translate_syntax --data_dir=D --model=dep_parse \\
        --hparams_set=transformer_tiny --output_dir=O
    bin/decode  --problem=translate_syntax --data_dir=D --output_dir=O \\
        --decode_from_file=new.cs --decode_to_file=new.en

Files. For each split (`train`, `dev`, `test`) the source and target files
are found in the directory `files` (default: `--tmp_dir`) as
`<split>.<language>` (for `source_format=conllu`: `<split>.<language>.conllu`),
plain or `.gz`, the dev split also as `valid` or `val`; the options
`train_source`, `train_target`, `dev_source`, ... give paths instead.

Options (`--problem_options`):

* `source_language`, `target_language`: language codes, e.g. `cs`, `en`;
* `source_format`: `text` (raw sentences, parsed and tokenised by `parser`),
  `tokens` (whitespace-tokenised sentences, parsed as they are) or `conllu`
  (trees given; the k-th tree translates the k-th target line);
* `target_format`: `text` (raw, tokenised by spaCy's rule-based tokenizer of
  the target language, undone by `bin/decode --detokenize`) or `tokens`;
* `parser` (or `bin/datagen --parser`): `spacy:MODEL` or
  `stanza:LANG[:MODEL_DIR]`, default `stanza:<source_language>`; parses are
  cached in `<data_dir>/parses/` (the raw-data directory is left as it is). The files of every split
  are looked for before the parser is loaded and the parsing starts;
* `subwords`: `joint` (default: WordPiece over both sides,
  `subword_vocab_size` entries), `separate`, or `none` for word vocabularies;
* the base options: `vocab_size`, `subword_vocab_size`, `source_lemmas`, ...

Datagen records the options with the data, so `bin/train` and `bin/decode`
need only `--problem` and `--data_dir`. `bin/decode` parses plain-text input
for models that need source trees with the recorded parser.
"""

import os
from typing import Iterator, Optional

from syntax_t2t.problems.common import find_file
from syntax_t2t.problems.multi30k import target_tokenizer
from syntax_t2t import registry
from syntax_t2t.data.conllu_reader import read_conllu
from syntax_t2t.data.detokenize import spacy_detokenizer
from syntax_t2t.data.parallel_text import read_parallel, read_plain_lines, split_tokens
from syntax_t2t.data.tree import DependencyTree
from syntax_t2t.errors import InputError
from syntax_t2t.parsing import parse_cache
from syntax_t2t.parsing.parser import Parser
from syntax_t2t.parsing.parser_spec import load_parser, parse_parser_spec
from syntax_t2t.problem import DEV, TEST, TRAIN, Problem, RawDataError

SOURCE_FORMATS = ("text", "tokens", "conllu")
TARGET_FORMATS = ("text", "tokens")
# Names under which each split's files are looked for.
SPLIT_NAMES = {TRAIN: ("train",), DEV: ("dev", "valid", "val"), TEST: ("test",)}


@registry.register_problem
class TranslateSyntax(Problem):
    """Source trees -> target tokens from the user's files (see the module docstring)."""

    #: joint (one subword vocabulary of subword_vocab_size for both sides, the
    #: default, as Marian's and OpenNMT's quick starts), separate, or none
    #: (word vocabularies of vocab_size words).
    subwords = "joint"
    #: Language code of the source files, e.g. cs (their names end in it).
    source_language = ""
    #: Language code of the target files, e.g. en.
    target_language = ""
    #: text (raw sentences, parsed and tokenised by `parser`), tokens
    #: (whitespace-tokenised sentences, parsed as they are) or conllu (trees given).
    source_format = "text"
    #: text (raw, tokenised by spaCy's rule-based tokenizer of the target
    #: language; bin/decode --detokenize undoes it) or tokens.
    target_format = "text"
    #: spacy:MODEL or stanza:LANG[:MODEL_DIR]; empty: stanza:<source_language>.
    parser = ""
    #: Directory of the split files <split>.<language>; empty: --tmp_dir.
    files = ""
    #: Path of the training source file, instead of looking in `files`.
    train_source = ""
    #: Path of the training target file, instead of looking in `files`.
    train_target = ""
    #: Path of the dev source file, instead of looking in `files`.
    dev_source = ""
    #: Path of the dev target file, instead of looking in `files`.
    dev_target = ""
    #: Path of the test source file, instead of looking in `files`.
    test_source = ""
    #: Path of the test target file, instead of looking in `files`.
    test_target = ""

    option_names = Problem.option_names + (
        "source_language", "target_language", "source_format", "target_format", "parser", "files",
        "train_source", "train_target", "dev_source", "dev_target", "test_source", "test_target")

    def __init__(self, **options):
        super().__init__(**options)
        for name, value, choices in (("source_format", self.source_format, SOURCE_FORMATS),
                                     ("target_format", self.target_format, TARGET_FORMATS)):
            if value not in choices:
                raise ValueError(f"{self.name}: option {name}={value!r}; expected "
                                 f"{', '.join(choices)}")
        if self.parser:
            parse_parser_spec(self.parser)  # a malformed spec fails now, not after reading
        self._loaded_parser: Optional[Parser] = None

    # Files ---------------------------------------------------------------

    def _require_languages(self):
        missing = [name for name in ("source_language", "target_language")
                   if not getattr(self, name)]
        if missing:
            raise RawDataError(f"{self.name} needs the options {' and '.join(missing)}, e.g. "
                               f"--problem_options='source_language=cs,target_language=en'")

    def file_path(self, tmp_dir: str, split: str, side: str) -> str:
        """The source or target file of `split` (`side` is "source" or "target")."""
        given = getattr(self, f"{split}_{side}")
        if given:
            if not os.path.isfile(given):
                raise RawDataError(f"{self.name}: option {split}_{side}={given} is not a file")
            return given
        language = self.source_language if side == "source" else self.target_language
        suffix = ".conllu" if side == "source" and self.source_format == "conllu" else ""
        directory = self.files or tmp_dir
        names = [f"{stem}.{language}{suffix}{gz}" for stem in SPLIT_NAMES[split]
                 for gz in ("", ".gz")]
        found = find_file(directory, names)
        if found is None:
            raise RawDataError(f"{self.name}: no {side} file of the {split} split in {directory} "
                               f"(looked for {', '.join(names)}); or give it with "
                               f"--problem_options={split}_{side}=PATH")
        return found

    # Parsing -------------------------------------------------------------

    def source_parser(self) -> Parser:
        """The `parser` option's parser (default: stanza of the source language), loaded once."""
        if self._loaded_parser is None:
            self._loaded_parser = load_parser(self.parser or f"stanza:{self.source_language}",
                                              pretokenized=self.source_format == "tokens")
        return self._loaded_parser

    def parse_source_texts(self, texts) -> Optional[list[DependencyTree]]:
        """Trees of new source sentences as the data's were made, or None for CoNLL-U sources.

        Args:
            texts: sentences as the source files hold them (raw or tokenised text).
        """
        if self.source_format == "conllu":
            return None
        parser = self.source_parser()
        if self.source_format == "tokens":
            return list(parser.parse_tokens(split_tokens(text) for text in texts))
        return list(parser.parse_texts(texts))

    # Samples ---------------------------------------------------------------

    def parse_cache_dir(self, tmp_dir: str) -> str:
        """Where the source parses are cached: `<data_dir>/parses` during datagen.

        Not in `tmp_dir`, which for this problem is the user's own directory of
        raw files (#34 item 9); outside datagen (a direct `generate_samples`
        call) `<tmp_dir>/translate_syntax_parses`.
        """
        if self.datagen_data_dir:
            return os.path.join(self.datagen_data_dir, "parses")
        return os.path.join(tmp_dir, "translate_syntax_parses")

    def check_raw_files(self, tmp_dir: str) -> None:
        """Raises `RawDataError` for a missing file of any split and loads the parser: before parsing."""
        self._require_languages()
        for split in SPLIT_NAMES:
            for side in ("source", "target"):
                self.file_path(tmp_dir, split, side)
        if self.source_format != "conllu":
            self.source_parser()  # a parser that does not load fails now too

    def generate_samples(self, tmp_dir, split, skip) -> Iterator[tuple[DependencyTree, list[str]]]:
        self._require_languages()
        if split == TRAIN:
            # Datagen parses the training split first: a missing dev file would show only after it.
            self.check_raw_files(tmp_dir)
        source_path = self.file_path(tmp_dir, split, "source")
        target_path = self.file_path(tmp_dir, split, "target")
        if self.source_format == "conllu":
            yield from self._conllu_samples(source_path, target_path)
            return
        cache_path = parse_cache.parse_file(
            self.source_parser(), source_path, self.parse_cache_dir(tmp_dir),
            pretokenized=self.source_format == "tokens")
        parses = parse_cache.read_parses(cache_path)
        parsed_line, tree = 0, None
        for number, _, target_text in read_parallel(source_path, target_path, skip):
            # The cache holds a tree for every line read_parallel can yield.
            while parsed_line < number:
                parsed_line, tree = next(parses, (number + 1, None))
            if parsed_line != number:
                raise InputError(cache_path, None, f"has no parse of line {number} of "
                                 f"{source_path}; delete it to parse again",
                                 reason="bad parse cache")
            yield tree, self.tokenize_target(target_text)

    def _conllu_samples(self, source_path, target_path):
        # Bad trees are not skipped: the k-th tree must stay with the k-th line.
        targets = read_plain_lines(target_path)
        count = 0
        for count, tree in enumerate(read_conllu(source_path), start=1):
            line = next(targets, None)
            if line is None:
                raise InputError(target_path, None, f"has {count - 1} lines, but {source_path} "
                                 f"has more sentences; the k-th tree translates the k-th line",
                                 reason="line count mismatch")
            number, text = line
            tokens = self.tokenize_target(text)
            if not tokens:
                raise InputError(target_path, number, "empty target sentence",
                                 reason="empty sentence")
            yield tree, tokens
        if next(targets, None) is not None:
            raise InputError(target_path, count + 1, f"{source_path} has only {count} sentences; "
                             f"the k-th tree translates the k-th line",
                             reason="line count mismatch")

    def tokenize_target(self, text: str) -> list[str]:
        if self.target_format == "tokens":
            return split_tokens(text)
        return target_tokenizer(self.target_language)(text)

    def detokenize_target(self, tokens) -> str:
        """Undoes the target tokenisation (raw targets), or joins tokens by spaces."""
        if self.target_format == "tokens":
            return " ".join(tokens)
        return spacy_detokenizer(self.target_language)(tokens)
