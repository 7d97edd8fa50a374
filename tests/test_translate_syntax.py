"""translate_syntax: a user's own files (raw, tokenised or CoNLL-U sources) through datagen, train and decode."""

import gzip
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from parser_fixtures import MULTI30K, untrained_pipeline_dir
from syntax_t2t import problem_options, registry
from syntax_t2t.cli import registration
from syntax_t2t.data.conllu_reader import read_conllu, write_conllu
from syntax_t2t.data.tree import DependencyTree
from syntax_t2t.decoding.inputs import SourceSentence
from syntax_t2t.decoding.source_parsing import with_parsed_sources
from syntax_t2t.errors import InputError
from syntax_t2t.problem import RawDataError

REPO = Path(__file__).resolve().parents[1]
WORDS = ["pes", "kočka", "běží", "spí", "rychle", "doma", "velký", "malá"]
ENGLISH = {"pes": "dog", "kočka": "cat", "běží": "runs", "spí": "sleeps", "rychle": "fast",
           "doma": "home", "velký": "big", "malá": "small"}


@pytest.fixture(scope="module")
def parser_dir(tmp_path_factory):
    return untrained_pipeline_dir(tmp_path_factory.mktemp("parser") / "cs")


def sentences(count, seed):
    rng = np.random.default_rng(seed)
    return [list(rng.choice(WORDS, size=rng.integers(2, 6))) for _ in range(count)]


def write_files(directory, sizes=(40, 6, 5), source_suffix="", gzip_train=False):
    """`<split>.cs` (raw: a capital and a full stop) and `<split>.en`; returns the source words."""
    directory.mkdir(parents=True, exist_ok=True)
    words = {}
    for split, size in zip(("train", "dev", "test"), sizes):
        words[split] = sentences(size, seed=len(split) + size)
        source = "".join(" ".join(s).capitalize() + ".\n" for s in words[split])
        target = "".join(" ".join(ENGLISH[w] for w in s).capitalize() + ".\n" for s in words[split])
        opener = gzip.open if gzip_train and split == "train" else open
        suffix = ".gz" if gzip_train and split == "train" else ""
        with opener(directory / f"{split}.cs{source_suffix}{suffix}", "wt", encoding="utf-8") as f:
            f.write(source)
        (directory / f"{split}.en").write_text(target, encoding="utf-8")
    return words


def problem(**options):
    registration.import_all()
    return registry.problems.get("translate_syntax")(**options)


def test_raw_sources_are_parsed_and_raw_targets_tokenised(tmp_path, parser_dir):
    words = write_files(tmp_path / "raw", gzip_train=True)
    options = dict(source_language="cs", target_language="en", parser=f"spacy:{parser_dir}")
    samples = list(problem(**options).generate_samples(str(tmp_path / "raw"), "train", None))
    assert len(samples) == 40
    tree, target = samples[0]
    # spaCy's tokenizer splits the full stop off; so does the target's.
    assert list(tree.tokens) == [words["train"][0][0].capitalize()] + words["train"][0][1:] + ["."]
    assert target[-1] == "." and target[0] == ENGLISH[words["train"][0][0]].capitalize()
    assert problem(**options).detokenize_target(target) == " ".join(target[:-1]) + "."


def test_datagen_records_the_options_and_decode_parses_plain_text(tmp_path, parser_dir):
    write_files(tmp_path / "raw")
    text = f"source_language=cs,target_language=en,parser=spacy:{parser_dir}"
    registration.import_all()
    given = problem_options.parse(registry.problems.get("translate_syntax"), text)
    raw_files = sorted(os.listdir(tmp_path / "raw"))
    problem(**given).generate_data(str(tmp_path / "data"), str(tmp_path / "raw"))
    # The parse caches go under --data_dir; the user's raw-data directory is left as it was (#34 item 9).
    assert sorted(os.listdir(tmp_path / "raw")) == raw_files
    assert sorted(name.split(".")[0] for name in os.listdir(tmp_path / "data" / "parses")) == [
        "dev", "test", "train"]
    restored = problem_options.problem_for_data("translate_syntax", str(tmp_path / "data"))
    assert (restored.source_language, restored.parser) == ("cs", f"spacy:{parser_dir}")
    inputs = [SourceSentence(["Pes", "běží", "."], "new:1"), SourceSentence(None, "new:2", "empty"),
              SourceSentence(["Kočka", "spí", "."], "new:3")]
    parsed = with_parsed_sources(inputs, restored)
    assert [s.has_tree for s in parsed] == [True, False, True]
    assert list(parsed[2].source.tokens) == ["Kočka", "spí", "."]


def test_tokenised_and_conllu_sources(tmp_path, parser_dir):
    words = write_files(tmp_path / "raw", source_suffix="")
    tokens = problem(source_language="cs", target_language="en", source_format="tokens",
                     target_format="tokens", parser=f"spacy:{parser_dir}")
    tree, target = next(tokens.generate_samples(str(tmp_path / "raw"), "dev", None))
    # Tokenised text is kept as it is: the full stop stays attached.
    assert tree.tokens[-1].endswith(".") and target[-1].endswith(".")

    trees = [DependencyTree(tokens=tuple(s), heads=np.array([0] + [1] * (len(s) - 1)),
                            labels=("root",) + ("dep",) * (len(s) - 1), lemmas=("_",) * len(s),
                            upos=("NOUN",) * len(s), xpos=("_",) * len(s))
             for s in words["test"]]
    conllu_dir = tmp_path / "conllu"
    conllu_dir.mkdir()
    write_conllu(trees, conllu_dir / "test.cs.conllu")
    (conllu_dir / "test.en").write_text((tmp_path / "raw" / "test.en").read_text())
    given = problem(source_language="cs", target_language="en", source_format="conllu",
                    files=str(conllu_dir))
    samples = list(given.generate_samples(str(tmp_path / "elsewhere"), "test", None))
    assert [s[0] for s in samples] == list(read_conllu(conllu_dir / "test.cs.conllu"))
    with open(conllu_dir / "test.en", "a", encoding="utf-8") as extra:
        extra.write("One more.\n")
    with pytest.raises(InputError, match=r"test\.en:6: .* has only 5 sentences"):
        list(given.generate_samples(str(tmp_path), "test", None))


def test_a_missing_file_of_any_split_is_named_before_the_parser_loads(tmp_path):
    write_files(tmp_path / "raw")
    (tmp_path / "raw" / "dev.en").unlink()
    given = problem(source_language="cs", target_language="en",
                    parser=f"spacy:{tmp_path / 'no_such_parser'}")
    with pytest.raises(RawDataError, match=r"no target file of the dev split"):
        next(given.generate_samples(str(tmp_path / "raw"), "train", None))


def test_missing_languages_files_and_bad_formats_are_named(tmp_path):
    with pytest.raises(RawDataError, match="needs the options source_language and target_language"):
        list(problem().generate_samples(str(tmp_path), "train", None))
    with pytest.raises(RawDataError, match=r"no source file of the dev split in .* \(looked for "
                                           r"dev\.cs, dev\.cs\.gz, valid\.cs"):
        list(problem(source_language="cs", target_language="en").generate_samples(
            str(tmp_path), "dev", None))
    with pytest.raises(ValueError, match="source_format='xml'; expected text, tokens, conllu"):
        problem(source_format="xml")


@pytest.mark.slow
@pytest.mark.real_data
def test_three_commands_on_multi30k_lines(tmp_path, parser_dir):
    """README's three commands (datagen, train, decode) and the test BLEU, on 300 Multi30k lines."""
    if not (MULTI30K / "train.cs.gz").is_file():
        pytest.skip(f"real data {MULTI30K} is absent")
    raw = tmp_path / "raw"
    raw.mkdir()
    for stem, split, count in (("train", "train", 300), ("val", "dev", 30),
                               ("test_2016_flickr", "test", 20)):
        for language in ("cs", "en"):
            with gzip.open(MULTI30K / f"{stem}.{language}.gz", "rt", encoding="utf-8") as f:
                lines = [next(f) for _ in range(count)]
            (raw / f"{split}.{language}").write_text("".join(lines), encoding="utf-8")
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])

    def run(tool, *args):
        result = subprocess.run([str(REPO / "bin" / tool), *args], capture_output=True, text=True,
                                env=env, timeout=900)
        assert result.returncode == 0, result.stderr[-3000:]
        return result.stdout

    data, out = str(tmp_path / "data"), str(tmp_path / "run")
    run("datagen", "--problem=translate_syntax", f"--data_dir={data}", f"--tmp_dir={raw}",
        "--problem_options=source_language=cs,target_language=en", f"--parser=spacy:{parser_dir}")
    run("train", "--problem=translate_syntax", f"--data_dir={data}", "--model=dep_parse",
        "--hparams_set=transformer_tiny", "--hparams=hidden_size=32,filter_size=64,batch_size=512",
        "--train_steps=20", "--eval_every=20", f"--output_dir={out}")
    # Raw Czech in, parsed with the recorded parser for the tree-reading model.
    run("decode", "--problem=translate_syntax", f"--data_dir={data}", f"--output_dir={out}",
        f"--decode_from_file={raw / 'test.cs'}", f"--decode_to_file={tmp_path / 'test.hyp'}",
        "--decode_input_format=text", "--detokenize")
    hypotheses = (tmp_path / "test.hyp").read_text(encoding="utf-8").splitlines()
    assert len(hypotheses) == 20
    scores = run("evaluate", f"--references={raw / 'test.en'}",
                 f"--hypotheses={tmp_path / 'test.hyp'}")
    assert "BLEU" in scores
