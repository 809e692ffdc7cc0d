#!/usr/bin/env bash
# On a machine with a GPU: build a level (default: full) in $BUILD, run
# the host, generator and GPU tests, then kgen-bench for each family in
# $BENCH (default: "softmax softmax_backward softmax_dim softmax_masked reduce
# permute expand where topk").  Logs and results go to the folder
# given as $1 (default: bench/results): build.log, test.log, testlog.txt,
# bench.txt and <family>.md / <family>.csv.
#   scripts/gpu-check.sh OUTDIR [LEVEL] [extra kgen-bench args...]
# Extra meson options can come in $MESON_OPTS (e.g. -Dkernels=^reduce_), the
# arch list in $ARCH (default sm_90; e.g. sm_90,sm_100,sm_120), the build
# folder in $BUILD (default build-gpu).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-bench/results}; level=${2:-full}; shift 2 2>/dev/null || shift $#
mkdir -p "$out"
export PATH="/usr/local/cuda/bin:$PATH"
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,clocks.max.mem --format=csv
build=${BUILD:-build-gpu}
t0=$(date +%s)
if [ ! -d "$build" ]; then
  # shellcheck disable=SC2086
  meson setup "$build" -Dlevel="$level" -Darch="${ARCH:-sm_90}" ${MESON_OPTS:-} > "$out/build.log" 2>&1 || { tail -30 "$out/build.log"; exit 1; }
fi
ninja -C "$build" >> "$out/build.log" 2>&1 || { grep -E "error" -A5 "$out/build.log" | head -60; exit 1; }
echo "build ($level, ${ARCH:-sm_90}, $(grep -c '&v_' "$build"/generated/registry.gen.cpp) variants): $(( $(date +%s) - t0 )) s"
stat -L -c "%n: %s bytes" "$build"/runtime/libkgen.so "$build"/runtime/libkgen.a
t1=$(date +%s)
meson test -C "$build" --print-errorlogs --no-rebuild > "$out/test.log" 2>&1
rc=$?
tail -15 "$out/test.log"
grep -E "test cases|All tests passed|passed" "$out/test.log" | tail -5
echo "tests: rc=$rc, $(( $(date +%s) - t1 )) s"
cp "$build"/meson-logs/testlog.txt "$out/testlog.txt" 2>/dev/null
python3 scripts/test_summary.py "$build"/meson-logs/testlog.json
for family in ${BENCH:-softmax softmax_backward softmax_dim softmax_masked reduce permute expand where topk}; do
  t2=$(date +%s)
  "$build"/bench/kgen-bench "$family" --md "$out/$family.md" --csv "$out/$family.csv" "$@" | tee -a "$out/bench.txt"
  echo "bench $family: $(( $(date +%s) - t2 )) s"
done
exit $rc
