"""Criteria: what a model's outputs are trained against (fairseq's `criterions/`).

| name | criterion | losses besides `nmt`, `total` | models |
|---|---|---|---|
| `translation` | `translation.Translation` | none | those without a criterion of their own |
| `head_supervision` | `head_supervision.HeadSupervision` | `parse` | dep_parse, diagonal_parse, sisa |
| `phrase_tags` | `phrase_tags.PhraseTags` | `phrase_tag` | mgsa |
| `syntactic_distances` | `nsd_distances.SyntacticDistances` | `nsd[_target]_entropy`, `_distance` | nsd |
| `tree2seq` | `tree2seq.Tree2SeqLoss` | none (`total` per sentence) | tree2seq, anmt |

A model names its criterion in its contract (`models/contract.py`,
`ModelContract.criterion`), or gives a `Criterion` subclass of its own (a
user's model with its own loss); `for_model` builds it. Importing this
package registers the built-ins (`registry.register_criterion`), so that
code below it (`backend/jax_train_step.py`) finds a model's criterion
through `registry.criterion_for` without importing criteria.
"""

from typing import Any

from syntax_t2t import registry
from syntax_t2t.criteria.base import Criterion
from syntax_t2t.criteria.head_supervision import HeadSupervision
from syntax_t2t.criteria.nsd_distances import SyntacticDistances
from syntax_t2t.criteria.phrase_tags import PhraseTags
from syntax_t2t.criteria.translation import Translation
from syntax_t2t.criteria.tree2seq import Tree2SeqLoss

for _name, _criterion in (("translation", Translation), ("head_supervision", HeadSupervision),
                          ("phrase_tags", PhraseTags),
                          ("syntactic_distances", SyntacticDistances),
                          ("tree2seq", Tree2SeqLoss)):
    registry.register_criterion(_name)(_criterion)


def for_model(model: Any) -> Criterion:
    """The criterion `model` declares (`model.criterion`), built for it.

    Raises:
        RegistryError: the model names no registered criterion.
    """
    return registry.criterion_for(model)


__all__ = ["Criterion", "for_model"]
