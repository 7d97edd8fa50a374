"""Registered problems. Importing this package registers them all."""

from problems import currey_heafield  # noqa: F401
from problems import czeng  # noqa: F401
from problems import de2cs  # noqa: F401
from problems import multi30k  # noqa: F401
from problems import pud  # noqa: F401
from problems import subword  # noqa: F401
from problems import synthetic  # noqa: F401
from problems import translate_syntax  # noqa: F401
