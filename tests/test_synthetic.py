"""Tests for problems.synthetic (`synthetic_syntax_reorder`)."""

import collections

import numpy as np
import pytest

from syntax_t2t.problems import synthetic
from syntax_t2t.problems.synthetic import (LABEL_OF, SOURCE_RANK, TARGET_RANK, Lexicon,
                                SyntheticSyntaxReorder, target_order, translate)
from syntax_t2t import registry
from syntax_t2t.cli import registration
from syntax_t2t.data.tree import DependencyTree


def _samples(split="train", **options):
    return list(SyntheticSyntaxReorder(**options).generate_samples(None, split, None))


def test_is_registered():
    registration.import_all()
    assert isinstance(registry.problem("synthetic_syntax_reorder"), SyntheticSyntaxReorder)


def test_deterministic_given_the_seed_and_different_across_seeds_and_splits():
    first = _samples(train_size=200)
    again = _samples(train_size=200)
    assert [(t.tokens, tuple(t.heads), tuple(target)) for t, target in first] == \
           [(t.tokens, tuple(t.heads), tuple(target)) for t, target in again]
    other_seed = _samples(train_size=200, random_seed=2)
    assert [t.tokens for t, _ in other_seed] != [t.tokens for t, _ in first]
    dev = _samples("dev", dev_size=200)
    assert [t.tokens for t, _ in dev] != [t.tokens for t, _ in first]


def test_default_sizes():
    # Their generation speed is bin/bench's business (benchmarks/datagen_speed.py), not a timed test.
    problem = SyntheticSyntaxReorder()
    assert (problem.train_size, problem.dev_size, problem.test_size) == (20_000, 500, 500)
    assert len(_samples(train_size=5_000)) == 5_000


def test_lexicon_is_a_few_hundred_words_with_one_pos_and_translation_each():
    lexicon = Lexicon(0)
    sources = [s for entries in lexicon.words.values() for s, _, _ in entries]
    targets = [t for entries in lexicon.words.values() for _, t, _ in entries]
    assert 200 <= len(sources) <= 400
    assert len(set(sources)) == len(sources) and len(set(targets)) == len(targets)
    assert Lexicon(0).translation == lexicon.translation
    assert Lexicon(1).translation != lexicon.translation


def _is_projective(heads):
    """Naive check: no two arcs cross and no arc covers ROOT's attachment."""
    arcs = [(min(d, h), max(d, h)) for d, h in enumerate(heads, start=1) if h]
    for a, b in arcs:
        for c, d in arcs:
            if a < c < b < d:
                return False
    # Every word between a head and its dependent descends from that head.
    for dependent, head in enumerate(heads, start=1):
        if not head:
            continue
        for between in range(min(dependent, head) + 1, max(dependent, head)):
            node = between
            while node not in (0, head):
                node = heads[node - 1]
            if node != head:
                return False
    return True


def test_trees_follow_the_documented_rules():
    samples = _samples(train_size=1_000, min_length=3, max_length=20)
    lengths = collections.Counter(len(tree) for tree, _ in samples)
    assert min(lengths) == 3 and max(lengths) == 20
    multi_root = 0
    for tree, target in samples:
        heads = tree.heads.tolist()
        assert _is_projective(heads)
        multi_root += heads.count(0) > 1
        for position, (head, label, upos) in enumerate(zip(heads, tree.labels, tree.upos), start=1):
            head_upos = "ROOT" if head == 0 else tree.upos[head - 1]
            # Labels follow from (head POS, dependent POS).
            assert LABEL_OF[(head_upos, upos)] == label
            # Source side: negative ranks before the head, positive after.
            if head:
                assert (position < head) == (SOURCE_RANK[label] < 0)
            # XPOS refines UPOS.
            assert tree.xpos[position - 1].split("-")[0] == upos
        assert len(target) == len(tree)
    assert 0 < multi_root < 0.15 * len(samples)


def test_each_word_has_one_part_of_speech():
    pos_of = collections.defaultdict(set)
    for tree, _ in _samples(train_size=500):
        for token, upos, xpos in zip(tree.tokens, tree.upos, tree.xpos):
            pos_of[token].add((upos, xpos))
    assert all(len(tags) == 1 for tags in pos_of.values())


def _tree(words, heads, lexicon):
    """A source tree over words given as (UPOS, lexicon index)."""
    tokens = [lexicon.words[upos][index][0] for upos, index in words]
    upos = [u for u, _ in words]
    labels = [LABEL_OF[("ROOT" if h == 0 else upos[h - 1], u)] for u, h in zip(upos, heads)]
    return DependencyTree.from_heads(tokens, np.array(heads), labels=labels, upos=upos)


def test_target_order_worked_example():
    lexicon = Lexicon(0)
    # Source (SVO): PRON ADV VERB DET ADJ NOUN ADP NOUN .
    #   nsubj advmod root det amod obj case nmod punct
    words = [("PRON", 0), ("ADV", 0), ("VERB", 0), ("DET", 0), ("ADJ", 0), ("NOUN", 0),
             ("ADP", 0), ("NOUN", 1), ("PUNCT", 0)]
    heads = [3, 3, 0, 6, 6, 3, 8, 6, 0]
    tree = _tree(words, heads, lexicon)
    # Target (SOV): nsubj [obj: [nmod: NOUN ADP] NOUN ADJ DET] VERB advmod .
    assert target_order(tree) == [0, 7, 6, 5, 4, 3, 2, 1, 8]
    assert translate(tree, lexicon) == [lexicon.translation[tree.tokens[i]]
                                        for i in [0, 7, 6, 5, 4, 3, 2, 1, 8]]


def test_same_surface_different_trees_give_different_targets():
    lexicon = Lexicon(0)
    # VERB NOUN ADP NOUN: the PP modifies the object noun (nmod) ...
    words = [("VERB", 0), ("NOUN", 0), ("ADP", 0), ("NOUN", 1)]
    nmod = _tree(words, [0, 1, 4, 2], lexicon)
    # ... or a second object of the verb (a different tree, same words).
    obj = _tree(words, [0, 1, 4, 1], lexicon)
    assert nmod.tokens == obj.tokens
    assert translate(nmod, lexicon) != translate(obj, lexicon)
    assert target_order(nmod) == [3, 2, 1, 0]   # [[NOUN ADP] NOUN] VERB
    assert target_order(obj) == [1, 3, 2, 0]    # NOUN [NOUN ADP] VERB


def test_source_order_does_not_determine_target_order():
    """Subject and adverb swap freely in the source; the target fixes their order."""
    orders = collections.Counter()
    for tree, target in _samples(train_size=2_000):
        labels = list(tree.labels)
        if labels.count("nsubj") == 1 and "advmod" in labels:
            subject, adverb = labels.index("nsubj"), labels.index("advmod")
            if tree.heads[subject] == tree.heads[adverb]:
                source_first = "nsubj" if subject < adverb else "advmod"
                order = target_order(tree)
                target_first = "nsubj" if order.index(subject) < order.index(adverb) else "advmod"
                orders[(source_first, target_first)] += 1
    # Both source orders occur, and the target always puts the subject first
    # (rank -3 before the head, adverbs +1 after it).
    assert orders[("nsubj", "nsubj")] > 0 and orders[("advmod", "nsubj")] > 0
    assert orders[("nsubj", "advmod")] == orders[("advmod", "advmod")] == 0
    assert TARGET_RANK["nsubj"] < 0 < TARGET_RANK["advmod"]


def test_options_are_checked():
    with pytest.raises(ValueError, match="min_length <= max_length"):
        SyntheticSyntaxReorder(min_length=5, max_length=4)
    with pytest.raises(TypeError, match="has no option 'sizes'"):
        SyntheticSyntaxReorder(sizes=3)
    assert synthetic.LEXICON_SIZES["NOUN"] == 120


def _rule_parse(upos):
    """A hand-written parser from the part-of-speech sequence alone (the docstring's rules)."""
    n = len(upos)

    def next_of(i, tags):
        return next(j for j in range(i + 1, n) if upos[j] in tags) + 1

    def previous_of(i, tags):
        return next(j for j in range(i - 1, -1, -1) if upos[j] in tags) + 1

    heads = []
    for i, tag in enumerate(upos):
        if tag == "PUNCT":
            heads.append(0)
        elif tag in ("DET", "ADJ", "ADP"):
            heads.append(next_of(i, {"NOUN"}))
        elif tag == "PRON":
            heads.append(next_of(i, {"VERB"}))
        elif tag == "ADV":
            heads.append(next_of(i, {"ADJ", "VERB"}))
        elif tag == "VERB":
            heads.append(previous_of(i, {"VERB"}) if "VERB" in upos[:i] else 0)
        else:  # NOUN: with its own preposition an nmod of the noun before, else an object
            j = i - 1
            while upos[j] in ("DET", "ADJ", "ADV"):
                j -= 1
            heads.append(previous_of(j, {"NOUN"}) if upos[j] == "ADP" else previous_of(i, {"VERB"}))
    return heads


def test_source_trees_are_recoverable_from_the_surface():
    correct = total = 0
    for tree, _ in _samples(train_size=1_000):
        predicted = _rule_parse(tree.upos)
        correct += sum(p == g for p, g in zip(predicted, tree.heads.tolist()))
        total += len(tree)
    assert correct == total
