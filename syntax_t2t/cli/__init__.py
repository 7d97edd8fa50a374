"""The absl command-line programs; `bin/*` are thin executables calling them.

Every program (and console script) imports this package before TensorFlow,
which is when TensorFlow's C++ start-up noise can still be kept quiet.
"""

from syntax_t2t.cli import quiet_start

quiet_start.install()
