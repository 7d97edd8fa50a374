"""Registries of problems, models and hparams sets (Tensor2Tensor style).

Experiments (`bin/grid`) are registered the same way, by a function that
returns a `syntax_t2t.grid.experiment.Experiment`; criteria
(`syntax_t2t/criteria/`) by their class, under the name a model's contract
gives (`models/contract.py`).

Register with decorators; the default name is the snake_case of the class or
function name, as in T2T:

    @registry.register_problem
    class SyntheticSyntaxReorder(Problem): ...      # "synthetic_syntax_reorder"

    @registry.register_hparams("transformer_base")
    def transformer_base(): ...

The registries import nothing: what fills them is imported by the
composition root, `syntax_t2t.cli.registration` (`import_all()`: the
built-ins; `import_usr_dir(path)`: a user's directory of modules, so that
users register their own problems, models and hparams sets without editing the
package).
"""

import difflib
import re


class RegistryError(KeyError):
    """Unknown name, or a name registered twice with different objects."""

    def __str__(self):
        # KeyError quotes its argument; a registry error is a sentence.
        return str(self.args[0]) if self.args else ""


def snake_case(name):
    """`TransformerBase` -> `transformer_base`, `PUDSyntax` -> `pud_syntax`."""
    name = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)
    name = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)
    return name.lower()


def _identity(obj):
    # Re-importing a module (importlib.reload, a usr_dir imported twice)
    # creates a new object with the same module and qualified name: that is
    # the same registration, not a clash.
    return (getattr(obj, "__module__", None), getattr(obj, "__qualname__", repr(obj)))


class Registry:
    """A name -> object table for one kind of thing.

    Args:
        kind: what is registered, used in messages ("problem", "model", ...).
    """

    def __init__(self, kind):
        self.kind = kind
        self._entries = {}

    def register(self, name_or_obj=None):
        """Decorator: `@register`, `@register()` or `@register("name")`."""
        if callable(name_or_obj):
            return self._add(snake_case(name_or_obj.__name__), name_or_obj)

        def decorator(obj):
            return self._add(name_or_obj or snake_case(obj.__name__), obj)

        return decorator

    def _add(self, name, obj):
        existing = self._entries.get(name)
        if existing is not None and _identity(existing) != _identity(obj):
            module, qualname = _identity(existing)
            raise RegistryError(
                f"{self.kind} {name!r} is already registered by "
                f"{module}.{qualname}; choose another name for "
                f"{_identity(obj)[0]}.{_identity(obj)[1]}")
        self._entries[name] = obj
        return obj

    def get(self, name):
        """Returns the object registered as `name`.

        Raises:
            RegistryError: unknown name; the message lists what is registered
                and suggests the closest names.
        """
        if name in self._entries:
            return self._entries[name]
        close = difflib.get_close_matches(name, self.names(), n=3, cutoff=0.5)
        hint = f" Did you mean {', '.join(close)}?" if close else ""
        raise RegistryError(
            f"unknown {self.kind} {name!r}.{hint} Registered {self.kind}s: "
            f"{', '.join(self.names()) or '(none)'}.")

    def names(self):
        return sorted(self._entries)

    def __contains__(self, name):
        return name in self._entries

    def __len__(self):
        return len(self._entries)


problems = Registry("problem")
models = Registry("model")
hparams_sets = Registry("hparams set")
experiments = Registry("experiment")
criteria = Registry("criterion")

register_problem = problems.register
register_model = models.register
register_hparams = hparams_sets.register
register_experiment = experiments.register
register_criterion = criteria.register


def problem(name):
    """Returns an instance of the registered problem `name`."""
    return problems.get(name)()


def model(name):
    """Returns the registered model class `name`."""
    return models.get(name)


def hparams(name):
    """Returns a fresh `HParams` from the registered hparams set `name`."""
    return hparams_sets.get(name)()


def experiment(name):
    """Returns a fresh `syntax_t2t.grid.experiment.Experiment` from the registered function `name`."""
    return experiments.get(name)()


def criterion_for(model):
    """The criterion `model.criterion` declares, built for `model`.

    `model.criterion` is a registered criterion's name (the built-ins are
    registered by importing `syntax_t2t.criteria`) or a criterion class, as
    a user's model with a loss of its own gives.

    Raises:
        RegistryError: an unknown name.
    """
    spec = model.criterion
    factory = criteria.get(spec) if isinstance(spec, str) else spec
    return factory(model)


def summary(obj) -> str:
    """The first sentence of `obj`'s docstring: its one-line description."""
    text = " ".join((obj.__doc__ or "").strip().split("\n\n")[0].split())
    # "et al." and "e.g." end no sentence.
    match = re.match(r"(.+?(?<!\bal)(?<!\be\.g)[.!?])(\s|$)", text)
    return match.group(1) if match else text


def help_string() -> str:
    """What is registered, each with its one-line description, as printed by `--registry_help`."""
    lines = []
    for registry in (problems, models, hparams_sets, experiments):
        lines.append(f"{registry.kind}s ({len(registry)}):")
        width = max((len(name) for name in registry.names()), default=0)
        for name in registry.names():
            description = summary(registry.get(name))
            lines.append(f"  {name:<{width}}  {description}".rstrip())
    return "\n".join(lines)
