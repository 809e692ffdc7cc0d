#!/usr/bin/env python3
"""kgen beside PyTorch in one process, through the Python binding.

For every family and every shape of kgen-bench's lists (bench/kgen_bench.cu),
in float32, float16 and bfloat16: checks kgen's result against PyTorch's
(values within tolerance, indices equal where defined), times both the same
way (CUDA events on the current stream, warm-up, median of --reps runs,
buffer sets rotated so that together they exceed 4x the L2) and a
device-to-device copy of the same bytes, and prints one row per case: op,
shape, dtype, kgen us, torch us, speedup, kgen and torch % of copy.  Writes
bench/results/<gpu>.md and, with matplotlib, bench/results/<gpu>.png.

    KGEN_LIBRARY=build/runtime/libkgen.so PYTHONPATH=python python3 bench/compare_torch.py
        [--families softmax,reduce,...] [--dtypes f32,f16,bf16] [--reps 30] [--mib 256] [--out DIR]
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

try:  # --plot needs neither
    import torch

    import kgen
except ImportError as e:
    torch = kgen = None
    IMPORT_ERROR = str(e)

if torch is not None:
    DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
    TOL = {torch.float32: 1e-4, torch.float16: 4e-3, torch.bfloat16: 3e-2}
SOFTMAX_COLS = [32, 128, 500, 1024, 2048, 4096, 8192, 32768, 131072, 1048576]
REDUCE_CASES = [(16384, 8192, 1), (1048576, 128, 1), (128, 1048576, 1), (1, 1 << 28, 1), (64, 4096, 512)]
PERMUTE_CASES = [((8192, 8192), (1, 0)), ((64, 1024, 1024), (0, 2, 1)), ((32, 512, 16, 128), (0, 2, 1, 3)),
                 ((64, 64, 128, 128), (2, 3, 0, 1)), ((8, 16, 16, 16, 16, 64), (5, 3, 1, 4, 2, 0)),
                 ((256, 3, 512, 512), (0, 2, 3, 1))]
EXPAND_CASES = [((4096, 1, 4096), (4096, 16, 4096)), ((1, 8192), (32768, 8192)),
                ((64, 1, 1024, 1), (64, 64, 1024, 32))]
# kgen-bench's second where case is 64x16x2048x2048 (2^32 elements, 16 GiB of
# float32 out): a quarter of its batch keeps torch's and kgen's outputs, the
# inputs and the check within the GPU's memory and the run within minutes.
WHERE_CASES = [((8192, 8192), (8192, 8192), (8192, 8192)), ((16, 1, 1, 2048), (16, 16, 2048, 2048), ())]
TOPK_CASES = [(1, 1 << 24, 1), (1, 1 << 24, 64), (1, 1 << 24, 2048), (1024, 32768, 64), (4096, 4096, 32),
              (64, 262144, 256), (16384, 1024, 8)]


class Timer:
    """Median of event-timed runs of fn(set) over rotating buffer sets.

    Before each run the stream is held by a spin kernel (torch.cuda._sleep)
    long enough for the host to queue both events and the call behind it,
    so the time between the events is the GPU's alone: neither torch's
    dispatcher nor the binding's ctypes call (tens of microseconds) is
    counted for either side."""

    def __init__(self, reps: int):
        self.reps = reps
        self.hold = getattr(torch.cuda, "_sleep", None)

    def __call__(self, fn, sets: int) -> float:
        for i in range(3):
            fn(i % sets)
        torch.cuda.synchronize()
        times = []
        for i in range(self.reps):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            if self.hold is not None:
                self.hold(1_000_000)  # about 0.5 ms at 1.98 GHz
            a.record()
            fn(i % sets)
            b.record()
            b.synchronize()
            times.append(a.elapsed_time(b) * 1000.0)
        return statistics.median(times)


def sets_for(nbytes: int) -> int:
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    return max(1, math.ceil(4 * l2 / max(nbytes, 1)))


def randn(shape, dtype, sets):
    return [(torch.randn(shape, device="cuda", dtype=torch.float32) * 3).to(dtype) for _ in range(sets)]


def shape_text(shape) -> str:
    return "x".join(str(s) for s in shape) if shape else "()"


class Table:
    def __init__(self):
        self.rows = []

    def add(self, family, op, shape, dname, kgen_us, torch_us, traffic, copy_gbps, ok):
        k_pct = 100 * traffic / kgen_us / 1e3 / copy_gbps
        t_pct = 100 * traffic / torch_us / 1e3 / copy_gbps
        row = dict(family=family, op=op, shape=shape, dtype=dname, kgen_us=kgen_us, torch_us=torch_us,
                   speedup=torch_us / kgen_us, kgen_pct=k_pct, torch_pct=t_pct, ok=ok)
        self.rows.append(row)
        print(f"{op:12} {shape:28} {dname:5} {kgen_us:10.1f} {torch_us:10.1f} {row['speedup']:7.2f}x "
              f"{k_pct:6.1f}% {t_pct:6.1f}% {'ok' if ok else 'MISMATCH'}", flush=True)


def copy_gbps(nbytes: int, timer: Timer, max_sets: int = 0) -> float:
    """GB/s (read + write) of a device-to-device copy of nbytes; max_sets > 0
    caps the buffer sets (small copies then run from the L2, as the problems
    they are compared with do)."""
    sets = sets_for(2 * nbytes)
    if max_sets > 0:
        sets = min(sets, max_sets)
    src = [torch.empty(nbytes, dtype=torch.uint8, device="cuda").random_() for _ in range(sets)]
    dst = [torch.empty(nbytes, dtype=torch.uint8, device="cuda") for _ in range(sets)]
    us = timer(lambda s: dst[s].copy_(src[s]), sets)
    return 2 * nbytes / us / 1e3


def close(a, b, dtype) -> bool:
    return torch.allclose(a.float(), b.float(), rtol=TOL[dtype] * 4, atol=TOL[dtype] * 4, equal_nan=True)


def close_sum(got, want, absolute_sum, dtype) -> bool:
    """A sum against float64's: float32 accumulation in another order may
    differ by a few ulps of float32 times the sum of |x| (not of the sum,
    which can be near zero), plus the rounding of the result to dtype."""
    bound = 1e-6 * absolute_sum + TOL[dtype] * 4 * want.abs()
    return bool(((got.double() - want).abs() <= bound).all())


def run_softmax(table, dname, dtype, timer, mib):
    e = torch.tensor([], dtype=dtype).element_size()
    for cols in SOFTMAX_COLS:
        rows = max(1, int(mib * 2**20 / (cols * e)))
        nbytes = rows * cols * e
        sets = sets_for(2 * nbytes)
        xs = randn((rows, cols), dtype, sets)
        copy = copy_gbps(nbytes, timer)
        for op, kf, tf in (("softmax", kgen.softmax, torch.softmax), ("log_softmax", kgen.log_softmax,
                                                                      torch.log_softmax)):
            ys = [torch.empty_like(x) for x in xs]
            ok = close(kf(xs[0], -1), tf(xs[0].float(), -1), dtype)
            k_us = timer(lambda s: kf(xs[s], -1, out=ys[s]), sets)
            t_us = timer(lambda s: tf(xs[s], -1), sets)
            table.add("softmax", op, shape_text((rows, cols)), dname, k_us, t_us, 2 * nbytes, copy, ok)
        del xs


def run_reduce(table, dname, dtype, timer, mib):
    e = torch.tensor([], dtype=dtype).element_size()
    for outer, red, inner in REDUCE_CASES:
        shape = (outer, red, inner)
        nbytes = outer * red * inner * e
        sets = sets_for(nbytes)
        # sd 1: a float16 sum of 2^28 values stays far below 65504 (4 sd)
        xs = [(torch.randn(shape, device="cuda")).to(dtype) for _ in range(sets)]
        copy = copy_gbps(nbytes // 2, timer)  # a copy of half the bytes moves as many
        for op in ("sum", "amax", "argmax"):
            kf, tf = getattr(kgen, op), getattr(torch, op)
            got = kf(xs[0], dim=1)
            if op == "sum":
                x64 = xs[0].double()
                ok = close_sum(got, x64.sum(dim=1), x64.abs().sum(dim=1), dtype)
                del x64
            else:
                want = tf(xs[0], dim=1)
                ok = torch.equal(got, want) if op == "argmax" else close(got, want, dtype)
            k_us = timer(lambda s: kf(xs[s], dim=1), sets)
            t_us = timer(lambda s: tf(xs[s], dim=1), sets)
            table.add("reduce", op, shape_text(shape), dname, k_us, t_us, nbytes, copy, ok)
        del xs


def run_permute(table, dname, dtype, timer, mib):
    e = torch.tensor([], dtype=dtype).element_size()
    for shape, perm in PERMUTE_CASES:
        nbytes = math.prod(shape) * e
        sets = sets_for(2 * nbytes)
        xs = randn(shape, dtype, sets)
        copy = copy_gbps(nbytes, timer)
        ok = torch.equal(kgen.permute(xs[0], perm), xs[0].permute(perm).contiguous())
        k_us = timer(lambda s: kgen.permute(xs[s], perm), sets)
        t_us = timer(lambda s: xs[s].permute(perm).contiguous(), sets)
        table.add("permute", "permute", shape_text(shape) + "->" + ",".join(map(str, perm)), dname, k_us, t_us,
                  2 * nbytes, copy, ok)
        del xs


def run_expand(table, dname, dtype, timer, mib):
    e = torch.tensor([], dtype=dtype).element_size()
    for src, dst in EXPAND_CASES:
        traffic = (math.prod(src) + math.prod(dst)) * e
        sets = sets_for(traffic)
        xs = randn(src, dtype, sets)
        copy = copy_gbps(traffic // 2, timer)
        ok = torch.equal(kgen.expand(xs[0], dst), xs[0].expand(dst).contiguous())
        k_us = timer(lambda s: kgen.expand(xs[s], dst), sets)
        t_us = timer(lambda s: xs[s].expand(dst).contiguous(), sets)
        table.add("expand", "expand", shape_text(src) + "->" + shape_text(dst), dname, k_us, t_us, traffic, copy,
                  ok)
        del xs


def run_where(table, dname, dtype, timer, mib):
    e = torch.tensor([], dtype=dtype).element_size()
    for cs, xs_, ys_ in WHERE_CASES:
        out = torch.broadcast_shapes(cs, xs_, ys_)
        traffic = math.prod(cs) + (math.prod(xs_) + math.prod(ys_) + math.prod(out)) * e
        sets = sets_for(traffic)
        conds = [torch.rand(cs, device="cuda") > 0.5 for _ in range(sets)]
        xs, ys = randn(xs_, dtype, sets), randn(ys_, dtype, sets)
        copy = copy_gbps(traffic // 2, timer)
        ok = torch.equal(kgen.where(conds[0], xs[0], ys[0]), torch.where(conds[0], xs[0], ys[0]))
        k_us = timer(lambda s: kgen.where(conds[s], xs[s], ys[s]), sets)
        t_us = timer(lambda s: torch.where(conds[s], xs[s], ys[s]), sets)
        table.add("where", "where", ",".join(map(shape_text, (cs, xs_, ys_))), dname, k_us, t_us, traffic, copy,
                  ok)
        del xs, ys, conds


def run_topk(table, dname, dtype, timer, mib):
    e = torch.tensor([], dtype=dtype).element_size()
    for batch, n, k in TOPK_CASES:
        nbytes = batch * n * e
        sets = sets_for(nbytes)
        xs = randn((batch, n), dtype, sets)
        copy = copy_gbps(nbytes // 2, timer)
        v, i = kgen.topk(xs[0], k)
        tv, _ = torch.topk(xs[0], k)
        ok = torch.equal(v, tv) and torch.equal(torch.gather(xs[0], 1, i), v)
        k_us = timer(lambda s: kgen.topk(xs[s], k), sets)
        t_us = timer(lambda s: torch.topk(xs[s], k), sets)
        table.add("topk", "topk", shape_text((batch, n)) + f" k={k}", dname, k_us, t_us, nbytes, copy, ok)
        del xs


RUNNERS = {"softmax": run_softmax, "reduce": run_reduce, "permute": run_permute, "expand": run_expand,
           "where": run_where, "topk": run_topk}


def write(table: Table, out: Path, args) -> None:
    prop = torch.cuda.get_device_properties(0)
    name = prop.name.replace(" ", "_")
    commit = os.environ.get("KGEN_COMMIT") or subprocess.run(["git", "rev-parse", "--short", "HEAD"],
                                                            capture_output=True, text=True).stdout.strip()
    lines = [f"# kgen beside PyTorch on {prop.name}", "",
             f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, commit {commit or 'unknown'}, kgen "
             f"{kgen.version()}, torch {torch.__version__}, tuning database: {kgen.tuning_database() or 'none'}.",
             f"Median of {args.reps} CUDA-event-timed runs each, inputs rotated past 4x the L2; % of copy: "
             "GB/s over the minimum traffic against a device-to-device copy of as many bytes.", "",
             "| family | geomean speedup (torch us / kgen us) | cases | kgen >= torch |", "|---|---:|---:|---:|"]
    for fam in RUNNERS:
        rows = [r for r in table.rows if r["family"] == fam]
        if rows:
            g = math.exp(sum(math.log(r["speedup"]) for r in rows) / len(rows))
            lines.append(f"| {fam} | {g:.2f}x | {len(rows)} | {sum(r['speedup'] >= 1 for r in rows)} |")
    lines += ["", "| op | shape | dtype | kgen us | torch us | speedup | kgen % of copy | torch % of copy | check |",
              "|---|---|---|---:|---:|---:|---:|---:|---|"]
    for r in table.rows:
        lines.append(f"| {r['op']} | {r['shape']} | {r['dtype']} | {r['kgen_us']:.1f} | {r['torch_us']:.1f} | "
                     f"{r['speedup']:.2f}x | {r['kgen_pct']:.1f} | {r['torch_pct']:.1f} | "
                     f"{'ok' if r['ok'] else 'MISMATCH'} |")
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.md").write_text("\n".join(lines) + "\n")
    (out / f"{name}.json").write_text(json.dumps({"gpu": prop.name, "rows": table.rows}, indent=1) + "\n")
    print(f"wrote {out / (name + '.md')} and .json")
    plot(table.rows, prop.name, out / f"{name}.png")


def plot(rows, gpu: str, path: Path) -> None:
    """% of copy bandwidth per case, kgen beside PyTorch (needs matplotlib;
    --plot redraws it from the .json on any machine)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not found: no plot (redraw with --plot <gpu>.json)")
        return
    labels = [f"{r['op']} {r['shape']} {r['dtype']}" for r in rows]
    fig, ax = plt.subplots(figsize=(10, max(4, 0.16 * len(labels))))
    ys = range(len(labels))
    ax.barh([y - 0.2 for y in ys], [r["kgen_pct"] for r in rows], height=0.4, label="kgen")
    ax.barh([y + 0.2 for y in ys], [r["torch_pct"] for r in rows], height=0.4, label="PyTorch")
    ax.set_yticks(list(ys))
    ax.set_yticklabels(labels, fontsize=5)
    ax.set_ylim(len(labels) - 0.5, -0.5)
    ax.axvline(100, color="gray", linewidth=0.8)
    ax.set_xlabel("% of device-to-device copy bandwidth (minimum traffic)")
    ax.set_title(f"kgen and PyTorch on {gpu}")
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"wrote {path}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--families", default=",".join(RUNNERS))
    ap.add_argument("--dtypes", default="f32,f16,bf16")
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--mib", type=float, default=256, help="softmax: MiB of x a case")
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    ap.add_argument("--plot", type=Path, help="only redraw the plot from a results .json (no GPU needed)")
    args = ap.parse_args(argv)
    if args.plot:
        data = json.loads(args.plot.read_text())
        plot(data["rows"], data["gpu"], args.plot.with_suffix(".png"))
        return 0
    if torch is None or not torch.cuda.is_available():
        print(f"compare_torch: {IMPORT_ERROR if torch is None else 'no CUDA device'}", file=sys.stderr)
        return 77
    table, timer = Table(), Timer(args.reps)
    start = time.time()
    print(f"{'op':12} {'shape':28} {'dtype':5} {'kgen us':>10} {'torch us':>10} {'speedup':>8} {'kgen%':>7} "
          f"{'torch%':>7}")
    for fam in args.families.split(","):
        for dname in args.dtypes.split(","):
            RUNNERS[fam](table, dname, DTYPES[dname], timer, args.mib)
            torch.cuda.empty_cache()
    write(table, args.out, args)
    print(f"compare_torch: {len(table.rows)} cases in {time.time() - start:.0f} s")
    return 0 if all(r["ok"] for r in table.rows) else 1


if __name__ == "__main__":
    sys.exit(main())
