#!/usr/bin/env bash
# Same-GPU A/B of two source trees: builds BASE (another tree, e.g. one
# unpacked from `git archive REF`) and this tree with the same options,
# then runs the same kgen-bench command on each, alternating, ROUNDS times,
# so that both sides see the same card and clocks.  Rows are prefixed with
# the side and the round in OUTDIR/ab.txt.
#   scripts/ab.sh BASE_DIR OUTDIR "kgen-bench args" [ROUNDS]
# Extra meson options in $MESON_OPTS (e.g. -Dkernels=^softmax_cluster_), the
# arch list in $ARCH (default sm_90); $NEW_OPTS go to this tree's build only
# (e.g. -Dtests=true to run its GPU tests after).
set -uo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 3 ] || { echo "usage: scripts/ab.sh BASE_DIR OUTDIR \"kgen-bench args\" [ROUNDS]"; exit 2; }
base=$(cd "$1" && pwd); out=$2; args=$3; rounds=${4:-2}
export PATH="/usr/local/cuda/bin:$PATH"
mkdir -p "$out"
# shellcheck disable=SC2206
opts=(-Darch="${ARCH:-sm_90}" -Dtests=false ${MESON_OPTS:-})
build() {  # build DIR LOG [extra meson options]
  local dir=$1 log=$2; shift 2
  (cd "$dir" && { [ -d build-ab ] || meson setup build-ab "${opts[@]}" "$@"; } && ninja -C build-ab -j 8) > "$log" 2>&1
}
t0=$(date +%s)
build "$base" "$out/base-build.log" & pid=$!
# shellcheck disable=SC2086
build "$PWD" "$out/new-build.log" ${NEW_OPTS:-} || { tail -30 "$out/new-build.log"; exit 1; }
wait $pid || { tail -30 "$out/base-build.log"; exit 1; }
echo "builds: $(( $(date +%s) - t0 )) s"
for r in $(seq "$rounds"); do
  for side in base new; do
    dir=$([ $side = base ] && echo "$base" || echo "$PWD")
    # shellcheck disable=SC2086
    "$dir/build-ab/bench/kgen-bench" $args | sed "s/^/$side r$r  /" | tee -a "$out/ab.txt"
  done
done
