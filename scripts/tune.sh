#!/usr/bin/env bash
# On a machine with a GPU: the tuning sweep of some families and its report.
# Builds the full level of those families (float32, float16, bfloat16) in
# build-tune/, runs kgen-tune over tuning/problems/ into OUTDIR (the
# database <gpu>_<sms>.json, merged with the one in tuning/db/ for the other
# families, and sweep.csv), then kgen-tune --report on tuning/heldout/ with
# that database (report.md, report.csv).  Logs in OUTDIR too.
#   scripts/tune.sh OUTDIR [FAMILIES] [--budget-ms MS]
# FAMILIES: comma-separated (default: all seven).  With KGEN_REPORT_ONLY=1
# the sweep is skipped and the report uses the committed database.
set -uo pipefail
cd "$(dirname "$0")/.."
out=$1; families=${2:-softmax,softmax_backward,reduce,permute,expand,where,topk}; shift 2 2>/dev/null || shift $#
mkdir -p "$out"
export PATH="/usr/local/cuda/bin:$PATH"
# the kernel filter: each family's variants (softmax_ alone would take the backward's too)
regex=""
for f in ${families//,/ }; do
  [ "$f" = softmax ] && pat='softmax_(?!backward_)' || pat="${f}_"
  regex="${regex:+$regex|}$pat"
done
t0=$(date +%s)
meson setup --reconfigure build-tune -Dlevel=full -Darch=sm_90 -Ddtypes=f32,f16,bf16 -Dtests=false "-Dkernels=^($regex)" \
  > "$out/build.log" 2>&1 || { tail -30 "$out/build.log"; exit 1; }
ninja -C build-tune tuning/kgen-tune >> "$out/build.log" 2>&1 || { grep -E "error" -A5 "$out/build.log" | head -60; exit 1; }
echo "build (full level of $families, $(grep -c '&v_' build-tune/generated/registry.gen.cpp) variants): $(( $(date +%s) - t0 )) s"
gpu=$(build-tune/tuning/kgen-tune --check >/dev/null && nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "GPU: $gpu"
# start from the committed database of this GPU, so that other families' entries are kept
for db in tuning/db/*.json; do [ -e "$db" ] && cp "$db" "$out/"; done
t1=$(date +%s)
if [ "${KGEN_REPORT_ONLY:-0}" = 1 ]; then
  sweep_rc=0
else
build-tune/tuning/kgen-tune --ops "$families" --db-dir "$out" --csv "$out/sweep.csv" "$@" 2> "$out/sweep.log"
sweep_rc=$?
echo "buckets: $(grep -c ': kept$' "$out/sweep.log") kept, $(grep -c 'heuristic stays$' "$out/sweep.log") left to the heuristic"
grep -E "^kgen-tune|^  " "$out/sweep.log" | tail -40
gzip -f "$out/sweep.csv"
echo "sweep: rc=$sweep_rc, $(( $(date +%s) - t1 )) s"
ls "$out"/*.json > /dev/null 2>&1 || { tail -20 "$out/sweep.log"; exit 1; }
fi
# the report's database: this GPU's (OUTDIR holds every committed one), the
# swept families' entries only (a database naming variants this filtered
# build lacks is refused as a whole)
python3 - "$out" "$gpu" "$families" "$out/report-db.json" <<'PY' || exit 1
import glob, json, os, sys
out, gpu, families, dest = sys.argv[1:]
dbs = [json.load(open(f)) for f in sorted(glob.glob(os.path.join(out, "*.json"))) if f != dest]
mine = [d for d in dbs if d.get("gpu") == gpu]
if not mine:
    sys.exit(f"no database of {gpu} in {out}")
db = mine[0]
db["entries"] = [e for e in db["entries"] if e["family"] in families.split(",")]
json.dump(db, open(dest, "w"), indent=1)
PY
db="$out/report-db.json"
t2=$(date +%s)
KGEN_TUNING_DB="$db" build-tune/tuning/kgen-tune --report --ops "$families" --md "$out/report.md" \
  --csv "$out/report.csv" "$@" > /dev/null 2> "$out/report.log"
rc=$?
grep -E "^kgen|^  " "$out/report.log" | tail -20
tail -n 12 "$out/report.md"
echo "report: rc=$rc, $(( $(date +%s) - t2 )) s"
[ $sweep_rc -eq 0 ] && exit $rc || exit $sweep_rc
