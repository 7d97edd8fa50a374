"""`--help` and flag errors of the tools load no Keras, TensorFlow, JAX or spaCy (#34 item 8).

Importing TensorFlow, Keras or JAX takes 8-16 s on a loaded CPU, spaCy about
5 s; a user asking bin/train, bin/decode or bin/datagen (or
bin/average_checkpoints, bin/convert_checkpoints, bin/export, bin/analyze,
bin/grid, bin/train_parser, bin/bench) for help or mistyping a flag gets the answer
from absl before any of them is imported.
Each case runs the executable in a fresh interpreter, the way `bin/<tool>`
runs (runpy, `__main__`), and reports its exit status and which of those
libraries it imported.
"""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
HEAVY = ("tensorflow", "keras", "jax", "spacy")

# Runs bin/<tool> with the given arguments; the last line of stderr is the JSON report.
DRIVER = """
import json, runpy, sys
tool, arguments = sys.argv[1], sys.argv[2:]
sys.argv = [f"bin/{tool}", *arguments]
status = 0
try:
    runpy.run_path(f"bin/{tool}", run_name="__main__")
except SystemExit as exit_:
    status = exit_.code
sys.stderr.write("\\n" + json.dumps({"status": status, "imported": [
    name for name in %r if name in sys.modules]}) + "\\n")
""" % (HEAVY,)

#: A malformed value of one of each tool's flags, and flags its --help must list.
TOOLS = {
    "train": ("--train_steps=abc", {"problem", "model", "hparams_set", "data_dir", "output_dir",
                                    "train_steps", "eval_bleu", "schedule", "usr_dir",
                                    "registry_help"}),
    "decode": ("--nbest=abc", {"output_dir", "decode_from_file", "decode_to_file",
                               "decode_hparams", "checkpoint_path", "parse_to_file", "usr_dir",
                               "registry_help"}),
    "datagen": ("--max_examples=abc", {"problem", "data_dir", "tmp_dir", "overwrite",
                                       "num_workers", "parser", "usr_dir", "registry_help"}),
    "average_checkpoints": ("--num_last_checkpoints=abc", {"output_dir", "num_last_checkpoints",
                                                           "averaged_dir", "usr_dir"}),
    "convert_checkpoints": ("--include_model_dirs=abc", {"output_dir", "include_model_dirs",
                                                         "usr_dir"}),
    "export": ("--format=abc", {"format", "export_dir", "quantization", "checkpoint_path",
                                "usr_dir"}),
    "analyze": ("--num_sentences=abc", {"output_dir", "analysis_dir", "analyze_from_file",
                                        "num_sentences", "ngram_systems", "usr_dir"}),
    "grid": ("--num_tasks=abc", {"experiment", "output_dir", "systems", "seeds", "time_budget",
                                 "report_only", "usr_dir"}),
    "bench": ("--repetitions=abc", {"quick", "models", "only", "skip", "backends", "batch_file",
                                    "hparams_set", "output_dir", "random_seed", "usr_dir"}),
    "train_parser": ("--max_steps=abc", {"lang", "train_files", "dev_files", "max_steps",
                                         "output_dir", "random_seed"}),
}


def run_tool(tool, *arguments):
    """(exit status, stdout, stderr without the report, the heavy libraries imported)."""
    result = subprocess.run([sys.executable, "-c", DRIVER, tool, *arguments], cwd=REPO,
                            capture_output=True, text=True, timeout=300)
    stderr, _, report = result.stderr.rstrip("\n").rpartition("\n")
    report = json.loads(report)
    return report["status"], result.stdout, stderr, report["imported"]


def listed_flags(help_text):
    return set(re.findall(r"^  --(?:\[no\])?(\w+):", help_text, flags=re.M))


@pytest.mark.parametrize("tool", sorted(TOOLS))
@pytest.mark.parametrize("option", ["--help", "--helpfull"])
def test_help_lists_the_flags_without_loading_keras(tool, option):
    status, out, err, imported = run_tool(tool, option)
    assert imported == [], f"bin/{tool} {option} imported {imported}"
    assert status == 1  # absl's exit status after help
    assert TOOLS[tool][1] <= listed_flags(out), err
    assert "Traceback" not in err


@pytest.mark.parametrize("tool", sorted(TOOLS))
def test_unknown_flag_is_one_line_without_loading_keras(tool):
    status, out, err, imported = run_tool(tool, "--no_such_flag=1")
    assert imported == [], f"bin/{tool} --no_such_flag imported {imported}"
    assert status not in (0, None)
    errors = [line for line in err.splitlines() if "no_such_flag" in line]
    assert errors == ["FATAL Flags parsing error: Unknown command line flag 'no_such_flag'"], err
    assert "Traceback" not in err


@pytest.mark.parametrize("tool", sorted(TOOLS))
def test_malformed_value_is_one_line_without_loading_keras(tool):
    malformed = TOOLS[tool][0]
    status, out, err, imported = run_tool(tool, malformed)
    assert imported == [], f"bin/{tool} {malformed} imported {imported}"
    assert status not in (0, None)
    errors = [line for line in err.splitlines() if malformed in line]
    assert len(errors) == 1 and errors[0].startswith("FATAL Flags parsing error: "), err
    assert "Traceback" not in err
