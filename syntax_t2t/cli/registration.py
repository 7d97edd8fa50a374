"""What fills the registries: the built-ins and a user's `--usr_dir`.

The composition root's business, so it lives here in `cli/`: the registries
themselves (`syntax_t2t.registry`) stand at the bottom of the code base and
import nothing, and every module that registers something imports the
registry, not the other way round. The built-ins are imported by name, when
asked: each pulls in TensorFlow or a model library, which a program's
`--help` does not need.
"""

import importlib
import importlib.util
import os
import sys
import types

_BUILTIN_MODULES = ("syntax_t2t.problems", "syntax_t2t.hparams_sets", "syntax_t2t.models",
                    "syntax_t2t.criteria")
#: The built-ins that build and train models: no problem, so no TensorFlow
#: data pipeline (what `bin/bench` registers under JAX).
MODELING_MODULES = ("syntax_t2t.hparams_sets", "syntax_t2t.models", "syntax_t2t.criteria")


def import_all(modules: tuple[str, ...] = _BUILTIN_MODULES) -> None:
    """Imports every built-in module that registers something (or those of `modules`)."""
    for module in modules:
        importlib.import_module(module)


def import_usr_dir(usr_dir: str) -> None:
    """Imports a user's directory of modules so that they can register things.

    The directory is imported as a package when it has an `__init__.py`
    (which then imports its modules, as in T2T), otherwise every `*.py` in it
    is imported.

    The built-ins are imported first, so that a user's registration under a
    built-in name fails in the user's module (and names it). A directory
    named like a module already imported (`hparams`, `problems`, `json`) is
    imported under the name `_usr_dir_<name>` so that it hides nothing.

    Raises:
        FileNotFoundError: `usr_dir` is not a directory.
        ImportError: a module failed to import; names the file.
    """
    path = os.path.abspath(os.path.expanduser(usr_dir))
    if not os.path.isdir(path):
        raise FileNotFoundError(f"--usr_dir={usr_dir}: no such directory")
    import_all()
    parent, package = os.path.split(path)
    if package in sys.modules and path not in list(getattr(sys.modules[package], "__path__", [])):
        package = f"_usr_dir_{package}"
    if os.path.isfile(os.path.join(path, "__init__.py")):
        files = [(package, os.path.join(path, "__init__.py"))]
        if parent not in sys.path:
            sys.path.insert(0, parent)
    else:
        # A directory of loose modules becomes a namespace package named after
        # it, so its modules cannot shadow top-level ones (a user's
        # `problems.py` must not replace the built-in `problems` package).
        if package not in sys.modules:
            namespace = types.ModuleType(package)
            namespace.__path__ = [path]
            sys.modules[package] = namespace
        files = [(f"{package}.{name[:-3]}", os.path.join(path, name))
                 for name in sorted(os.listdir(path))
                 if name.endswith(".py") and not name.startswith("_")]
    for module_name, file_path in files:
        if module_name in sys.modules:
            continue
        spec = importlib.util.spec_from_file_location(
            module_name, file_path,
            submodule_search_locations=[path] if file_path.endswith("__init__.py") else None)
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        try:
            spec.loader.exec_module(module)
        except Exception as error:
            del sys.modules[module_name]
            raise ImportError(
                f"--usr_dir={usr_dir}: importing {file_path} failed: "
                f"{type(error).__name__}: {error}") from error
