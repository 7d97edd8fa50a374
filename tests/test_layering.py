"""The walls between the rooms of the code base (docs/design.md, "Layers of rooms").

Every module of `syntax_t2t` (and of `problems/` and `hparams/`, installed
as `syntax_t2t.problems` and `syntax_t2t.hparams_sets`) belongs to one room;
the rooms stand in layers, and a module imports only its own room and rooms
of lower layers. Imports are read from the sources with `ast`, module-level
and function-level ones alike, and `importlib.import_module` of a literal
module name counts too: a lazy import of a higher room is still an arrow up.
Lazy imports of third-party libraries (TensorFlow inside a function) are not
the project's business here.

No TensorFlow is imported: the test runs under any Keras backend.
"""

import ast
import dataclasses
import os
import textwrap

import pytest

import syntax_t2t

pytestmark = pytest.mark.backends

REPOSITORY = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "syntax_t2t"

#: Module name (or prefix of names) -> room; the longest matching prefix wins.
#: A new package or top-level module has no room until it is given one here.
ROOMS = {
    "syntax_t2t": "core",  # the package's __init__ alone, not a prefix
    "syntax_t2t.errors": "core",
    "syntax_t2t.io_utils": "core",
    "syntax_t2t.directory_lock": "core",
    "syntax_t2t.parent_death": "core",
    "syntax_t2t.hparams": "core",
    "syntax_t2t.registry": "core",
    "syntax_t2t.backend": "backend",
    "syntax_t2t.checkpointing": "checkpointing",
    "syntax_t2t.data": "data",
    # The input pipelines live in data/ but above it: nothing that holds data imports them.
    "syntax_t2t.data.pipeline": "input_pipeline",  # tf.data
    "syntax_t2t.data.numpy_pipeline": "input_pipeline",  # the same batches without TensorFlow
    "syntax_t2t.data.shard_check": "input_pipeline",
    "syntax_t2t.parsing": "parsing",
    "syntax_t2t.datagen": "datagen",
    "syntax_t2t.problem": "problem",
    "syntax_t2t.problem_options": "problem",
    "syntax_t2t.problem_vocabularies": "problem",
    "syntax_t2t.problems": "problems",
    "syntax_t2t.layers": "layers",
    "syntax_t2t.models": "models",
    "syntax_t2t.criteria": "criteria",
    "syntax_t2t.training": "training",
    "syntax_t2t.decoding": "decoding",
    "syntax_t2t.evaluation": "evaluation",
    "syntax_t2t.export": "export",
    "syntax_t2t.grid": "grid",
    "syntax_t2t.hparams_sets": "hparams_sets",
    "syntax_t2t.benchmarks": "benchmarks",
    "syntax_t2t.cli": "cli",
}

#: From low to high. Rooms of one layer are siblings: neither imports the other.
LAYERS = (
    ("core",),
    ("backend",),
    ("checkpointing",),  # checkpoint formats, written and read by training and decoding
    ("data",),
    ("parsing", "input_pipeline"),
    ("datagen",),
    ("problem",),
    ("problems",),
    ("layers",),
    ("models",),
    ("criteria",),  # what a model's outputs are trained against: the losses
    ("training",),
    ("decoding", "evaluation"),
    ("export",),
    ("grid",),
    ("hparams_sets",),  # registered hparams sets and grid experiments
    ("benchmarks",),
    ("cli",),  # the composition root: imports the built-ins, hands callables down
)

_DATA_PREPARATION = ("input_pipeline", "parsing", "datagen", "problem", "problems")
_ABOVE_MODELS = ("criteria", "training", "decoding", "evaluation", "export", "grid",
                 "hparams_sets", "benchmarks", "cli")

#: Imports that must never appear, whatever the layers above say; the short
#: list that a reorder of LAYERS must not undo.
NEVER = {
    # Modeling runs on any Keras backend: no tf.data, no datagen, nothing that uses a model.
    "layers": ("models", "checkpointing") + _DATA_PREPARATION + _ABOVE_MODELS,
    "models": ("checkpointing",) + _DATA_PREPARATION + _ABOVE_MODELS,
    # A criterion scores a model's outputs on a batch: it trains, decodes and reads no data itself.
    "criteria": ("checkpointing", "training", "decoding", "evaluation", "export", "grid",
                 "hparams_sets", "benchmarks", "cli") + _DATA_PREPARATION,
    "backend": ("checkpointing", "data", "layers", "models") + _DATA_PREPARATION + _ABOVE_MODELS,
    # The trainer is handed dev decoding and the learning-curve plot; it imports neither.
    "training": ("decoding", "evaluation", "export", "grid", "hparams_sets", "benchmarks", "cli",
                 "datagen", "parsing", "problems"),
    "data": ("input_pipeline", "parsing", "datagen", "problem", "problems", "layers", "models",
             "training", "decoding", "evaluation", "cli"),
    # Scores are computed from files and arrays: no model is run, no run is trained.
    "evaluation": ("training", "decoding", "export", "grid", "layers", "models", "cli"),
    "datagen": ("problem", "problems", "layers", "models", "training", "decoding", "cli"),
    "decoding": ("evaluation", "export", "grid", "datagen", "cli"),
}


@dataclasses.dataclass(frozen=True)
class Import:
    """One import of a project module by another."""

    importer: str
    imported: str
    line: int
    in_function: bool

    def __str__(self) -> str:
        where = "inside a function" if self.in_function else "at module level"
        return f"{self.importer} (line {self.line}, {where}) imports {self.imported}"


def project_modules(repository: str = REPOSITORY) -> dict[str, str]:
    """Module name -> source file, for the package and its installed top-level folders."""
    roots = {PACKAGE: os.path.join(repository, PACKAGE)}
    roots.update({name: os.path.join(repository, folder)
                  for name, folder in syntax_t2t.TOP_LEVEL_PACKAGES.items()})
    modules = {}
    for package, root in roots.items():
        for directory, subdirectories, files in os.walk(root):
            # Only packages hold modules (not __pycache__, nor folders of data files).
            subdirectories[:] = sorted(name for name in subdirectories
                                       if os.path.isfile(os.path.join(directory, name, "__init__.py")))
            relative = os.path.relpath(directory, root)
            prefix = ".".join([package] + ([] if relative == "." else relative.split(os.sep)))
            for name in files:
                if name.endswith(".py"):
                    module = prefix if name == "__init__.py" else f"{prefix}.{name[:-3]}"
                    modules[module] = os.path.join(directory, name)
    return modules


def _resolve(name: str, modules) -> str:
    """The project module that `import name` runs last: `name` or its closest package."""
    while name not in modules and "." in name:
        name = name.rpartition(".")[0]
    return name


def _uses_import_module(tree: ast.AST) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == "import_module":
            return True
        if isinstance(node, ast.Name) and node.id in ("import_module", "__import__"):
            return True
    return False


def imports_of(module: str, source: str, modules) -> list[Import]:
    """The project modules `source` (the text of `module`) imports."""
    tree = ast.parse(source)
    is_package = module in modules and modules[module].endswith("__init__.py")
    found = []

    def add(name, node, in_function):
        if name == PACKAGE or name.startswith(PACKAGE + "."):
            found.append(Import(module, _resolve(name, modules), node.lineno, in_function))

    def visit(node, in_function):
        for child in ast.iter_child_nodes(node):
            inside = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                        ast.Lambda))
            if isinstance(child, ast.Import):
                for alias in child.names:
                    add(alias.name, child, inside)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    package = module if is_package else module.rpartition(".")[0]
                    for _ in range(child.level - 1):
                        package = package.rpartition(".")[0]
                    base = f"{package}.{base}" if base else package
                for alias in child.names:
                    submodule = f"{base}.{alias.name}"
                    add(submodule if submodule in modules else base, child, inside)
            visit(child, inside)

    visit(tree, False)
    if _uses_import_module(tree):
        # Names handed to importlib as literals (a tuple of built-ins, say).
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in modules:
                found.append(Import(module, node.value, node.lineno, True))
    return list(dict.fromkeys(found))  # `from x import a, b` is one import


def room_of(module: str) -> str:
    prefixes = [prefix for prefix in ROOMS
                if module == prefix or (prefix != PACKAGE and module.startswith(prefix + "."))]
    if not prefixes:
        raise KeyError(f"{module} is in no room: add it to ROOMS")
    return ROOMS[max(prefixes, key=len)]


def layer_of(room: str) -> int:
    for index, rooms in enumerate(LAYERS):
        if room in rooms:
            return index
    raise KeyError(f"room {room} is in no layer: add it to LAYERS")


def wrong_way(imports) -> list[Import]:
    """Imports of a higher layer's room or of a sibling room."""
    wrong = []
    for item in imports:
        importer, imported = room_of(item.importer), room_of(item.imported)
        if importer != imported and layer_of(imported) >= layer_of(importer):
            wrong.append(item)
    return wrong


def forbidden(imports) -> list[Import]:
    """Imports the `NEVER` list names."""
    return [item for item in imports
            if room_of(item.imported) in NEVER.get(room_of(item.importer), ())]


def circles(imports) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan), and self-imports."""
    graph = {}
    for item in imports:
        graph.setdefault(item.importer, set()).add(item.imported)
        graph.setdefault(item.imported, set())
    index, low, stack, on_stack, groups = {}, {}, [], set(), []

    def connect(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for neighbour in sorted(graph[node]):
            if neighbour not in index:
                connect(neighbour)
                low[node] = min(low[node], low[neighbour])
            elif neighbour in on_stack:
                low[node] = min(low[node], index[neighbour])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1 or node in graph[node]:
                groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return groups


def all_imports() -> list[Import]:
    modules = project_modules()
    result = []
    for module, path in sorted(modules.items()):
        with open(path, encoding="utf-8") as file:
            result.extend(imports_of(module, file.read(), modules))
    return result


def _report(items) -> str:
    return "\n".join(str(item) for item in items)


def test_every_room_stands_in_exactly_one_layer():
    placed = [room for rooms in LAYERS for room in rooms]
    assert sorted(placed) == sorted(set(ROOMS.values()))
    for room, never in NEVER.items():
        assert room in placed and set(never) <= set(placed), room


def test_every_module_has_a_room():
    modules = project_modules()
    assert "syntax_t2t.problems.synthetic" in modules and "syntax_t2t.hparams_sets.transformer" in modules
    for module in modules:
        layer_of(room_of(module))


def test_no_import_goes_up_or_sideways():
    wrong = wrong_way(all_imports())
    assert not wrong, "imports against the layers (tests/test_layering.py, LAYERS):\n" + _report(wrong)


def test_the_never_list_holds():
    found = forbidden(all_imports())
    assert not found, "imports on the never list (tests/test_layering.py, NEVER):\n" + _report(found)


def test_no_module_imports_itself_back():
    groups = circles(all_imports())
    assert not groups, "circular imports:\n" + "\n".join(" <-> ".join(group) for group in groups)


def test_the_reader_sees_lazy_imports_and_importlib_names():
    """The checks above can fail: the reader catches what a careless move would leave."""
    modules = {"syntax_t2t.registry": "registry.py", "syntax_t2t.models": "models/__init__.py",
               "syntax_t2t.models.transformer": "models/transformer.py",
               "syntax_t2t.training.trainer": "training/trainer.py",
               "syntax_t2t.decoding.decoder": "decoding/decoder.py"}
    trainer = textwrap.dedent("""
        import os
        from syntax_t2t.models import transformer

        def translate():
            from syntax_t2t.decoding import decoder
            import tensorflow
        """)
    found = imports_of("syntax_t2t.training.trainer", trainer, modules)
    assert [(item.imported, item.in_function) for item in found] == [
        ("syntax_t2t.models.transformer", False), ("syntax_t2t.decoding.decoder", True)]
    assert [item.imported for item in forbidden(found)] == ["syntax_t2t.decoding.decoder"]
    assert [item.imported for item in wrong_way(found)] == ["syntax_t2t.decoding.decoder"]

    registry = textwrap.dedent("""
        import importlib
        BUILT_INS = ("syntax_t2t.models", "not.a.module")

        def import_all():
            for name in BUILT_INS:
                importlib.import_module(name)
        """)
    found = imports_of("syntax_t2t.registry", registry, modules)
    assert [item.imported for item in wrong_way(found)] == ["syntax_t2t.models"]

    with pytest.raises(KeyError, match="in no room"):
        room_of("syntax_t2t.unplaced.module")

    relative = imports_of("syntax_t2t.models.transformer", "from . import transformer\n", modules)
    assert circles(relative) == [["syntax_t2t.models.transformer"]]
    pair = [Import("syntax_t2t.problem", "syntax_t2t.datagen.writer", 3, True),
            Import("syntax_t2t.datagen.writer", "syntax_t2t.problem", 9, False)]
    assert circles(pair) == [["syntax_t2t.datagen.writer", "syntax_t2t.problem"]]
