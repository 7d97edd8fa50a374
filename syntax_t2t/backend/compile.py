"""A decoding function compiled the way the running Keras backend compiles, its programs counted.

Decoding runs one function per batch (encode, then search), which must be
compiled to be fast. Each backend compiles differently:

* TensorFlow without XLA: one `tf.function` graph serves every batch shape
  (its input signature has no static dimension), so the function is traced
  once. The graph runs op by op, which lets the decoding caches be written
  in place (`inplace_cache.py`), faster there than a copy.
* TensorFlow with XLA: `tf.function(jit_compile=True)`, traced and compiled
  once per distinct input shape.
* JAX: `jax.jit`, also once per input shape (shapes are static under JAX).
  The model's variables are passed to the compiled program as arguments
  and mapped onto the model by a `keras.StatelessScope`, so the program
  does not hold the weights as constants: compiling stays cheap, and a
  model whose weights change later (dev decoding during training) reuses
  the program.

Where programs are per shape (`CompiledFunction.per_shape`), the callers
pad their batches to a bounded set of shapes (`decoding/fast_decode.py`
pads the rows, `decoding/decoder.py` the lengths) so that a file compiles a
bounded number of times; `traces` counts the programs made, for the tests
that hold that bound.
"""

from typing import Any, Callable, Optional

import keras

BACKENDS = ("tensorflow", "jax")


class CompiledFunction:
    """`function(*args)` compiled by the running Keras backend.

    Args:
        function: a function of tensors or nests of them (dicts, tuples)
            that returns a nest of tensors and reads no Python state that
            changes between calls.
        model: the Keras model or layer whose variables `function` reads,
            or None when it reads none. Only JAX needs it: the variables'
            current values are passed in on every call.
        jit_compile: compile with XLA on TensorFlow. JAX always compiles
            with XLA, whatever this says.

    Attributes:
        xla: whether the function is compiled with XLA (JAX: always).
        per_shape: whether every distinct input shape is a program of its
            own; false only on TensorFlow without XLA, where one graph
            serves all shapes.
        traces: how many times `function` has been traced, which is how
            many programs have been built (a shape seen again reuses its
            program).

    Raises:
        NotImplementedError: a Keras backend other than TensorFlow and JAX.
    """

    def __init__(self, function: Callable[..., Any], model: Optional[keras.Layer] = None,
                 jit_compile: bool = False):
        self.backend = keras.backend.backend()
        if self.backend not in BACKENDS:
            raise NotImplementedError(f"compiling for the {self.backend!r} Keras backend: only "
                                      f"{' and '.join(BACKENDS)} are supported")
        self._function = function
        self._model = model
        self.xla = bool(jit_compile) or self.backend == "jax"
        self.per_shape = self.xla
        self.traces = 0
        self._compiled = None
        self._variables: list = []

    def __call__(self, *args: Any) -> Any:
        """Runs the compiled function (compiling it for a new shape first).

        Args:
            *args: numpy arrays, backend tensors or nests of them.

        Returns:
            The function's outputs as tensors of the backend.
        """
        if self.backend == "tensorflow":
            return self._call_tensorflow(args)
        return self._call_jax(args)

    def _traced(self, *args: Any) -> Any:
        # Runs only while the backend traces: once per program it builds.
        self.traces += 1
        return self._function(*args)

    def _call_tensorflow(self, args: tuple) -> Any:
        import tensorflow as tf

        args = keras.tree.map_structure(tf.convert_to_tensor, args)
        if self._compiled is None:
            signature = None
            if not self.per_shape:
                signature = keras.tree.map_structure(
                    lambda tensor: tf.TensorSpec([None] * tensor.shape.rank, tensor.dtype),
                    list(args))
            # Without a signature tf.function traces each new shape, XLA's unit of compilation.
            self._compiled = tf.function(self._traced, input_signature=signature,
                                         jit_compile=self.xla, reduce_retracing=False)
        return self._compiled(*args)

    def _call_jax(self, args: tuple) -> Any:
        import jax

        if self._compiled is None:
            self._variables = list(self._model.variables) if self._model is not None else []
            variables = self._variables

            def stateless(values: list, *args: Any) -> Any:
                with keras.StatelessScope(state_mapping=list(zip(variables, values))):
                    return self._traced(*args)

            self._compiled = jax.jit(stateless)
        return self._compiled([variable.value for variable in self._variables], *args)
