#!/usr/bin/env python3
"""Named problems on every compiled variant, beside torch: whether selection
or the kernels are at fault on a shape, without a random sweep.

Problems are written as the sweep's reports write them (bench/sweep.py),
family first: "softmax log_softmax 8192x3x281 dim=1 f16 +1" (+1: the tensor
one element into its storage).  Softmax and reductions take dim=D (a
reduction dim=None: the whole tensor); top-k takes k=K, the data kind
(random, repeated, few, constant, sorted, reversed, nan), smallest and
unsorted: "topk topk 6x1577431 k=15 constant f16"; permute takes perm=P:
"permute permute 339x256x9 perm=0,2,1 f64"; expand is written src->dst and
where by its three operands, () for a scalar: "expand expand 1x3->131072x3
f32", "where where 47137x3,1,() i32"; the backward of softmax is written as the forward:
"softmax_backward log_softmax_backward 4096x50257 dim=1 bf16 +1" (y and dy
one element into their storage).

    KGEN_LIBRARY=build/runtime/libkgen.so PYTHONPATH=python python3 bench/variants.py \\
        [--top 6] [--reps 15] "softmax softmax 587x307x29 dim=2 f16" ...

Prints, per problem: torch eager, kgen's selection and the fastest variants
(us and % of a device-to-device copy of the same traffic).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import compare_torch as ct  # noqa: E402
import sweep  # noqa: E402

torch, kgen = ct.torch, ct.kgen


def extents(text: str) -> tuple:
    """'8192x3x281' -> (8192, 3, 281); '()' -> () (a scalar)."""
    return () if text == "()" else tuple(int(v) for v in text.split("x"))


def broadcast(*shapes) -> tuple:
    """The shape the operands broadcast to (numpy's rule)."""
    rank = max(map(len, shapes))
    padded = [(1,) * (rank - len(s)) + tuple(s) for s in shapes]
    return tuple(max(d) if min(d) != 0 else 0 for d in zip(*padded))


def parse(text: str) -> dict:
    """'softmax log_softmax 8192x3x281 dim=1 f16 +1' -> a sweep problem."""
    words = text.split()
    if len(words) < 4:
        raise ValueError(f"{text!r}: family op shape [dim=D] dtype [+1]")
    p = dict(family=words[0], op=words[1], offset=0)
    if p["family"] == "expand":
        src, _, dst = words[2].partition("->")
        p.update(src=extents(src), shape=extents(dst))
    elif p["family"] == "where":
        cond, x, y = (extents(v) for v in words[2].split(","))
        p.update(cond=cond, x=x, y=y, shape=broadcast(cond, x, y))
    else:
        p["shape"] = extents(words[2])
    if p["family"] == "topk":
        p.update(k=1, data="random", largest=True, sorted=True)
    for w in words[3:]:
        if w.startswith("dim="):
            p["dim"] = None if w == "dim=None" else int(w[4:])
        elif w.startswith("perm="):
            p["perm"] = tuple(int(v) for v in w[5:].split(","))
        elif w.startswith("k="):
            p["k"] = int(w[2:])
        elif w in sweep.TOPK_DATA:
            p["data"] = w
        elif w == "smallest":
            p["largest"] = False
        elif w == "unsorted":
            p["sorted"] = False
        elif w == "+1":
            p["offset"] = 1
        else:
            p["dtype"] = w
    if p["family"] in sweep.DIM_FAMILIES and "dim" not in p:
        p["dim"] = None if p["family"] == "reduce" else len(p["shape"]) - 1
    return p


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("problems", nargs="+")
    ap.add_argument("--top", type=int, default=6, help="fastest variants a problem lists (0: the selection only)")
    ap.add_argument("--reps", type=int, default=15)
    args = ap.parse_args(argv)
    if torch is None or not torch.cuda.is_available():
        print(f"variants: {ct.IMPORT_ERROR if torch is None else 'no CUDA device'}", file=sys.stderr)
        return 77
    timer = ct.Timer(args.reps)
    probs = [parse(t) for t in args.problems]
    copies = sweep.CopyTable(timer, max(sweep.traffic(p) for p in probs))
    ok = True
    for p in probs:
        prob = sweep.Problem(p)
        moved = sweep.traffic(p)

        def pct(us: float) -> float:
            return 100.0 * moved / (us * 1e3) / copies.gbps(moved) if us > 0 else 0.0

        got_ok = prob.check(prob.kgen(prob.inputs[0]))
        ok = ok and got_ok
        selected = kgen.selected(prob.kgen, prob.inputs[0])
        kgen_us = prob.time(prob.kgen, timer)
        torch_us = prob.time(prob.eager, timer)
        print(f"{sweep.describe(p)}: {moved / 2**20:.1f} MiB; torch {torch_us:.1f} us ({pct(torch_us):.0f}%), "
              f"kgen {kgen_us:.1f} us ({pct(kgen_us):.0f}%) {torch_us / kgen_us:.2f}x, {selected}"
              f"{'' if got_ok else ' WRONG'}", flush=True)
        for us, name in (sweep.scan_variants(prob, kgen_us, args.reps) if args.top > 0 else [])[:args.top]:
            print(f"    {us:9.1f} us {pct(us):4.0f}%  {name}", flush=True)
        prob = None
        torch.cuda.empty_cache()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
