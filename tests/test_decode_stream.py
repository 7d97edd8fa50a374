"""Decoding standard input as it arrives: batching, and bin/decode driven through a real pipe."""

import os
import queue
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from absl.testing import flagsaver
from decode_runs import generated_data, save_random_run, small_hparams, write_lines

from syntax_t2t.cli import common, decode
from syntax_t2t.decoding.streaming import line_batches

REPO = Path(__file__).resolve().parents[1]
SETTINGS = "beam_size=2,extra_length=3"
# The first answer includes starting TensorFlow and building the model.
ANSWER_TIMEOUT = 240


def test_full_batches_close_at_once_and_the_last_at_the_end():
    read_end, write_end = os.pipe()
    with os.fdopen(write_end, "wb") as writer:
        writer.write(b"a\nb\r\nc\nd\ne")
    with os.fdopen(read_end, "rb") as reader:
        batches = list(line_batches(reader, batch_size=2, wait_seconds=60))
    assert batches == [[(1, b"a"), (2, b"b")], [(3, b"c"), (4, b"d")], [(5, b"e")]]


def test_a_batch_closes_after_the_wait_while_the_input_stays_open():
    read_end, write_end = os.pipe()
    reader, writer = os.fdopen(read_end, "rb"), os.fdopen(write_end, "wb")
    batches = line_batches(reader, batch_size=32, wait_seconds=0.05)
    writer.write(b"first line\n")
    writer.flush()
    got = queue.Queue()
    threading.Thread(target=lambda: got.put(next(batches)), daemon=True).start()
    # Without the wait the batch would stay open until 31 more lines or the end.
    assert got.get(timeout=30) == [(1, b"first line")]
    writer.write(b"second\n")
    writer.close()
    assert list(batches) == [[(2, b"second")]]
    reader.close()


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    """A `transformer` run, 6 test sentences (line 3 empty) and their file-decoded translations."""
    root = tmp_path_factory.mktemp("decode_stream")
    lines = [" ".join(tree.tokens) for tree, _ in generated_data(root, "decode", 6)[1]]
    lines[2] = ""
    write_lines(root / "test.txt", lines)
    save_random_run(root / "transformer", "transformer", small_hparams(), root / "data",
                    eos_scale=6.0)
    expected = {}
    for name, extra in (("best", {}), ("nbest", {"nbest": 2})):
        output = root / f"{name}.txt"
        with flagsaver.flagsaver(output_dir=str(root / "transformer"),
                                 decode_from_file=str(root / "test.txt"),
                                 decode_to_file=str(output), decode_hparams=SETTINGS, **extra):
            decode.main(["decode"])
        expected[name] = output.read_text(encoding="utf-8")
    return {"root": root, "lines": lines, "expected": expected}


class Decoding:
    """bin/decode in a subprocess, its standard output read line by line by a thread."""

    def __init__(self, root, *flag_args):
        self.stderr = open(root / "stderr.txt", "wb")
        self.process = subprocess.Popen(
            [sys.executable, str(REPO / "bin" / "decode"), f"--output_dir={root / 'transformer'}",
             f"--decode_hparams={SETTINGS}", *flag_args],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr, cwd=REPO,
            env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
        self.lines = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.process.stdout:
            self.lines.put(line.decode("utf-8"))
        self.lines.put(None)

    def send(self, text):
        self.process.stdin.write(text.encode("utf-8"))
        self.process.stdin.flush()

    def answer(self, count=1):
        """The next `count` output lines; fails if they do not come."""
        try:
            return "".join(self.lines.get(timeout=ANSWER_TIMEOUT) for _ in range(count))
        except queue.Empty:
            self.process.kill()
            pytest.fail("no translation came back while the input stayed open")

    def finish(self):
        self.process.stdin.close()
        rest = []
        while (line := self.lines.get(timeout=ANSWER_TIMEOUT)) is not None:
            rest.append(line)
        assert self.process.wait(timeout=60) == 0, self.stderr.name
        self.stderr.close()
        return "".join(rest)


def test_interactive_decoding_answers_each_line_before_the_next_arrives(workspace):
    expected = workspace["expected"]["best"].splitlines(keepends=True)
    decoding = Decoding(workspace["root"], "--decode_interactive")
    # One line at a time: each translation must come back while stdin stays
    # open, before the next line is written.
    for line, translation in zip(workspace["lines"][:3], expected):
        decoding.send(line + "\n")
        assert decoding.answer() == translation
    # The rest at once: batched together, still one line each, in order.
    decoding.send("".join(line + "\n" for line in workspace["lines"][3:]))
    assert decoding.answer(3) == "".join(expected[3:])
    assert decoding.finish() == ""


def test_stdin_dash_streams_nbest_blocks(workspace):
    blocks = workspace["expected"]["nbest"].split("\n\n")
    decoding = Decoding(workspace["root"], "--decode_from_file=-", "--nbest=2")
    decoding.send(workspace["lines"][0] + "\n")
    first_block = blocks[0] + "\n\n"
    assert decoding.answer(first_block.count("\n")) == first_block
    decoding.send("".join(line + "\n" for line in workspace["lines"][1:]))
    assert first_block + decoding.finish() == workspace["expected"]["nbest"]


def test_streaming_refuses_file_outputs(workspace):
    with flagsaver.flagsaver(output_dir=str(workspace["root"] / "transformer"),
                             decode_interactive=True, decode_to_file="out.txt"):
        with pytest.raises(common.UsageError, match="--decode_to_file: decoding standard input "
                                                    "as it arrives"):
            decode.main(["decode"])
