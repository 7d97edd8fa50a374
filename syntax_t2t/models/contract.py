"""The models contract as code: what a model offers the trainer, the decoder and its criterion.

A model is a `keras.Model` that also derives from `ModelContract`. The
contract names what the rest of the toolkit reads from a model, so that no
caller has to probe a model with `getattr`/`hasattr`:

* `train_features` / `decode_features`: the batch keys it trains / decodes on;
* `derived_features` / `decode_derived_features`: features computed on the
  host with NumPy (`data/derived_features.py`), or None;
* `call(features, training)` -> outputs, at least `"logits"` [B, T, V];
* `criterion`: the name of the criterion (`syntax_t2t/criteria/`) that turns
  the outputs into losses, or a callable `model -> criterion` (a user's
  model brings its own); models never compute their losses;
* `supervised_head()`: which encoder head is trained against which gold
  (`SupervisedHead`), or None;
* `source_ids(features)`: the source as the encoder sees it (`<ROOT>`-prefixed
  when `prefix_root`), the frame of a head's logits.

Also here, because models check their hparams against them when built and
the criteria read them: the `parse_loss` forms, the gold kinds of a
supervised head and the reductions of an auxiliary loss.
"""

import dataclasses
from typing import Any, Callable, Mapping, Optional, Union

from keras import ops

from syntax_t2t.data.derived_features import DerivedFeatures
from syntax_t2t.hparams import HParams, HParamsError

#: A backend tensor (TensorFlow, JAX) or anything `keras.ops` converts (NumPy arrays).
Tensor = Any
#: A batch: feature name -> int tensor [B, ...].
Features = Mapping[str, Tensor]

ROOT_ID = 3

#: `parse_loss` values: what a supervised head's cross-entropy is taken of
#: (`criteria/head_supervision.py`).
PARSE_LOSSES = ("logits", "attention")

#: Gold kinds of a supervised head: each position's dependency head in the
#: `<ROOT>`-prefixed source (DepParse), the previous token (DiagonalParse),
#: the first subword of the parent word in the unprefixed source (SISA).
DEPENDENCY_HEADS = "dependency_heads"
PREVIOUS_TOKEN = "previous_token"
PARENTS = "parents"
GOLD_KINDS = (DEPENDENCY_HEADS, PREVIOUS_TOKEN, PARENTS)

#: How an auxiliary loss is reduced against the translation loss
#: (`criteria/reduction.py`).
REDUCTIONS = ("sum", "mean")


def check_reduction(name: str, value: Any) -> None:
    """Raises `HParamsError` naming hparam `name` unless `value` is one of `REDUCTIONS`."""
    if value not in REDUCTIONS:
        raise HParamsError(f"{name}={value!r}: expected one of {', '.join(REDUCTIONS)}")


def check_parse_loss_hparams(hp: HParams) -> None:
    """Raises `HParamsError` for an unknown `parse_loss` or a smoothing outside [0, 1)."""
    if hp.parse_loss not in PARSE_LOSSES:
        raise HParamsError(f"parse_loss={hp.parse_loss!r}: expected one of "
                           f"{', '.join(PARSE_LOSSES)}")
    smoothing = hp.parse_label_smoothing
    if smoothing is not None and not 0.0 <= smoothing < 1.0:
        raise HParamsError(f"parse_label_smoothing={smoothing} must be in [0, 1)")


@dataclasses.dataclass(frozen=True)
class SupervisedHead:
    """An encoder attention head trained to attend to each position's gold head.

    Attributes:
        logits_key: the outputs key of the head's masked pre-softmax scores
            [B, S', S'].
        gold: one of `GOLD_KINDS`, which also fixes the frame of the rows.
        weight: the weight of the head's loss in the total.
        form: one of `PARSE_LOSSES`.
        label_smoothing: eps, or None for the form's default.
    """

    logits_key: str
    gold: str
    weight: float
    form: str = "logits"
    label_smoothing: Optional[float] = None

    def __post_init__(self):
        if self.gold not in GOLD_KINDS:
            raise ValueError(f"gold={self.gold!r}: expected one of {', '.join(GOLD_KINDS)}")
        if self.form not in PARSE_LOSSES:
            raise ValueError(f"form={self.form!r}: expected one of {', '.join(PARSE_LOSSES)}")


#: The criterion of models with a `supervised_head` (`criteria/head_supervision.py`).
HEAD_SUPERVISION = "head_supervision"

#: What `ModelContract.criterion` holds: a criterion's registered name, or a
#: callable that builds one from the model.
CriterionSpec = Union[str, Callable[[Any], Any]]


class ModelContract:
    """The members every model offers, with the defaults of a plain translation model.

    Mix it into a `keras.Model` (the built-in models get it through
    `HParamsModel`); override what differs.
    """

    #: Batch keys needed for training.
    train_features: frozenset = frozenset({"inputs", "targets"})
    #: Batch keys needed for decoding.
    decode_features: frozenset = frozenset({"inputs"})
    #: Whether the source gets a `<ROOT>` (id 3) prefix inside the model.
    prefix_root: bool = False
    #: Features computed on the host with NumPy from batch keys, or None.
    derived_features: Optional[DerivedFeatures] = None
    #: The criterion (`syntax_t2t/criteria/`): a registered name or `model -> criterion`.
    criterion: CriterionSpec = "translation"
    #: Whether the model reads `src_word_position` with `source_word_positions`
    #: (`models/word_positions.py`; bin/train warns when it is off on subwords).
    reads_word_positions: bool = False
    #: Output key of an encoder head's logits: `"parse_logits"` are scores over
    #: the `<ROOT>`-prefixed source; heads scored in another frame (SISA) use
    #: their own key.
    head_logits_key: str = "parse_logits"

    @property
    def decode_derived_features(self) -> Optional[DerivedFeatures]:
        """The derived features decoding needs: those of training unless a model says otherwise."""
        return self.derived_features

    def supervised_head(self) -> Optional[SupervisedHead]:
        """The encoder head trained against a gold head, or None (none here)."""
        return None

    def source_ids(self, features: Features) -> Tensor:
        """`inputs`, `<ROOT>`-prefixed when `prefix_root`: int32 [B, S'] (S' = S or S + 1)."""
        ids = ops.cast(features["inputs"], "int32")
        if self.prefix_root:
            ids = ops.pad(ids, [[0, 0], [1, 0]], constant_values=ROOT_ID)
        return ids
