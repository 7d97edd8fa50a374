"""Bracketed (Penn-style) source trees: the `# constituency` CoNLL-U comment, per-split
tree files, their storage as per-constituent features, and MG-SA and NSD reading their
phrase structure from them instead of from the dependency tree."""

from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
from absl import flags

from syntax_t2t.problems.synthetic import SyntheticSyntaxReorder
from syntax_t2t import criteria, registry
from syntax_t2t.cli import registration
from syntax_t2t.data import phrases
from syntax_t2t.data.conllu_reader import read_conllu
from syntax_t2t.data.bracketed import (CONSTITUENCY_COMMENT, parse_bracketed, tree_from_constituent_features)
from syntax_t2t.data.dependency_phrases import phrase_structure_from_dependencies
from syntax_t2t.data.tree import DependencyTree
from syntax_t2t.decoding.decoder import pad_batch
from syntax_t2t.errors import InputError, SkipCounter
from syntax_t2t.models import mgsa, nsd
from syntax_t2t.problem import DEV, SPLITS, TEST, TRAIN, Problem, RawDataError

SIZES = {"train_size": 24, "dev_size": 4, "test_size": 4, "max_length": 8}


def conllu(words, heads, comment=None):
    lines = [f"# constituency = {comment}"] if comment is not None else []
    for index, (word, head) in enumerate(zip(words, heads), start=1):
        lines.append("\t".join([str(index), word, word, "X", "_", "_", str(head),
                                "root" if head == 0 else "dep", "_", "_"]))
    return "\n".join(["# sent_id = s"] + lines) + "\n\n"


def test_conllu_comment_is_checked_and_kept(tmp_path):
    path = tmp_path / "a.conllu"
    tree_text = "(ROOT (S (NP (PRP She)) (VP (VBD saw) (PRN (-LRB- -LRB-) (NN it) (-RRB- -RRB-)))))"
    path.write_text(conllu(["She", "saw", "(", "it", ")"], [2, 0, 4, 2, 4], tree_text))
    [tree] = read_conllu(path)
    assert tree.comments[CONSTITUENCY_COMMENT] == tree_text


@pytest.mark.parametrize("comment,message", [
    ("(S (NP She) (VP saw)", "malformed brackets"),
    ("(S (NP She) (VP sees))", "word 2 of the bracketed tree is 'sees' but the sentence has 'saw'"),
    ("(S (NP She))", "the bracketed tree has 1 words but the sentence has 2"),
])
def test_bad_conllu_comments_name_file_and_line(tmp_path, comment, message):
    path = tmp_path / "bad.conllu"
    path.write_text(conllu(["a"], [0]) + conllu(["She", "saw"], [2, 0], comment))
    with pytest.raises(InputError, match=message) as caught:
        list(read_conllu(path))
    assert caught.value.path == str(path) and caught.value.line == 5  # the comment's line
    skip = SkipCounter()
    assert len(list(read_conllu(path, skip=skip))) == 1 and skip.total == 1


def right_branching(tokens):
    """(S (T w1) (X (T w2) (X ... (T wn)))): a bracketing unlike the dependency-derived one."""
    inner = f"(T {tokens[-1]})"
    for word in reversed(tokens[:-1]):
        inner = f"(X (T {word}) {inner})"
    return "(S" + inner[2:] if len(tokens) > 1 else f"(S {inner})"


def write_trees(tmp_dir, problem, splits=SPLITS, tree_of=right_branching, split_lines=False):
    for split in splits:
        trees = [tree_of(list(source.tokens))
                 for source, _ in problem.generate_samples(None, split, None)]
        separator = "\n" if not split_lines else "\n\n"
        text = separator.join(t.replace(") (", ")\n (") if split_lines else t for t in trees)
        (Path(tmp_dir) / f"{problem.name}.{split}.trees").write_text(text + "\n")


@pytest.fixture(scope="module")
def bracketed_data(tmp_path_factory):
    registration.import_all()
    raw = tmp_path_factory.mktemp("raw")
    data = tmp_path_factory.mktemp("data")
    problem = SyntheticSyntaxReorder(**SIZES)
    write_trees(raw, problem, split_lines=True)  # trees over several lines are read too
    record = problem.generate_data(str(data), str(raw))
    return problem, data, record


def test_tree_files_become_per_constituent_features(bracketed_data):
    problem, data, record = bracketed_data
    assert record["feature_keys"][-3:] == ["src_const_start", "src_const_end", "src_const_label"]
    labels = problem.load_vocabularies(str(data))["const"]
    assert {"S", "X"} <= set(labels.tokens)
    hparams = registry.hparams("transformer_tiny")
    batch = next(iter(problem.dataset("eval", str(data), hparams)))
    assert batch["src_const_start"].shape[1] == 2 * batch["inputs"].shape[1]
    for row in range(batch["inputs"].shape[0]):
        words = problem.decode_inputs(batch["inputs"][row].numpy())
        expected = parse_bracketed(right_branching(words))
        n = len(words)
        tree = tree_from_constituent_features(
            batch["src_const_start"][row], batch["src_const_end"][row],
            [labels.tokens[i] for i in batch["src_const_label"][row].numpy()], n)
        np.testing.assert_array_equal(tree.spans, expected.spans)
        assert tree.labels == expected.labels


def test_decoding_sources_carry_their_trees(bracketed_data):
    problem, data, _ = bracketed_data
    trees = list(read_conllu(problem.raw_paths(str(data), TEST)["source"]))
    assert len(trees) == SIZES["test_size"]
    for tree in trees:
        assert tree.comments[CONSTITUENCY_COMMENT] == right_branching(list(tree.tokens))
    vocabularies = problem.load_vocabularies(str(data))
    example = problem.encode_source(trees[0])
    assert example["src_const_label"] == vocabularies["const"].encode(
        parse_bracketed(right_branching(list(trees[0].tokens))).labels)


def batch_of(problem, data, mode="eval"):
    dataset = problem.dataset(mode, str(data), registry.hparams("transformer_tiny"))
    return {key: value.numpy() for key, value in next(iter(dataset)).items()}


@pytest.mark.parametrize("kind", sorted(nsd.DISTANCES))
def test_nsd_reads_the_bracketed_phrase_structure(bracketed_data, kind):
    problem, data, _ = bracketed_data
    hparams = registry.hparams("transformer_tiny").override(
        dict(phrase_structure="bracketed", nsd_distance=kind, nsd_input="sum"))
    model = registry.model("nsd")(hparams, problem.vocab_sizes(str(data)))
    assert {"src_const_start", "src_const_end"} <= model.train_features
    batch = batch_of(problem, data)
    distances = model.derived_features.compute(batch)[nsd.DISTANCE_KEY]
    differs = False
    for row in range(len(distances)):
        words = problem.decode_inputs(batch["inputs"][row])
        n = len(words)
        expected = nsd.DISTANCES[kind](parse_bracketed(right_branching(words)))
        np.testing.assert_array_equal(distances[row, :n], expected)
        derived = nsd.DISTANCES[kind](phrase_structure_from_dependencies(
            DependencyTree.from_heads(words, batch["src_heads"][row, :n])))
        differs |= not np.array_equal(derived, expected)
    assert differs  # the bracketed trees are not the dependency-derived ones
    # The model reads the distances the host derives (trainer, decoder); it never computes them.
    length = batch["inputs"].shape[1]
    with pytest.raises(KeyError, match="nsd_distances.*src_heads, src_const_start, src_const_end"):
        model.source_distance_ids(batch, length)
    ids = model.source_distance_ids({**batch, nsd.DISTANCE_KEY: distances}, length).numpy()
    k = hparams.nsd_max_distance
    words = batch["src_heads"] >= 0
    np.testing.assert_array_equal(ids[words], np.clip(distances[words], -k, k) + k + 1)


def test_mgsa_reads_the_bracketed_phrase_structure(bracketed_data):
    problem, data, _ = bracketed_data
    sizes = problem.vocab_sizes(str(data))
    hparams = registry.hparams("transformer_tiny").override(
        dict(phrase_structure="bracketed", mgsa_levels=2))
    model = registry.model("mgsa")(hparams, sizes)
    assert {"src_const_start", "src_const_end", "src_const_label"} <= model.decode_features
    assert model.tag_classifier.units == sizes["upos"] + sizes["const"]
    batch = batch_of(problem, data)
    phrase_ids, tag_heads, tag_kinds = mgsa.syntactic_phrase_features(
        batch["src_heads"], 2, batch["src_const_start"], batch["src_const_end"],
        batch["src_const_label"])
    tags = mgsa.phrase_tags(tag_heads, tag_kinds, batch["src_upos"], sizes["upos"]).numpy()
    labels = problem.load_vocabularies(str(data))["const"]
    upos = problem.load_vocabularies(str(data))["upos"]
    for row in range(len(phrase_ids)):
        words = problem.decode_inputs(batch["inputs"][row])
        n = len(words)
        tree = parse_bracketed(right_branching(words))
        expected = phrases.syntactic_partitions(tree, 2)
        np.testing.assert_array_equal(phrase_ids[row, :, :n], expected.phrase_ids)
        for level, level_labels in enumerate(expected.phrase_labels):
            for p, label in enumerate(level_labels):
                if label == "T":  # a single word: its UPOS tag
                    word = int(np.flatnonzero(expected.phrase_ids[level] == p)[0])
                    assert tags[row, level, p] == batch["src_upos"][row, word]
                    assert upos.tokens[tags[row, level, p]] != "<UNK>"
                else:  # a constituent: its own label, after the UPOS tags
                    assert tags[row, level, p] == sizes["upos"] + labels.token_to_id(label)
    # The model reads the partitions the host derives from the same trees.
    derived = model.derived_features.compute(batch)
    for level in range(2):
        np.testing.assert_array_equal(derived[f"mgsa_phrases_{level + 1}"], phrase_ids[:, level])
    batch.update(derived)
    outputs = model({key: tf.constant(value) for key, value in batch.items()})
    assert np.isfinite(criteria.for_model(model)(batch, outputs)["phrase_tag"])


def test_tree_file_errors_name_file_and_line(tmp_path):
    problem = SyntheticSyntaxReorder(**SIZES)
    write_trees(tmp_path, problem)
    train = tmp_path / f"{problem.name}.train.trees"
    original = train.read_text().split("\n")
    lines = list(original)
    lines[2] = lines[2].replace("(T ", "(T x", 1)  # tree 3's first word no longer fits
    train.write_text("\n".join(lines))
    with pytest.raises(InputError, match="word 1 of the bracketed tree is 'x") as caught:
        problem.generate_data(str(tmp_path / "data"), str(tmp_path))
    assert caught.value.path == str(train) and caught.value.line == 3
    train.write_text("\n".join(original[:5]))
    with pytest.raises(InputError, match="fewer trees than synthetic_syntax_reorder has"):
        problem.generate_data(str(tmp_path / "data"), str(tmp_path))
    train.write_text("(S (T a)\n")
    with pytest.raises(InputError, match="not closed") as caught:
        problem.generate_data(str(tmp_path / "data"), str(tmp_path))
    assert caught.value.line == 1


def test_a_partial_set_of_tree_files_is_not_read(tmp_path):
    problem = SyntheticSyntaxReorder(**SIZES)
    write_trees(tmp_path, problem, splits=(TRAIN,))  # as C&H problems use them
    record = problem.generate_data(str(tmp_path / "data"), str(tmp_path))
    assert "src_const_start" not in record["feature_keys"]
    assert "const" not in problem.load_vocabularies(str(tmp_path / "data"))


class Mixed(Problem):
    num_shards = {TRAIN: 1, DEV: 1, TEST: 1}
    with_trees = (True, False)

    def generate_samples(self, tmp_dir, split, skip):
        for index, tree in enumerate(self.with_trees):
            comments = {CONSTITUENCY_COMMENT: "(S (T a) (T b))"} if tree else {}
            yield DependencyTree.from_heads(["a", "b"], [0, 1], comments=comments), ["x"]


def test_every_training_source_or_none_carries_a_tree(tmp_path):
    with pytest.raises(RawDataError, match="1 of 2 training sources carry a bracketed tree"):
        Mixed().generate_data(str(tmp_path), None)


def test_subword_sources_get_subword_spans(tmp_path):
    class Subwords(Mixed):
        subwords = "joint"
        subword_vocab_size = 40
        with_trees = (True,)

        def generate_samples(self, tmp_dir, split, skip):
            words = ["unbelievable", "dogs", "bark"]
            yield DependencyTree.from_heads(words, [2, 3, 0], comments={
                CONSTITUENCY_COMMENT: "(S (NP (A unbelievable) (N dogs)) (V bark))"}), ["y"]

    problem = Subwords()
    problem.generate_data(str(tmp_path), None)
    source, _ = next(iter(problem.generate_samples(None, TRAIN, None)))
    example = problem.encode_source(source)
    positions = np.array(example["src_word_position"])
    assert len(positions) > 3  # the words were really split
    last = {word: int(np.flatnonzero(positions == word)[-1]) + 1 for word in (1, 2, 3)}
    # S covers every subword; NP the subwords of words 1 and 2.
    assert example["src_const_start"] == [1, 1]
    assert example["src_const_end"] == [last[3], last[2]]


def test_decoding_batches_keep_room_for_the_constituents():
    # Two words: at most 2 * 2 + 2 = 6 constituents.
    examples = [{"inputs": [5, 6, 1], "src_const_start": [1, 1, 2, 3, 1, 2]},
                {"inputs": [5, 1], "src_const_start": [1]}]
    batch = pad_batch(examples, ["inputs", "src_const_start"])
    assert batch["inputs"].shape == (2, 3) and batch["src_const_start"].shape == (2, 6)
    assert batch["src_const_start"].tolist() == [[1, 1, 2, 3, 1, 2], [1, 0, 0, 0, 0, 0]]


FLAGS = flags.FLAGS


@pytest.mark.slow
@pytest.mark.parametrize("model,hparams", [
    ("mgsa", "phrase_structure=bracketed"),
    ("nsd", "phrase_structure=bracketed,nsd_distance=relative,nsd_input=linear,nsd_output=true"),
])
def test_trains_and_decodes_with_bracketed_trees(bracketed_data, tmp_path, model, hparams):
    from end_to_end import train_then_decode  # also defines bin/train's and bin/decode's flags
    if not FLAGS.is_parsed():
        FLAGS(["train"])
    problem, data, _ = bracketed_data
    tiny = ("hidden_size=16,filter_size=32,num_heads=4,num_encoder_layers=1,num_decoder_layers=1,"
            "batch_size=256,max_length=40,learning_rate_warmup_steps=10")
    test_file = problem.raw_paths(str(data), TEST)["source"]  # CoNLL-U with the trees
    train_then_decode(problem.name, model, f"{tiny},{hparams}", data, tmp_path / "run",
                      Path(test_file), tmp_path / "out.txt", SIZES["test_size"])
