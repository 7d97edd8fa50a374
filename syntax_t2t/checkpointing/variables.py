"""The variables a checkpoint holds, under names that every process and backend agrees on.

Three groups, each a `{name: variable}` dict:

* model weights, by their Keras path relative to the model
  (`encoder_layer_0/self_attention/query_kernel`). The paths come from the
  layers' names, so they identify a weight in another process and under
  another backend; Keras 3 also keeps layers held in Python lists out of
  TensorFlow's tracking, so a path-keyed dict is the one view that sees
  every weight. A model that builds its layers in its first call has its own
  name in the paths (`stand_in_translator/hidden_0/kernel`), which Keras
  numbers per process (`stand_in_translator_1` for the second one), so that
  name is left out (`hidden_0/kernel`); every registered model builds its
  layers when it is made, outside its own name.
* the optimizer's variables, by their path without the optimizer's own name
  (`iteration`, `encoder_layer_0_self_attention_query_kernel_momentum`), with
  `inner_optimizer/` before those of an optimizer wrapped by a loss-scale
  optimizer. The optimizer's name carries a per-process counter (`adam_1`
  when a second Adam was made), so it cannot be part of the name, and a
  variable named after a model weight (Adam's moments) is named after the
  weight's relative path.
* the random state: the model's variables that are not weights (the dropout
  layers' seed generators), by their position, since their names carry
  per-process counters too (`seed_generator_7`).
"""

import collections
from typing import Any, Mapping

import numpy as np

from syntax_t2t.checkpointing.errors import CheckpointMismatchError

#: A Keras variable (or a `tf.Variable`): anything with `shape`, `numpy()`, `assign()`.
Variable = Any


def _unique(names_and_variables, owner: str, remedy: str) -> dict:
    names = collections.Counter(name for name, _ in names_and_variables)
    shared = sorted(name for name, count in names.items() if count > 1)
    if shared:
        raise ValueError(f"{owner} has several variables with the name(s) {', '.join(shared)}; "
                         f"{remedy}")
    return dict(names_and_variables)


def relative_path(model, path: str) -> str:
    """A weight's path without the model's own (per-process numbered) name in front."""
    prefix = model.name + "/"
    return path[len(prefix):] if path.startswith(prefix) else path


def model_weights(model) -> dict[str, Variable]:
    """`{weight path relative to the model: variable}` of every weight of a built Keras model.

    Raises:
        ValueError: two weights share a path (layers with the same name under
            one parent), so they could not be told apart in a checkpoint.
    """
    weights = model.weights
    paths = collections.Counter(relative_path(model, weight.path) for weight in weights)
    shared = sorted(path for path, count in paths.items() if count > 1)
    if shared:
        raise ValueError(f"model {type(model).__name__} has several weights with the path(s) "
                         f"{', '.join(shared)}; give its layers distinct names")
    return {relative_path(model, weight.path): weight for weight in weights}


def relative_names(saved: Mapping[str, Any], ours) -> dict:
    """Saved weight names of a TensorFlow checkpoint, their model's name dropped where present.

    Runs before the directory format saved full paths. When every saved
    name starts with one component that begins none of `ours` (the model's
    relative paths), that component is the saving model's name.
    """
    firsts = {name.split("/", 1)[0] for name in saved if "/" in name}
    if len(firsts) != 1 or len(saved) != sum("/" in name for name in saved):
        return dict(saved)
    first = firsts.pop()
    if any(name.split("/", 1)[0] == first for name in ours):
        return dict(saved)
    return {name[len(first) + 1:]: value for name, value in saved.items()}


def random_state(model) -> dict[str, Variable]:
    """`{index: variable}` of the model's random-generator states (Keras seed generators)."""
    weights = {id(weight) for weight in model.weights}
    others = [variable for variable in model.variables if id(variable) not in weights]
    return {str(index): variable for index, variable in enumerate(others)}


def optimizer_variables(optimizer, model) -> dict[str, Variable]:
    """`{name: variable}` of a built Keras optimizer's variables (see the module docstring).

    Args:
        optimizer: the optimizer.
        model: the model whose weights it trains.

    Raises:
        ValueError: two variables would share a name.
    """
    # Keras names a weight's slot `<weight path with _ for />_<slot>`.
    renamed = {}
    for weight in model.weights:
        relative = relative_path(model, weight.path)
        if relative != weight.path:
            renamed[weight.path.replace("/", "_") + "_"] = relative.replace("/", "_") + "_"
    inner = getattr(optimizer, "inner_optimizer", None)
    inner_ids = {id(variable) for variable in inner.variables} if inner is not None else set()
    named = []
    for variable in optimizer.variables:
        name = variable.path.split("/", 1)[-1]
        prefix = max((prefix for prefix in renamed if name.startswith(prefix)), key=len,
                     default=None)
        if prefix is not None:
            name = renamed[prefix] + name[len(prefix):]
        named.append(("inner_optimizer/" + name if id(variable) in inner_ids else name, variable))
    return _unique(named, f"optimizer {type(optimizer).__name__}",
                   "its variables cannot be told apart in a checkpoint")


def to_numpy(variable: Variable) -> np.ndarray:
    """The value of a variable of any backend as a NumPy array."""
    return np.asarray(variable.numpy())


def values_of(variables: Mapping[str, Variable]) -> dict[str, np.ndarray]:
    """`{name: array}` of the variables' current values."""
    return {name: to_numpy(variable) for name, variable in variables.items()}


def _listed(names, limit: int = 8) -> str:
    names = sorted(names)
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def mismatches(variables: Mapping[str, Variable], saved: Mapping[str, Any], part: str) -> list[str]:
    """What keeps `saved` (`{name: array or shape}`) from filling `variables` exactly, in words.

    Empty when every variable has a saved value of its shape and every saved
    value has a variable.
    """
    problems = []
    missing = set(variables) - set(saved)
    unused = set(saved) - set(variables)
    if missing:
        problems.append(f"{len(missing)} {part} have no value in the checkpoint "
                        f"({_listed(missing)})")
    if unused:
        problems.append(f"{len(unused)} saved {part} match nothing here and would be left "
                        f"unused ({_listed(unused)})")
    shapes = []
    for name in sorted(set(variables) & set(saved)):
        value = saved[name]
        saved_shape = tuple(value) if isinstance(value, (tuple, list)) else tuple(np.shape(value))
        shape = tuple(int(size) for size in variables[name].shape)
        if saved_shape != shape:
            shapes.append(f"{name} {list(saved_shape)} (the model's: {list(shape)})")
    if shapes:
        problems.append(f"{len(shapes)} {part} have another shape in the checkpoint "
                        f"({_listed(shapes, 4)})")
    return problems


def assign(variables: Mapping[str, Variable], saved: Mapping[str, np.ndarray], part: str,
           context: str) -> None:
    """Sets every variable to its saved value, after checking that they fit one to one.

    Args:
        variables: `{name: variable}`.
        saved: `{name: array}` read from a checkpoint.
        part: what the variables are, for messages ("model weights").
        context: what a mismatch message starts with (the checkpoint and
            what it was restored into).

    Raises:
        CheckpointMismatchError: a variable without a saved value, a saved
            value without a variable, or a value of another shape (all named).
    """
    problems = mismatches(variables, saved, part)
    if problems:
        raise CheckpointMismatchError(f"{context}: " + "; ".join(problems))
    for name, variable in variables.items():
        # A backend may keep a variable in another integer type (a seed
        # generator's state is int64 on TensorFlow, uint32 on JAX).
        value, dtype = np.asarray(saved[name]), _numpy_dtype(variable)
        variable.assign(value if dtype is None else value.astype(dtype, copy=False))


def _numpy_dtype(variable: Variable):
    dtype = variable.dtype
    name = dtype if isinstance(dtype, str) else getattr(dtype, "name", str(dtype))
    try:
        return np.dtype(name)
    except TypeError:
        # bfloat16 and the like, which NumPy does not name: let the backend convert.
        return None
