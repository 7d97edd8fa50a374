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

Subword sources (`data/subword_syntax.py`). A parse head over subwords is
trained on the SISA heads: every subword points at the first subword of its
head word. Parses are written for the original words (so that UAS compares
words with the gold trees): the head distribution of word d is read off the
row of d's first subword, as `word_heads_from_subword_heads` reads predicted
heads; the probability of word h heading d is the mass of all subwords of h,
normalised over the positions outside d's own word (a word never heads
itself). With one subword per word this is `head_log_probs`.

SISA's head (`sisa`, key `"sisa_logits"`) scores without `<ROOT>`: a word
attached to ROOT points at the first subword of its own word
(`models/sisa.parent_targets`). `root_prefixed_logits` moves that score to a
`<ROOT>` column, so SISA's predicted parents are decoded the same way.
"""

import numpy as np

from syntax_t2t.data import subword_syntax
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


def root_prefixed_logits(parent_logits: np.ndarray, word_index) -> np.ndarray:
    """SISA's parent scores in the `<ROOT>`-prefixed frame of the parse heads.

    Args:
        parent_logits: [S, S] pre-softmax scores of one sentence over its
            tokens (row t: token t's parent), S >= T.
        word_index: the subword-to-word map, length T (`np.arange(n)` for
            words).

    Returns:
        float64 [T + 1, T + 1]: position 0 is `<ROOT>` (row 0 is -inf),
        position t + 1 token t; row t + 1 scores ROOT with token t's score of
        the first token of its own word and every other position as before,
        except that position (-inf: it now means ROOT).
    """
    index = subword_syntax.check_word_index(word_index)
    size = index.size
    logits = np.asarray(parent_logits, dtype=np.float64)
    if logits.ndim != 2 or min(logits.shape) < size:
        raise ValueError(f"parent logits of shape {logits.shape} cannot hold {size} tokens")
    first, _ = subword_syntax.word_spans(index)
    own_first = first[index]
    prefixed = np.full((size + 1, size + 1), -np.inf)
    prefixed[1:, 1:] = logits[:size, :size]
    rows = np.arange(size)
    prefixed[rows + 1, 0] = logits[rows, own_first]
    prefixed[rows + 1, own_first + 1] = -np.inf
    return prefixed


def word_head_log_probs(parse_logits: np.ndarray, word_index) -> np.ndarray:
    """Word-level head log-probabilities from a parse head over subwords (module docstring).

    Args:
        parse_logits: [S', S'] `<ROOT>`-prefixed scores of one sentence
            (S' >= T + 1).
        word_index: the subword-to-word map, length T.

    Returns:
        float64 [n + 1, n + 1]: row d, column h (0 = ROOT) is the
        log-probability of word h heading word d; the diagonal is -inf and
        row 0 (ROOT's own head) is 0.
    """
    index = subword_syntax.check_word_index(word_index)
    size = index.size + 1
    logits = np.asarray(parse_logits, dtype=np.float64)
    if logits.ndim != 2 or min(logits.shape) < size:
        raise ValueError(f"parse logits of shape {logits.shape} cannot hold {index.size} tokens "
                         f"and <ROOT>")
    first, _ = subword_syntax.word_spans(index)
    num_words = first.size
    # Node of every position: 0 = ROOT, w + 1 = word w.
    nodes = np.concatenate([[0], index + 1])
    rows = logits[first + 1, :size]
    scores = np.where(nodes[None, :] == np.arange(1, num_words + 1)[:, None], -np.inf, rows)
    top = scores.max(axis=1, keepdims=True)
    log_probs = scores - top - np.log(np.exp(scores - top).sum(axis=1, keepdims=True))
    # Positions of one node are contiguous: ROOT, then each word's subwords.
    starts = np.concatenate([[0], first + 1])
    with np.errstate(divide="ignore"):
        words = np.logaddexp.reduceat(log_probs, starts, axis=1)
    return np.concatenate([np.zeros((1, num_words + 1)), words], axis=0)


def decode_word_heads(head_logits: np.ndarray, word_index, method: str = "argmax",
                      root_prefixed: bool = True) -> np.ndarray:
    """The predicted heads of one sentence's words from a head over its tokens.

    Args:
        head_logits: [S', S'] scores: `<ROOT>`-prefixed (`"parse_logits"`),
            or over the tokens alone with `root_prefixed=False` (SISA).
        word_index: the subword-to-word map, length T; `np.arange(n)` for
            word-level sources.
        method: `"argmax"` or `"mst"`.
        root_prefixed: the frame of `head_logits`.

    Returns:
        int32 [n], 1-based word heads, 0 = ROOT.
    """
    if method not in PARSE_DECODERS:
        raise ValueError(f"unknown parse decoder {method!r}; choose one of {', '.join(PARSE_DECODERS)}")
    if not root_prefixed:
        head_logits = root_prefixed_logits(head_logits, word_index)
    scores = word_head_log_probs(head_logits, word_index)
    if method == "argmax":
        return best_heads(scores)
    return maximum_spanning_tree(scores)
