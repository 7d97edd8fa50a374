#!/usr/bin/env bash
# One GPU session of issue 33 in one command, within a wall-clock budget:
#
#   docs/gpu_session.sh OUT DATA_DIR [WHEELS_DIR]      (make gpu-session)
#
# On a machine with JAX (CUDA) and no Keras or TensorFlow it
#   1. installs the carried wheels of WHEELS_DIR (`make gpu-wheels` downloads
#      them) with pip --no-index --no-deps --target, and checks that Keras
#      accepts this JAX (version, devices, a jitted matmul);
#   2. runs bin/bench under KERAS_BACKEND=jax on WHEELS_DIR/bench_batch.npz:
#      float32 against mixed_bfloat16 at $HPARAMS_SET with the MFU of each
#      against a matmul of its dtype measured in the same run, and decoding
#      sentences/s; then the thesis variants' step-time ratios to transformer;
#   3. trains $MODEL at $HPARAMS_SET on $PROBLEM's shards in DATA_DIR (read
#      only) for at most $TRAIN_SECONDS (SIGTERM saves a checkpoint), decodes
#      the test and dev sets with beam 4 and scores them with sacreBLEU.
# Every step has a time limit taken from what is left of $BUDGET seconds, so
# the whole session ends in time; each writes its figures under OUT
# (precision/, decoding/, variants/: bench.md and bench.json; train/; *.hyp,
# *_bleu.json, versions.txt, session.log, and summary.txt, one line per step
# with its exit status and seconds).
#
# Settings (environment): BUDGET=480, PYTHON=python3, HPARAMS_SET=transformer_base,
# MODEL=transformer, PROBLEM=multi30k_syntax_cs_en_subword, TRAIN_SECONDS
# (default: what is left after the bench, less 210 s for its SIGTERM checkpoint,
# decoding and scoring), VARIANTS (the models of the variants' bench),
# TRAIN_STEPS=100000 (the time limit stops it first), EVAL_EVERY=500,
# TRAIN_FLAGS (added to bin/train's), BENCH_FLAGS (added to bin/bench's),
# MATMUL_SIZE=8192, REPETITIONS=5, TEST_SPLIT=test,
# MIXED_PRECISION=mixed_bfloat16 (training's and the bench's). The steps' time
# limits are for BUDGET=480 and scale with it.
set -u -o pipefail

if [ $# -lt 2 ]; then
  sed -n '2,30p' "$0" >&2
  exit 2
fi
START=$(date +%s)
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=$(mkdir -p "$1" && cd "$1" && pwd)
DATA_DIR=$2
WHEELS=${3:-$ROOT/gpu_wheels}
BUDGET=${BUDGET:-480}
PYTHON=${PYTHON:-python3}
HPARAMS_SET=${HPARAMS_SET:-transformer_base}
MODEL=${MODEL:-transformer}
PROBLEM=${PROBLEM:-multi30k_syntax_cs_en_subword}
TRAIN_STEPS=${TRAIN_STEPS:-100000}
TEST_SPLIT=${TEST_SPLIT:-test}
MIXED_PRECISION=${MIXED_PRECISION:-mixed_bfloat16}
export KERAS_BACKEND=jax TF_CPP_MIN_LOG_LEVEL=2
cd "$ROOT" || exit 1
exec > >(tee -a "$OUT/session.log") 2>&1

# 1. The wheels, and Keras on this JAX.
# shellcheck source=docs/gpu_lib.sh
. "$ROOT/docs/gpu_lib.sh"

# 2. The bench, most wanted first: float32 against mixed precision (step ratio and
# MFU against a matmul of each dtype timed in the same run), decoding sentences/s
# (beam 1 and 4), then the thesis variants' step-time ratios to transformer.
BATCH=$WHEELS/bench_batch.npz
BENCH=("$PYTHON" bin/bench --hparams_set="$HPARAMS_SET" --batch_file="$BATCH"
       --matmul_size="${MATMUL_SIZE:-8192}" --repetitions="${REPETITIONS:-5}" ${BENCH_FLAGS:-})
# at_most LIMIT RESERVE: LIMIT seconds, or fewer so that RESERVE are left after it;
# both are for the 480 s budget, scaled to $BUDGET.
at_most() {
  local most=$(( $1 * BUDGET / 480 )) limit=$(( $(left) - $2 * BUDGET / 480 ))
  echo $(( limit < most ? limit : most ))
}
step precision "$(at_most 110 300)" "${BENCH[@]}" --only=precision \
  --mixed_precision="$MIXED_PRECISION" --output_dir="$OUT/precision"
step decoding "$(at_most 80 280)" "${BENCH[@]}" --models=transformer \
  --only=training,decoding --output_dir="$OUT/decoding"
step variants "$(at_most 90 260)" "${BENCH[@]}" \
  --models="${VARIANTS:-tree_distance,tree_traversal,spec_pos,spec_dep,dep_parse,diagonal_parse}" \
  --norelative --only=training --output_dir="$OUT/variants"

# 3. A short training run (SIGTERM at its limit saves a checkpoint), then beam-4
# decodes of the test set and, time permitting, dev, each scored.
RUN=$OUT/train
# SIGTERM lets it finish the step and write a checkpoint: up to a minute.
TRAIN_LIMIT=${TRAIN_SECONDS:-$(( $(left) - 210 * BUDGET / 480 ))}
KILL_AFTER=60 step train "$TRAIN_LIMIT" "$PYTHON" bin/train --problem="$PROBLEM" \
  --data_dir="$DATA_DIR" --model="$MODEL" --hparams_set="$HPARAMS_SET" --output_dir="$RUN" \
  --train_steps="$TRAIN_STEPS" --mixed_precision="$MIXED_PRECISION" --eval_bleu \
  --eval_every="${EVAL_EVERY:-500}" --save_checkpoints_steps="${EVAL_EVERY:-500}" \
  --log_step_count_steps=50 ${TRAIN_FLAGS:-}
# BLEU with sacreBLEU itself (bin/evaluate's RIBES needs nltk, which the machine lacks).
BLEU_PY=$(cat <<'EOF'
import json
import sys

import sacrebleu

references, hypotheses, output = sys.argv[1:]
with open(references, encoding="utf-8") as stream:
    refs = [line.rstrip("\n") for line in stream]
with open(hypotheses, encoding="utf-8") as stream:
    hyps = [line.rstrip("\n") for line in stream]
metric = sacrebleu.metrics.BLEU()
score = metric.corpus_score(hyps, [refs])
print(f"{hypotheses}: {score} ({metric.get_signature()})")
with open(output, "w", encoding="utf-8") as stream:
    json.dump({"bleu": score.score, "signature": str(metric.get_signature()),
               "sentences": len(hyps), "text": str(score)}, stream, indent=2)
EOF
)
for split in "$TEST_SPLIT" dev; do
  step "decode_$split" "$(at_most 90 15)" "$PYTHON" bin/decode --output_dir="$RUN" \
    --decode_hparams=beam_size=4,alpha=0.6 \
    --decode_from_file="$DATA_DIR/$PROBLEM-$split.src.conllu" --decode_to_file="$OUT/$split.hyp" &&
  step "bleu_$split" "$(at_most 30 0)" "$PYTHON" -c "$BLEU_PY" "$DATA_DIR/$PROBLEM-$split.ref.txt" \
    "$OUT/$split.hyp" "$OUT/${split}_bleu.json"
done
cp "$RUN"/*.json "$RUN"/*.txt "$OUT/" 2> /dev/null
echo "=== done in $(($(date +%s) - START)) s of $BUDGET"
cat "$OUT/summary.txt"
