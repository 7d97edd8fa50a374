"""Plain-text input parsed for models that need source trees, as the training data was.

A problem that parses its raw source with a parser (`translate_syntax`,
Multi30k) records the parser with its data (`--problem_options`); its
`parse_source_texts(texts)` parses new sentences the same way. `bin/decode`
then takes plain text for a model that reads source trees, and the user need
not run `bin/parse` by hand.
"""

import dataclasses
from typing import Sequence

from syntax_t2t.decoding.inputs import SourceSentence


def with_parsed_sources(sentences: Sequence[SourceSentence], problem,
                        feature_keys: Sequence[str]) -> list[SourceSentence]:
    """`sentences`, the usable plain-text ones given trees when the model needs them.

    Args:
        sentences: the input (`decoding.inputs.read_sources`).
        problem: the trained model's problem; it parses when it has
            `parse_source_texts` and that returns trees.
        feature_keys: the features the model decodes from; only `inputs`
            means no trees are needed.

    Returns:
        The sentences, unchanged where no parse is needed or possible (the
        decoder then reports the missing trees).
    """
    sentences = list(sentences)
    plain = [index for index, sentence in enumerate(sentences)
             if sentence.usable and not sentence.has_tree]
    parse = getattr(problem, "parse_source_texts", None)
    if not plain or set(feature_keys) <= {"inputs"} or parse is None:
        return sentences
    trees = parse([" ".join(sentences[index].tokens) for index in plain])
    if trees is None:
        return sentences
    for index, tree in zip(plain, trees):
        sentences[index] = dataclasses.replace(sentences[index], source=tree)
    return sentences
