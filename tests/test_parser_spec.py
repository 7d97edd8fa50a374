"""Tests for syntax_t2t.parsing.parser_spec."""

import pytest

from syntax_t2t.parsing.parser import ParserSpecError
from syntax_t2t.parsing.parser_spec import ParserSpec, parse_parser_spec


@pytest.mark.parametrize("text, spec", [
    ("spacy:en_core_web_sm", ParserSpec("spacy", "en_core_web_sm")),
    ("spacy:/models/cs:v2", ParserSpec("spacy", "/models/cs:v2")),
    ("stanza:cs", ParserSpec("stanza", "cs")),
    ("stanza:zh-hans", ParserSpec("stanza", "zh-hans")),
    ("stanza:de:/data/stanza_resources", ParserSpec("stanza", "de", "/data/stanza_resources")),
    ("stanza:de:/odd:dir", ParserSpec("stanza", "de", "/odd:dir")),
])
def test_specs_are_read_and_written_back(text, spec):
    assert parse_parser_spec(text) == spec
    assert str(spec) == text


@pytest.mark.parametrize("text, message", [
    ("udpipe:cs", "unknown parser library 'udpipe'"),
    ("en_core_web_sm", "unknown parser library 'en_core_web_sm'"),
    ("", "unknown parser library ''"),
    ("spacy:", "the model after spacy: is missing"),
    ("stanza", "the language after stanza: is missing"),
    ("stanza:c s", "'c s' is not a stanza language code"),
    ("stanza::/dir", "'' is not a stanza language code"),
    ("stanza:cs:", "the model directory after cs: is empty"),
])
def test_malformed_specs_name_the_formats(text, message):
    with pytest.raises(ParserSpecError, match=message) as error:
        parse_parser_spec(text)
    assert str(error.value).startswith(f"--parser={text}: ")
    assert str(error.value).endswith("expected spacy:MODEL or stanza:LANG[:MODEL_DIR]")
    assert isinstance(error.value, ValueError)
