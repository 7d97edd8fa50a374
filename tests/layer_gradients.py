"""Gradients of a function of Keras variables in tests, taken the way the running backend takes them.

`syntax_t2t/backend/gradients.py` differentiates a model's losses; layer
tests need the gradient of any function with respect to chosen variables
(weights, or inputs held in a `keras.Variable`). On TensorFlow a tape
records the call; on JAX the function runs on traced values inside a
`keras.StatelessScope`, and the variables it assigns (BlackOut's unigram
counts, seed generators) are written back afterwards, as the eager call
would have left them.
"""

from typing import Any, Callable, Sequence

import keras


def value_and_gradients(function: Callable[[], Any], variables: Sequence[keras.Variable],
                        state: Sequence[keras.Variable] = ()):
    """`(function(), [d function() / d v for v in variables])`.

    Args:
        function: computes a float scalar from the variables (no arguments).
        variables: what to differentiate with respect to.
        state: other variables the function assigns (non-trainable weights,
            seed generator states); JAX needs them named to keep the updates.

    Returns:
        The value and one gradient per variable (None on TensorFlow where the
        value does not depend on it, zeros on JAX).
    """
    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        with tf.GradientTape() as tape:
            value = function()
        return value, tape.gradient(value, list(variables))
    if backend == "jax":
        import jax

        state = [variable for variable in state if all(variable is not v for v in variables)]

        def pure(values, state_values):
            mapping = list(zip(variables, values)) + list(zip(state, state_values))
            with keras.StatelessScope(state_mapping=mapping) as scope:
                value = function()
            return value, [scope.get_current_value(variable) for variable in state]

        (value, updated), gradients = jax.value_and_grad(pure, has_aux=True)(
            [variable.value for variable in variables], [variable.value for variable in state])
        for variable, new in zip(state, updated):
            if new is not None:
                variable.assign(new)
        return value, gradients
    raise NotImplementedError(f"gradients on the {backend!r} backend")


def compiled(function: Callable) -> Callable:
    """`function` compiled with XLA by the running backend (tf.function or jax.jit)."""
    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        return tf.function(function, jit_compile=True)
    import jax

    return jax.jit(function)
