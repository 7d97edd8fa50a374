"""Train a model for two steps with bin/train's main, then decode with bin/decode's main."""

from absl.testing import flagsaver

from syntax_t2t.cli import decode, train


def train_then_decode(problem_name, model, hparams, data_dir, run_dir, test_file, output,
                      num_sentences):
    """Runs both programs in this process and checks one output line per input sentence."""
    with flagsaver.flagsaver(problem=problem_name, model=model, hparams_set="transformer_tiny",
                             hparams=hparams, data_dir=str(data_dir), output_dir=str(run_dir),
                             train_steps=2, save_checkpoints_steps=2, eval_steps=1, eval_every=0,
                             log_step_count_steps=1, random_seed=1):
        train.main(["train"])
    with flagsaver.flagsaver(output_dir=str(run_dir), decode_from_file=str(test_file),
                             decode_to_file=str(output),
                             decode_hparams="beam_size=2,extra_length=5"):
        decode.main(["decode"])
    lines = output.read_text(encoding="utf-8").split("\n")
    assert len(lines) == num_sentences + 1 and lines[-1] == ""
