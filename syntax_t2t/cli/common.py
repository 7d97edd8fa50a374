"""Flags and start-up shared by every command-line program.

Each program defines only its own flags; the ones every T2T-style tool has
(`--problem`, `--model`, `--hparams_set`, `--hparams`, `--data_dir`,
`--output_dir`, `--usr_dir`, `--registry_help`) are defined here once.
"""

import errno
import importlib
import os
import signal
import sys

from absl import app, flags

from syntax_t2t import directory_lock, parent_death, problem_options, registry
from syntax_t2t.cli import aliases, registration
from syntax_t2t.errors import InputError, OutputPathError
from syntax_t2t.hparams import HParamsError

FLAGS = flags.FLAGS

flags.DEFINE_string("problem", None, "Registered problem name.")
flags.DEFINE_string("model", None, "Registered model name.")
flags.DEFINE_string("hparams_set", None, "Registered hparams set name.")
flags.DEFINE_string("hparams", "", "Overrides, e.g. 'parse_layer=1,dropout=0.2'.")
flags.DEFINE_string("problem_options", "",
                    "The problem's options, e.g. 'subwords=joint,vocab_size=32000' (typed like "
                    "--hparams; datagen records them, later tools use and check the recorded ones).")
flags.DEFINE_string("data_dir", None, "Directory of generated data (vocabularies, TFRecords).")
flags.DEFINE_string("output_dir", None, "Directory of a training run (checkpoints, hparams.json).")
flags.DEFINE_string("usr_dir", None, "Directory of user modules that register problems, models or hparams sets.")
flags.DEFINE_bool("registry_help", False, "Print what is registered and exit.")
flags.DEFINE_integer("random_seed", None,
                     "Seed of everything random: initialisation, dropout, data order, sampled data.")


# A full or read-only disk is the user's to fix, not a bug to trace back (issue 35, item 8).
_STORAGE_ADVICE = {errno.ENOSPC: "the disk is full: free some space, or write elsewhere",
                   errno.EDQUOT: "the disk quota is used up: free some space, or write elsewhere",
                   errno.EROFS: "the file system is read-only: write elsewhere"}


def tensorflow_storage_error(error: BaseException):
    """One line for a TensorFlow file error on a full or read-only disk, else None.

    TensorFlow's writers (TFRecord shards, summaries, SavedModel) report
    ENOSPC and EROFS as `tf.errors.ResourceExhaustedError` or
    `UnknownError` whose message holds the C library's text; recognised
    here by that text, without importing TensorFlow.
    """
    if not type(error).__module__.startswith("tensorflow"):
        return None
    message = getattr(error, "message", None) or str(error)
    for number, advice in _STORAGE_ADVICE.items():
        text = os.strerror(number)
        if text in message:
            where = message.split(";")[0].strip() if ";" in message else "a file"
            return f"cannot write {where}: {text}; {advice}"
    return None


class UsageError(Exception):
    """A problem with how a program was called; printed without a traceback."""


# Errors a user can cause and fix; anything else is a bug and keeps its traceback.
USER_ERRORS = (UsageError, InputError, OutputPathError, registry.RegistryError, HParamsError,
               aliases.AliasError, FileNotFoundError, ImportError,
               directory_lock.DirectoryLockError)


def load_registry(builtins=None):
    """Imports the user's modules and the built-ins; honours --registry_help.

    Args:
        builtins: the built-in modules to import (`registration.import_all`'s
            `modules`); None imports them all.
    """
    if FLAGS.usr_dir:
        registration.import_usr_dir(FLAGS.usr_dir)
    if builtins is None:
        registration.import_all()
    else:
        registration.import_all(builtins)
    if FLAGS.registry_help:
        print(registry.help_string())
        sys.exit(0)


def require(*names):
    """Raises UsageError unless each named flag is set."""
    missing = [f"--{name}" for name in names if getattr(FLAGS, name) in (None, "")]
    if missing:
        raise UsageError(f"missing required flag(s): {', '.join(missing)}")


def hparams_from_flags():
    """The registered `--hparams_set` with `--hparams` applied."""
    require("hparams_set")
    hparams = registry.hparams(FLAGS.hparams_set)
    hparams.parse(FLAGS.hparams)
    return hparams


def adopt_program_flags(program):
    """Makes `--help` list the program's flags, whichever file was executed.

    absl's `--help` lists the key flags of the file run as `sys.argv[0]`:
    `bin/X` or a console script, neither of which defines a flag. The
    program's module makes its own flags key and declares the shared ones it
    reads (`flags.declare_key_flag`); this hands them, with `--usr_dir` (and
    its alias) and `--registry_help` which every program honours, to
    `sys.argv[0]`.

    Args:
        program: the module of the program (e.g. `syntax_t2t.cli.train`).
    """
    key_flags = FLAGS.get_key_flags_for_module(program.__name__)
    key_flags += [FLAGS[name] for name in ("usr_dir", "t2t_usr_dir", "registry_help")]
    for flag in key_flags:
        FLAGS.register_key_flag_for_module(sys.argv[0], flag)


def run(main, extra_user_errors=(), builtins=None):
    """`absl.app.run(main)`, printing user errors as one clear line.

    Args:
        main: the program's `main(argv)`.
        extra_user_errors: further exception types to report without a
            traceback.
        builtins: the built-in modules to register (see `load_registry`);
            None registers them all.
    """
    adopt_program_flags(sys.modules[main.__module__])
    _run_parsed(lambda: (main, tuple(extra_user_errors)), builtins)


def run_deferred(flags_module: str, program: str) -> None:
    """`run` of a program whose flags are defined in a light module of their own.

    absl answers `--help`, `--helpfull`, an unknown flag or a malformed value
    once `flags_module` is imported; `program`, which imports Keras and
    TensorFlow, is imported only after the command line parsed. Its
    `entry_point()` gives `run`'s `main` and `extra_user_errors`; its
    optional `builtin_modules()` the built-in modules to register, when they
    depend on what the program loaded (e.g. the Keras backend; default: all).

    Args:
        flags_module: the name of the imported module defining the program's
            flags (e.g. `syntax_t2t.cli.train_flags`).
        program: the name of the program's module (e.g. `syntax_t2t.cli.train`).
    """
    adopt_program_flags(sys.modules[flags_module])

    def program_builtins():
        choose = getattr(sys.modules[program], "builtin_modules", None)
        return None if choose is None else choose()

    _run_parsed(lambda: importlib.import_module(program).entry_point(), program_builtins)


def _run_parsed(load_main, builtins):
    """`absl.app.run` of the `main` that `load_main()` gives, with its user errors, once parsed.

    `builtins`: as in `run`, or a function that gives them once `main` is loaded.
    """

    # First: a program the grid started ends with the grid, even while it imports Keras.
    parent_death.adopt()

    def guarded(argv):
        # Outside the guard: a program that fails to import is a bug, with its traceback.
        main, extra_user_errors = load_main()
        user_errors = USER_ERRORS + tuple(extra_user_errors)
        previous = _exit_cleanly_on_sigterm()
        try:
            aliases.apply()
            load_registry(builtins() if callable(builtins) else builtins)
            return main(argv)
        except KeyboardInterrupt:
            # Ctrl-C outside a handler of the program's own (bin/train saves and stops; bin/grid
            # passes it on to the program it runs): the same unwinding as SIGTERM's, one line.
            print("error: stopped by SIGINT; temporary files were removed, and nothing "
                  "half-written was left", file=sys.stderr)
            sys.exit(128 + signal.SIGINT)
        except problem_options.ProblemOptionsHelp as listing:
            print(listing)  # --problem_options=help
            sys.exit(0)
        except user_errors as error:
            # Once, without a logging line that says it again.
            print(f"error: {error}", file=sys.stderr)
            sys.exit(1)
        except OSError as error:
            if error.errno not in _STORAGE_ADVICE:
                raise
            print(f"error: cannot write {error.filename or 'a file'}: {error.strerror}; "
                  f"{_STORAGE_ADVICE[error.errno]}", file=sys.stderr)
            sys.exit(1)
        except Exception as error:  # noqa: BLE001 (TensorFlow's own errors, matched by their text)
            line = tensorflow_storage_error(error)
            if line is None:
                raise
            print(f"error: {line}", file=sys.stderr)
            sys.exit(1)
        finally:
            # Run and data directories are the program's until it ends (tests run several in one
            # process; an executable's locks would go with it anyway).
            directory_lock.release_all()
            if previous is not None:
                signal.signal(signal.SIGTERM, previous)

    app.run(guarded)


class Terminated(SystemExit):
    """SIGTERM, raised where the program is, so that its `finally` blocks run."""


def _exit_cleanly_on_sigterm():
    """Turns SIGTERM into `Terminated` (exit status 143); returns the handler it replaced, or None.

    Python's default action for SIGTERM ends the process at once: staging
    directories of bin/export and bin/average_checkpoints and spooled
    standard input were left behind (#35 item 9). As an exception the
    signal unwinds through their clean-up. A handler the program set
    itself (bin/train's checkpoint-and-stop) is left alone.
    """
    if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        return None

    program = os.getpid()

    def terminate(signum, frame):
        if os.getpid() != program:
            # A forked worker (datagen's pool, which stops its workers with SIGTERM): die as before.
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)
            return
        print("error: stopped by SIGTERM; temporary files were removed, and nothing half-written "
              "was left", file=sys.stderr)
        raise Terminated(128 + signal.SIGTERM)

    try:
        return signal.signal(signal.SIGTERM, terminate)
    except ValueError:  # not the main thread: leave the default
        return None
