# Shared by docs/gpu_session.sh and docs/gpu_grid.sh (sourced, not run): the
# session's clock, time-limited steps recorded in $OUT/summary.txt, the carried
# wheels and a check of Keras on this JAX. Needs START, BUDGET, OUT, WHEELS and
# PYTHON set; installs into a temporary --target and exports PYTHONPATH.

left() { echo $((BUDGET - ($(date +%s) - START))); }

# step NAME SECONDS COMMAND...: runs COMMAND for at most SECONDS (SIGTERM, then
# SIGKILL $KILL_AFTER s later, default 20) and records its exit status and time
# in summary.txt.
step() {
  local name=$1 limit=$2
  shift 2
  if [ "$limit" -le 5 ]; then
    echo "$name: not run, the budget leaves it $limit s" | tee -a "$OUT/summary.txt"
    return 1
  fi
  echo "=== $name (at most $limit s; $(left) s of $BUDGET left)"
  local begin status
  begin=$(date +%s)
  timeout -k "${KILL_AFTER:-20}" "$limit" "$@"
  status=$?
  local note=""
  [ "$status" -eq 124 ] || [ "$status" -eq 137 ] && note=" (stopped at its time limit)"
  echo "$name: exit $status in $(($(date +%s) - begin)) s$note" | tee -a "$OUT/summary.txt"
  return $status
}

: > "$OUT/summary.txt"
echo "$(basename "$0") $(date -u +%Y-%m-%dT%H:%M:%SZ) budget ${BUDGET} s, wheels $WHEELS"

# The wheels, and Keras on this JAX.
# Outside OUT: only figures go back from the machine.
SITE=$(mktemp -d)/site-packages
if ls "$WHEELS"/*.whl > /dev/null 2>&1; then
  step wheels 60 "$PYTHON" -m pip install --quiet --no-index --no-deps --target="$SITE" \
    "$WHEELS"/*.whl || exit 1
  export PYTHONPATH=$SITE${PYTHONPATH:+:$PYTHONPATH}
else
  echo "no wheels in $WHEELS: using the installed Keras"
fi
VERSIONS=$OUT/versions.txt step keras_on_jax 120 "$PYTHON" - <<'EOF' || exit 1
import os
import sys

import jax
import keras
import numpy as np

# The session's record of the machine: printed and written to $VERSIONS.
record = open(os.environ["VERSIONS"], "w")


def say(*words):
    print(*words)
    print(*words, file=record, flush=True)


say("python", sys.version.split()[0], "jax", jax.__version__, "keras", keras.__version__,
    "backend", keras.backend.backend())
say("devices", jax.devices())
for device in jax.devices():
    say("device_kind", device.device_kind)
product = jax.jit(lambda a, b: keras.ops.matmul(a, b))(np.ones((64, 64), "float32"),
                                                       np.ones((64, 64), "float32"))
assert float(product[0, 0]) == 64.0, product[0, 0]
say("jitted keras.ops.matmul: ok")
EOF

