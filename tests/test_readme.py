"""The README lists every registered model, one table row each."""

import re
from pathlib import Path

from syntax_t2t import registry
from syntax_t2t.cli import registration

README = Path(__file__).resolve().parents[1] / "README.md"


def test_every_registered_model_has_a_readme_line():
    registration.import_all()
    rows = re.findall(r"^\| `(\w+)` \| \S.*\|$", README.read_text(encoding="utf-8"), flags=re.M)
    assert sorted(set(registry.models.names()) - set(rows)) == []
