#!/usr/bin/env bash
# compute-sanitizer over every kernel family and tier, on a machine with a
# GPU: kgen-sanitize-sample (every compiled variant on a few small problems
# checked against a CPU reference) plain, then under memcheck (with the leak
# check), racecheck, initcheck and synccheck; optionally parts of the GPU
# test suite too.  Each run's log goes to OUT/<run>.log; OUT/summary.txt
# lists tool, wall time, errors reported and exit status.  Exits 1 when any
# run reports an error (racecheck warnings included), fails or times out;
# 77 without a GPU.
#   scripts/sanitize.sh [BUILD_DIR (build-gpu)] [OUT_DIR (BUILD_DIR/sanitize)]
# Environment:
#   TOOLS          the tools (default: memcheck racecheck initcheck synccheck)
#   RACECHECK_CAP  variants per family under racecheck, taken from every tier
#                  in turn (default 0: all; the default level's 581 variants
#                  took 83 s on an H100, memcheck, initcheck, synccheck 5 s each)
#   CAP            variants per family under the other tools (default 0: all)
#   SAMPLE_ARGS    more arguments of the sample, e.g. "--family reduce,topk"
#   GPU_TAGS       Catch2 test specs of kgen-gpu-tests to run under each tool
#                  but racecheck, e.g. "[errors],[empty],[alignment],[inplace],[padding],[graph],[stream]"
#                  (10 s a tool on an H100).  Default: none; the whole suite
#                  takes 3 min plain and did not finish in 6 under memcheck.
#   TOOL_TIMEOUT   seconds one run may take (default 3600)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
build=${1:-build-gpu}
out=${2:-$build/sanitize}
tools=${TOOLS:-memcheck racecheck initcheck synccheck}
limit=${TOOL_TIMEOUT:-3600}
export PATH="/usr/local/cuda/bin:$PATH"

if ! nvidia-smi -L 2>/dev/null | grep -q GPU; then
  echo "no GPU: nothing to sanitize"
  exit 77
fi
cs=$(command -v compute-sanitizer) || { echo "compute-sanitizer not found (CUDA toolkit bin/)"; exit 1; }
[ -d "$build" ] || { echo "no build folder $build (meson setup $build first)"; exit 1; }
ninja -C "$build" tests/sanitize/kgen-sanitize-sample > /dev/null || { echo "building the sample failed"; exit 1; }
sample="$build/tests/sanitize/kgen-sanitize-sample"
gpu_tests="$build/tests/kgen-gpu-tests"
mkdir -p "$out"
summary="$out/summary.txt"
{
  echo "# compute-sanitizer over kgen ($(date -u +%Y-%m-%dT%H:%MZ), commit ${KGEN_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)})"
  echo "# GPU: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -n 1)"
  echo "# $("$cs" --version | grep -i version | head -n 1)"
  echo "# sample: ${SAMPLE_ARGS:-every compiled variant}; GPU tests: ${GPU_TAGS:-none}"
  printf "%-34s %-10s %9s %8s %9s  %s\n" run tool seconds errors warnings status
} > "$summary"

bad=0
# run NAME TOOL COMMAND...: one run under TOOL ("none": plain), with its log
run() {
  local name=$1 tool=$2
  shift 2
  local log="$out/$name.log" opts=()
  case $tool in
    memcheck) opts=(--leak-check full --padding 256) ;;  # padding: an overrun of one buffer cannot land in the next
    racecheck) opts=(--racecheck-report all) ;;
  esac
  local t0 t1 rc
  t0=$(date +%s.%N)
  if [ "$tool" = none ]; then
    timeout --kill-after=60 "$limit" "$@" > "$log" 2>&1
  else
    timeout --kill-after=60 "$limit" "$cs" --tool "$tool" --error-exitcode 1 "${opts[@]}" "$@" > "$log" 2>&1
  fi
  rc=$?
  t1=$(date +%s.%N)
  # "========= ERROR SUMMARY: 3 errors"; racecheck (--racecheck-report all)
  # prints "RACECHECK SUMMARY: 2 hazards displayed (1 error, 1 warning)" instead
  local errors warnings race status=ok
  errors=$(grep -aoE "ERROR SUMMARY: [0-9]+ error" "$log" | tail -n 1 | grep -oE "[0-9]+")
  race=$(grep -aoE "RACECHECK SUMMARY: .*\([0-9]+ errors?, [0-9]+ warnings?\)" "$log" | tail -n 1)
  if [ -n "$race" ]; then
    [ -z "$errors" ] && errors=$(echo "$race" | grep -oE "[0-9]+ errors?" | grep -oE "[0-9]+")
    warnings=$(echo "$race" | grep -oE "[0-9]+ warnings?" | grep -oE "[0-9]+")
  fi
  [ "$tool" = none ] && errors=${errors:-0}
  if [ $rc = 124 ] || [ $rc = 137 ]; then status="timeout (${limit} s)"
  elif [ -z "$errors" ]; then status="no error summary (rc $rc)"
  elif [ "$errors" != 0 ] || [ "${warnings:-0}" != 0 ]; then status="REPORTS (rc $rc)"
  elif [ $rc != 0 ]; then status="failed (rc $rc)"
  fi
  [ "$status" = ok ] || bad=1
  printf "%-34s %-10s %9.1f %8s %9s  %s\n" "$name" "$tool" "$(awk "BEGIN { print $t1 - $t0 }")" "${errors:-?}" \
    "${warnings:--}" "$status" | tee -a "$summary"
  # the sample's own verdict, for the log reader
  grep -a "^sanitize sample:" "$log" | tail -n 1 | sed 's/^/    /'
}

# shellcheck disable=SC2086
run sample none "$sample" ${SAMPLE_ARGS:-}
for tool in $tools; do
  cap=${CAP:-0}
  [ "$tool" = racecheck ] && cap=${RACECHECK_CAP:-0}
  # shellcheck disable=SC2086
  run "sample-$tool" "$tool" "$sample" --max-per-family "$cap" ${SAMPLE_ARGS:-}
done
if [ -n "${GPU_TAGS:-}" ]; then
  ninja -C "$build" tests/kgen-gpu-tests > /dev/null || { echo "building kgen-gpu-tests failed"; exit 1; }
  for tool in $tools; do
    [ "$tool" = racecheck ] && continue
    run "gpu-tests-$tool" "$tool" "$gpu_tests" "$GPU_TAGS"
  done
fi
echo "summary: $summary"
exit $bad
