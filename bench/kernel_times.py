#!/usr/bin/env python3
"""Named problems kernel by kernel, kgen beside torch, under Nsight Compute:
where a call's time goes (which launch, how long, the bytes it moved, how
busy its busiest SM was against the mean one), without a random sweep.

Problems are written as bench/variants.py takes them ("topk topk 1x15892221
k=581 sorted bf16").  The script runs itself under `ncu` (--clock-control
none: the clocks as a timed call sees them), one kgen call and one torch
call a problem, each between two marker launches (a complex128 fill before,
a complex64 fill after; a measured call that launched such a fill itself
would cut its listing short), and prints each launch of the two calls:

    KGEN_LIBRARY=build/runtime/libkgen.so PYTHONPATH=python python3 bench/kernel_times.py \\
        [--ncu ncu] "topk topk 1x15892221 k=581 sorted bf16" ...

Under ncu every launch is serialised and replayed, so a call's kernels sum
to a few us more than its timed call (bench/variants.py) and no launch
overlaps the next (programmatic dependent launch included).  Columns: the
kernel, its grid, its time, DRAM bytes read and written, and SM cycles
active on the busiest SM over the mean one (a ratio well above 1: a few
blocks hold the launch); with --issue also the warp instructions, those
an SM issued a cycle it was active (4 at most) and the warps resident.
"""
from __future__ import annotations

import argparse
import csv
import io
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

METRICS = ("gpu__time_duration.sum", "dram__bytes_read.sum", "dram__bytes_write.sum",
           "sm__cycles_active.max", "sm__cycles_active.avg")
# With --issue: how busy the SMs' issue was (warp instructions, those an SM
# issued a cycle it was active, of 4) and the warps resident (% of the SM's
# limit): a launch near 4 an SM a cycle is bound by its instructions, one
# with many warps and a low rate by their waits.
ISSUE = ("sm__inst_executed.sum", "sm__inst_executed.avg.per_cycle_active",
         "sm__warps_active.avg.pct_of_peak_sustained_active")
# The markers' kernels: fills of complex tensors, which no measured call
# launches.  (Fills of float64 and int16 did: torch.zeros made the markers
# themselves with them, and every listing fell one call behind.)
START, END = "FillFunctor<c10::complex<double>>", "FillFunctor<c10::complex<float>>"


def number(text: str) -> float:
    return float(text.replace(",", "")) if text.strip() else 0.0


def short_name(name: str) -> str:
    """'void kgen::device::topk::multi_pass_kernel<__half, 256, 11, 1, 0>(...)'
    -> 'multi_pass_kernel<__half, 256, 11, 1, 0>' (the template cut at 48)."""
    name = re.sub(r"^void ", "", name)
    depth, cut = 0, len(name)
    for i, ch in enumerate(name):  # the argument list: the first '(' outside the template
        depth += ch == "<"
        depth -= ch == ">"
        if ch == "(" and depth == 0:
            cut = i
            break
    base, _, args = name[:cut].partition("<")
    base = base.split("::")[-1]
    return f"{base}<{args[:48]}" if args else base


def segments(csv_text: str) -> list:
    """ncu's raw CSV -> the launches between each START marker and the next
    END marker, in order: [[{name, grid, block, metric: value}, ...], ...]."""
    rows = [r for r in csv.reader(io.StringIO(csv_text)) if r]
    head = next((i for i, r in enumerate(rows) if r[0] == "ID"), None)
    if head is None:
        raise ValueError("no ncu CSV header (ID, ...) in the output")
    h = rows[head]
    col = {n: h.index(n) for n in ("Kernel Name", "Grid Size", "Block Size", *METRICS, *ISSUE) if n in h}
    out, current = [], None
    for r in rows[head + 1:]:
        if len(r) < len(h) or not r[0].strip().isdigit():
            continue  # the units row, the application's own output
        name = r[col["Kernel Name"]]
        if START in name:
            current = []
            continue
        if END in name:
            if current is not None:
                out.append(current)
            current = None
            continue
        if current is not None:
            launch = {"name": short_name(name), "grid": r[col["Grid Size"]], "block": r[col["Block Size"]]}
            launch.update({m: number(r[col[m]]) for m in (*METRICS, *ISSUE) if m in col})
            current.append(launch)
    return out


def report(problems: list, selected: list, segs: list) -> str:
    """The launches of each problem's kgen call, then its torch call."""
    lines = []
    for i, text in enumerate(problems):
        for side, seg in (("kgen", 2 * i), ("torch", 2 * i + 1)):
            launches = segs[seg] if seg < len(segs) else []
            title = f"{side} {text}" + (f"  {selected[i]}" if side == "kgen" and i < len(selected) else "")
            lines.append(title)
            total = 0.0
            for ln in launches:
                us = ln.get("gpu__time_duration.sum", 0.0) / 1e3
                total += us
                avg = ln.get("sm__cycles_active.avg", 0.0)
                tail = ln.get("sm__cycles_active.max", 0.0) / avg if avg else 0.0
                lines.append(f"  {ln['name']:60s} {ln['grid']:>14s} {us:9.1f} us"
                             f"  rd {ln.get('dram__bytes_read.sum', 0.0) / 2**20:8.1f} MiB"
                             f"  wr {ln.get('dram__bytes_write.sum', 0.0) / 2**20:8.1f} MiB  max/mean SM {tail:4.2f}"
                             + (f"  inst {ln['sm__inst_executed.sum'] / 1e6:7.2f} M"
                                f"  ipc {ln.get('sm__inst_executed.avg.per_cycle_active', 0.0):4.2f}"
                                f"  warps {ln.get('sm__warps_active.avg.pct_of_peak_sustained_active', 0.0):5.1f}%"
                                if "sm__inst_executed.sum" in ln else ""))
            lines.append(f"  {'total':60s} {'':>14s} {total:9.1f} us  ({len(launches)} launches)")
    return "\n".join(lines)


def child(problems: list, out: Path) -> int:
    """Under ncu: each problem's kgen and torch calls between markers."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import compare_torch as ct  # noqa: E402
    import sweep  # noqa: E402
    import variants  # noqa: E402
    torch, kgen = ct.torch, ct.kgen
    start = torch.empty(1, device="cuda", dtype=torch.complex128)  # empty: no launch
    end = torch.empty(1, device="cuda", dtype=torch.complex64)
    selected = []
    for text in problems:
        prob = sweep.Problem(variants.parse(text), max_sets=1)
        x = prob.inputs[0]
        prob.kgen(x), prob.eager(x)  # first-use costs outside the markers
        torch.cuda.synchronize()
        selected.append(kgen.selected(prob.kgen, x))
        for call in (prob.kgen, prob.eager):
            start.fill_(1.0)
            call(x)
            end.fill_(1.0)
            torch.cuda.synchronize()
        prob = x = None
        torch.cuda.empty_cache()
    out.write_text(json.dumps(selected))
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("problems", nargs="+")
    ap.add_argument("--ncu", default="ncu", help="the Nsight Compute command line")
    ap.add_argument("--issue", action="store_true", help="also each launch's instructions, issue rate and warps")
    ap.add_argument("--child", type=Path, help=argparse.SUPPRESS)  # run under ncu: where the selections go
    args = ap.parse_args(argv)
    if args.child:
        return child(args.problems, args.child)
    with tempfile.TemporaryDirectory() as tmp:
        sel = Path(tmp) / "selected.json"
        metrics = METRICS + (ISSUE if args.issue else ())
        cmd = [args.ncu, "--clock-control", "none", "--metrics", ",".join(metrics), "--csv", "--page", "raw",
               sys.executable, str(Path(__file__).resolve()), "--child", str(sel), *args.problems]
        try:
            run = subprocess.run(cmd, capture_output=True, text=True, env=os.environ.copy())
        except FileNotFoundError:
            print(f"kernel_times: {args.ncu}: not found (Nsight Compute)", file=sys.stderr)
            return 77
        if run.returncode != 0 or not sel.exists():
            print(f"kernel_times: ncu exited {run.returncode}\n{run.stderr[-2000:]}", file=sys.stderr)
            return 1
        selected = json.loads(sel.read_text())
    segs = segments(run.stdout)
    if len(segs) != 2 * len(args.problems):  # a call listed in another's place
        print(f"kernel_times: {len(segs)} marked calls for {2 * len(args.problems)}", file=sys.stderr)
        return 1
    print(report(args.problems, selected, segs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
