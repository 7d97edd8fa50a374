"""`de2cs_syntax`: German CoNLL-U source trees to plain Czech text (the thesis's de2cs).

The thesis's de2cs corpus (Europarl and OpenSubtitles2016 as prepared by
Macháček 2018, dev newstest2011, test newstest2013) comes with German source
trees from UDPipe (UD 2.0) in CoNLL-U and plain Czech targets. It is not
public, so the files are provided by the user, in `<tmp_dir>/de2cs/`:

    train.de.conllu   train.cs
    dev.de.conllu     dev.cs
    test.de.conllu    test.cs

each optionally gzipped (`train.de.conllu.gz`, `train.cs.gz`, ...). Sentence
`k` of a `.conllu` file translates line `k` of the `.cs` file. The Czech side
is tokenised text, one sentence per line, tokens separated by spaces (the
thesis works on words; use the tokenisation of the CoNLL-U side, e.g.
UDPipe's).
"""

import os
from typing import Iterator

from syntax_t2t.problems.common import Positioned, find_file
from syntax_t2t import io_utils, registry
from syntax_t2t.data.conllu_reader import read_conllu
from syntax_t2t.data.parallel_text import split_tokens
from syntax_t2t.data.tree import DependencyTree
from syntax_t2t.errors import InputError, raise_or_skip
from syntax_t2t.problem import SPLITS, Problem


@registry.register_problem
class De2csSyntax(Problem):
    """German trees (CoNLL-U) -> Czech tokens; files as in the module docstring.

    Options: `data_subdir` (directory under `tmp_dir`, default `de2cs`),
    `source_language` and `target_language` (the file name codes, `de` and
    `cs`).
    """

    #: Directory under --tmp_dir holding the files.
    data_subdir = "de2cs"
    #: Language code in the source file names.
    source_language = "de"
    #: Language code in the target file names.
    target_language = "cs"

    option_names = Problem.option_names + ("data_subdir", "source_language", "target_language")

    def split_files(self, tmp_dir: str, split: str) -> tuple[str, str]:
        """(CoNLL-U source, plain target) of `split`.

        Raises:
            FileNotFoundError: a file is missing; names every expected file.
        """
        directory = os.path.join(tmp_dir, self.data_subdir)
        source_name = f"{split}.{self.source_language}.conllu"
        target_name = f"{split}.{self.target_language}"
        source = find_file(directory, (source_name, source_name + ".gz"))
        target = find_file(directory, (target_name, target_name + ".gz"))
        if source is None or target is None:
            expected = "  ".join(f"{s}.{self.source_language}.conllu[.gz] + {s}.{self.target_language}[.gz]"
                                 for s in SPLITS)
            missing = source_name if source is None else target_name
            raise FileNotFoundError(
                f"de2cs_syntax: {os.path.join(directory, missing)}[.gz] does not exist. Put the corpus "
                f"into {directory}/: {expected} (German CoNLL-U trees, e.g. from UDPipe, and the "
                f"tokenised Czech translations, sentence k of the CoNLL-U file on line k).")
        return source, target

    def generate_samples(self, tmp_dir, split, skip) -> Iterator[tuple[DependencyTree, list[str]]]:
        source_path, target_path = self.split_files(tmp_dir, split)
        targets = io_utils.read_raw_lines(target_path)
        target_line = 0
        sources = Positioned(read_conllu, source_path, skip)
        for position, tree in sources:
            # Sentence `position` (0-based) pairs with line `position + 1`;
            # the lines of skipped sentences are passed over.
            raw = None
            while target_line <= position:
                line = next(targets, None)
                if line is None:
                    raise _length_mismatch(source_path, target_path, position + 1, target_line,
                                           at_least=True)
                target_line, raw = line
            try:
                text = io_utils.decode_line(target_path, target_line, raw)
                tokens = split_tokens(text)
                if not tokens:
                    raise InputError(target_path, target_line, "empty sentence (blank line)",
                                     reason="empty sentence")
            except InputError as error:
                raise_or_skip(error, skip)
                continue
            yield tree, tokens
        extra = sum(1 for _ in targets)
        if sources.records != target_line + extra:
            raise _length_mismatch(source_path, target_path, sources.records, target_line + extra,
                                   at_least=False)


def _length_mismatch(source_path, target_path, sentences, lines, at_least) -> InputError:
    return InputError(
        target_path, None,
        f"has {lines} line{'' if lines == 1 else 's'}, but {source_path} has "
        f"{'at least ' if at_least else ''}"
        f"{sentences} sentences; sentence k of the CoNLL-U file must translate line k",
        reason="line count mismatch")
