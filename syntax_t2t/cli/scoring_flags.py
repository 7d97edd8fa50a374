"""`--tokenize` and `--lowercase`: sacreBLEU's preprocessing, shared by `bin/evaluate` and `bin/analyze`.

Defined once here (absl refuses a flag defined twice, and tests import both
programs), so that both programs score on the same tokens.
"""

from absl import flags

from syntax_t2t.cli import common
from syntax_t2t.evaluation import translation

flags.DEFINE_enum("tokenize", translation.DEFAULT_TOKENIZE, translation.TOKENIZERS,
                  "sacreBLEU's tokenizer for BLEU, RIBES and n-gram precisions: 13a (its default), "
                  "intl, zh, char (character-level, NSD's Chinese/Japanese), ja-mecab (Japanese "
                  "morphemes; pip install 'syntax_t2t[ja]'), none.")
flags.DEFINE_bool("lowercase", False, "Case-insensitive scores (NSD's English BLEU).")

FLAGS = flags.FLAGS


def checked_tokenize():
    """`--tokenize`, after checking that sacreBLEU can use it here.

    Raises:
        UsageError: its optional dependencies are missing.
    """
    try:
        translation.check_tokenizer(FLAGS.tokenize)
    except translation.TokenizerError as error:
        raise common.UsageError(f"--tokenize={FLAGS.tokenize}: {error}") from None
    return FLAGS.tokenize
