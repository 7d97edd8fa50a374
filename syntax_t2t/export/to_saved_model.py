"""`bin/export --format=saved_model`: a TensorFlow SavedModel that translates token strings.

The exported module holds the model's weights, both vocabularies as
constants and the whole decoding in its graph: splitting each source
string at whitespace, looking the tokens up (unknown ones become `<UNK>`),
appending `<EOS>`, the encoder, the beam search of `bin/decode`
(`decoding/fast_decode.py`, with the exported beam size, alpha and
extra_length), and joining the output tokens with spaces. Loading it needs
TensorFlow only (`tf.saved_model.load`, or TensorFlow Serving), not this
project.

The serving signature `serving_default` takes `sources`, a string vector of
tokenised sentences, and returns

* `translations`: string [B], the best hypothesis, as `bin/decode` writes it;
* `scores`: float32 [B], its search score (log-probability over the GNMT
  length penalty, as in `bin/decode`'s n-best lists);
* `beams`: string [B, beam], every hypothesis, best first ("" for an empty slot);
* `beam_scores`: float32 [B, beam] (-inf for an empty slot).

An empty source gives an empty translation with score 0, where `bin/decode`
writes an empty line. The search's result for a sentence does not depend on
the other sentences of the request, so any batching gives `bin/decode`'s
output.
"""

import tensorflow as tf

from syntax_t2t.data.vocab import EOS_ID, PAD_ID, UNK_ID
from syntax_t2t.decoding.fast_decode import decode_batch


class TranslationModule(tf.Module):
    """The exported object: weights, vocabularies and the `translate` function.

    Args:
        model: a built model with restored weights that decodes from `inputs` alone.
        source_tokens, target_tokens: the vocabularies, in id order.
        settings: decode hparams (`beam_size`, `alpha`, `extra_length`,
            `eos_candidates`).
    """

    def __init__(self, model, source_tokens, target_tokens, settings):
        super().__init__(name="translation")
        self.model = model
        self.source_table = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(
                tf.constant(list(source_tokens)), tf.range(len(source_tokens), dtype=tf.int64)),
            default_value=UNK_ID)
        self.target_tokens = tf.Variable(list(target_tokens), trainable=False, name="target_tokens")
        self.beam_size = int(settings.beam_size)
        self.alpha = float(settings.alpha)
        self.extra_length = int(settings.extra_length)
        self.eos_candidates = str(settings.eos_candidates)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="sources")])
    def translate(self, sources):
        words = tf.strings.split(sources)
        ids = tf.cast(self.source_table.lookup(words), tf.int32)
        eos = tf.fill([tf.shape(sources)[0], 1], EOS_ID)
        inputs = tf.concat([ids, tf.RaggedTensor.from_tensor(eos)], axis=1).to_tensor(PAD_ID)
        outputs = decode_batch(self.model, {"inputs": inputs}, self.beam_size, self.alpha,
                               self.extra_length, in_place_cache=True,
                               eos_candidates=self.eos_candidates)
        scores = outputs["scores"]
        hypothesis_ids = tf.reshape(outputs["ids"], [-1, tf.shape(outputs["ids"])[-1]])
        lengths = tf.reshape(outputs["lengths"], [-1])
        positions = tf.range(tf.shape(hypothesis_ids)[-1])
        # As `Vocabulary.decode`: the tokens before <EOS>, padding left out.
        keep = (positions[None, :] < lengths[:, None]) & (hypothesis_ids != PAD_ID)
        tokens = tf.ragged.boolean_mask(tf.gather(self.target_tokens, hypothesis_ids), keep)
        beams = tf.reshape(tf.strings.reduce_join(tokens, axis=-1, separator=" "),
                           tf.shape(scores))
        empty = tf.equal(words.row_lengths(), 0)
        beams = tf.where(empty[:, None] | tf.math.is_inf(scores), "", beams)
        scores = tf.where(empty[:, None], tf.zeros_like(scores), scores)
        return {"translations": beams[:, 0], "scores": scores[:, 0], "beams": beams,
                "beam_scores": scores}


def export_saved_model(model, vocabularies, settings, export_dir):
    """Writes the SavedModel of `model` to `export_dir` (see the module docstring).

    Args:
        model: as `TranslationModule`.
        vocabularies: the problem's, `{"inputs": Vocabulary, "targets": Vocabulary, ...}`.
        settings: decode hparams.
        export_dir: a directory that does not exist yet or is empty.
    """
    module = TranslationModule(model, vocabularies["inputs"].tokens,
                               vocabularies["targets"].tokens, settings)
    tf.saved_model.save(module, export_dir,
                        signatures={"serving_default": module.translate.get_concrete_function()})
