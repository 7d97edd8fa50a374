"""The `Problem` base class: a translation data set in the Tensor2Tensor sense.

Subclasses say how to read their raw data (`generate_samples`); the base
class builds the vocabularies (its base `ProblemVocabularies`,
`problem_vocabularies.py`), encodes the samples into the feature dict of
`docs/design.md`, writes and reads the TFRecord shards, and serves decoding.
docs/problems.md is the guide: writing a problem, options, subwords, lemmas,
target trees and bracketed source trees, and what the data holds for each.
"""

import os
from typing import TYPE_CHECKING, Iterator, Optional, Sequence, Union

from syntax_t2t import registry
from syntax_t2t.data import batching, subword_kinds, subword_syntax
from syntax_t2t.data.bracketed import (CONSTITUENCY_COMMENT, constituent_features, sentence_tree,
                                      split_tree_file, with_bracketed_trees)
# The schema's names are part of this module's interface: problems import them from here.
from syntax_t2t.data.schema import (  # noqa: F401
    CONSTITUENCY_FEATURES, CONSTITUENCY_VOCABULARY, DEV, INPUTS, LEMMA_FEATURE, SAMPLE_COUNTS,
    SOURCE_TREE_FEATURES, SPLITS, TAG_VOCABULARIES, TARGET_TREE_FEATURES, TARGETS, TEST, TRAIN,
    WORD_POSITION_FEATURE, DataNotGeneratedError, RawDataError, sentence_tokens)
from syntax_t2t.data import tree_controls
from syntax_t2t.data.tree import DependencyTree
from syntax_t2t.data.subwords import MIN_VOCAB_SIZE
from syntax_t2t.data.vocab import EOS_ID, RESERVED_TOKENS
from syntax_t2t.datagen import records as datagen_records
from syntax_t2t.errors import SkipCounter
from syntax_t2t.hparams import HParamsError
from syntax_t2t.problem_vocabularies import ProblemVocabularies

if TYPE_CHECKING:
    from syntax_t2t.data.pipeline import PipelineCounters

SUBWORD_MODES = ("joint", "separate")



class TreeTokens(list):
    """A sentence's tokens (a plain list to everything else) carrying its `tree`.

    Problems with target trees yield their targets so: code that wants
    tokens sees the list, `Problem.encode` also reads the heads.
    """

    def __init__(self, tree: DependencyTree):
        super().__init__(tree.tokens)
        self.tree = tree


Source = Union[DependencyTree, Sequence[str]]
Target = Union[DependencyTree, TreeTokens, Sequence[str]]


class Problem(ProblemVocabularies):
    """Base class of registered problems (see the module docstring).

    Args:
        **options: overrides of the class attributes named in `option_names`.

    Raises:
        TypeError: for a keyword that is not an option.
    """

    #: Source-side sentences carry dependency trees (`src_*` features).
    has_source_trees = True
    #: Targets carry dependency trees (the `tgt_heads` feature).
    has_target_trees = False
    #: Files of bracketed source trees in `tmp_dir`, one per split (module docstring).
    source_trees_pattern = "{problem}.{split}.trees"

    #: Largest word vocabulary per language, the 4 reserved ids included
    #: (thesis Section 5.2: 50,000).
    vocab_size = 50_000
    #: Largest tag and label vocabularies; None keeps every tag seen in training.
    tag_vocab_size: Optional[int] = None
    #: TFRecord shards per split.
    num_shards = {TRAIN: 10, DEV: 1, TEST: 1}
    #: Seeds problems that sample their data; others ignore it.
    random_seed = 1
    #: None (or "none") for word vocabularies; "joint" or "separate" subword
    #: vocabularies (see the module docstring).
    subwords: Optional[str] = None
    #: Largest subword vocabulary per side, the reserved ids included.
    subword_vocab_size = 16_000
    #: The subword kind: wordpiece, sentencepiece_unigram, sentencepiece_bpe or
    #: sentencepiece:PATH (`syntax_t2t.data.subword_kinds`).
    subword_model = subword_kinds.WORDPIECE
    #: Also store the lemma ids of source words (`src_lemma`).
    source_lemmas = False
    #: Where the source trees come from: the parser's (or treebank's) trees, or
    #: a control that carries no syntax (`syntax_t2t.data.tree_controls`).
    tree_source = tree_controls.PARSER
    #: Mixed into each sentence's seed of `tree_source=random`.
    tree_seed = 1

    #: Processes of the current datagen run (`generate_data`'s `num_workers`);
    #: problems that parse raw text give their parser as many.
    datagen_workers = 1
    #: The `--data_dir` of the current datagen run (`generate_data`), where
    #: problems keep caches of their own making (parses), not in the
    #: user's raw-data directory.
    datagen_data_dir: Optional[str] = None

    option_names = ("vocab_size", "tag_vocab_size", "num_shards", "random_seed", "subwords",
                    "subword_vocab_size", "subword_model", "source_lemmas", "tree_source",
                    "tree_seed")

    def __init__(self, **options):
        for key, value in options.items():
            if key not in self.option_names:
                raise TypeError(
                    f"{self.name} has no option {key!r}; its options are "
                    f"{', '.join(sorted(self.option_names))}")
            setattr(self, key, value)
        if isinstance(self.subwords, str) and self.subwords.lower() == "none":
            # How the command line says None for a problem whose default is subwords.
            self.subwords = None
        if self.subwords is not None and self.subwords not in SUBWORD_MODES:
            raise ValueError(f"{self.name}: option subwords={self.subwords!r}; expected None, "
                             f"{' or '.join(repr(mode) for mode in SUBWORD_MODES)}")
        subword_kinds.check_subword_model(self.subword_model)
        tree_controls.check_tree_source(self.tree_source)
        if self.tree_source != tree_controls.PARSER and not self.has_source_trees:
            raise ValueError(f"{self.name}: option tree_source={self.tree_source!r} replaces "
                             f"source trees, and this problem has none")
        if self.subwords and self.subword_vocab_size < MIN_VOCAB_SIZE:
            raise HParamsError(f"{self.name}: option subword_vocab_size={self.subword_vocab_size} "
                               f"is below the minimum {MIN_VOCAB_SIZE}")
        for name in ("vocab_size", "tag_vocab_size"):
            size = getattr(self, name)
            if size is not None and size <= len(RESERVED_TOKENS):
                # An option error is the user's to fix (one line), not a traceback from datagen.
                raise HParamsError(f"{self.name}: option {name}={size} leaves no room for a word: "
                                   f"it must be above the {len(RESERVED_TOKENS)} reserved tokens "
                                   f"({', '.join(RESERVED_TOKENS)})")
        self._vocabularies = None
        self._vocabulary_dir = None

    # ------------------------------------------------------------------
    # What subclasses provide.

    def generate_samples(self, tmp_dir: str, split: str,
                         skip: Optional[SkipCounter]) -> Iterator[tuple[Source, Target]]:
        """Yields the (source, target) pairs of one split.

        Args:
            tmp_dir: directory of raw data (downloaded or provided by the user).
            split: `train`, `dev` or `test`.
            skip: under `--skip_bad_examples`, the counter bad examples are
                recorded in; None means raise `InputError` at the first one.

        Yields:
            `(source, target)`: the source is a `DependencyTree` (or a token
            list when `has_source_trees` is False); the target is a token list
            or a `DependencyTree` (only its tokens are used). Must give the
            same samples every time it is called with the same arguments.
        """
        raise NotImplementedError(f"{type(self).__name__} must implement generate_samples")

    # ------------------------------------------------------------------
    # Names and files.

    @property
    def name(self) -> str:
        """The registered name: snake_case of the class name (override when
        registering under another name); prefixes every output file."""
        return registry.snake_case(type(self).__name__)

    def options(self) -> dict:
        """The current value of every option."""
        return {key: getattr(self, key) for key in self.option_names}

    @property
    def feature_keys(self) -> tuple[str, ...]:
        """Keys of an encoded example, as in `docs/design.md`."""
        target = TARGET_TREE_FEATURES if self.has_target_trees else ()
        if not self.has_source_trees:
            return (INPUTS, TARGETS) + target
        return ((INPUTS, TARGETS) + SOURCE_TREE_FEATURES
                + ((LEMMA_FEATURE,) if self.source_lemmas else ())
                + ((WORD_POSITION_FEATURE,) if self.subwords else ()) + target)

    def data_feature_keys(self, data_dir: str) -> tuple[str, ...]:
        """The keys of the examples generated in `data_dir` (its completion record).

        `feature_keys` plus the bracketed-tree keys where the data has them;
        data generated before records listed their keys holds `feature_keys`
        without `tgt_heads`.

        Raises:
            DataNotGeneratedError: the data was not (completely) generated.
        """
        record = self._require_data(data_dir)
        if "feature_keys" in record:
            return tuple(record["feature_keys"])
        return tuple(key for key in self.feature_keys if key not in TARGET_TREE_FEATURES)

    def shard_path(self, data_dir: str, split: str, index: int, count: int) -> str:
        return os.path.join(data_dir, f"{self.name}-{split}-{index:05d}-of-{count:05d}")

    def completion_record_path(self, data_dir: str) -> str:
        return os.path.join(data_dir, f"{self.name}.datagen.json")

    def completion_record(self, data_dir: str) -> Optional[dict]:
        """The record of the last complete datagen run, or None.

        A record whose files are not all present counts as absent.
        """
        record, _ = datagen_records.read_completion_record(self.completion_record_path(data_dir))
        return record

    def filepaths(self, data_dir: str, split: str) -> list[str]:
        """The TFRecord shards of `split`.

        Raises:
            DataNotGeneratedError: the data was not (completely) generated.
        """
        record = self._require_data(data_dir)
        return [os.path.join(data_dir, name) for name in record["shards"][split]]

    def _require_data(self, data_dir: str) -> dict:
        record, problem = datagen_records.read_completion_record(
            self.completion_record_path(data_dir))
        if record is None:
            raise DataNotGeneratedError(
                f"no complete data of problem {self.name} in {data_dir} ({problem}); generate it with "
                f"bin/datagen --problem={self.name} --data_dir={data_dir} --tmp_dir=<raw data dir>")
        return record

    # ------------------------------------------------------------------
    # Encoding.

    def _check_source(self, source: Source) -> Optional[DependencyTree]:
        if self.has_source_trees:
            if not isinstance(source, DependencyTree):
                raise TypeError(f"{self.name} has source trees, but a sample's source is "
                                f"{type(source).__name__}")
            return source
        return None

    def model_tree(self, tree: DependencyTree) -> DependencyTree:
        """The tree the models see of a source tree: itself, or the `tree_source` control.

        The one place where control trees replace the parser's, on the way
        into the vocabularies and every encoded example (datagen and decoding
        alike), so that every model reads them as it reads parser trees. A
        control tree is a function of the words alone, so replacing a control
        tree again gives the same tree.
        """
        return tree_controls.control_tree(tree, self.tree_source, self.tree_seed)

    def _bracketed_tree(self, tree: Optional[DependencyTree]):
        """The `ConstituencyTree` of a source's `# constituency` comment, or None."""
        if tree is None or CONSTITUENCY_COMMENT not in tree.comments:
            return None
        text = " ".join(tree.tokens[:6]) + (" ..." if len(tree) > 6 else "")
        return sentence_tree(tree.comments[CONSTITUENCY_COMMENT], tree.tokens,
                             f"{self.name}: the bracketed tree of {text!r}", 1)

    def encode_source(self, source: Source) -> dict[str, list[int]]:
        """The source-side features of one sentence (also used when decoding).

        Args:
            source: a `DependencyTree`, or a token list (then only `inputs`
                and word positions are returned; a model that needs trees
                cannot use it).

        Returns:
            `inputs` (ids then `<EOS>`) and, for a tree, `src_heads`,
            `src_deprel`, `src_upos`, `src_xpos` (and `src_lemma`), one entry
            per word; with subwords one entry per subword, and
            `src_word_position` (see the module docstring; also for a
            token list when the problem has source trees). Where the data
            has bracketed trees (a `const` vocabulary) and the tree carries
            one, also `src_const_start`, `src_const_end`, `src_const_label`,
            one entry per constituent.
        """
        vocabularies = self._loaded_vocabularies()
        if isinstance(source, DependencyTree) and self.has_source_trees:
            source = self.model_tree(source)
        if self.subwords:
            ids, word_index = vocabularies[INPUTS].encode_with_word_index(sentence_tokens(source))
            features = {INPUTS: ids.tolist() + [EOS_ID]}
        else:
            features = {INPUTS: vocabularies[INPUTS].encode(sentence_tokens(source)) + [EOS_ID]}
        if isinstance(source, DependencyTree) and self.has_source_trees:
            features["src_heads"] = [int(head) for head in source.heads]
            features["src_deprel"] = vocabularies["deprel"].encode(source.labels)
            features["src_upos"] = vocabularies["upos"].encode(source.upos)
            features["src_xpos"] = vocabularies["xpos"].encode(source.xpos)
            if self.source_lemmas:
                features[LEMMA_FEATURE] = vocabularies["lemma"].encode(source.lemmas)
            bracketed = (self._bracketed_tree(source)
                         if CONSTITUENCY_VOCABULARY in vocabularies else None)
            if bracketed is not None:
                starts, ends = constituent_features(bracketed)
                features["src_const_start"] = starts.tolist()
                features["src_const_end"] = ends.tolist()
                features["src_const_label"] = vocabularies[CONSTITUENCY_VOCABULARY].encode(
                    bracketed.labels)
            if self.subwords:
                features = subword_syntax.projected_source_features(features, word_index)
        elif self.subwords and self.has_source_trees:
            # Plain-text sources too: decoding reads parses back onto words.
            features[WORD_POSITION_FEATURE] = (word_index + 1).tolist()
        return features

    def encode(self, sample: tuple[Source, Target]) -> dict[str, list[int]]:
        """The feature dict of one (source, target) pair (`docs/design.md`)."""
        source, target = sample
        self._check_source(source)
        features = self.encode_source(source)
        vocabulary = self._loaded_vocabularies()[TARGETS]
        if not self.has_target_trees:
            features[TARGETS] = self.encode_target(sentence_tokens(target))
            return features
        tree = target if isinstance(target, DependencyTree) else getattr(target, "tree", None)
        if tree is None:
            raise TypeError(f"{self.name} has target trees, but a sample's target is "
                            f"{type(target).__name__}")
        heads = [int(head) for head in tree.heads]
        if self.subwords:
            ids, word_index = vocabulary.encode_with_word_index(tree.tokens)
            features[TARGETS] = ids.tolist() + [EOS_ID]
            heads = subword_syntax.first_subword_heads(word_index, heads).tolist()
        else:
            features[TARGETS] = vocabulary.encode(tree.tokens) + [EOS_ID]
        features["tgt_heads"] = heads
        return features

    def encode_target(self, tokens) -> list[int]:
        """Target ids of a token sequence, then `<EOS>` (as training sees them)."""
        return self._loaded_vocabularies()[TARGETS].encode(list(tokens)) + [EOS_ID]

    def decode_targets(self, ids) -> list[str]:
        """Target tokens of `ids`, up to the first `<EOS>`."""
        return self._loaded_vocabularies()[TARGETS].decode(ids)

    def detokenize_target(self, tokens) -> str:
        """One output sentence as text: the tokens joined by spaces here.

        Problems that tokenised raw target text themselves (Multi30k) undo
        that tokenisation, so that BLEU can be scored against the raw
        references (`bin/decode --detokenize`).
        """
        return " ".join(tokens)

    def decode_inputs(self, ids) -> list[str]:
        """Source tokens of `ids`, up to the first `<EOS>`."""
        return self._loaded_vocabularies()[INPUTS].decode(ids)

    # ------------------------------------------------------------------
    # Data generation.

    def generate_data(self, data_dir: str, tmp_dir: str, max_examples: Optional[int] = None,
                      overwrite: bool = False, skip: Optional[SkipCounter] = None,
                      num_workers: int = 1, task=None, only_vocab: bool = False,
                      shard_pass=None) -> dict:
        """Writes vocabularies and TFRecord shards of every split to `data_dir`.

        Raw data comes from `tmp_dir` (passed to `generate_samples`); at most
        `max_examples` per split are kept; complete data already there is
        kept unless `overwrite`, and refused when it was generated with other
        options (`records.DataOptionsError`); `skip` counts the bad examples skipped under
        `--skip_bad_examples`. `num_workers` processes make and encode the
        samples (and parse, for problems that parse raw text) without
        changing the output; `task` (a `datagen_writer.DatagenTask`) writes
        only its shards, with the vocabularies an `only_vocab` run built;
        `shard_pass` replaces the writing of the shards (`bin/datagen_beam`'s
        Beam pipeline). See `syntax_t2t.datagen.writer`.

        Returns:
            The completion record: `counts` per split, file names, options,
            `complete` (False, with the task's record, while other tasks are
            still to finish), `kept_existing` (complete data kept) and
            `differs_from_request` (always False: such data is refused).

        Raises:
            InputError: bad raw data (unless `skip` is given).
            DataNotGeneratedError: a task found no matching vocabularies.
            DataOptionsError: complete data of other options, without `overwrite`.
        """
        # TensorFlow writes the shards: imported here, so that decoding needs no TensorFlow.
        from syntax_t2t.datagen import writer as datagen_writer
        self.datagen_workers = num_workers
        self.datagen_data_dir = data_dir
        return datagen_writer.generate_data(
            self, data_dir, tmp_dir, max_examples=max_examples, overwrite=overwrite, skip=skip,
            num_workers=num_workers, task=task or datagen_writer.DatagenTask(),
            only_vocab=only_vocab, shard_pass=shard_pass)

    def check_raw_files(self, tmp_dir: str) -> None:
        """Raises for raw input datagen would miss later, before its long work starts.

        Datagen calls it before it counts (and parses) the training split, so
        that a missing dev file is not found after an hour of parsing. The
        default checks nothing: `generate_samples` finds each file itself.
        """

    def generate_records(self, tmp_dir: str, split: str,
                         skip: Optional[SkipCounter]) -> Iterator:
        """Cheap, picklable descriptions of the split's samples, in order.

        Datagen reads them in one process and lets its workers turn them into
        samples with `sample_of_record`, so a problem whose samples are costly
        to make (sampled, parsed) describes them here and makes them there.
        The default: the samples themselves.
        """
        return self.generate_samples(tmp_dir, split, skip)

    def sample_of_record(self, record) -> tuple[Source, Target]:
        """The sample a record of `generate_records` describes (default: the record)."""
        return record

    def unparsed_records(self, tmp_dir: str, split: str,
                         skip: Optional[SkipCounter]) -> Optional[Iterator[tuple[int, str, Target]]]:
        """The split's samples before their sources are parsed, or None (the default).

        Problems that parse raw source text (with `source_parser()`, cached
        by `syntax_t2t.parsing.parse_cache`) yield `(line number, raw source
        text, target)` in order: the sample is `(tree, target)`, the tree as
        `parse_cache.parse_numbered` gives it. `bin/datagen_beam` parses
        them in its workers (`syntax_t2t.datagen.beam_pipeline`).
        """
        return None

    def source_trees_path(self, tmp_dir: Optional[str], split: str) -> Optional[str]:
        """The split's file of bracketed source trees (plain or `.gz`), or None.

        Only when every split has one; a partial set is logged and ignored
        (C&H problems read the training file alone).
        """
        if not self.has_source_trees or not tmp_dir:
            return None
        return split_tree_file(tmp_dir, self.source_trees_pattern, self.name, SPLITS, split)

    def _with_source_trees(self, samples, path, skip):
        """`samples` whose sources carry the trees of `path` (`bracketed.with_bracketed_trees`)."""
        return with_bracketed_trees(samples, path, skip, f"{self.name} has sentences in this split")

    def raw_paths(self, data_dir: str, split: str) -> dict[str, str]:
        """Plain-text copies of a dev or test split, for decoding and scoring.

        `source` is CoNLL-U for problems with source trees (what `bin/decode`
        reads for models that need trees), tokenised text otherwise;
        `reference` is the tokenised target, one sentence per line.
        """
        suffix = "conllu" if self.has_source_trees else "txt"
        return {"source": os.path.join(data_dir, f"{self.name}-{split}.src.{suffix}"),
                "reference": os.path.join(data_dir, f"{self.name}-{split}.ref.txt")}

    # ------------------------------------------------------------------
    # Input pipeline.

    def dataset(self, mode: str, data_dir: str, hparams,
                counters: Optional["PipelineCounters"] = None,
                shuffle_buffer_size: int = batching.DEFAULT_SHUFFLE_BUFFER_SIZE,
                seed: Optional[int] = None, deterministic: bool = False):
        """Batches for `mode` (`train`, `eval` = dev split, `test`); see `pipeline.make_dataset`."""
        if mode not in batching.SPLIT_OF_MODE:
            raise ValueError(f"unknown mode {mode!r}; expected one of {', '.join(batching.MODES)}")
        # tf.data: imported here, so that the problem (and decoding) needs no TensorFlow.
        from syntax_t2t.data import pipeline
        return pipeline.make_dataset(
            self.filepaths(data_dir, batching.SPLIT_OF_MODE[mode]), self.data_feature_keys(data_dir),
            mode, hparams,
            counters=counters, shuffle_buffer_size=shuffle_buffer_size, seed=seed,
            deterministic=deterministic)
