"""Tensor2Tensor's and fairseq's names for our flags, doing what their users mean.

    --t2t_usr_dir=D           --usr_dir=D                      (every program)
    --local_eval_frequency=N  --eval_every=N --save_checkpoints_steps=N
    --worker_gpu=N            --distribution=mirrored over N GPUs (N=1: none)
    --max_tokens=N            --hparams=batch_size=N           (fairseq)
    --update_freq=K           --hparams=update_freq=K          (fairseq)

bin/train's `--schedule=train|evaluate|train_and_evaluate` is T2T's own
flag, defined by the program. An alias is replaced by what it stands for
before the program runs, so `flags.txt` records the targets. Giving an alias
and its target with different values is an `AliasError`.
"""

from absl import flags

from syntax_t2t.hparams import format_literal, parse_overrides

FLAGS = flags.FLAGS

flags.DEFINE_string("t2t_usr_dir", None, "Alias of --usr_dir (Tensor2Tensor's name).")


class AliasError(ValueError):
    """An alias and its target given with different values."""


# alias -> its targets' values, as a function of the alias's value.
FLAG_ALIASES = {
    "t2t_usr_dir": lambda directory: {"usr_dir": directory},
    "local_eval_frequency": lambda steps: {"eval_every": steps, "save_checkpoints_steps": steps},
    "worker_gpu": lambda count: {"distribution": "mirrored" if count > 1 else "none"},
}
# alias -> the hparam it sets.
HPARAM_ALIASES = {"max_tokens": "batch_size", "update_freq": "update_freq"}


def define_train_aliases():
    """Defines the aliases of bin/train's flags (call once, from the program's module)."""
    flags.DEFINE_integer("local_eval_frequency", None,
                         "Alias (T2T): --eval_every=N --save_checkpoints_steps=N.", lower_bound=1)
    flags.DEFINE_integer("worker_gpu", None,
                         "Alias (T2T): train on N GPUs of this host, --distribution=mirrored "
                         "(N=1: --distribution=none).", lower_bound=1)
    flags.DEFINE_integer("max_tokens", None,
                         "Alias (fairseq): --hparams=batch_size=N, tokens per batch.",
                         lower_bound=1)
    flags.DEFINE_integer("update_freq", None,
                         "Alias (fairseq): --hparams=update_freq=K, the summed gradients of K "
                         "batches per optimizer step.", lower_bound=1)


def _given(name, flag_values):
    return name in flag_values and flag_values[name].present


def apply(flag_values=FLAGS):
    """Replaces every alias given on the command line by what it stands for.

    Raises:
        AliasError: an alias and its target are given with different values.
    """
    for alias, targets_of in FLAG_ALIASES.items():
        if not _given(alias, flag_values):
            continue
        value = flag_values[alias].value
        for target, target_value in targets_of(value).items():
            flag = flag_values[target]
            if flag.present and flag.value != target_value:
                raise AliasError(f"--{alias}={value} means --{target}={target_value}, but "
                                 f"--{target}={flag.value} is given too")
            flag.value = target_value
    given = {alias: hparam for alias, hparam in HPARAM_ALIASES.items()
             if _given(alias, flag_values)}
    if not given:
        return
    overrides = parse_overrides(flag_values["hparams"].value)
    added = []
    for alias, hparam in given.items():
        value = flag_values[alias].value
        if hparam in overrides and overrides[hparam] != value:
            raise AliasError(f"--{alias}={value} means --hparams={hparam}={value}, but "
                             f"--hparams gives {hparam}={format_literal(overrides[hparam])}")
        if hparam not in overrides:
            added.append(f"{hparam}={value}")
    flag_values["hparams"].value = ",".join(
        part for part in [flag_values["hparams"].value.strip(" ,")] + added if part)
