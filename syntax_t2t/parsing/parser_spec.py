"""`--parser` values: which library and model parse raw text.

    spacy:MODEL              an installed spaCy pipeline package (en_core_web_sm)
                             or a pipeline directory (one bin/train_parser wrote)
    stanza:LANG              stanza's models for LANG in stanza's default directory
    stanza:LANG:MODEL_DIR    ... in the stanza resources directory MODEL_DIR

The adapters, and with them spaCy or stanza, are imported only when a parser
is loaded.
"""

import dataclasses
import re
from typing import Optional, Union

from syntax_t2t.parsing.parser import Parser, ParserModelNotFoundError, ParserSpecError

SPACY, STANZA = "spacy", "stanza"
FORMATS = "spacy:MODEL or stanza:LANG[:MODEL_DIR]"
_STANZA_LANGUAGE = re.compile(r"[A-Za-z]+([_-][A-Za-z]+)*")


@dataclasses.dataclass(frozen=True)
class ParserSpec:
    """A parsed `--parser` value.

    Attributes:
        library: `spacy` or `stanza`.
        model: spaCy: pipeline package or directory; stanza: language code.
        model_dir: stanza's resources directory, or None for its default.
    """

    library: str
    model: str
    model_dir: Optional[str] = None

    def __str__(self) -> str:
        return ":".join([self.library, self.model] + ([self.model_dir] if self.model_dir else []))


def parse_parser_spec(text: str) -> ParserSpec:
    """Reads `spacy:MODEL` or `stanza:LANG[:MODEL_DIR]`.

    Raises:
        ParserSpecError: any other text; the message shows the formats.
    """
    library, _, rest = text.partition(":")
    if library == SPACY and rest:
        return ParserSpec(SPACY, rest)
    if library == STANZA and rest:
        # MODEL_DIR is everything after the second colon, colons included.
        lang, separator, model_dir = rest.partition(":")
        if not _STANZA_LANGUAGE.fullmatch(lang):
            raise ParserSpecError(f"--parser={text}: {lang!r} is not a stanza language code "
                                  f"(e.g. cs, de, en); expected {FORMATS}")
        if separator and not model_dir:
            raise ParserSpecError(f"--parser={text}: the model directory after {lang}: is empty; "
                                  f"expected {FORMATS}")
        return ParserSpec(STANZA, lang, model_dir or None)
    if library in (SPACY, STANZA):
        raise ParserSpecError(f"--parser={text}: the {'model' if library == SPACY else 'language'} "
                              f"after {library}: is missing; expected {FORMATS}")
    raise ParserSpecError(f"--parser={text}: unknown parser library {library!r}; expected {FORMATS}")


def load_parser(spec: Union[str, ParserSpec], pretokenized: bool = False,
                batch_size: Optional[int] = None, num_processes: int = 1) -> Parser:
    """Builds the adapter a spec names, loading its model.

    Args:
        spec: a `ParserSpec` or its text.
        pretokenized: whether the input will be pre-tokenised (stanza builds
            that pipeline first, so that a missing model is reported now).
        batch_size: the adapter's batch size; None keeps its default.
        num_processes: spaCy parses in this many processes (`nlp.pipe`'s
            `n_process`); stanza batches sentences on one device instead and
            ignores it.

    Raises:
        ParserSpecError: a malformed spec.
        ParserModelNotFoundError: the model is not installed; the message
            says how to install or train one.
    """
    if isinstance(spec, str):
        spec = parse_parser_spec(spec)
    options = {} if batch_size is None else {"batch_size": batch_size}
    if spec.library == SPACY:
        from syntax_t2t.parsing.spacy_adapter import SpacyParser
        return SpacyParser.load(spec.model, n_process=num_processes, **options)
    try:
        from syntax_t2t.parsing.stanza_adapter import StanzaParser
    except ModuleNotFoundError as error:
        if error.name not in ("stanza", "torch"):
            raise
        raise ParserModelNotFoundError(
            f"--parser={spec.library}:{spec.model}: stanza (with PyTorch) is not installed; it "
            f"is the optional extra `stanza`: pip install -e '.[stanza]' (README, Set-up: the "
            f"CPU or the CUDA build of torch)") from error
    return StanzaParser(spec.model, spec.model_dir, pretokenized=pretokenized, **options)
