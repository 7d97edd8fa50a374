"""The vocabulary half of `Problem`: which vocabularies a problem's data has, how they are
built from counted training samples, and where they are saved and loaded.

`ProblemVocabularies` is a base class of `syntax_t2t.problem.Problem` and
reads the problem's options from it (`has_source_trees`, `source_lemmas`,
`subwords`, `subword_model`, the sizes) and its tree hooks
(`_check_source`, `model_tree`, `_bracketed_tree`); it keeps the loaded
vocabularies of one data directory.
"""

import collections
import os
from typing import Optional

from absl import logging

from syntax_t2t.data import subword_kinds
from syntax_t2t.data.bracketed import CONSTITUENCY_COMMENT
from syntax_t2t.data.schema import (CONSTITUENCY_VOCABULARY, INPUTS, SAMPLE_COUNTS,
                                    TAG_VOCABULARIES, TARGETS, DataNotGeneratedError,
                                    RawDataError, sentence_tokens)
from syntax_t2t.data.tree import UNKNOWN
from syntax_t2t.data.vocab import Vocabulary
from syntax_t2t.datagen import records as datagen_records


class ProblemVocabularies:
    """Vocabularies of a problem's data (see the module docstring)."""

    _vocabularies: Optional[dict[str, Vocabulary]] = None
    _vocabulary_dir: Optional[str] = None

    @property
    def vocabulary_names(self) -> tuple[str, ...]:
        """`inputs`, `targets` and, with source trees, `deprel`, `upos`, `xpos` (and `lemma`)."""
        if not self.has_source_trees:
            return (INPUTS, TARGETS)
        return (INPUTS, TARGETS) + tuple(TAG_VOCABULARIES.values()) + (
            ("lemma",) if self.source_lemmas else ())

    def _recorded_optional_vocabularies(self, data_dir: str) -> tuple[str, ...]:
        """The optional vocabularies (`const`) of the data in `data_dir`.

        Those its datagen record lists, or without a record (vocabularies
        copied for decoding) those whose file is there.
        """
        record = datagen_records.read_json(self.completion_record_path(data_dir))
        if record is not None:
            names = record.get("vocabularies", {})
            return tuple(name for name in (CONSTITUENCY_VOCABULARY,) if name in names)
        return tuple(name for name in (CONSTITUENCY_VOCABULARY,)
                     if os.path.isfile(self.vocabulary_path(data_dir, name)))

    def vocabulary_path(self, data_dir: str, vocabulary_name: str) -> str:
        return os.path.join(data_dir, f"{self.name}.vocab.{vocabulary_name}.txt")

    def vocabulary_paths(self, data_dir: str) -> dict[str, str]:
        """`{name: path}` of every vocabulary the data in `data_dir` is encoded with:
        words or subwords, tags and labels, and the optional ones its record lists."""
        names = self.vocabulary_names + self._recorded_optional_vocabularies(data_dir)
        return {name: self.vocabulary_path(data_dir, name) for name in names}

    def load_vocabularies(self, data_dir: str) -> dict[str, Vocabulary]:
        """Loads (once per `data_dir`) and returns the vocabularies by name.

        Only the vocabulary files are needed (decoding does not need the
        shards).

        Raises:
            DataNotGeneratedError: a vocabulary file is missing.
        """
        data_dir = os.path.abspath(data_dir)
        if self._vocabularies is None or self._vocabulary_dir != data_dir:
            paths = self.vocabulary_paths(data_dir)
            missing = [path for path in paths.values() if not os.path.isfile(path)]
            if missing:
                raise DataNotGeneratedError(
                    f"missing vocabulary file(s) {', '.join(missing)} of problem {self.name}; "
                    f"generate them with bin/datagen --problem={self.name} --data_dir={data_dir} "
                    f"--tmp_dir=<raw data dir>")
            self._vocabularies = {name: self._vocabulary_class(name).load(path)
                                  for name, path in paths.items()}
            self._vocabulary_dir = data_dir
        return self._vocabularies

    def _vocabulary_class(self, name: str):
        if self.subwords and name in (INPUTS, TARGETS):
            return subword_kinds.vocabulary_class(self.subword_model)
        return Vocabulary

    def vocab_sizes(self, data_dir: str) -> dict[str, int]:
        """Size of each vocabulary (`inputs`, `targets`, `deprel`, `upos`, `xpos`, `const`, ...)."""
        return {name: len(vocab) for name, vocab in self.load_vocabularies(data_dir).items()}

    def build_vocabularies(self, samples) -> dict[str, Vocabulary]:
        """Counts the tokens and tags of training samples into vocabularies.

        `vocabularies_from_counts(vocabulary_counts(samples))`; datagen counts
        chunks of samples in its workers and adds up their counts.

        Raises:
            RawDataError: some sources carry a bracketed tree and others not.
        """
        return self.vocabularies_from_counts(self.vocabulary_counts(samples))

    def vocabulary_counts(self, samples) -> dict[str, collections.Counter]:
        """The counts of tokens and tags that `vocabularies_from_counts` builds from.

        One `Counter` per vocabulary name (and `const`, the constituent
        labels of bracketed trees), plus `SAMPLE_COUNTS`: how many samples,
        and how many of them with a bracketed tree. Counts of several
        chunks of samples add up (`Counter.update`) to those of all.
        """
        counts = {name: collections.Counter()
                  for name in self.vocabulary_names + (CONSTITUENCY_VOCABULARY, SAMPLE_COUNTS)}
        for source, target in samples:
            tree = self._check_source(source)
            if tree is not None:
                tree = self.model_tree(tree)
            counts[INPUTS].update(sentence_tokens(source))
            counts[TARGETS].update(sentence_tokens(target))
            counts[SAMPLE_COUNTS]["samples"] += 1
            if self.has_source_trees:
                counts["deprel"].update(tree.labels)
                counts["upos"].update(tree.upos)
                counts["xpos"].update(tree.xpos)
                if self.source_lemmas:
                    counts["lemma"].update(tree.lemmas)
                bracketed = self._bracketed_tree(tree)
                if bracketed is not None:
                    counts[SAMPLE_COUNTS]["bracketed"] += 1
                    counts[CONSTITUENCY_VOCABULARY].update(bracketed.labels)
        return counts

    def vocabularies_from_counts(self, counts: dict[str, collections.Counter]) -> dict[str, Vocabulary]:
        """The vocabularies of `vocabulary_counts`' counts.

        Also a `const` vocabulary of constituent labels when every sample's
        source carries a bracketed tree (module docstring).

        Raises:
            RawDataError: some sources carry a bracketed tree and others not.
        """
        num_samples = counts[SAMPLE_COUNTS]["samples"]
        num_bracketed = counts[SAMPLE_COUNTS]["bracketed"]
        if self.has_source_trees:
            self._warn_untagged(counts)
        if 0 < num_bracketed < num_samples:
            raise RawDataError(
                f"{self.name}: {num_bracketed} of {num_samples} training sources carry a bracketed "
                f"tree ('# {CONSTITUENCY_COMMENT} = ...' or {self.source_trees_pattern}); give one "
                f"for every sentence or none")
        sizes = {INPUTS: self.vocab_size, TARGETS: self.vocab_size, "lemma": self.vocab_size}
        vocabularies = {
            name: Vocabulary.build(counts[name], max_size=sizes.get(name, self.tag_vocab_size))
            for name in self.vocabulary_names if not (self.subwords and name in (INPUTS, TARGETS))}
        if self.subwords:
            vocabularies[INPUTS], vocabularies[TARGETS] = subword_kinds.build_vocabularies(
                self.subword_model, counts[INPUTS], counts[TARGETS], self.subword_vocab_size,
                joint=self.subwords == "joint")
        result = {name: vocabularies[name] for name in self.vocabulary_names}
        if num_bracketed:
            result[CONSTITUENCY_VOCABULARY] = Vocabulary.build(
                counts[CONSTITUENCY_VOCABULARY], max_size=self.tag_vocab_size)
        return result

    def _warn_untagged(self, counts: dict[str, collections.Counter]) -> None:
        """Logs how many training words carry no UPOS or XPOS (a parser without a tagger)."""
        for name, remedy in (("xpos", "spec_pos reads UPOS with --hparams=pos=upos"),
                             ("upos", "spec_pos has no tags to read")):
            words = sum(counts[name].values())
            untagged = counts[name][UNKNOWN]
            if untagged:
                logging.warning("%s: %d of %d training words have no %s (%s); the parser predicts "
                                "none for them (a pipeline without a tagger, such as "
                                "cs_core_news_sm, leaves every XPOS empty); %s", self.name,
                                untagged, words, name.upper(), UNKNOWN, remedy)

    def _loaded_vocabularies(self) -> dict[str, Vocabulary]:
        if self._vocabularies is None:
            raise RuntimeError(
                f"{self.name}: vocabularies are not loaded; call load_vocabularies(data_dir) "
                f"or generate_data first")
        return self._vocabularies
