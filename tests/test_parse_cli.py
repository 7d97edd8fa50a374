"""bin/parse: CoNLL-U, pre-tokenised and raw-text input through the parser adapters."""

import subprocess
import sys
from pathlib import Path

from parser_fixtures import untrained_pipeline_dir

from syntax_t2t.data.conllu_reader import read_conllu, write_conllu
from syntax_t2t.data.tree import DependencyTree
from syntax_t2t.parsing import parse_cache
from syntax_t2t.parsing.spacy_adapter import SpacyParser

REPO = Path(__file__).resolve().parents[1]

GOLD = [DependencyTree.from_heads(["Pes", "štěká", "."], [2, 0, 2], labels=["nsubj", "root", "punct"],
                                  comments={"sent_id": "a-1", "text": "Pes štěká."}),
        DependencyTree.from_heads(["Kočky", "spí", "25 000", "let"], [2, 0, 4, 2],
                                  labels=["nsubj", "root", "nummod", "obl"],
                                  comments={"sent_id": "a-2", "text": "Kočky spí 25 000 let"})]


def run_parse(tmp_path, *flags):
    model = untrained_pipeline_dir(tmp_path / "model")
    return subprocess.run([sys.executable, str(REPO / "bin" / "parse"), f"--parser=spacy:{model}",
                           *flags], capture_output=True, text=True, cwd=REPO, timeout=300)


def test_conllu_input_keeps_words_and_comments_so_it_can_be_scored(tmp_path):
    gold = tmp_path / "gold.conllu"
    write_conllu(GOLD, gold)
    output = tmp_path / "parsed.conllu.gz"
    result = run_parse(tmp_path, f"--input_file={gold}", "--input_format=conllu",
                       f"--output_file={output}")
    assert result.returncode == 0, result.stderr[-2000:]
    parsed = list(read_conllu(output))
    assert [tree.tokens for tree in parsed] == [tree.tokens for tree in GOLD]
    assert [tree.comments["sent_id"] for tree in parsed] == ["a-1", "a-2"]
    for tree in parsed:  # a tree over exactly those words, one word on ROOT at least
        assert len(tree.heads) == len(tree.tokens) and 0 in tree.heads
        assert all(0 <= head <= len(tree.tokens) for head in tree.heads)


def test_token_lines_are_parsed_as_given_and_numbered_by_line(tmp_path):
    source = tmp_path / "tokens.txt"
    source.write_text("Pes štěká .\n\nKočky , psi spí\n", encoding="utf-8")
    parser = SpacyParser.load(untrained_pipeline_dir(tmp_path / "model"))
    parsed = list(parse_cache.parse_lines(parser, source, pretokenized=True)[1])
    assert [tree.tokens for tree in parsed] == [("Pes", "štěká", "."), ("Kočky", ",", "psi", "spí")]
    assert [tree.comments["source_line"] for tree in parsed] == ["1", "3"]


def test_a_missing_parser_model_is_a_one_line_error_and_writes_nothing(tmp_path):
    source = tmp_path / "text.txt"
    source.write_text("Pes štěká.\n", encoding="utf-8")
    output = tmp_path / "parsed.conllu"
    result = subprocess.run([sys.executable, str(REPO / "bin" / "parse"),
                             f"--parser=spacy:{tmp_path / 'no_such_model'}",
                             f"--input_file={source}", f"--output_file={output}"],
                            capture_output=True, text=True, cwd=REPO, timeout=300)
    assert result.returncode != 0
    assert "no_such_model" in result.stderr and "Traceback" not in result.stderr
    assert not output.exists()


def test_a_bad_conllu_input_names_its_file_and_line(tmp_path):
    gold = tmp_path / "bad.conllu"
    gold.write_text("1\tPes\tpes\tNOUN\t_\t_\t7\tnsubj\t_\t_\n\n", encoding="utf-8")
    result = run_parse(tmp_path, f"--input_file={gold}", "--input_format=conllu",
                       f"--output_file={tmp_path / 'out.conllu'}")
    assert result.returncode != 0
    assert f"{gold}:1" in result.stderr and "Traceback" not in result.stderr


def test_lines_that_get_no_tree_are_counted_and_the_first_named(tmp_path):
    """Issue 18's silent partial work: a blank and an undecodable line are reported, not dropped silently."""
    source = tmp_path / "raw.txt"
    source.write_bytes("Pes štěká.\n\nKočky \xff spí.\n".encode("utf-8").replace(b"\xc3\xbf", b"\xff")
                       + "Psi spí.\n\n".encode("utf-8"))
    output = tmp_path / "parsed.conllu"
    result = run_parse(tmp_path, f"--input_file={source}", "--input_format=text",
                       f"--output_file={output}")
    assert result.returncode == 0, result.stderr[-2000:]
    assert [tree.tokens[0] for tree in read_conllu(output)] == ["Pes", "Psi"]
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning:")]
    assert any("2 input line(s) got no tree" in line and f"{source}:2" in line
               for line in warnings), warnings
    assert any("1 input line(s) got no tree" in line and f"{source}:3" in line
               for line in warnings), warnings
