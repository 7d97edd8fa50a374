"""The backend-specific pieces of the toolkit, kept in one place.

Modeling code (`syntax_t2t.layers`, `syntax_t2t.models`) runs on `keras.ops`
alone and is the same on every Keras backend. What only one backend can do
lives here, one module per piece (e.g. `inplace_cache`: decoding caches
written into their own buffers with TensorFlow's `InplaceUpdate`), each
imported where it is used. Importing this package imports no backend
library.
"""

from typing import Any

#: A tensor of the active backend (tf.Tensor, jax.Array, a Keras variable)
#: or anything `keras.ops` converts to one, such as a numpy array. Type
#: hints only: nothing checks it.
Tensor = Any
