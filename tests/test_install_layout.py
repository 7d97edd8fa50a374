"""problems/ and hparams/ are installed inside the syntax_t2t package, not as top-level packages."""

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import syntax_t2t
from syntax_t2t import registry
from syntax_t2t.cli import registration

REPO = Path(__file__).resolve().parents[1]


def source_packages():
    """Every package of the checkout, by the name an install gives it."""
    folders = {"syntax_t2t": REPO / "syntax_t2t"}
    folders.update({name: REPO / folder for name, folder in syntax_t2t.TOP_LEVEL_PACKAGES.items()})
    names = set()
    for name, folder in folders.items():
        for init in folder.rglob("__init__.py"):
            relative = init.parent.relative_to(folder)
            names.add(".".join([name, *relative.parts]))
    return names


def builtin_names(table):
    """The names in a registry table that the toolkit's own modules registered."""
    return [name for name in table.names() if table.get(name).__module__.startswith("syntax_t2t.")]


def run_python(script, cwd, pythonpath):
    """`python -c script` in a fresh process with only `pythonpath` added to its path."""
    return subprocess.run([sys.executable, "-c", script], cwd=cwd, capture_output=True, text=True,
                          env={"PYTHONPATH": pythonpath, "PATH": "/usr/bin:/bin"})


def test_the_checkout_imports_its_own_problems_and_hparams_sets():
    import syntax_t2t.hparams_sets
    import syntax_t2t.problems
    assert Path(syntax_t2t.problems.__file__) == REPO / "problems" / "__init__.py"
    assert Path(syntax_t2t.hparams_sets.__file__) == REPO / "hparams" / "__init__.py"
    # A top-level `problems` may be loaded, e.g. a user's --usr_dir of that name (a namespace package,
    # which has `__path__` but no `__file__`), but never the checkout's folder.
    top = sys.modules.get("problems")
    places = [getattr(top, "__file__", None), *getattr(top, "__path__", [])] if top else []
    assert not [place for place in places if place and Path(place).resolve().is_relative_to(REPO)], places


def test_a_users_top_level_problems_and_hparams_modules_shadow_nothing(tmp_path):
    # A user's own `problems.py` and `hparams.py`, first on the path, are what
    # `import problems` gives, and the built-ins still register.
    (tmp_path / "problems.py").write_text("WHOSE = 'the user'\n")
    (tmp_path / "hparams.py").write_text("WHOSE = 'the user'\n")
    script = ("import problems, hparams\n"
              "from syntax_t2t import registry\n"
              "from syntax_t2t.cli import registration\n"
              "registration.import_all()\n"
              "print(problems.WHOSE, hparams.WHOSE, registry.problem('multi30k_syntax_cs_en').name,"
              " registry.hparams('transformer_base').hidden_size)\n")
    result = run_python(script, tmp_path, f"{tmp_path}:{REPO}")
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split() == ["the", "user", "the", "user", "multi30k_syntax_cs_en", "512"]


def test_setup_cfg_lists_every_package_of_the_checkout():
    import configparser
    config = configparser.ConfigParser()
    config.read(REPO / "setup.cfg")
    listed = set(config["options"]["packages"].split())
    assert listed == source_packages()
    mapping = dict(line.split(" = ") for line in config["options"]["package_dir"].strip().splitlines())
    assert mapping == syntax_t2t.TOP_LEVEL_PACKAGES


@pytest.mark.slow
def test_the_wheel_holds_problems_and_hparams_inside_the_package_and_works_installed(tmp_path):
    # Built from a copy: setuptools builds in the source tree, and a build/
    # left in the checkout would carry removed modules into later wheels.
    source = tmp_path / "source"
    shutil.copytree(REPO, source, ignore=shutil.ignore_patterns(
        ".venv", ".git", "build", "dist", "*.egg-info", "__pycache__", ".hypothesis", "demo",
        "bench_results"))
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                            "--wheel-dir", str(tmp_path / "wheel"), str(source)],
                           capture_output=True, text=True, cwd=tmp_path)
    assert build.returncode == 0, build.stderr[-3000:]
    [wheel] = (tmp_path / "wheel").glob("syntax_t2t-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    top_level = {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")}
    assert top_level == {"syntax_t2t"}
    assert "syntax_t2t/problems/multi30k.py" in names and "syntax_t2t/hparams_sets/transformer.py" in names
    packages = {"/".join(name.split("/")[:-1]).replace("/", ".") for name in names if name.endswith("/__init__.py")}
    assert packages == source_packages()

    # Installed (not from the checkout: no setup.cfg beside it), with the
    # checkout off the path, the registry finds every built-in.
    target = tmp_path / "site"
    install = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-compile",
                              "--target", str(target), str(wheel)], capture_output=True, text=True)
    assert install.returncode == 0, install.stderr[-3000:]
    script = ("import syntax_t2t.problems, sys\n"
              "from syntax_t2t import registry\n"
              "from syntax_t2t.cli import registration\n"
              "registration.import_all()\n"
              "print(syntax_t2t.problems.__file__)\n"
              "print(','.join(registry.problems.names()), ','.join(registry.hparams_sets.names()),"
              " 'problems' in sys.modules)\n")
    result = run_python(script, tmp_path, str(target))
    assert result.returncode == 0, result.stderr[-3000:]
    location, found = result.stdout.splitlines()[-2:]
    assert location == str(target / "syntax_t2t" / "problems" / "__init__.py")
    problems, hparams_sets, top_level_problems = found.split()
    # Against this process's built-ins only: other tests here may have registered a user's sets.
    registration.import_all()
    assert problems.split(",") == builtin_names(registry.problems)
    assert hparams_sets.split(",") == builtin_names(registry.hparams_sets)
    assert top_level_problems == "False"
