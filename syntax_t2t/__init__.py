"""syntax_t2t: syntax-aware neural machine translation, Tensor2Tensor style.

The repository keeps the built-in problems and hparams sets in the top-level
folders `problems/` and `hparams/`, where T2T users look for them, but they
are installed inside this package (setup.cfg's `package_dir`), as
`syntax_t2t.problems` and `syntax_t2t.hparams_sets`, so that they take no
common top-level name that a user's own `problems` or `hparams` module could
shadow or be shadowed by. Run from a source checkout (the `bin/` scripts, the
tests), those names are found in the checkout's folders instead, so that the
checkout imported is the checkout used, whatever else is installed.
"""

import importlib.util
import os
import sys

#: Installed name -> folder at the repository's top level.
TOP_LEVEL_PACKAGES = {"syntax_t2t.problems": "problems", "syntax_t2t.hparams_sets": "hparams"}


class _CheckoutFinder:
    """Finds `TOP_LEVEL_PACKAGES` in the source checkout at `root`."""

    def __init__(self, root):
        self.root = root

    def find_spec(self, fullname, path=None, target=None):
        folder = TOP_LEVEL_PACKAGES.get(fullname)
        if folder is None:
            return None
        directory = os.path.join(self.root, folder)
        return importlib.util.spec_from_file_location(
            fullname, os.path.join(directory, "__init__.py"), submodule_search_locations=[directory])


def _checkout_root():
    """The repository this package was imported from, or None when it was imported from an install."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    markers = ["setup.cfg"] + [os.path.join(folder, "__init__.py") for folder in TOP_LEVEL_PACKAGES.values()]
    return root if all(os.path.isfile(os.path.join(root, marker)) for marker in markers) else None


_ROOT = _checkout_root()
if _ROOT is not None and not any(isinstance(finder, _CheckoutFinder) for finder in sys.meta_path):
    # First, so that an editable install of another checkout does not win.
    sys.meta_path.insert(0, _CheckoutFinder(_ROOT))
