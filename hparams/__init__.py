"""Registered hparams sets. Importing this package registers them."""

from hparams import transformer  # noqa: F401
