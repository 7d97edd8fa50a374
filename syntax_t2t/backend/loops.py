"""Loops whose gradients every backend can take, XLA included.

Two backends, two limits. JAX cannot reverse-differentiate a `while_loop`,
so a loop that is trained through must have a static trip count there
(`fori_loop` with Python bounds becomes a `scan`). TensorFlow's XLA cannot
differentiate a `tf.while_loop` without `maximum_iterations`, which
`keras.ops.fori_loop` and `keras.ops.scan` do not pass; on TensorFlow the
loops below are therefore TensorFlow's own, bounded, as the models used them
before they were backend-neutral. Called eagerly (nothing traced), both run
a plain Python loop instead: compiling a loop for a single call costs more
than running it. Every path gives the same values.
"""

from typing import Any, Callable

import keras
from keras import ops

#: A tensor of the running backend, or a Python int where a bound is static.
Tensor = Any


def bounded_fori_loop(lower: int | Tensor, upper: int | Tensor,
                      body: Callable[[Tensor, Any], Any], initial: Any,
                      maximum_iterations: int | Tensor) -> Any:
    """`body(i, value)` for i from `lower` up to `upper` (exclusive), from `initial`.

    Args:
        lower: the first i.
        upper: one past the last i; may depend on the data, but never
            exceeds `lower + maximum_iterations`.
        body: `(i, value) -> value`, the same structure and shapes.
        initial: the value before the first step (a tensor or a nest).
        maximum_iterations: a bound on the number of steps: a Python int
            under JAX (a static shape), a tensor or int on TensorFlow.

    Returns:
        The value after the last step.
    """
    known_lower, known_upper = _known_now(lower), _known_now(upper)
    if known_lower is not None and known_upper is not None:
        # Eager: as many steps as the data needs.
        value = initial
        for i in range(known_lower, known_upper):
            value = body(ops.convert_to_tensor(i, "int32"), value)
        return value
    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        return tf.while_loop(lambda i, value: i < upper,
                             lambda i, value: (i + 1, body(i, value)),
                             (lower, initial), maximum_iterations=maximum_iterations)[1]

    if isinstance(maximum_iterations, int) and maximum_iterations <= 0:
        return initial  # not even traced: the body may not fit empty shapes

    def step(i, value):
        # Steps past `upper` leave the value as it is: the trip count stays static.
        return ops.cond(i < upper, lambda: body(i, value), lambda: value)

    return ops.fori_loop(lower, lower + maximum_iterations, step, initial)


def _known_now(value: int | Tensor) -> int | None:
    """`value` as a Python int if it is computed already (eager), None if it is traced."""
    if isinstance(value, int):
        return value
    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        return int(value) if tf.executing_eagerly() else None
    if backend == "jax":
        import jax

        return None if isinstance(value, jax.core.Tracer) else int(value)
    return None


def _all_known_now(values: Any) -> bool:
    """Whether every tensor of a nest is computed already (eager), none traced."""
    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        return tf.executing_eagerly()
    if backend == "jax":
        import jax

        return not any(isinstance(value, jax.core.Tracer) for value in keras.tree.flatten(values))
    return False


def scan_states(step: Callable[[Any, Any], Any], initial: Any, elements: Any) -> Any:
    """The states of a recurrence over the leading axis of `elements`, stacked.

    Args:
        step: `(state, element) -> state`, the state a tensor or a nest of
            them of fixed shapes.
        initial: the state before the first element.
        elements: a tensor or a nest of tensors [T, ...].

    Returns:
        The state after each element, stacked on a new leading axis [T, ...]
        (the nest of `initial`).
    """
    if _all_known_now(initial) and _all_known_now(elements):
        # Eager: one step at a time.
        states, state = [], initial
        for t in range(keras.tree.flatten(elements)[0].shape[0]):
            state = step(state, keras.tree.map_structure(lambda tensor: tensor[t], elements))
            states.append(state)
        return keras.tree.map_structure(lambda *values: ops.stack(values), *states)
    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        # tf.scan bounds its loop by the length of `elements`, as XLA's gradient needs.
        return tf.scan(step, elements, initializer=initial)

    def carry_and_output(state, element):
        state = step(state, element)
        return state, state

    return ops.scan(carry_and_output, initial, elements)[1]
