"""CTranslate2 as a decoding peer: the same weights, batch and search as our decoder.

The bench's `transformer` (random weights, see `decoding_speed.py`) is
converted with `export/to_ctranslate2.py` twice, float32 and int8, and its
source batch decoded with the same beam sizes and exactly the same number
of output tokens: `min_decoding_length = max_decoding_length =
output_tokens` forbids an earlier `<EOS>`, as our benchmark's `NO_EOS` does.
float32 runs on the same threads as TensorFlow; int8 runs on one thread,
which was the fastest int8 setting on this 2-core machine.
"""

import tempfile
import time

from syntax_t2t.data.vocab import EOS_ID, PAD_ID
from syntax_t2t.export.to_ctranslate2 import export_ctranslate2

#: label: (quantization, intra-op threads or None for the run's threads)
SETTINGS = {"CTranslate2 float32": (None, None), "CTranslate2 int8, 1 thread": ("int8", 1)}


def available():
    """Whether the `ctranslate2` package (the `[ctranslate2]` extra) is installed."""
    try:
        import ctranslate2  # noqa: F401
    except ImportError:
        return False
    return True


def decoding_runners(model, vocabularies, inputs, output_tokens, beam_sizes, threads):
    """`{label: {beam: runner}}`, each runner decoding `inputs` once and returning its seconds.

    Args:
        model: the bench's `transformer`.
        vocabularies: the problem's, with `"inputs"` and `"targets"`.
        inputs: int32 [B, S] source ids (`<EOS>` and padding are left to CTranslate2).
        output_tokens: output tokens per sentence.
        beam_sizes: beam sizes to time.
        threads: intra-op threads of the float32 translator.
    """
    import ctranslate2

    source_tokens = vocabularies["inputs"].tokens
    batch = [[source_tokens[i] for i in row if i not in (PAD_ID, EOS_ID)] for row in inputs]
    runners = {}
    for label, (quantization, intra_threads) in SETTINGS.items():
        with tempfile.TemporaryDirectory(prefix="bench-ct2-") as directory:
            export_ctranslate2(model, vocabularies, f"{directory}/model", quantization)
            translator = ctranslate2.Translator(f"{directory}/model", device="cpu",
                                                inter_threads=1,
                                                intra_threads=intra_threads or threads)

        def runner(beam, translator=translator):
            start = time.perf_counter()
            translator.translate_batch(batch, beam_size=beam, min_decoding_length=output_tokens,
                                       max_decoding_length=output_tokens, max_batch_size=0)
            return time.perf_counter() - start

        runners[label] = {beam: (lambda beam=beam, run=runner: run(beam)) for beam in beam_sizes}
    return runners
