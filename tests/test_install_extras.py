"""stanza (and with it PyTorch) is an optional extra, which the test extras include."""

import configparser
import sys
from pathlib import Path

import pytest

from syntax_t2t.parsing import parser_spec
from syntax_t2t.parsing.parser import ParserModelNotFoundError

REPO = Path(__file__).resolve().parents[1]


def requirement_names(text):
    return {line.split(">")[0].split("=")[0].split("<")[0].strip().lower()
            for line in text.splitlines() if line.strip() and not line.strip().startswith("#")}


def test_stanza_and_torch_are_extras_the_tests_include():
    config = configparser.ConfigParser()
    config.read(REPO / "setup.cfg")
    required = requirement_names(config["options"]["install_requires"])
    extras = config["options.extras_require"]
    assert not {"stanza", "torch"} & required
    assert "stanza" in requirement_names(extras["stanza"])
    assert "stanza" in requirement_names(extras["test"])


def test_a_stanza_parser_without_stanza_says_how_to_install_it(monkeypatch):
    # None in sys.modules makes `import stanza` raise ModuleNotFoundError.
    monkeypatch.setitem(sys.modules, "stanza", None)
    monkeypatch.delitem(sys.modules, "syntax_t2t.parsing.stanza_adapter", raising=False)
    with pytest.raises(ParserModelNotFoundError, match=r"pip install -e '\.\[stanza\]'"):
        parser_spec.load_parser("stanza:cs")


def test_beam_is_an_extra_the_tests_include():
    config = configparser.ConfigParser()
    config.read(REPO / "setup.cfg")
    extras = config["options.extras_require"]
    assert "apache-beam[tfrecord]" not in requirement_names(config["options"]["install_requires"])
    assert "apache-beam[tfrecord]" in requirement_names(extras["beam"])
    assert "apache-beam[tfrecord]" in requirement_names(extras["test"])
    scripts = config["options.entry_points"]["console_scripts"]
    assert "syntax-t2t-datagen-beam = syntax_t2t.cli.datagen_beam:run" in scripts


def test_the_czech_teacher_is_a_pinned_extra_outside_the_requirements():
    # Its licence (CC BY-NC-SA 3.0) is not the toolkit's: installed only on request.
    config = configparser.ConfigParser()
    config.read(REPO / "setup.cfg")
    extras = config["options.extras_require"]
    assert "cs-core-news-sm" in requirement_names(extras["teacher_cs"])
    assert "cs-core-news-sm==0.2.1" in extras["teacher_cs"]
    assert "cs-core-news-sm" not in requirement_names(config["options"]["install_requires"])
    assert "cs-core-news-sm" not in requirement_names(extras["test"])


def test_a_missing_teacher_says_which_extra_installs_it(monkeypatch):
    import spacy

    def not_installed(name, *args, **kwargs):
        raise OSError(f"[E050] Can't find model '{name}'")

    monkeypatch.setattr(spacy, "load", not_installed)
    with pytest.raises(ParserModelNotFoundError, match=r"pip install -e '\.\[teacher_cs\]'"):
        parser_spec.load_parser("spacy:cs_core_news_sm")
