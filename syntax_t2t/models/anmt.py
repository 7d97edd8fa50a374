"""The sequential attentional encoder-decoder (ANMT), Tree2Seq's baseline (Eriguchi et al. 2016).

Eriguchi et al. compare their tree-to-sequence model with the attentional
NMT of Luong et al. (2015a), with and without reversed input (their Table
3): the same sequential LSTM encoder, decoder, attention, input feeding and
BlackOut output layer as `tree2seq` (`models/tree2seq.py`), without the
tree. So this model is `Tree2Seq` less the Tree-LSTM:

* attention reads the n + 1 sequential states (words and `<EOS>`) only;
* the decoder starts from the encoder's last state, s_1 = (h_n, c_n) at
  `<EOS>`, where `tree2seq` combines it with the root phrase (eq. 12);
* no source trees are needed, so any problem trains it.

`reverse_source=true` (Sutskever et al. 2014) feeds the source words in
reverse order, `<EOS>` still last: "a b c <EOS>" is read as "c b a <EOS>".
The model reverses its own input, so training and decoding files stay as
they are. The hparams are `tree2seq`'s (`hparams/tree2seq.py`: `anmt_small`
and `anmt_small_reversed` are Table 3's rows at K = 500).
"""

from typing import Any, Mapping

from keras import ops

from syntax_t2t import registry
from syntax_t2t.models.tree2seq import PAD_ID, Tree2Seq


def reverse_words(inputs):
    """Reverses each sentence's words, keeping `<EOS>` and the padding in place.

    Args:
        inputs: int [B, S], word ids, one `<EOS>` after the words, then
            padding (`PAD_ID`).

    Returns:
        int32 [B, S].
    """
    inputs = ops.cast(inputs, "int32")
    tokens = ops.sum(ops.cast(ops.not_equal(inputs, PAD_ID), "int32"), axis=1)
    words = ops.maximum(tokens - 1, 0)[:, None]
    positions = ops.arange(ops.shape(inputs)[1], dtype="int32")[None, :]
    # Word p reads word n - 1 - p; <EOS> and the padding read themselves.
    source = ops.where(positions < words, words - 1 - positions, positions)
    return ops.take_along_axis(inputs, source, axis=1)


@registry.register_model("anmt")
class ANMT(Tree2Seq):
    """The sequential attentional model (module docstring).

    Args:
        hparams: an `HParams` with the names of `hparams/tree2seq.py`.
        vocab_sizes: the problem's vocabulary sizes (`inputs`, `targets`).
        **kwargs: `keras.Model` arguments.
    """

    train_features = frozenset({"inputs", "targets"})
    decode_features = frozenset({"inputs"})
    uses_trees = False

    def source_ids(self, features):
        """`inputs` as the encoder reads them: int32 [B, S], reversed with `reverse_source`."""
        inputs = ops.cast(features["inputs"], "int32")
        return reverse_words(inputs) if self.hparams.get("reverse_source", False) else inputs

    def encode(self, features: Mapping[str, Any], training: bool = False) -> dict:
        """Runs the sequential encoder.

        Args:
            features: the batch: `inputs`.
            training: unused (the model has no dropout).

        Returns:
            dict with `"outputs"` [B, S, d] (the sequential states, zero at
            padding), `"padding_mask"` bool [B, S], and the decoder's first
            state `"initial_h"`, `"initial_c"` [B, d] (the last token's).
        """
        states, memory_cells, token_mask = self.encode_sequence(self.source_ids(features))
        return {"outputs": states * ops.cast(token_mask, states.dtype)[:, :, None],
                "padding_mask": token_mask,
                "initial_h": states[:, -1], "initial_c": memory_cells[:, -1]}
