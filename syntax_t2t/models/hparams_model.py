"""The Keras config of models built from `(hparams, vocab_sizes)`."""

from typing import Any

import keras

from syntax_t2t.hparams import HParams
from syntax_t2t.models.contract import ModelContract


class HParamsModel(ModelContract, keras.Model):
    """A `keras.Model` whose constructor takes `(hparams, vocab_sizes, **kwargs)`.

    It follows the models contract (`contract.py`).

    `get_config` stores the hparams as JSON, so `from_config(get_config())`
    rebuilds the same model class with the same hparams and vocabularies.
    """

    def vocab_size(self, key: str) -> int:
        """The size of vocabulary `key`, with a clear error when the problem lacks it."""
        if key not in self.vocab_sizes:
            raise KeyError(f"model {type(self).__name__} needs vocab_sizes[{key!r}]; the "
                           f"problem gives {sorted(self.vocab_sizes)}")
        return self.vocab_sizes[key]

    def get_config(self) -> dict:
        return {"name": self.name, "hparams": self.hparams.to_json(),
                "vocab_sizes": dict(self.vocab_sizes)}

    @classmethod
    def from_config(cls, config: dict) -> Any:
        config = dict(config)
        hparams = HParams.from_json(config.pop("hparams"))
        return cls(hparams, config.pop("vocab_sizes"), **config)
