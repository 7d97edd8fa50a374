"""`--problem_options='key=value,...'`: a problem's options from the command line.

    bin/datagen --problem=translate_syntax \\
        --problem_options='subwords=joint,source_format=conllu' ...
    bin/train   --problem=translate_syntax --data_dir=D ...   # the options datagen used

A problem's options are the class attributes named in its `option_names`
(`syntax_t2t.problem`). Values are typed and checked as `--hparams` are,
against the type of the class's default (an int widens to a float; an option
whose default is None takes any type); an unknown key is refused with the
closest names and a list of every option (its type, default and meaning);
`--problem_options=help` prints that list. An option's meaning is the `#:`
comment above its class attribute (the nearest class that has one). Per-split
dicts (`num_shards`) are set in a subclass only.

`bin/datagen` records the options in the data's completion record.
`bin/train` and `bin/decode` build the problem with the recorded options, so
that they read the data as it was written; options given to them must equal
the recorded ones.
"""

import inspect
import re
import textwrap
from typing import Optional

from syntax_t2t import registry
from syntax_t2t.hparams import HParams, HParamsError, format_literal, parse_overrides


class ProblemOptionsError(HParamsError):
    """Options that the problem does not have, of the wrong type, or that contradict its data."""


class ProblemOptionsHelp(Exception):
    """`--problem_options=help`: the text is the options' list; the program prints it and stops."""


class _Options(HParams):
    _noun = "problem option"


def _settable(problem_class) -> _Options:
    """The options that the command line can set, with their class defaults."""
    options = _Options()
    for name in problem_class.option_names:
        default = getattr(problem_class, name)
        if not isinstance(default, dict):
            options.define(name, list(default) if isinstance(default, tuple) else default)
    return options


def settable_names(problem_class) -> list[str]:
    """The options `--problem_options` can set, in the order the class names them."""
    return [name for name in problem_class.option_names
            if not isinstance(getattr(problem_class, name), dict)]


def describe(problem_class) -> str:
    """Every settable option of `problem_class`, one per line: name (type, default): meaning."""
    options, meanings = _settable(problem_class), _meanings(problem_class)
    lines = [f"options of {registry.snake_case(problem_class.__name__)} "
             f"(--problem_options='key=value,...'):"]
    for option in settable_names(problem_class):
        kind = options._types[option] or "any"
        if option in options._nullable and kind != "any":
            kind += " or none"
        default = format_literal(getattr(problem_class, option))
        lines.append(f"  {option} ({kind}, default {default}): "
                     f"{meanings.get(option, '(not described)')}")
    return "\n".join(lines)


def _meanings(problem_class) -> dict[str, str]:
    """The `#:` comment above each class attribute, from the nearest class that has one."""
    meanings: dict[str, str] = {}
    for klass in problem_class.__mro__:
        try:
            source = textwrap.dedent(inspect.getsource(klass))
        except (OSError, TypeError):
            continue
        comment: list[str] = []
        for line in source.splitlines():
            body = line[4:] if line.startswith("    ") and not line.startswith("     ") else None
            if body is not None and body.startswith("#:"):
                comment.append(body[2:].strip())
                continue
            match = re.match(r"(\w+)\s*(:[^=]*)?=", body or "")
            if match and comment:
                meanings.setdefault(match.group(1), " ".join(comment))
            comment = []
    return meanings


def parse(problem_class, text: str) -> dict:
    """`--problem_options` text as `{name: typed value}` for `problem_class`.

    Raises:
        ProblemOptionsError: an unknown or per-split option, a malformed
            value or one of the wrong type; for an unknown one the message
            lists every option (`describe`).
        ProblemOptionsHelp: `text` is `help`.
    """
    if text.strip() == "help":
        raise ProblemOptionsHelp(describe(problem_class))
    try:
        overrides = parse_overrides(text)
        options = _settable(problem_class)
        for name in overrides:
            if name in problem_class.option_names and name not in options:
                raise ProblemOptionsError(f"problem option {name!r} of {problem_class.__name__} "
                                          f"is set per split; set it in a subclass")
        options.override(overrides)
    except ProblemOptionsError:
        raise
    except HParamsError as error:
        listing = (f"\n{describe(problem_class)}" if str(error).startswith("unknown problem option")
                   else "")
        raise ProblemOptionsError(f"--problem_options={text!r}: {error}{listing}") from error
    return {name: options.get(name) for name in overrides}


def recorded(problem_class, data_dir: str) -> Optional[dict]:
    """The settable options recorded by datagen in `data_dir`, or None without complete data."""
    record = problem_class().completion_record(data_dir)
    if record is None:
        return None
    settable = _settable(problem_class)
    return {name: value for name, value in (record.get("options") or {}).items()
            if name in settable}


def problem_for_data(name: str, data_dir: Optional[str], text: str = ""):
    """The registered problem `name` with the options of its data in `data_dir`.

    Args:
        name: the registered problem.
        data_dir: the generated data (None, or no complete data there: only
            the given options apply).
        text: `--problem_options`; each must equal the recorded value.

    Raises:
        ProblemOptionsError: bad options, or ones that differ from the data's.
    """
    problem_class = registry.problems.get(name)
    given = parse(problem_class, text or "")
    saved = recorded(problem_class, data_dir) if data_dir else None
    if saved is None:
        return problem_class(**given)
    differing = {key: value for key, value in given.items() if key in saved
                 and _comparable(value) != _comparable(saved[key])}
    if differing:
        listed = "; ".join(f"{key}: data {format_literal(saved[key])}, given "
                           f"{format_literal(value)}" for key, value in sorted(differing.items()))
        raise ProblemOptionsError(
            f"--problem_options differ from the options the data in {data_dir} was generated "
            f"with ({listed}); leave them out to use the data's, or regenerate the data "
            f"(bin/datagen --overwrite)")
    return problem_class(**{**saved, **given})


def _comparable(value):
    if isinstance(value, str) and value.lower() == "none":
        return None  # `subwords=none` on the command line is the None a record holds
    return list(value) if isinstance(value, tuple) else value
