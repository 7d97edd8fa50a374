"""No code from user strings, no unpickling of files the user did not make, safe Keras loading.

The package's source (syntax_t2t, problems, hparams, bin) is parsed with
`ast` and every call is checked against a list of unsafe ones: `eval`,
`exec` and `compile` of strings, `pickle`/`marshal`/`shelve`/`dill`/`joblib`
loading, `yaml.load` without a safe loader, `numpy.load(allow_pickle=True)`,
`torch.load` without `weights_only=True`, Keras model loading without an
explicit `safe_mode=True`, and turning Keras's unsafe deserialisation on.
Importing the user's own `--usr_dir` modules is what that flag is for, so
`importlib` stays allowed. The checker is itself tested on snippets holding
each pattern, so an empty result means something.
"""

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SOURCE_ROOTS = ("syntax_t2t", "problems", "hparams", "bin")

# Unsafe call -> why; a name is matched against the call's dotted name
# ("pickle.load", "yaml.load", "keras.models.load_model", ...) by its last
# parts, so `from pickle import load; load(f)` is caught as well.
UNSAFE_CALLS = {
    "eval": "evaluates a string as code",
    "exec": "executes a string as code",
    "compile": "compiles a string as code",
    "pickle.load": "unpickling runs code from the file",
    "pickle.loads": "unpickling runs code from the data",
    "pickle.Unpickler": "unpickling runs code from the file",
    "cPickle.load": "unpickling runs code from the file",
    "marshal.load": "unmarshalling untrusted data",
    "marshal.loads": "unmarshalling untrusted data",
    "shelve.open": "shelves are pickles",
    "dill.load": "unpickling runs code from the file",
    "dill.loads": "unpickling runs code from the data",
    "joblib.load": "joblib files are pickles",
    "pandas.read_pickle": "unpickling runs code from the file",
    "keras.config.enable_unsafe_deserialization": "turns off Keras's safe mode for every load",
}
# Calls that are unsafe unless a keyword argument has a given value.
NEEDS_KEYWORD = {
    "yaml.load": ("Loader", {"SafeLoader", "yaml.SafeLoader", "CSafeLoader", "yaml.CSafeLoader"}),
    "numpy.load": ("allow_pickle", {"False"}),
    "np.load": ("allow_pickle", {"False"}),
    "torch.load": ("weights_only", {"True"}),
    "keras.models.load_model": ("safe_mode", {"True"}),
    "keras.saving.load_model": ("safe_mode", {"True"}),
    "models.load_model": ("safe_mode", {"True"}),
    "saving.load_model": ("safe_mode", {"True"}),
    "keras.saving.deserialize_keras_object": ("safe_mode", {"True"}),
}
# Keyword defaults that are already safe: numpy refuses pickles unless asked.
SAFE_BY_DEFAULT = {"numpy.load", "np.load"}
# Calls here are allowed in these files only, with the reason.
ALLOWED = {}


def dotted_name(node):
    """`a.b.c` of a call's function, or None for calls of computed values."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def matches(name, pattern):
    """Whether `name` is `pattern` or ends with it after a dot (`keras.models.load_model` matches
    `models.load_model`)."""
    return name == pattern or name.endswith("." + pattern)


def unsafe_calls(source, filename="<source>"):
    """`[(line, call, why)]` of the unsafe calls in Python source text."""
    tree = ast.parse(source, filename)
    imported = {}  # local name -> module.attribute, for `from pickle import load as l`
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                imported[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    imported[alias.asname] = alias.name
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = dotted_name(node.func)
        if name is None:
            continue
        head, _, rest = name.partition(".")
        if head in imported:
            name = imported[head] + ("." + rest if rest else "")
        why = unsafe_reason(name, node)
        if why is not None:
            found.append((node.lineno, name, why))
    return found


def unsafe_reason(name, call):
    """Why the call of `name` is unsafe, or None."""
    for pattern, why in UNSAFE_CALLS.items():
        builtin = pattern in ("eval", "exec", "compile")
        # `re.compile` or `model.eval` are not the builtins.
        if matches(name, pattern) and (not builtin or name in (pattern, f"builtins.{pattern}")):
            return why
    for pattern, (keyword, safe_values) in NEEDS_KEYWORD.items():
        if not matches(name, pattern):
            continue
        given = {item.arg: ast.unparse(item.value) for item in call.keywords}
        if keyword not in given and pattern in SAFE_BY_DEFAULT:
            return None
        if given.get(keyword) not in safe_values:
            return f"needs {keyword}={sorted(safe_values)[0]}"
        return None
    return None


def package_files():
    files = []
    for root in SOURCE_ROOTS:
        path = REPO / root
        if path.is_file():
            files.append(path)
        elif root == "bin":
            files += sorted(p for p in path.iterdir() if p.is_file())
        else:
            files += sorted(path.rglob("*.py"))
    return files


def test_the_package_makes_no_unsafe_call():
    files = package_files()
    assert len(files) > 50 and any(f.name == "trainer.py" for f in files)
    problems = []
    for path in files:
        relative = str(path.relative_to(REPO))
        for line, name, why in unsafe_calls(path.read_text(encoding="utf-8"), relative):
            if ALLOWED.get((relative, name)) is None:
                problems.append(f"{relative}:{line}: {name}(...): {why}")
    assert problems == []


@pytest.mark.parametrize("snippet, expected", [
    ("eval(text)", "eval"),
    ("exec(code, {})", "exec"),
    ("compile(text, 'f', 'exec')", "compile"),
    ("import pickle\npickle.load(stream)", "pickle.load"),
    ("import pickle as p\np.loads(data)", "pickle.loads"),
    ("from pickle import load\nload(stream)", "pickle.load"),
    ("import marshal\nmarshal.loads(data)", "marshal.loads"),
    ("import shelve\nshelve.open(path)", "shelve.open"),
    ("import joblib\njoblib.load(path)", "joblib.load"),
    ("import yaml\nyaml.load(text)", "yaml.load"),
    ("import yaml\nyaml.load(text, Loader=yaml.Loader)", "yaml.load"),
    ("import numpy as np\nnp.load(path, allow_pickle=True)", "numpy.load"),
    ("import torch\ntorch.load(path)", "torch.load"),
    ("import keras\nkeras.models.load_model(path)", "keras.models.load_model"),
    ("import keras\nkeras.saving.load_model(path, safe_mode=False)", "keras.saving.load_model"),
    ("from keras import models\nmodels.load_model(path)", "keras.models.load_model"),
    ("import keras\nkeras.config.enable_unsafe_deserialization()",
     "keras.config.enable_unsafe_deserialization"),
])
def test_the_checker_finds_each_unsafe_call(snippet, expected):
    assert [name for _, name, _ in unsafe_calls(snippet)] == [expected]


@pytest.mark.parametrize("snippet", [
    "import yaml\nyaml.safe_load(text)",
    "import yaml\nyaml.load(text, Loader=yaml.SafeLoader)",
    "import numpy as np\nnp.load(path)",
    "import torch\ntorch.load(path, weights_only=True)",
    "import keras\nkeras.models.load_model(path, safe_mode=True)",
    "import json\njson.load(stream)",
    "import ast\nast.literal_eval(text)",
    "model.evaluate(data)",
    "tf.function(step, jit_compile=True)",
    "importlib.util.spec_from_file_location(name, path).loader.exec_module(module)",
])
def test_the_checker_passes_safe_calls(snippet):
    assert unsafe_calls(snippet) == []


def _loader_calls(source):
    """Calls in `source` that load a Keras model file, a SavedModel or HDF5 weights."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            name = ast.unparse(node.func)
            if (name.endswith("saved_model.load") or name.split(".")[-1] in (
                    "load_model", "model_from_json", "load_weights")):
                found.append(name)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and node.value.endswith(".h5"):
            found.append(node.value)
    return found


def test_tensorflow_checkpoints_are_read_without_python_objects():
    # Checkpoints are read as NumPy arrays (np.load, which refuses pickles)
    # or, in TensorFlow's format, through tf.train.Checkpoint; both restore
    # values into existing variables and never build Python objects from
    # the file; no Keras model file (.keras, .h5) or SavedModel is loaded
    # (layers' `from_config` only rebuilds them from their own configs).
    # bin/export writes SavedModels for others to load; the package itself
    # loads none (docstrings may show how, calls may not).
    loaders = [f"{path.relative_to(REPO)}: {call}" for path in package_files()
               for call in _loader_calls(path.read_text(encoding="utf-8"))]
    assert loaders == []
    assert _loader_calls("import tensorflow as tf\ntf.saved_model.load(path)") == [
        "tf.saved_model.load"]
