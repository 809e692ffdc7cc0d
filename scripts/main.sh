#!/usr/bin/env bash
# The main job: generate + build + install the library, build the consumer
# example through pkg-config and run it; on a machine with a GPU, build the
# whole variant space, run the tuning sweep (a database for this GPU in
# build/, and its report on held-out shapes), the benchmark, and the
# comparison with PyTorch where torch is installed.
#   scripts/main.sh            level default without a GPU, full with one
#   LEVEL=default scripts/main.sh
#   ARCH=sm_90,sm_100,sm_120 scripts/main.sh   (default: sm_90)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
command -v nvcc >/dev/null || export PATH="/usr/local/cuda/bin:$PATH"

gpu=0
if command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | grep -q GPU; then gpu=1; fi
level=${LEVEL:-$([ $gpu = 1 ] && echo full || echo default)}
arch=${ARCH:-sm_90}
prefix="$PWD/_install"

if [ -d build ]; then
  meson configure build -Dlevel="$level" -Darch="$arch" --prefix="$prefix"
else
  meson setup build -Dlevel="$level" -Darch="$arch" --prefix="$prefix"
fi
ninja -C build
meson install -C build --quiet

pcdir=$(dirname "$(find "$prefix" -name kgen.pc | head -n 1)")
PKG_CONFIG_PATH="$pcdir" make -C examples -s consumer
examples/consumer

if [ $gpu = 1 ]; then
  commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
  # the sweep: build/<gpu>_<sms>.json; copy it to tuning/db/ to compile it in
  KGEN_COMMIT=$commit build/tuning/kgen-tune --db-dir build --csv build/kgen-tune.csv
  db=$(ls -t build/*.json | head -n 1)
  KGEN_COMMIT=$commit KGEN_TUNING_DB="$db" build/tuning/kgen-tune --report --md build/kgen-tune-report.md
  name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1 | tr ' ' '_')
  # top-k's speedup column needs PyTorch's times from the same machine
  torch_times=()
  if python3 bench/topk_torch.py "build/topk_torch.csv" > /dev/null 2>&1; then
    torch_times=(--torch build/topk_torch.csv)
  fi
  for family in softmax softmax_backward softmax_dim softmax_masked reduce permute expand where topk; do
    extra=()
    [ "$family" = topk ] && extra=("${torch_times[@]}")
    KGEN_COMMIT=$commit build/bench/kgen-bench "$family" --md "bench/results/${name}_${family}.md" \
      --csv "bench/results/${name}_${family}.csv" "${extra[@]}"
  done
  # kgen beside PyTorch through the binding (bench/results/<gpu>.md, .png), where torch is installed
  if python3 -c "import torch" 2> /dev/null; then
    KGEN_COMMIT=$commit KGEN_LIBRARY="$PWD/build/runtime/libkgen.so" PYTHONPATH="$PWD/python" \
      python3 bench/compare_torch.py
  fi
fi
