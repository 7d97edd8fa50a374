"""A `--usr_dir` for the training tests: registers the stand-in models and a
problem without source trees (the synthetic problem, trees dropped)."""

from syntax_t2t.problems.synthetic import SyntheticSyntaxReorder
from syntax_t2t import registry

from . import stand_in

registry.register_model("stand_in_translator")(stand_in.StandInTranslator)
registry.register_model("stand_in_parser")(stand_in.StandInParser)


@registry.register_problem
class StandInPlainText(SyntheticSyntaxReorder):
    """The synthetic language pair as plain parallel text (no trees on either side)."""

    has_source_trees = False
    has_target_trees = False
