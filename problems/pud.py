"""Problems on the Parallel Universal Dependencies (PUD) treebanks.

The PUD treebanks annotate the *same* 1,000 sentences in many languages with
gold UD trees; `# parallel_id` comments align them. A PUD problem pairs the
tree of a source-language sentence with the tokens of the target-language
sentence of the same `parallel_id` (with its gold tree, `tgt_heads`, for
target-side syntax). That is far too little data to train a
translation model, but it gives small, real, gold-parsed test problems.

Files: `<code>_pud-ud-test.conllu` (or the same name with `.gz`) in
`tmp_dir`, e.g. `cs_pud-ud-test.conllu`; missing files are downloaded from
the UD repositories on GitHub, e.g.
https://raw.githubusercontent.com/UniversalDependencies/UD_Czech-PUD/master/cs_pud-ud-test.conllu

Splits, by position in the source file (overridable options): the first
`train_size` = 800 sentences train, the next `dev_size` = 100 dev, the next
`test_size` = 100 test.
"""

from typing import Iterator

from syntax_t2t.problems.common import Positioned, find_file
from syntax_t2t import registry
from syntax_t2t.data.conllu_reader import read_conllu
from syntax_t2t.data.download import maybe_download
from syntax_t2t.data.tree import DependencyTree
from syntax_t2t.errors import IgnoreSkipped, InputError, raise_or_skip
from syntax_t2t.problem import DEV, TEST, TRAIN, Problem, TreeTokens

TREEBANKS = {"cs": "Czech", "de": "German", "en": "English"}
URL_TEMPLATE = ("https://raw.githubusercontent.com/UniversalDependencies/UD_{treebank}-PUD/"
                "master/{filename}")


def pud_filename(language: str) -> str:
    """`cs` -> `cs_pud-ud-test.conllu`."""
    return f"{language}_pud-ud-test.conllu"


class PudSyntax(Problem):
    """Source tree -> target tokens over the PUD sentences (see the module docstring).

    Subclasses set `source_language` and `target_language` (keys of
    `TREEBANKS`). Options: `train_size`, `dev_size`, `test_size` (sentences
    per split, taken in this order from the start of the source file) and
    `url_template` (formatted with `treebank` and `filename`).
    """

    source_language = ""
    target_language = ""
    has_target_trees = True  # the target language's gold PUD trees
    #: Sentences of the training split, the first of the source file.
    train_size = 800
    #: Sentences of the dev split, after the training ones.
    dev_size = 100
    #: Sentences of the test split, after the dev ones.
    test_size = 100
    #: URL of a missing treebank file, formatted with `treebank` and `filename`.
    url_template = URL_TEMPLATE
    num_shards = {TRAIN: 1, DEV: 1, TEST: 1}

    option_names = Problem.option_names + ("train_size", "dev_size", "test_size", "url_template")

    def split_range(self, split: str) -> range:
        """Positions of the split's sentences in the source file."""
        dev_start = self.train_size
        test_start = dev_start + self.dev_size
        return {TRAIN: range(0, dev_start), DEV: range(dev_start, test_start),
                TEST: range(test_start, test_start + self.test_size)}[split]

    def treebank_path(self, tmp_dir: str, language: str) -> str:
        """The PUD file of `language` in `tmp_dir`, downloaded if missing."""
        filename = pud_filename(language)
        found = find_file(tmp_dir, (filename, filename + ".gz"))
        if found:
            return found
        url = self.url_template.format(treebank=TREEBANKS[language], filename=filename)
        return maybe_download(tmp_dir, filename, url)

    def generate_samples(self, tmp_dir, split, skip) -> Iterator[tuple[DependencyTree, list[str]]]:
        source_path = self.treebank_path(tmp_dir, self.source_language)
        target_path = self.treebank_path(tmp_dir, self.target_language)
        # The whole target file is read for every split: report its bad
        # sentences with the training split only, so each is counted once.
        targets = self._trees_by_parallel_id(target_path, skip, report=split == TRAIN)
        positions = self.split_range(split)
        source = Positioned(read_conllu, source_path, skip, report=positions.__contains__)
        for position, tree in source:
            if position >= positions.stop:
                break
            if position < positions.start:
                continue
            parallel_id = tree.comments.get("parallel_id")
            try:
                if parallel_id is None:
                    raise InputError(source_path, None, f"sentence {_name(tree)} has no "
                                     f"'# parallel_id' comment", reason="no parallel_id")
                if parallel_id not in targets:
                    raise InputError(source_path, None,
                                     f"sentence {_name(tree)}: no sentence with parallel_id "
                                     f"{parallel_id} in {target_path}", reason="no aligned target")
            except InputError as error:
                raise_or_skip(error, skip)
                continue
            yield tree, TreeTokens(targets[parallel_id])

    @staticmethod
    def _trees_by_parallel_id(path, skip, report: bool) -> dict:
        trees = {}
        reader = Positioned(read_conllu, path, skip, report=lambda position: report)
        for _, tree in reader:
            parallel_id = tree.comments.get("parallel_id")
            try:
                if parallel_id is None:
                    raise InputError(path, None, f"sentence {_name(tree)} has no '# parallel_id' "
                                     f"comment", reason="no parallel_id")
                if parallel_id in trees:
                    raise InputError(path, None, f"sentence {_name(tree)}: parallel_id "
                                     f"{parallel_id} appears twice", reason="duplicate parallel_id")
            except InputError as error:
                raise_or_skip(error, skip if report or skip is None else IgnoreSkipped())
                continue
            trees[parallel_id] = tree
        return trees


def _name(tree: DependencyTree) -> str:
    sent_id = tree.comments.get("sent_id")
    text = " ".join(tree.tokens[:6]) + (" ..." if len(tree) > 6 else "")
    return f"{sent_id!r} ({text!r})" if sent_id else repr(text)


@registry.register_problem
class PudSyntaxCsEn(PudSyntax):
    """Czech PUD trees -> English PUD sentences (the thesis's direction, cs2en)."""

    source_language = "cs"
    target_language = "en"


@registry.register_problem
class PudSyntaxDeCs(PudSyntax):
    """German PUD trees -> Czech PUD sentences (the thesis's de2cs direction)."""

    source_language = "de"
    target_language = "cs"
