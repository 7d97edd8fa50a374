"""The modeling code (layers, models) runs on `keras.ops` alone: no module of it imports TensorFlow.

TensorFlow is for the input pipeline, datagen and the TF-only tools; what only
one backend can do lives in `syntax_t2t/backend/`. Two checks: no import
statement of the modeling code names TensorFlow (function-level ones
included), and every module imports in a fresh interpreter in which
`import tensorflow` fails.
"""

import ast
import os
import pathlib
import subprocess
import sys

import pytest

pytestmark = pytest.mark.backends

ROOT = pathlib.Path(__file__).resolve().parents[1]
MODELING = ("syntax_t2t/layers", "syntax_t2t/models")
TENSORFLOW = ("tensorflow", "tf_keras", "tensorflow_text")


def modeling_modules():
    for folder in MODELING:
        for path in sorted((ROOT / folder).glob("*.py")):
            yield path


def module_name(path):
    relative = path.relative_to(ROOT).with_suffix("")
    parts = relative.parts[:-1] if relative.name == "__init__" else relative.parts
    return ".".join(parts)


def imported_names(path):
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            yield node.lineno, node.module


def test_no_modeling_module_names_tensorflow():
    found = [f"{path.relative_to(ROOT)}:{line} imports {name}"
             for path in modeling_modules() for line, name in imported_names(path)
             if name.split(".")[0] in TENSORFLOW]
    assert not found, "modeling code must use keras.ops only:\n" + "\n".join(found)


BLOCKER = """
import importlib.abc, sys

class NoTensorFlow(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {blocked!r}:
            raise ImportError(f"{{name}} is blocked: modeling code must not import it")
        return None

sys.meta_path.insert(0, NoTensorFlow())
import importlib
for name in {modules!r}:
    importlib.import_module(name)
import keras
assert not any(name.split(".")[0] in {blocked!r} for name in sys.modules), sorted(
    name for name in sys.modules if name.split(".")[0] in {blocked!r})
print("imported", len({modules!r}), "modules on", keras.backend.backend())
"""


def test_every_modeling_module_imports_without_tensorflow():
    modules = [module_name(path) for path in modeling_modules()]
    modules += ["syntax_t2t.backend", "syntax_t2t.backend.gradients", "syntax_t2t.hparams_sets"]
    # Any backend but TensorFlow; `make test`'s JAX pass runs this where TensorFlow is absent.
    try:
        import jax  # noqa: F401
    except ImportError:
        pytest.skip("needs JAX; make test's second pass (.venv-jax) runs it")
    backend = "jax"
    env = dict(os.environ, KERAS_BACKEND=backend, PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-c", BLOCKER.format(blocked=TENSORFLOW, modules=modules)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    assert f"imported {len(modules)} modules on {backend}" in done.stdout
