"""Inputs that are streams: every reader reads a pipe, `/dev/stdin` or `-` exactly as the file.

A stream can be read only once, while readers open their input several
times (sniffing gzip, guessing the format, numbering sentences);
`io_utils.readable_path` spools a stream at its first opening. The table
feeds each reader its input as a file, as a real pipe (`/dev/fd/N`, what
bash's `<(...)` gives), through `-` (standard input) and, gzip-compressed,
through a pipe, and asserts that all read the same. The executables
(`bin/decode`, `bin/evaluate`) get real process substitutions and
`/dev/stdin` from bash.
"""

import contextlib
import dataclasses
import gzip
import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Callable
from unittest import mock

import pytest
from bad_input_harness import GOOD_CONLLU, conllu_sentence, czeng_line, generated_data, untrained_run

from syntax_t2t.data.conllu_reader import read_conllu
from syntax_t2t.data.czeng_reader import read_czeng
from syntax_t2t.decoding import inputs
from syntax_t2t.data.parse_file import read_parsed
from syntax_t2t.evaluation import attachment, translation
from syntax_t2t.parsing import parse_cache

REPO = Path(__file__).resolve().parents[1]

TEXT = "".join(f"w{i % 7} w{i % 5} w{i % 3}\n" for i in range(5000))  # beyond a pipe's 64 KiB
CONLLU = "".join(conllu_sentence([f"w{i}", "b", "c"][: 1 + i % 3]) for i in range(300)) + GOOD_CONLLU
CZENG = "".join(czeng_line() + "\n" for _ in range(200))


def _tree(tree):
    return tree.tokens, [int(head) for head in tree.heads]


@dataclasses.dataclass(frozen=True)
class Reader:
    """One reader: `read(path)` gives something comparable across sources."""

    id: str
    content: str
    read: Callable


READERS = [
    Reader("text to decode", TEXT,
           lambda path: [(entry.tokens, entry.location.rsplit(":", 1)[1])
                         for entry in inputs.read_sources(path)]),
    Reader("CoNLL-U to decode (format guessed from the content)", CONLLU,
           lambda path: [(entry.tokens, entry.location.rsplit(":", 1)[1])
                         for entry in inputs.read_sources(path)]),
    Reader("CzEng to decode (format guessed from the content)", CZENG,
           lambda path: [(entry.tokens, entry.location.rsplit(":", 1)[1])
                         for entry in inputs.read_sources(path)]),
    Reader("CoNLL-U trees", CONLLU, lambda path: [_tree(tree) for tree in read_conllu(path)]),
    Reader("CzEng sentence pairs", CZENG,
           lambda path: [(_tree(source), _tree(target)) for source, target in read_czeng(path)]),
    Reader("references and hypotheses", TEXT, translation.read_segments),
    Reader("gold parse with sentence lines", CONLLU,
           lambda path: ([_tree(tree) for tree in attachment.read_gold(path)[0]],
                         attachment.read_gold(path)[1])),
    Reader("predicted parses", CONLLU,
           lambda path: [(sentence.tokens, list(sentence.heads), sentence.line)
                         for sentence in read_parsed(path)]),
    Reader("lines to parse", TEXT, lambda path: list(parse_cache.parsable_lines(path))),
]


@contextlib.contextmanager
def pipe_of(data: bytes):
    """A real pipe whose writer thread sends `data`; yields its read end's descriptor."""
    read_end, write_end = os.pipe()

    def send():
        with open(write_end, "wb") as stream:
            stream.write(data)

    writer = threading.Thread(target=send, daemon=True)
    writer.start()
    try:
        yield read_end
    finally:
        writer.join(timeout=30)
        os.close(read_end)


@contextlib.contextmanager
def source(kind, content, tmp_path):
    """The path a reader is given for `content` arriving as `kind`."""
    data = content.encode("utf-8")
    if kind == "file":
        path = tmp_path / "input"
        path.write_bytes(data)
        yield str(path)
    elif kind in ("pipe", "gzip pipe"):
        with pipe_of(gzip.compress(data) if kind == "gzip pipe" else data) as descriptor:
            yield f"/dev/fd/{descriptor}"
    else:  # "-": standard input is the pipe
        with pipe_of(data) as descriptor, open(descriptor, "rb", closefd=False) as stdin, \
                mock.patch.object(sys, "stdin", stdin):
            yield "-"


@pytest.mark.parametrize("kind", ["pipe", "standard input (-)", "gzip pipe"])
@pytest.mark.parametrize("reader", READERS, ids=[reader.id for reader in READERS])
def test_a_stream_reads_as_the_file(reader, kind, tmp_path):
    with source("file", reader.content, tmp_path) as path:
        expected = reader.read(path)
    assert expected, "the table's input must not be empty"
    with source(kind, reader.content, tmp_path) as path:
        assert reader.read(path) == expected


def test_a_directory_as_input_is_a_one_line_error(tmp_path):
    with pytest.raises(ValueError, match=rf"^{tmp_path}: is a directory, not a file$"):
        inputs.read_sources(tmp_path)


# The executables, fed by bash ----------------------------------------------------------

@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("streams")
    return untrained_run(root / "run", generated_data(root / "data"))


def bash(command, tmp_path):
    completed = subprocess.run(["bash", "-c", command], capture_output=True, text=True, cwd=REPO,
                               timeout=300, env=dict(os.environ, PYTHON=sys.executable, T=str(tmp_path)))
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert "Traceback" not in completed.stderr
    return completed


def test_decode_reads_a_process_substitution_and_writes_standard_output(run_dir, tmp_path):
    # 400 lines: the stream bug wrote 199 of them from <(cat ...), and lost 73 from /dev/stdin.
    (tmp_path / "in.txt").write_text("".join(f"a b c{i % 4}\n" for i in range(400)))
    common = f"$PYTHON bin/decode --output_dir={run_dir} --decode_hparams=beam_size=1,extra_length=2"
    from_substitution = bash(f'{common} --decode_from_file=<(cat "$T/in.txt") --decode_to_file=-',
                             tmp_path)
    bash(f'cat "$T/in.txt" | {common} --decode_from_file=/dev/stdin --decode_to_file="$T/out.txt"',
         tmp_path)
    from_file = (tmp_path / "out.txt").read_text(encoding="utf-8")
    assert from_substitution.stdout == from_file
    assert from_file.count("\n") == 400
    assert "decoded 400 sentences to -" in from_substitution.stderr


def test_evaluate_reads_references_hypotheses_and_parses_from_streams(tmp_path):
    (tmp_path / "ref.txt").write_text("a dog runs\nthe cat sleeps here\n")
    (tmp_path / "hyp.txt").write_text("a dog runs\nthe cat sleeps\n")
    (tmp_path / "gold.conllu.gz").write_bytes(gzip.compress(CONLLU.encode("utf-8")))
    (tmp_path / "gold.conllu").write_text(CONLLU)
    flags = ("--bootstrap_samples=0 --parses={parses} --json_output={json} "
             "--references={ref} --hypotheses={hyp} --gold_parse={gold}")
    bash("$PYTHON bin/evaluate " + flags.format(
        parses='"$T/gold.conllu"', json='"$T/files.json"', ref='"$T/ref.txt"', hyp='"$T/hyp.txt"',
        gold='"$T/gold.conllu"'), tmp_path)
    streamed = bash('cat "$T/hyp.txt" | $PYTHON bin/evaluate ' + flags.format(
        parses='<(cat "$T/gold.conllu")', json="-", ref='<(cat "$T/ref.txt")', hyp="/dev/stdin",
        gold='<(zcat "$T/gold.conllu.gz")'), tmp_path)


    from_files = json.loads((tmp_path / "files.json").read_text())
    from_streams = json.loads(streamed.stdout)
    for report in (from_files, from_streams):
        report["translation"].pop("references")
        for system in report["translation"]["systems"] + report["parsing"]["systems"]:
            system.pop("file"), system.pop("name", None)
        report["parsing"].pop("gold")
    assert from_streams == from_files
    assert from_files["parsing"]["systems"][0]["uas"] == 100.0
