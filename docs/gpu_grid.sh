#!/usr/bin/env bash
# One GPU session of a grid (issue 32's confirmatory experiment) in one command:
#
#   docs/gpu_grid.sh OUT BUNDLE [WHEELS_DIR]
#
# BUNDLE is what `bin/grid --bundle_dir=BUNDLE` made here (every system's data,
# the test and treebank files, the raw test sources parsed and the teacher's
# parses: syntax_t2t/grid/bundle.py); WHEELS_DIR holds the wheels of
# `make gpu-wheels`. On a machine with JAX and no TensorFlow, spaCy or network it
#   1. installs the wheels and checks Keras on this JAX (docs/gpu_lib.sh);
#   2. copies BUNDLE/grid into a grid directory and runs $TASKS grid tasks side by
#      side on the one GPU (`--num_tasks`, each its share of the runs, GPU memory
#      allocated as needed), each under `--time_budget` (what is left of
#      $BUDGET less $RESERVE s), with `--archive_dir=$ARCHIVE`: runs that earlier
#      sessions finished and archived (committed, so they travel with the working
#      tree) are restored and not trained again; each run that finishes here is
#      archived as it finishes, its sealed-test translations with it;
#   3. packs the archive records written in this session into OUT/archive.tar.gz
#      (unpack it over $ARCHIVE here and commit), and copies the report
#      (results.md) and the tasks' logs with the training progress of every
#      run trained here, finished or not (grid_tasks.log), into OUT.
# Six files come back (at most 8 may): session.log, summary.txt, versions.txt,
# archive.tar.gz, results.md, grid_tasks.log.
#
# Settings (environment): BUDGET=540, TASKS=4, RESERVE=40,
# EXPERIMENT=multi30k_cs_en_confirmatory, ARCHIVE=docs/runs/$EXPERIMENT,
# BOOTSTRAP_SAMPLES=1000 (the session's progress reports), PYTHON=python3,
# GRID_FLAGS (added to bin/grid's, e.g. --usr_dir=...).
set -u -o pipefail

if [ $# -lt 2 ]; then
  sed -n '2,28p' "$0" >&2
  exit 2
fi
START=$(date +%s)
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=$(mkdir -p "$1" && cd "$1" && pwd)
BUNDLE=$(cd "$2" && pwd) || exit 2
WHEELS=${3:-$ROOT/gpu_wheels}
BUDGET=${BUDGET:-540}
TASKS=${TASKS:-4}
RESERVE=${RESERVE:-40}
PYTHON=${PYTHON:-python3}
EXPERIMENT=${EXPERIMENT:-multi30k_cs_en_confirmatory}
ARCHIVE=${ARCHIVE:-$ROOT/docs/runs/$EXPERIMENT}
# A task rewrites the report after each run: a progress report here, so fewer resamples than
# the report of record, which `bin/grid --report_only` writes at home from the archive.
BOOTSTRAP_SAMPLES=${BOOTSTRAP_SAMPLES:-1000}
export KERAS_BACKEND=jax TF_CPP_MIN_LOG_LEVEL=2
cd "$ROOT" || exit 1
exec > >(tee -a "$OUT/session.log") 2>&1

# 1. The wheels, and Keras on this JAX.
# shellcheck source=docs/gpu_lib.sh
. "$ROOT/docs/gpu_lib.sh"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2> /dev/null

# 2. The grid's tasks side by side.
GRID=$(mktemp -d)/grid
cp -r "$BUNDLE/grid" "$GRID" || exit 1
mkdir -p "$ARCHIVE"
STAMP=$(mktemp)  # archive records newer than this are this session's
PLACES=()
for place in data_dir:data tmp_dir:tmp treebank_dir:treebank; do
  [ -d "$BUNDLE/${place#*:}" ] && PLACES+=("--${place%%:*}=$BUNDLE/${place#*:}")
done
LIMIT=$(( $(left) - RESERVE ))
if [ "$LIMIT" -le 60 ]; then
  echo "grid: not run, the budget leaves it $LIMIT s" | tee -a "$OUT/summary.txt"
  exit 1
fi
# Every JAX process allocates GPU memory as it needs it: alone, each would take 75% at its
# start, and the grid processes (which build the models to check them) and their programs
# (bin/train, bin/decode) are twice $TASKS processes on one GPU.
export XLA_PYTHON_CLIENT_PREALLOCATE=false
echo "=== grid: $TASKS tasks, --time_budget=${LIMIT}s each"
begin=$(date +%s)
pids=()
for task in $(seq 0 $((TASKS - 1))); do
  # The grid stops its running program at the budget's end; the outer limit is a safety net.
  timeout -k 20 $((LIMIT + RESERVE / 2)) \
    "$PYTHON" bin/grid --experiment="$EXPERIMENT" --output_dir="$GRID" "${PLACES[@]}" \
    --archive_dir="$ARCHIVE" --num_tasks="$TASKS" --task_id="$task" \
    --time_budget="${LIMIT}s" --bootstrap_samples="$BOOTSTRAP_SAMPLES" ${GRID_FLAGS:-} \
    > "$GRID/task$task.log" 2>&1 &
  pids+=($!)
done
statuses=()
for pid in "${pids[@]}"; do
  wait "$pid"
  statuses+=($?)
done
echo "grid: exit ${statuses[*]} in $(($(date +%s) - begin)) s" | tee -a "$OUT/summary.txt"

# 3. What comes back.
for task in $(seq 0 $((TASKS - 1))); do
  echo "=== task $task"
  tail -n 40 "$GRID/task$task.log"
done > "$OUT/grid_tasks.log"
# The training speed of every run trained here, finished or not: a run the budget stopped
# leaves nothing else behind (its checkpoints stay on the machine).
find "$GRID/runs" -name train.log -newer "$STAMP" 2> /dev/null | sort | while read -r log; do
  echo "=== ${log#"$GRID"/runs/}"
  grep -E "progress.py|dev_translation.py|stopped" "$log" | tail -n 12
done >> "$OUT/grid_tasks.log"
cp "$GRID/results.md" "$OUT/" 2> /dev/null
NEW=$(cd "$ARCHIVE" && find . -type f -newer "$STAMP" | sort)
if [ -n "$NEW" ]; then
  # shellcheck disable=SC2086  # one path per word: archive names have no spaces
  (cd "$ARCHIVE" && tar -czf "$OUT/archive.tar.gz" $NEW)
fi
echo "archive: $(echo "$NEW" | grep -c 'scores.json$') finished runs in archive.tar.gz" \
  | tee -a "$OUT/summary.txt"
echo "=== done in $(($(date +%s) - START)) s of $BUDGET"
cat "$OUT/summary.txt"
