"""Registered problems. Importing this package registers them all."""

from syntax_t2t.problems import currey_heafield  # noqa: F401
from syntax_t2t.problems import czeng  # noqa: F401
from syntax_t2t.problems import de2cs  # noqa: F401
from syntax_t2t.problems import multi30k  # noqa: F401
from syntax_t2t.problems import pud  # noqa: F401
from syntax_t2t.problems import subword  # noqa: F401
from syntax_t2t.problems import synthetic  # noqa: F401
from syntax_t2t.problems import translate_syntax  # noqa: F401
