"""Source heads read from a parse head's scores (DepParse, DiagonalParse; thesis 4.1-4.2).

The parse head scores every `<ROOT>`-prefixed source position as the head of
every other one: row `i` (a dependent) holds its scores over columns `j`
(candidate heads), position 0 being `<ROOT>` and position `i` word `i`, so a
column index is directly a head value (`docs/design.md`). `<EOS>` and padding
follow the words and are never heads.

Two decoders turn the scores into heads:

* `argmax` (the thesis): every word takes its most probable head on its own;
  the result may contain cycles;
* `mst`: the maximum spanning tree under the head log-probabilities
  (Chu-Liu/Edmonds), always a well-formed tree.
"""

import numpy as np

from syntax_t2t.decoding.mst import best_heads, maximum_spanning_tree

PARSE_DECODERS = ("argmax", "mst")


def head_log_probs(parse_logits: np.ndarray, num_words: int) -> np.ndarray:
    """Log-probabilities of the heads among `<ROOT>` and the words.

    Args:
        parse_logits: [S', S'] pre-softmax scores of one sentence (S' >=
            num_words + 1).
        num_words: words of the sentence.

    Returns:
        float64 [num_words + 1, num_words + 1]: row `d`, column `h` is the
        log-probability of `h` heading `d`, normalised over the other
        positions (a word never heads itself; `<EOS>` and padding are
        excluded).
    """
    size = num_words + 1
    logits = np.asarray(parse_logits, dtype=np.float64)
    if logits.ndim != 2 or min(logits.shape) < size:
        raise ValueError(f"parse logits of shape {logits.shape} cannot hold {num_words} words and <ROOT>")
    scores = np.where(np.eye(size, dtype=bool), -np.inf, logits[:size, :size])
    top = scores.max(axis=1, keepdims=True)
    return scores - top - np.log(np.exp(scores - top).sum(axis=1, keepdims=True))


def decode_heads(parse_logits: np.ndarray, num_words: int, method: str = "argmax") -> np.ndarray:
    """The predicted heads of one sentence's words.

    Args:
        parse_logits: [S', S'] scores as in the module docstring.
        num_words: words of the sentence (at least 1).
        method: `"argmax"` or `"mst"`.

    Returns:
        int32 [num_words], 1-based heads, 0 = ROOT.
    """
    if method not in PARSE_DECODERS:
        raise ValueError(f"unknown parse decoder {method!r}; choose one of {', '.join(PARSE_DECODERS)}")
    scores = head_log_probs(parse_logits, num_words)
    if method == "argmax":
        return best_heads(scores)
    return maximum_spanning_tree(scores)
