"""Plain-text input made into the words, and trees, that the training data had.

A problem that parsed its raw source text at datagen (`translate_syntax`,
Multi30k) let the parser tokenise it too: `zírá.` became `zírá` and `.`.
Such a problem records its parser with its data (`--problem_options`), and
its `parse_source_texts(texts)` parses new sentences the same way. `bin/decode`
sends every plain-text sentence through it, for every model: a model that
reads trees needs the parse, and one that reads only words needs the
parser's words, since whitespace-split words such as `zírá.` are mostly
unknown to its vocabulary (subwords are then applied by `encode_source`, as
at datagen). A problem without a parser was trained on whitespace-separated
tokens, which the plain text already is.
"""

import dataclasses
from typing import Sequence

from syntax_t2t.decoding.inputs import SourceSentence


def parses_plain_text(problem) -> bool:
    """Whether `problem` turns plain text into trees as its datagen did (loads its parser).

    Args:
        problem: the trained model's problem, its recorded options restored.
    """
    parse = getattr(problem, "parse_source_texts", None)
    return parse is not None and parse([]) is not None


def with_parsed_sources(sentences: Sequence[SourceSentence], problem) -> list[SourceSentence]:
    """`sentences`, the usable plain-text ones parsed as the training data was.

    Args:
        sentences: the input (`decoding.inputs.read_sources`).
        problem: the trained model's problem; it parses when it has
            `parse_source_texts` and that returns trees.

    Returns:
        The sentences, unchanged where the problem does not parse text (its
        data was whitespace-tokenised; a model that needs trees is then
        refused by the decoder).
    """
    sentences = list(sentences)
    plain = [index for index, sentence in enumerate(sentences)
             if sentence.usable and not sentence.has_tree]
    parse = getattr(problem, "parse_source_texts", None)
    if not plain or parse is None:
        return sentences
    # Single spaces, as datagen's parse cache gives the parser its lines.
    trees = parse([" ".join(sentences[index].tokens) for index in plain])
    if trees is None:
        return sentences
    for index, tree in zip(plain, trees):
        sentences[index] = dataclasses.replace(sentences[index], source=tree)
    return sentences
