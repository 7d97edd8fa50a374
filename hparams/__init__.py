"""Registered hparams sets. Importing this package registers them."""

from syntax_t2t.hparams_sets import experiments  # noqa: F401
from syntax_t2t.hparams_sets import multi30k  # noqa: F401
from syntax_t2t.hparams_sets import pascal  # noqa: F401
from syntax_t2t.hparams_sets import transformer  # noqa: F401
from syntax_t2t.hparams_sets import tree2seq  # noqa: F401
