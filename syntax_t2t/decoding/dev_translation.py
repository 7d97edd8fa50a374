"""Dev-set BLEU during training: decode the dev split with the model being trained.

Teacher-forced dev loss says little about what the search will produce, and
the thesis's systems are compared on BLEU; T2T (`--eval_run_autoregressive`),
fairseq (`--eval-bleu`) and OpenNMT (`valid_metrics: [BLEU]`) all offer this.
The dev split's plain-text copies written by `bin/datagen`
(`Problem.raw_paths`: the source as CoNLL-U or tokens, the tokenised
reference) are decoded with `decoding.Decoder` (greedy by default, or the
given decode hparams) and scored with sacreBLEU against the tokenised
references: a number to choose checkpoints and stop by, not the reported
test score (which `bin/grid` and `bin/evaluate` take against raw references).
For models with a parse head the predicted heads are scored against the
dev trees as well (`dev_uas`, argmax decoding, over words).

Dev decoding is decoding, so it lives here; the trainer never imports it:
`bin/train` builds a `DevTranslation` and hands it to
`training.validation.Validation` as a callable of the model.
"""

import os
import time

import sacrebleu
from absl import logging

from syntax_t2t import io_utils
from syntax_t2t.data.schema import DEV
from syntax_t2t.decoding import inputs as decode_inputs
from syntax_t2t.decoding.decoder import Decoder
from syntax_t2t.errors import InputError, counted


class DevTranslation:
    """Translates the dev split and scores it.

    Args:
        problem: the problem, vocabularies loaded.
        data_dir: where `bin/datagen` wrote the dev split's text copies.
        settings: decode hparams (`decoding.decode_hparams.decode_hparams`).
        max_sentences: decode only the first this many sentences (0 = all).

    Raises:
        InputError: the dev split's text copies are missing or do not line up.
    """

    def __init__(self, problem, data_dir: str, settings, max_sentences: int = 0):
        paths = problem.raw_paths(data_dir, DEV)
        for path in paths.values():
            if not os.path.exists(path):
                raise InputError(path, None, "missing: dev-set BLEU decodes the dev split's text "
                                 "copy that bin/datagen writes; run bin/datagen again",
                                 reason="missing dev text")
        self.problem = problem
        self.settings = settings
        self.sources = decode_inputs.read_sources(paths["source"], "auto")
        self.references = [line for _, line in io_utils.read_lines(paths["reference"])]
        if len(self.sources) != len(self.references):
            raise InputError(paths["reference"], None,
                             f"has {counted(len(self.references), 'line')} but {paths['source']} has "
                             f"{len(self.sources)} sentences", reason="misaligned dev text")
        if max_sentences > 0:
            self.sources = self.sources[:max_sentences]
            self.references = self.references[:max_sentences]
        self._decoder = None

    def __call__(self, model) -> dict:
        """`{"bleu": ..., "dev_uas": ...}` of the model as it is now (UAS for parse heads)."""
        if self._decoder is None or self._decoder.model is not model:
            self._decoder = Decoder(model, self.problem, self.settings)
        start = time.perf_counter()
        translations = self._decoder.translate(self.sources)
        hypotheses = [" ".join(t.tokens) if t is not None else "" for t in translations]
        # Both sides are tokenised on purpose (the split's token copies): `force`
        # keeps sacreBLEU from warning at every evaluation that they are.
        bleu = sacrebleu.corpus_bleu(hypotheses, [self.references], force=True)
        results = {"bleu": float(bleu.score)}
        heads = [(sentence, t.heads) for sentence, t in zip(self.sources, translations)
                 if t is not None and t.heads is not None and sentence.has_tree]
        if heads:
            correct = total = 0
            for sentence, predicted in heads:
                gold = sentence.source.heads
                correct += int((predicted[:len(gold)] == gold).sum())
                total += len(gold)
            results["dev_uas"] = correct / max(total, 1)
        logging.info("decoded %d dev sentences in %.1f s: BLEU %.2f", len(self.sources),
                     time.perf_counter() - start, results["bleu"])
        return results
