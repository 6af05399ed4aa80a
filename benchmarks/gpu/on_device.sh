#!/usr/bin/env bash
# Build nuvec, run the CUDA tests, then the GPU benchmarks, on a machine with an NVIDIA GPU.
# Logs and results go to $OUT (default ./gpu_out); the last lines printed are the summaries.
#   bash benchmarks/gpu/on_device.sh            # TESTS=0 / BENCH=0 skip a part
#   SUITE=op TESTS=0 BENCH=0 bash benchmarks/gpu/on_device.sh   # the op suite on the GPU
# SUITE names test paths to run once more with SUITE_DEVICE (default gpu) as the default device
# (pytest's --device, tests/conftest.py; "cpu,gpu" runs each test on both); SUITE=op is the op
# suite (tests --op-suite: every test but a backend's own and those of processes or the
# machine). SUITE_ARGS go to that pytest run.
set -u
OUT=${OUT:-gpu_out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
PY=${PYTHON:-python3}
{ nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
  $PY -c "import sys, cupy; print(sys.version.split()[0], 'cupy', cupy.__version__, 'cuda', cupy.cuda.runtime.runtimeGetVersion())"
  nproc; } > "$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt"
t0=$(date +%s)
if ! $PY setup.py build_ext --inplace -q --parallel "$(nproc)" > "$OUT/build.log" 2>&1; then
  tail -40 "$OUT/build.log"; echo "BUILD FAILED"; exit 1
fi
echo "build: $(( $(date +%s) - t0 )) s"
if [ "${TESTS:-1}" = 1 ]; then
  t0=$(date +%s)
  timeout "${TEST_TIMEOUT:-330}" $PY -m pytest tests/cuda -p no:cacheprovider -rfE \
      --durations=12 ${PYTEST_ARGS:-} > "$OUT/tests.log" 2>&1
  echo "tests: rc=$? in $(( $(date +%s) - t0 )) s"
  grep -E "^(FAILED|ERROR)" "$OUT/tests.log" | cut -c1-300 | head -40
  tail -3 "$OUT/tests.log"
fi
if [ "${BENCH:-1}" = 1 ]; then
  t0=$(date +%s)
  timeout "${BENCH_TIMEOUT:-300}" $PY benchmarks/gpu/run.py --out "$OUT/bench.json" ${BENCH_ARGS:-} \
      > "$OUT/bench.log" 2>&1
  echo "bench: rc=$? in $(( $(date +%s) - t0 )) s"
  grep -E "error|Error" "$OUT/bench.log" | cut -c1-300 | head -20
  sed -n '/^GPU: /,$p' "$OUT/bench.log"
fi
if [ -n "${SUITE:-}" ]; then
  [ "$SUITE" = op ] && SUITE="tests --op-suite"
  t0=$(date +%s)
  timeout "${SUITE_TIMEOUT:-300}" $PY -m pytest $SUITE --device "${SUITE_DEVICE:-gpu}" \
      -p no:cacheprovider --maxfail=25 -rfE ${SUITE_ARGS:-} > "$OUT/suite.log" 2>&1
  echo "suite (--device ${SUITE_DEVICE:-gpu}): rc=$? in $(( $(date +%s) - t0 )) s"
  grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/suite.log" | cut -c1-300 | tail -8
fi
