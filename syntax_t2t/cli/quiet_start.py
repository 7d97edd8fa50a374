"""Keeps TensorFlow's C++ start-up lines off a program's terminal.

Importing TensorFlow prints, before anything of ours, lines no user can act
on: oneDNN's numerics note, "Could not find cuda drivers", the CPU feature
guard, absl's "All log messages before absl::InitializeLog()" and, at the
first op on a machine without a GPU, "failed call to cuInit". The first ones
are written before TensorFlow reads `TF_CPP_MIN_LOG_LEVEL`, so they are
caught at the file descriptor while `tensorflow` is imported; anything else
printed then is passed on. Given `--verbosity` (or `-v`), or with
`TF_CPP_MIN_LOG_LEVEL` already set, nothing is hidden.
"""

import importlib.abc
import importlib.machinery
import os
import re
import sys
import tempfile

# C++ log lines ("I0000 00:00:1795516573.739294    4631 port.cc:153] ..."), absl's
# note about them and the second line of the CPU feature guard's message.
NOISE = re.compile(r"([IWEF]\d{4} [\d:.]+ +\d+ [\w.]+:\d+\] |WARNING: All log messages before "
                   r"absl::InitializeLog\(\)|To enable the following instructions: )")


def wants_tensorflow_logs(argv, environ) -> bool:
    """True when the user asked for TensorFlow's logs (or set their level)."""
    if "TF_CPP_MIN_LOG_LEVEL" in environ:
        return True
    return any(arg in ("-v", "--verbosity") or arg.startswith(("-v=", "--verbosity="))
               for arg in argv[1:])


def install(argv=None, environ=None):
    """Quiets TensorFlow's start-up unless the command line asks for its logs.

    Must run before `tensorflow` is imported; does nothing after.

    Args:
        argv: the command line; default `sys.argv`.
        environ: the environment to set `TF_CPP_MIN_LOG_LEVEL` in; default
            `os.environ`.
    """
    argv = sys.argv if argv is None else argv
    environ = os.environ if environ is None else environ
    if wants_tensorflow_logs(argv, environ) or "tensorflow" in sys.modules:
        return
    # 3 also hides C++ errors such as cuInit's; TensorFlow's real failures still
    # reach Python as exceptions.
    environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
    if not any(isinstance(finder, _QuietTensorFlowImport) for finder in sys.meta_path):
        sys.meta_path.insert(0, _QuietTensorFlowImport())


class _QuietTensorFlowImport(importlib.abc.MetaPathFinder):
    """Finds `tensorflow` as usual, wrapping its loader in `_QuietLoader`."""

    def find_spec(self, name, path, target=None):
        if name != "tensorflow":
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is not None and spec.loader is not None:
            spec.loader = _QuietLoader(spec.loader)
        return spec


class _QuietLoader(importlib.abc.Loader):
    """Executes a module with file descriptor 2 caught, passing on all but the noise."""

    def __init__(self, loader):
        self._loader = loader

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        sys.stderr.flush()
        saved = os.dup(2)
        with tempfile.TemporaryFile(mode="w+b") as caught:
            os.dup2(caught.fileno(), 2)
            try:
                self._loader.exec_module(module)
            finally:
                sys.stderr.flush()
                os.dup2(saved, 2)
                os.close(saved)
                caught.seek(0)
                text = caught.read().decode("utf-8", "replace")
                kept = [line for line in text.splitlines(keepends=True) if not NOISE.match(line)]
                sys.stderr.write("".join(kept))
