"""Decoding a list of source sentences with a trained model, in batches.

Sentences are encoded with the problem's vocabularies, sorted by length
(longest first, so that a batch holds sentences of similar length and an
out-of-memory error shows at once), decoded in batches of
`batch_size` sentences and returned in their original order. Unusable
sentences keep their place with a None result. Models with a parse head
also return the source heads read from it (`parse_heads`): one head per
source *word*, also on subword problems (read through `src_word_position`),
and for SISA's bi-affine parent head (`"sisa_logits"`, no `<ROOT>`) too.
"""

import dataclasses
import time
from typing import Optional, Sequence

import numpy as np
from absl import logging

from syntax_t2t.data.derived_features import decoding_derived_features
from syntax_t2t.data.schema import CONSTITUENT_KEYS, CONSTITUENT_LENGTH_FACTOR
from syntax_t2t.decoding.fast_decode import (LENGTH_MULTIPLE, make_decode_function,
                                             make_forced_score_function)
from syntax_t2t.decoding.inputs import SourceSentence
from syntax_t2t.decoding.parse_heads import PARSE_DECODERS, decode_word_heads

# Padding value of each batch feature (docs/design.md): heads -1, ids 0.
_PAD_VALUES = {"src_heads": -1, "tgt_heads": -1}
WORD_POSITION = "src_word_position"
#: The head-logits key whose scores are `<ROOT>`-prefixed (docs/design.md);
#: other keys (SISA's "sisa_logits") score the tokens alone.
ROOT_PREFIXED_KEY = "parse_logits"
_PROGRESS_EVERY_SECONDS = 30.0


class MissingFeaturesError(ValueError):
    """The model needs source features (trees) that the input does not provide."""


@dataclasses.dataclass(frozen=True)
class Translation:
    """The decoder's result for one sentence.

    Attributes:
        tokens: the best hypothesis.
        beams: every hypothesis with its score, best first (one when the
            beam size is 1).
        heads: the source word heads from the parse head (1-based, 0 =
            ROOT), or None for models without one.
    """

    tokens: tuple[str, ...]
    beams: tuple[tuple[tuple[str, ...], float], ...]
    heads: Optional[np.ndarray] = None


@dataclasses.dataclass(frozen=True)
class ForcedScore:
    """The log-probability of a given translation (natural log).

    Attributes:
        total: log p(y | x), the sum over its tokens and `<EOS>`.
        tokens: how many target ids were scored (`<EOS>` and subwords counted).
    """

    total: float
    tokens: int

    @property
    def per_token(self) -> float:
        return self.total / self.tokens


def pad_batch(examples: Sequence[dict], keys: Sequence[str], length_multiple: int = 1) -> dict:
    """Stacks encoded examples into int32 [B, S] arrays, padded per `docs/design.md`.

    Args:
        examples: feature dicts of int lists.
        keys: the features to stack.
        length_multiple: round S up to a multiple of this (fewer distinct
            shapes for XLA).

    Returns:
        `{key: np.int32 [B, S]}`; every key shares S, that of `inputs`, but
        the per-constituent `src_const_*`, which have twice that length.
    """
    length = max(len(example["inputs"]) for example in examples)
    length = -(-length // length_multiple) * length_multiple
    batch = {}
    for key in keys:
        width = length * (CONSTITUENT_LENGTH_FACTOR if key in CONSTITUENT_KEYS else 1)
        array = np.full([len(examples), width], _PAD_VALUES.get(key, 0), np.int32)
        for row, example in enumerate(examples):
            values = example[key]
            array[row, :len(values)] = values
        batch[key] = array
    return batch


class Decoder:
    """Translates (and, for parse models, parses) source sentences.

    Args:
        model: a built model with restored weights (see `fast_decode`).
        problem: the problem, with vocabularies loaded.
        hparams: decoding settings from `decode_hparams`.
        parse_decoder: `"argmax"` or `"mst"`, for models with a parse head.
        jit_compile: compile the search with XLA (under JAX it always is).
        length_model: a `syntax_t2t.decoding.length_model.LengthModel` to
            score hypotheses with (`length_model=true`), or None.
    """

    def __init__(self, model, problem, hparams, parse_decoder: str = "argmax", jit_compile: bool = False,
                 length_model=None):
        if parse_decoder not in PARSE_DECODERS:
            raise ValueError(f"unknown parse decoder {parse_decoder!r}; choose one of "
                             f"{', '.join(PARSE_DECODERS)}")
        self.model = model
        self.problem = problem
        self.hparams = hparams
        self.parse_decoder = parse_decoder
        self.head_key = model.head_logits_key
        self.feature_keys = sorted(model.decode_features)
        # Features the model derives on the host with NumPy (data/derived_features.py),
        # added to every padded batch: the model never computes them itself.
        self._derived = decoding_derived_features(model)
        derived_keys = list(self._derived.keys) if self._derived is not None else []
        self._batch_keys = self.feature_keys + derived_keys
        self._decode = make_decode_function(model, self._batch_keys, hparams.beam_size,
                                            hparams.alpha, hparams.extra_length, jit_compile=jit_compile,
                                            length_model=length_model,
                                            eos_candidates=hparams.eos_candidates,
                                            batch_size=hparams.batch_size)
        # A program per padded shape (XLA, JAX): few lengths, so few programs.
        self.length_multiple = LENGTH_MULTIPLE if self._decode.per_shape else 1
        self._forced_score = None  # built on the first `score`

    def check_features(self, sentences: Sequence[SourceSentence], input_name: str = "the input") -> None:
        """Raises `MissingFeaturesError` when the model needs trees the input lacks."""
        needs_trees = sorted(set(self.feature_keys) - {"inputs"})
        if not needs_trees:
            return
        model_name = type(self.model).__name__
        if not self.problem.has_source_trees:
            raise MissingFeaturesError(
                f"model {model_name} needs source trees ({', '.join(needs_trees)}) but problem "
                f"{self.problem.name} has none")
        for sentence in sentences:
            if sentence.usable and not sentence.has_tree:
                raise MissingFeaturesError(
                    f"model {model_name} needs source trees ({', '.join(needs_trees)}) to decode, but "
                    f"{input_name} is plain text (first at {sentence.location}); give CoNLL-U or CzEng "
                    f"export lines instead")

    def translate(self, sentences: Sequence[SourceSentence]) -> list[Optional[Translation]]:
        """Decodes every usable sentence; unusable ones get None.

        Raises:
            MissingFeaturesError: see `check_features`.
        """
        encoded = self._encoded(sentences)
        results: list[Optional[Translation]] = [None] * len(sentences)
        for indices, batch in self._batches(encoded):
            outputs = {key: np.asarray(value) for key, value in self._decode(batch).items()}
            for row, index in enumerate(indices):
                results[index] = self._translation(outputs, row, self._word_index(
                    encoded[index], len(sentences[index].tokens)))
        return results

    def score(self, sentences: Sequence[SourceSentence],
              targets: Sequence[Optional[Sequence[str]]]) -> list[Optional[ForcedScore]]:
        """The log-probability of each given translation under the model (forced decoding).

        Args:
            sentences: the sources.
            targets: one token sequence per source, or None to skip it.

        Returns:
            One `ForcedScore` per sentence; None where the sentence is
            unusable or its target is None.

        Raises:
            MissingFeaturesError: see `check_features`.
        """
        if self._forced_score is None:
            self._forced_score = make_forced_score_function(self.model, self._batch_keys,
                                                            batch_size=self.hparams.batch_size)
        encoded = self._encoded([sentence if target is not None else SourceSentence(
            None, sentence.location, "no target to score") for sentence, target in
            zip(sentences, targets)])
        for index in encoded:
            encoded[index]["targets"] = self.problem.encode_target(targets[index])
        results: list[Optional[ForcedScore]] = [None] * len(sentences)
        for indices, batch in self._batches(encoded):
            target_ids = pad_batch([{"inputs": encoded[i]["targets"]} for i in indices],
                                   ["inputs"])["inputs"]
            log_probs = np.asarray(self._forced_score(batch, target_ids))
            for row, index in enumerate(indices):
                count = len(encoded[index]["targets"])
                results[index] = ForcedScore(float(log_probs[row, :count].sum()), count)
        return results

    def _encoded(self, sentences: Sequence[SourceSentence]) -> dict[int, dict]:
        """`{index: features}` of the usable sentences, checked for what the model needs."""
        self.check_features(sentences)
        encoded = {index: self.problem.encode_source(sentence.source)
                   for index, sentence in enumerate(sentences) if sentence.usable}
        for index, features in encoded.items():
            missing = [key for key in self.feature_keys if key not in features]
            if missing:
                hint = (" (bracketed trees come from a '# constituency = (...)' comment of the "
                        "CoNLL-U sentence)" if set(missing) & set(CONSTITUENT_KEYS) else "")
                raise MissingFeaturesError(
                    f"model {type(self.model).__name__} needs {', '.join(missing)}, which the "
                    f"sentence at {sentences[index].location} lacks{hint}")
        return encoded

    def _batches(self, encoded: dict[int, dict]):
        """Yields `(indices, batch)`: the sentences longest first, `batch_size` at a time."""
        order = sorted(encoded, key=lambda index: (-len(encoded[index]["inputs"]), index))
        batch_size = self.hparams.batch_size
        started = last_report = time.monotonic()
        for start in range(0, len(order), batch_size):
            indices = order[start:start + batch_size]
            batch = pad_batch([encoded[i] for i in indices], self.feature_keys, self.length_multiple)
            if self._derived is not None:
                batch.update(self._derived.compute(batch))
            yield indices, batch
            now = time.monotonic()
            if now - last_report > _PROGRESS_EVERY_SECONDS:
                done = min(start + batch_size, len(order))
                logging.info("decoded %d of %d sentences (%.1f sentences/s)", done, len(order),
                             done / (now - started))
                last_report = now

    @staticmethod
    def _word_index(example: dict, num_words: int) -> np.ndarray:
        """The 0-based word of each source token: from `src_word_position` on subword problems."""
        if WORD_POSITION in example:
            return np.asarray(example[WORD_POSITION], np.int64) - 1
        return np.arange(num_words)

    def _translation(self, outputs: dict, row: int, word_index: np.ndarray) -> Translation:
        beams = tuple(
            (tuple(self.problem.decode_targets(outputs["ids"][row, k, :outputs["lengths"][row, k]])),
             float(outputs["scores"][row, k]))
            for k in range(outputs["ids"].shape[1]) if np.isfinite(outputs["scores"][row, k]))
        heads = None
        if self.head_key in outputs:
            heads = decode_word_heads(outputs[self.head_key][row], word_index, self.parse_decoder,
                                      root_prefixed=self.head_key == ROOT_PREFIXED_KEY)
        return Translation(tokens=beams[0][0], beams=beams, heads=heads)
