"""Parsing raw text into `DependencyTree`s with spaCy or stanza.

* `parser.py`: the `Parser` interface every adapter implements, and errors;
* `joined_tree.py`: one tree per input line, even when a parser splits the
  line into several sentences;
* `spacy_adapter.py`, `stanza_adapter.py`: the two adapters;
* `parser_spec.py`: `--parser=spacy:MODEL` / `--parser=stanza:LANG[:MODEL_DIR]`;
* `parse_cache.py`: parses of a text file, cached as CoNLL-U (streamed in
  committed chunks; an interrupted parse resumes);
* `spacy_training.py`: training a spaCy tagger and parser on UD CoNLL-U
  (`bin/train_parser`).

The libraries are imported only by the modules that need them, so importing
`parser_spec` or `parse_cache` stays cheap.
"""
