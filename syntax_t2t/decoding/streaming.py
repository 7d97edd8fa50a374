"""Decoding a stream line by line as it arrives (`bin/decode --decode_interactive`).

A reader thread takes lines off the input as they come; the decoding loop
gathers them into batches. A batch closes when it holds `batch_size` lines,
when `wait_seconds` have passed since its first line arrived, or at the end
of the input; it is then translated and its output written and flushed at
once, one output line per input line (or one n-best block, see
`output_format`), in input order. So a person typing, or a program that
sends a line and waits for its translation, gets each answer after at most
`wait_seconds` plus one batch's decoding, while a fast producer fills whole
batches.

Lines are plain text, made into the training data's words (and trees) by
`prepare` (`source_parsing.with_parsed_sources`: the recorded parser of a
problem that parsed raw text); an empty line or one that is not UTF-8 gets
an empty output line and a warning, as in file decoding.
"""

import queue
import threading
import time
from typing import BinaryIO, Callable, Iterator, Optional, TextIO

from absl import logging

from syntax_t2t.decoding.inputs import SourceSentence, text_sentence

#: How long a batch waits for more lines after its first one.
WAIT_SECONDS = 0.1
_END = None


def _read_lines(stream: BinaryIO, lines: queue.Queue) -> None:
    """Puts `(number, raw line)` of every line on `lines`, then `_END`."""
    try:
        for number, raw in enumerate(iter(stream.readline, b""), start=1):
            lines.put((number, raw.rstrip(b"\n").removesuffix(b"\r")))
    finally:
        lines.put(_END)


def line_batches(stream: BinaryIO, batch_size: int,
                 wait_seconds: float = WAIT_SECONDS) -> Iterator[list[tuple[int, bytes]]]:
    """Yields the lines of `stream` in batches as they arrive (see the module docstring).

    Args:
        stream: a binary stream read line by line (standard input).
        batch_size: the most lines per batch.
        wait_seconds: how long a batch stays open after its first line.
    """
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=_read_lines, args=(stream, lines), daemon=True).start()
    while True:
        first = lines.get()
        if first is _END:
            return
        batch, deadline = [first], time.monotonic() + wait_seconds
        while len(batch) < batch_size:
            try:
                line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                break
            if line is _END:
                yield batch
                return
            batch.append(line)
        yield batch


def decode_stream(decoder, stream: BinaryIO, output: TextIO, layout, name: str = "<stdin>",
                  wait_seconds: float = WAIT_SECONDS,
                  prepare: Optional[Callable[[list[SourceSentence]], list[SourceSentence]]] = None
                  ) -> int:
    """Translates `stream` batch by batch, writing each batch's output as soon as it is done.

    Args:
        decoder: a `Decoder`; its `batch_size` is the batch size.
        stream: tokenised text lines (binary).
        output: where the translations go, flushed after every batch.
        layout: an `OutputFormat`.
        name: the stream's name in messages.
        wait_seconds: see `line_batches`.
        prepare: turns each batch's sentences into what the model reads
            (e.g. parses them); None decodes the whitespace-split words.

    Returns:
        The number of lines read.
    """
    count = 0
    for batch in line_batches(stream, decoder.hparams.batch_size, wait_seconds):
        sentences = [text_sentence(name, number, raw) for number, raw in batch]
        if prepare is not None:
            sentences = prepare(sentences)
        translations = decoder.translate(sentences)
        for sentence, translation in zip(sentences, translations):
            if translation is None:
                logging.warning("no translation for an unusable input line: %s", sentence.problem)
        output.write("".join(layout.text(translation) for translation in translations))
        output.flush()
        count += len(batch)
    return count


def plain_text_check(decoder, name: str = "<stdin>") -> None:
    """Raises `MissingFeaturesError` now if the model needs source trees, which text lacks."""
    decoder.check_features([SourceSentence(["a"], f"{name}:1")], name)
