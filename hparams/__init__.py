"""Registered hparams sets. Importing this package registers them."""

from hparams import experiments  # noqa: F401
from hparams import multi30k  # noqa: F401
from hparams import pascal  # noqa: F401
from hparams import transformer  # noqa: F401
from hparams import tree2seq  # noqa: F401
