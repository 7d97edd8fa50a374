"""`czeng_syntax`: CzEng 1.7 Czech-to-English with Czech a-layer trees (the thesis's cs2en).

CzEng cannot be downloaded by this tool: it needs a (free) registration at
https://ufal.mff.cuni.cz/czeng. Download the *export format* packages and put
them, or links to them, into `<tmp_dir>/czeng/`.

Package files. CzEng 1.7 comes in 100 numbered packages. A file in
`<tmp_dir>/czeng/` belongs to package NN when NN is the last two-digit number
in its name that is not part of a longer number: `00train.gz`,
`data.export-format.05train.gz` and `czeng17-export-03.gz` are packages 00,
05 and 03. Files may be plain or gzip.

Splits (thesis Section 5.1): packages 00-08 are the training set; of package
09, the first 1,000 sentence pairs are the dev set and the next 10,000 the
test set. The options `train_packages`, `heldout_package`, `dev_size` and
`test_size` change this.

Single file. Instead of packages, the option `single_file` (a path, relative
to `tmp_dir` or absolute) names one export file: its first `dev_size` pairs
are the dev set, the next `test_size` the test set, the rest the training set.

Each line is one sentence pair; `syntax_t2t.data.czeng_reader` reads the
Czech and English a-layers (blocks 3 and 7). The source is the Czech tree
(PDT tags as XPOS, afuns as labels), the target the English tokens with
their a-layer tree (`tgt_heads`, for target-side syntax).
"""

import os
import re
from typing import Iterator, Optional

from syntax_t2t.problems.common import Positioned
from syntax_t2t import registry
from syntax_t2t.data.czeng_reader import read_czeng
from syntax_t2t.data.tree import DependencyTree
from syntax_t2t.problem import DEV, TEST, TRAIN, Problem, RawDataError, TreeTokens

# The last two-digit number not adjacent to other digits.
_PACKAGE_NUMBER = re.compile(r"(?<!\d)(\d\d)(?!\d)(?!.*(?<!\d)\d\d(?!\d))")
REGISTRATION_URL = "https://ufal.mff.cuni.cz/czeng"


def package_number(filename: str) -> Optional[int]:
    """The package a CzEng file name belongs to, or None (see the module docstring)."""
    match = _PACKAGE_NUMBER.search(os.path.basename(filename))
    return int(match.group(1)) if match else None


@registry.register_problem
class CzengSyntax(Problem):
    """CzEng 1.7 export files -> Czech source trees and English targets.

    See the module docstring for where the files go and how splits are made.
    Options: `train_packages`, `heldout_package`, `dev_size`, `test_size`,
    `single_file`, `data_subdir` (the directory under `tmp_dir`, default
    `czeng`).
    """

    has_target_trees = True  # the English a-layer trees
    #: The packages of the training set.
    train_packages = tuple(range(0, 9))
    #: The package whose first pairs are the dev set, then the test set.
    heldout_package = 9
    #: Sentence pairs of the dev set.
    dev_size = 1_000
    #: Sentence pairs of the test set.
    test_size = 10_000
    #: One export file instead of packages (relative to --tmp_dir or absolute): dev,
    #: then test, then training pairs.
    single_file: Optional[str] = None
    #: Directory under --tmp_dir holding the export files.
    data_subdir = "czeng"

    option_names = Problem.option_names + (
        "train_packages", "heldout_package", "dev_size", "test_size", "single_file", "data_subdir")

    def package_files(self, tmp_dir: str) -> dict[int, str]:
        """Package number -> file, for the packages this problem uses.

        Raises:
            FileNotFoundError: a package is missing; says what to put where.
            RawDataError: two files claim the same package.
        """
        directory = os.path.join(tmp_dir, self.data_subdir)
        found = {}
        if os.path.isdir(directory):
            for name in sorted(os.listdir(directory)):
                path = os.path.join(directory, name)
                number = package_number(name)
                if number is None or not os.path.isfile(path) or name.startswith("."):
                    continue
                if number in found:
                    raise RawDataError(f"{directory}: both {os.path.basename(found[number])} and "
                                     f"{name} look like CzEng package {number:02d}; keep one")
                found[number] = path
        wanted = list(self.train_packages) + [self.heldout_package]
        missing = [number for number in wanted if number not in found]
        if missing:
            raise FileNotFoundError(
                f"czeng_syntax needs the CzEng 1.7 export-format packages "
                f"{', '.join(f'{n:02d}' for n in wanted)} in {directory}/ (one file per package, "
                f"the package number in its name, e.g. 00train.gz ... 09train.gz); missing: "
                f"{', '.join(f'{n:02d}' for n in missing)}. CzEng cannot be downloaded by this tool: "
                f"register at {REGISTRATION_URL}, download the export format and put (or link) the "
                f"package files there.")
        return {number: found[number] for number in wanted}

    def _single_file_path(self, tmp_dir: str) -> str:
        path = os.path.join(tmp_dir, self.single_file)
        if not os.path.isfile(path):
            raise FileNotFoundError(
                f"czeng_syntax: single_file {path} does not exist. CzEng cannot be downloaded by this "
                f"tool: register at {REGISTRATION_URL} and put an export-format file there.")
        return path

    def generate_samples(self, tmp_dir, split, skip) -> Iterator[tuple[DependencyTree, list[str]]]:
        if self.single_file:
            path = self._single_file_path(tmp_dir)
            heldout = self.dev_size + self.test_size
            ranges = {DEV: range(0, self.dev_size), TEST: range(self.dev_size, heldout),
                      TRAIN: range(heldout, _UNBOUNDED)}
            yield from self._read_range(path, ranges[split], skip)
            return
        files = self.package_files(tmp_dir)
        if split == TRAIN:
            for number in self.train_packages:
                yield from self._read_range(files[number], range(0, _UNBOUNDED), skip)
        else:
            ranges = {DEV: range(0, self.dev_size),
                      TEST: range(self.dev_size, self.dev_size + self.test_size)}
            yield from self._read_range(files[self.heldout_package], ranges[split], skip)

    @staticmethod
    def _read_range(path, positions: range, skip):
        """The pairs on lines `positions` (0-based) of `path`; bad lines outside go unreported."""
        for position, (source, target) in Positioned(read_czeng, path, skip,
                                                     report=positions.__contains__):
            if position >= positions.stop:
                return
            if position >= positions.start:
                yield source, TreeTokens(target)


_UNBOUNDED = 1 << 62
