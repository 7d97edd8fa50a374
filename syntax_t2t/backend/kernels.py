"""Small kernels compiled with XLA on their own when the step around them is not.

On TensorFlow without XLA (the CPU default of `bin/train`) a step runs op by
op, and a few kernels with many small gathers are much faster fused: the
label bias of tree-distance and tree-traversal heads took 1.1 ms instead of
2.1 ms per `transformer_tiny` layer (forward and backward) compiled on its
own (docs/performance.md). JAX compiles the whole step, so there the kernel
is left as it is and fuses with everything around it.
"""

import functools
from typing import Any, Callable

import keras


def xla_kernel(function: Callable[..., Any]) -> Callable[..., Any]:
    """`function` XLA-compiled on its own under TensorFlow; unchanged on other backends.

    Args:
        function: a function of tensors (and lists of tensors) returning one
            tensor, written with `keras.ops`.

    Returns:
        A function with the same signature and results.
    """
    compiled = None

    @functools.wraps(function)
    def call(*args):
        nonlocal compiled
        if keras.backend.backend() != "tensorflow":
            return function(*args)
        import tensorflow as tf

        if compiled is None:
            compiled = tf.function(function, jit_compile=True)
        result = compiled(*args)
        # The compiled call's output has no static shape in the caller's
        # graph; the trace knows it, and later ops (and their cost model) need it.
        return tf.ensure_shape(result, compiled.get_concrete_function(*args).structured_outputs.shape)

    return call
