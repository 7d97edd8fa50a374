"""S&H (Sennrich and Haddow 2016): linguistic input features as source factor embeddings.

Each source token is embedded as the concatenation of a word embedding and
one embedding per factor, whose widths add up to the model width:

    x_t = [E_word(w_t); E_1(f_1,t); ...; E_K(f_K,t)]

The factors (`sh_factors`, with widths `sh_factor_sizes`) are any of

    lemma        the word's lemma (problems with `source_lemmas`)
    upos, xpos   its part-of-speech tags
    deprel       its dependency label
    subword_tag  its position in its word: O (whole word), B, I, E (begin,
                 inside, end of a word split into subwords)

and a subword carries the factors of its word (the problems copy them).
The defaults are the Pascal paper's variant: a 10-dimensional
dependency-label embedding takes the place of the last 10 dimensions of the
token embedding. Sennrich and Haddow's own setting concatenates several
factors, e.g. `sh_factors=[lemma,upos,deprel,subword_tag]`,
`sh_factor_sizes=[115,10,10,5]` (widths in their proportions).

Every embedding is scaled like the token embedding (T2T: looked-up vectors
times the square root of their width) and the `<EOS>` position gets the
reserved `<EOS>` id in every factor. Subword tags need
`source_word_positions=true` on subword problems; on word-level problems
every token is O.
"""

from typing import Any, Mapping

from keras import ops

from syntax_t2t import registry
from syntax_t2t.hparams import HParams, HParamsError
from syntax_t2t.layers.embedding import TokenEmbedding
from syntax_t2t.models import word_positions
from syntax_t2t.models.contract import ROOT_ID, Tensor
from syntax_t2t.models.transformer import (EOS_ID, PAD_ID, Features, Transformer,
                                           fit_length)

#: Factor name -> (batch feature, vocabulary in `vocab_sizes`).
TAG_FACTORS = {
    "lemma": ("src_lemma", "lemma"),
    "upos": ("src_upos", "upos"),
    "xpos": ("src_xpos", "xpos"),
    "deprel": ("src_deprel", "deprel"),
}
SUBWORD_TAG = "subword_tag"
FACTORS = tuple(TAG_FACTORS) + (SUBWORD_TAG,)
# Subword tag ids after the reserved ids of docs/design.md.
WHOLE_WORD, BEGIN, INSIDE, END = 4, 5, 6, 7
SUBWORD_TAG_COUNT = 8


def subword_tags(words: Tensor) -> Tensor:
    """Sennrich and Haddow's subword tags from word positions.

    Args:
        words: int [B, S], the 1-based word of each token, 0 = none.

    Returns:
        int32 [B, S]: `WHOLE_WORD`, `BEGIN`, `INSIDE` or `END`; `PAD_ID` where
        there is no word.
    """
    words = ops.cast(words, "int32")
    previous = ops.pad(words[:, :-1], [[0, 0], [1, 0]])
    following = ops.pad(words[:, 1:], [[0, 0], [0, 1]])
    starts = ops.not_equal(words, previous)
    ends = ops.not_equal(words, following)
    tags = ops.where(starts, ops.where(ends, WHOLE_WORD, BEGIN), ops.where(ends, END, INSIDE))
    return ops.cast(ops.where(words > 0, tags, PAD_ID), "int32")


@registry.register_model("sennrich_haddow")
class SennrichHaddow(Transformer):
    """Transformer whose source embedding concatenates linguistic factor embeddings.

    The class attributes show the features of the default factors; an
    instance's are those of its hparams (`sh_factors`).
    """

    train_features = frozenset({"inputs", "targets", "src_deprel"})
    decode_features = frozenset({"inputs", "src_deprel"})

    def __init__(self, hparams: HParams, vocab_sizes: Mapping[str, int], **kwargs: Any):
        super().__init__(hparams, vocab_sizes, **kwargs)
        hp = self.hparams
        needed = {TAG_FACTORS[factor][0] for factor in hp.sh_factors if factor in TAG_FACTORS}
        if SUBWORD_TAG in hp.sh_factors and hp.source_word_positions:
            needed.add(word_positions.WORD_POSITION)
        self.train_features = frozenset({"inputs", "targets"} | needed)
        self.decode_features = frozenset({"inputs"} | needed)
        embeddings = []
        for factor, size in zip(hp.sh_factors, hp.sh_factor_sizes):
            vocab_size = (SUBWORD_TAG_COUNT if factor == SUBWORD_TAG
                          else self.vocab_size(TAG_FACTORS[factor][1]))
            embedding = TokenEmbedding(vocab_size, size, name=f"{factor}_embedding")
            embedding.build((None, None))
            embeddings.append(embedding)
        self.factor_embeddings = embeddings

    @property
    def reads_word_positions(self) -> bool:
        """Whether `source_word_positions` matters: the subword-tag factor reads it."""
        return SUBWORD_TAG in self.hparams.sh_factors

    def check_hparams(self) -> None:
        super().check_hparams()
        hp = self.hparams
        unknown = [factor for factor in hp.sh_factors if factor not in FACTORS]
        if unknown:
            raise HParamsError(f"sh_factors={hp.sh_factors}: unknown factor(s) {unknown}; "
                               f"choose from {', '.join(FACTORS)}")
        if len(set(hp.sh_factors)) != len(hp.sh_factors):
            raise HParamsError(f"sh_factors={hp.sh_factors} repeats a factor")
        if len(hp.sh_factor_sizes) != len(hp.sh_factors):
            raise HParamsError(f"sh_factor_sizes={hp.sh_factor_sizes} needs one width for each of "
                               f"sh_factors={hp.sh_factors}")
        if any(size < 1 for size in hp.sh_factor_sizes):
            raise HParamsError(f"sh_factor_sizes={hp.sh_factor_sizes} must be positive")
        if sum(hp.sh_factor_sizes) >= hp.hidden_size:
            raise HParamsError(f"sh_factor_sizes={hp.sh_factor_sizes} add up to "
                               f"{sum(hp.sh_factor_sizes)}, leaving no room for the word embedding "
                               f"in hidden_size={hp.hidden_size}")

    def source_embedding_size(self) -> int:
        return self.hparams.hidden_size - sum(self.hparams.sh_factor_sizes)

    def factor_ids(self, factor: str, features: Features, source_ids: Tensor) -> Tensor:
        """Ids of one factor aligned with `source_ids`: int32 [B, S']."""
        length = ops.shape(source_ids)[1] - (1 if self.prefix_root else 0)
        if factor == SUBWORD_TAG:
            words = word_positions.word_positions(self, features, length)
            if words is None:
                tokens = source_ids[:, 1:] if self.prefix_root else source_ids
                is_word = ops.logical_and(ops.not_equal(tokens, PAD_ID),
                                          ops.not_equal(tokens, EOS_ID))
                words = ops.where(is_word, ops.arange(length, dtype="int32")[None, :] + 1, 0)
            ids = subword_tags(words)
        else:
            key = TAG_FACTORS[factor][0]
            if key not in features:
                raise KeyError(f"model {type(self).__name__} needs the batch feature {key!r} for "
                               f"the factor {factor!r}; the batch has {sorted(features)}")
            ids = fit_length(features[key], length, PAD_ID)
        if self.prefix_root:
            ids = ops.pad(ids, [[0, 0], [1, 0]], constant_values=ROOT_ID)
        return ops.where(ops.equal(source_ids, EOS_ID), EOS_ID, ids)

    def embed_source(self, features: Features, source_ids: Tensor, training: bool) -> Tensor:
        parts = [self.source_embedding(source_ids)]
        for factor, embedding in zip(self.hparams.sh_factors, self.factor_embeddings):
            parts.append(embedding(self.factor_ids(factor, features, source_ids)))
        x = ops.concatenate(parts, axis=-1)
        if self.position_encoding is not None:
            x = self.position_encoding(x, start=0)
        return self.embedding_dropout(x, training=training)
