#!/usr/bin/env python3
"""Random realistic problems, kgen against PyTorch: the shapes no list holds.

For each family a seeded generator draws problems (the seed is printed;
--seed repeats a run): extents log-uniform from 1 to millions, odd and prime
sizes, 1-4 leading dims, every dim for softmax, its backward and reductions, inputs
misaligned by one element, float32/float16/bfloat16 (and int32 where the
family has it); top-k with k from 1 to n on random, repeated, few-distinct,
constant, sorted and NaN-heavy data; permutations of rank 2-8; random
broadcast patterns for expand and where.  Each problem is checked against
torch and timed against torch eager with compare_torch.py's timer; the first
--compiled problems of at least 1 MB of a family also against
torch.compile(dynamic=False).  The worst problems of each family are then run
with every compiled variant that accepts them, so that each says whether
selection (a faster variant exists) or the kernels are at fault.

Writes bench/results/<gpu>_sweep.{json,md,png}.

    KGEN_LIBRARY=build/runtime/libkgen.so PYTHONPATH=python python3 bench/sweep.py
        [--seed N] [--count 300] [--families softmax,reduce,...] [--compiled 12] [--worst 20]
    python3 bench/sweep.py --plot bench/results/<gpu>_sweep.json     # redraw (no GPU)
    python3 bench/sweep.py --emit-problems DIR --seed 17 --count 12   # tuning lines (no GPU)
"""
from __future__ import annotations

import argparse
import json
import math
import os
import random
import subprocess
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import compare_torch as ct  # noqa: E402  (timer, buffer sets, checks)

torch, kgen = ct.torch, ct.kgen

MIB = 1 << 20
# The target counts problems of at least 1 MB of minimum traffic:
# below that a call is a launch or two, whoever makes it.
LARGE = MIB
FAMILIES = ("softmax", "reduce", "topk", "permute", "expand", "where", "softmax_backward")
# Families whose problems name a dim (a reduction's may be None: the whole tensor).
DIM_FAMILIES = ("softmax", "softmax_backward", "reduce")
# Buffer sets a problem rotates through at most: 4x the L2 from a problem of
# half the L2 up (25 MB on an H100); smaller problems, and the copies they
# are compared with, partly run from the L2, for torch and kgen alike.
MAX_SETS = 8


# ---- drawing problems ----------------------------------------------------------------

def log_uniform(rng: random.Random, lo: float, hi: float) -> int:
    return max(1, int(round(math.exp(rng.uniform(math.log(lo), math.log(hi))))))


def next_prime(n: int) -> int:
    def prime(m):
        return m >= 2 and all(m % p for p in range(2, int(math.isqrt(m)) + 1))
    n = max(n, 2)
    while not prime(n):
        n += 1
    return n


def roughen(rng: random.Random, n: int) -> int:
    """A drawn extent made prime, odd or a power of two now and then (the
    sizes tuned lists rarely hold, and the ones they do)."""
    u = rng.random()
    if n > 2 and u < 0.3:
        return next_prime(n)
    if u < 0.55:
        return n | 1
    if u < 0.7:
        return 1 << max(0, round(math.log2(n)))
    return n


def draw_shape(rng: random.Random, rank: int, max_elements: int, lo: int = 16) -> tuple:
    """rank extents whose product is log-uniform in [lo, max_elements]; the
    split of its logarithm between the dims is random, so one long dim and
    a few short ones are as likely as a balanced shape."""
    total = log_uniform(rng, lo, max_elements)
    weights = [rng.random() ** 1.5 + 0.05 for _ in range(rank)]
    logs = [math.log(total) * w / sum(weights) for w in weights]
    shape = [roughen(rng, max(1, int(round(math.exp(v))))) for v in logs]
    while math.prod(shape) > max_elements:  # rounding up past the cap: shrink the longest dim
        i = shape.index(max(shape))
        shape[i] = max(1, shape[i] // 2) | (shape[i] & 1)
    return tuple(shape)


def float_dtype(rng: random.Random) -> str:
    return rng.choice(("f32", "f16", "bf16"))


def draw_softmax(rng, max_elements):
    shape = draw_shape(rng, rng.randint(1, 5), max_elements)
    dim = len(shape) - 1 if rng.random() < 0.5 else rng.randrange(len(shape))
    return dict(op=rng.choice(("softmax", "log_softmax")), shape=shape, dim=dim, dtype=float_dtype(rng),
                offset=int(rng.random() < 0.25))


def draw_softmax_backward(rng, max_elements):
    """dx from y and dy: the forward's problems, y and dy one element into
    their storage where the forward's x is, dx a fresh tensor."""
    p = draw_softmax(rng, max_elements)
    return dict(p, op=p["op"] + "_backward")


REDUCE_OPS = ("sum", "mean", "amax", "amin", "argmax", "argmin")


def draw_reduce(rng, max_elements):
    shape = draw_shape(rng, rng.randint(1, 5), max_elements)
    dtype = rng.choice(("f32", "f16", "bf16", "i32"))
    op = rng.choice([o for o in REDUCE_OPS if not (dtype == "i32" and o == "mean")])
    dim = None if rng.random() < 0.12 else rng.randrange(len(shape))
    return dict(op=op, shape=shape, dim=dim, dtype=dtype, offset=int(rng.random() < 0.25))


TOPK_DATA = ("random", "repeated", "few", "constant", "sorted", "reversed", "nan")


def draw_topk(rng, max_elements):
    max_elements = min(max_elements, 1 << 24)  # k near n sorts the whole input: keep the sweep in minutes
    n = roughen(rng, log_uniform(rng, 1, max_elements))
    batch = log_uniform(rng, 1, max(1, max_elements // n)) if rng.random() < 0.7 else 1
    u = rng.random()
    k = 1 if u < 0.1 else n if u < 0.2 else log_uniform(rng, 1, n)
    dtype = rng.choice(("f32", "f16", "bf16", "i32"))
    data = rng.choice([d for d in TOPK_DATA if not (dtype == "i32" and d == "nan")])
    return dict(op="topk", shape=(batch, n), k=k, dtype=dtype, data=data, largest=rng.random() < 0.75,
                sorted=rng.random() < 0.8, offset=int(rng.random() < 0.2))


def draw_permute(rng, max_elements):
    rank = rng.randint(2, 8)
    shape = draw_shape(rng, rank, max_elements, lo=64)
    perm = list(range(rank))
    while perm == sorted(perm):
        rng.shuffle(perm)
    dtype = rng.choice(("f32", "f16", "bf16", "u8", "f64"))
    return dict(op="permute", shape=shape, perm=tuple(perm), dtype=dtype, offset=int(rng.random() < 0.2))


def broadcast_from(rng, shape, p_one):
    """A shape that broadcasts to `shape`: some dims 1, some leading dims gone."""
    src = [1 if rng.random() < p_one else s for s in shape]
    drop = rng.randrange(len(shape)) if rng.random() < 0.3 else 0
    return tuple(src[drop:])


def draw_expand(rng, max_elements):
    dst = draw_shape(rng, rng.randint(1, 6), max_elements, lo=64)
    src = broadcast_from(rng, dst, 0.45)
    return dict(op="expand", shape=dst, src=src, dtype=rng.choice(("f32", "f16", "bf16", "u8", "f64")),
                offset=int(rng.random() < 0.2))


def draw_where(rng, max_elements):
    out = draw_shape(rng, rng.randint(1, 5), max_elements, lo=64)
    shapes = [broadcast_from(rng, out, 0.3) for _ in range(3)]
    if rng.random() < 0.1:
        shapes[2] = ()  # a scalar
    shapes[rng.randrange(3)] = out  # one operand has the result's shape
    return dict(op="where", shape=out, cond=shapes[0], x=shapes[1], y=shapes[2],
                dtype=rng.choice(("f32", "f16", "bf16", "i32")), offset=int(rng.random() < 0.2))


DRAW = {"softmax": draw_softmax, "softmax_backward": draw_softmax_backward, "reduce": draw_reduce,
        "topk": draw_topk, "permute": draw_permute, "expand": draw_expand, "where": draw_where}


def draw(family: str, seed: int, count: int, max_elements: int) -> list:
    rng = random.Random(f"{seed}/{family}")
    return [dict(family=family, **DRAW[family](rng, max_elements)) for _ in range(count)]


def dims(shape) -> str:
    return "x".join(map(str, shape)) if shape else "()"


def describe(p: dict) -> str:
    f = p["family"]
    text = f"{p['op']} {dims(p['shape'])}"
    if f in DIM_FAMILIES:
        text += f" dim={p['dim']}"
    elif f == "topk":
        text += f" k={p['k']} {p['data']}{'' if p['largest'] else ' smallest'}{'' if p['sorted'] else ' unsorted'}"
    elif f == "permute":
        text += " perm=" + ",".join(map(str, p["perm"]))
    elif f == "expand":
        text = f"expand {dims(p['src'])}->{dims(p['shape'])}"
    elif f == "where":
        text = f"where {dims(p['cond'])},{dims(p['x'])},{dims(p['y'])}"
    return text + f" {p['dtype']}" + (" +1" if p["offset"] else "")


# ---- the sample the tuning problem sets take (no GPU) -----------------------------------

def tuning_line(p: dict) -> str:
    """p as a line of tuning/problems/<family>.txt (bench/cases.hpp's words)."""
    f, shape = p["family"], p["shape"]
    dtypes = f"dtypes={p['dtype']}"
    if f in DIM_FAMILIES and p.get("dim") is not None:
        d = p["dim"]
        outer, axis, inner = math.prod(shape[:d]), shape[d], math.prod(shape[d + 1:])
    else:
        outer, axis, inner = 1, math.prod(shape), 1
    if f in ("softmax", "softmax_backward"):
        return f"outer={outer} axis={axis}" + (f" inner={inner}" if inner > 1 else "") + \
            (" log=1" if p["op"].startswith("log_") else "") + f" {dtypes}"
    if f == "reduce":
        op = {"amax": "max", "amin": "min"}.get(p["op"], p["op"])
        return f"outer={outer} reduce={axis} inner={inner} op={op} {dtypes}"
    if f == "topk":
        return f"batch={shape[0]} n={shape[1]} k={p['k']} {dtypes}"
    if f == "permute":
        return f"shape={dims(shape)} perm={','.join(map(str, p['perm']))} {dtypes}"
    if f == "expand":
        return f"src={dims(p['src'])} dst={dims(shape)} {dtypes}"
    return f"cond={dims(p['cond'])} x={dims(p['x'])} y={dims(p['y'])} {dtypes}"


def emit_problems(out: Path, seed: int, count: int, max_elements: int) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for f in FAMILIES:
        lines = [tuning_line(p) for p in draw(f, seed, count, max_elements)
                 if not (f == "topk" and p["dtype"] == "i32") and p["dtype"] != "u8"]
        (out / f"{f}.txt").write_text(f"# bench/sweep.py --emit-problems --seed {seed} --count {count}\n"
                                      + "\n".join(lines) + "\n")
        print(f"{out / (f + '.txt')}: {len(lines)} lines")


# ---- making, checking and timing one problem --------------------------------------------

if torch is not None:
    TORCH_DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16, "f64": torch.float64,
                    "i32": torch.int32, "u8": torch.uint8}


def tensor(shape, dtype: str, offset: int, fill="randn"):
    """A contiguous tensor whose storage starts `offset` elements into an
    allocation (offset 1: misaligned for every vector width)."""
    dt = TORCH_DTYPES[dtype]
    n = math.prod(shape)
    if fill == "bool":
        base = torch.rand(n + offset, device="cuda") > 0.5
    elif dt.is_floating_point:
        base = (torch.randn(n + offset, device="cuda") * 3).to(dt)
    else:
        base = torch.randint(-100, 100, (n + offset,), device="cuda").to(dt)
    return base[offset:].view(shape)


def softmax_output(p: dict):
    """y of the forward op (softmax or log_softmax of a random tensor over
    p's dim) in p's dtype, p's offset elements into its storage."""
    forward = getattr(torch, p["op"].removesuffix("_backward"))
    y = forward(tensor(p["shape"], "f32", 0), p["dim"]).to(TORCH_DTYPES[p["dtype"]])
    out = tensor(p["shape"], p["dtype"], p["offset"])
    return out.copy_(y)


def backward_reference(p: dict, y, dy):
    """dx in float32 from y and dy in float32: (dy - sum(y dy)) y, or for
    log_softmax dy - exp(y) sum(dy)."""
    d = p["dim"]
    if p["op"].startswith("log_"):
        return dy - y.exp() * dy.sum(d, keepdim=True)
    return (dy - (y * dy).sum(d, keepdim=True)) * y


def topk_input(p: dict):
    batch, n = p["shape"]
    dt, kind = TORCH_DTYPES[p["dtype"]], p["data"]
    shape = (batch, n)
    if kind == "random":
        return tensor(shape, p["dtype"], p["offset"])
    if kind in ("repeated", "few"):
        v = torch.randint(0, 1000 if kind == "repeated" else 4, (batch * n + p["offset"],), device="cuda")
    elif kind == "constant":
        v = torch.full((batch * n + p["offset"],), 3, device="cuda")
    elif kind in ("sorted", "reversed"):
        v = torch.arange(n, device="cuda").repeat(batch)
        v = torch.cat([v.new_zeros(p["offset"]), v if kind == "sorted" else v.flip(0)])
    else:  # NaN-heavy: 30% NaN, the rest normal
        v = torch.randn(batch * n + p["offset"], device="cuda")
        v[torch.rand_like(v) < 0.3] = float("nan")
    return v.to(dt)[p["offset"]:].view(shape)


def traffic(p: dict) -> int:
    """The minimum bytes a call moves: each input read once, each output written once."""
    e = TORCH_DTYPES[p["dtype"]].itemsize
    n = math.prod(p["shape"])
    f = p["family"]
    if f in ("softmax", "permute"):
        return 2 * n * e
    if f == "softmax_backward":  # y and dy read, dx written
        return 3 * n * e
    if f == "reduce":
        out = n // p["shape"][p["dim"]] if p["dim"] is not None else 1
        return n * e + out * (8 if p["op"].startswith("arg") else e)
    if f == "topk":
        return n * e + p["shape"][0] * p["k"] * (e + 8)
    if f == "expand":
        return (math.prod(p["src"]) + n) * e
    return math.prod(p["cond"]) + (math.prod(p["x"]) + math.prod(p["y"]) + n) * e


class Problem:
    """One drawn problem on the GPU: input sets rotated past the L2 (at most
    MAX_SETS), kgen's
    call (any variant), torch's eager call and a check of kgen's result."""

    def __init__(self, p: dict, max_sets: int = MAX_SETS):
        self.p = p
        f = p["family"]
        self.sets = min(max_sets, ct.sets_for(traffic(p)))
        self.inputs = [self.make() for _ in range(self.sets)]
        op = p["op"]
        if f == "softmax":
            self.kgen = lambda a, variant=None: getattr(kgen, op)(a[0], p["dim"], variant=variant)
            self.eager = lambda a: getattr(torch, op)(a[0], p["dim"])
        elif f == "softmax_backward":
            self.kgen = lambda a, variant=None: getattr(kgen, op)(a[0], a[1], p["dim"], variant=variant)
            torch_op = getattr(torch.ops.aten, f"_{op}_data")  # (dy, y, dim, input dtype)
            self.eager = lambda a: torch_op(a[1], a[0], p["dim"], a[0].dtype)
        elif f == "reduce":
            kw = {} if p["dim"] is None else {"dim": p["dim"]}
            self.kgen = lambda a, variant=None: getattr(kgen, op)(a[0], variant=variant, **kw)
            self.eager = lambda a: getattr(torch, op)(a[0], **kw)
        elif f == "topk":
            opts = dict(largest=p["largest"], sorted=p["sorted"])
            self.kgen = lambda a, variant=None: kgen.topk(a[0], p["k"], variant=variant, **opts)
            self.eager = lambda a: torch.topk(a[0], p["k"], **opts)
        elif f == "permute":
            self.kgen = lambda a, variant=None: kgen.permute(a[0], p["perm"], variant=variant)
            # clone, not contiguous(): a permutation that only moves size-1
            # dims is already contiguous, and kgen writes a new tensor anyway
            self.eager = lambda a: a[0].permute(p["perm"]).clone(memory_format=torch.contiguous_format)
        elif f == "expand":
            self.kgen = lambda a, variant=None: kgen.expand(a[0], p["shape"], variant=variant)
            self.eager = lambda a: a[0].expand(p["shape"]).clone(memory_format=torch.contiguous_format)
        else:
            self.kgen = lambda a, variant=None: kgen.where(a[0], a[1], a[2], variant=variant)
            self.eager = lambda a: torch.where(a[0], a[1], a[2])

    def make(self):
        p, f = self.p, self.p["family"]
        if f == "topk":
            return (topk_input(p),)
        if f == "expand":
            return (tensor(p["src"], p["dtype"], p["offset"]),)
        if f == "softmax_backward":
            return (softmax_output(p), tensor(p["shape"], p["dtype"], p["offset"]))
        if f == "where":
            return (tensor(p["cond"], "u8", 0, fill="bool"), tensor(p["x"], p["dtype"], p["offset"]),
                    tensor(p["y"], p["dtype"], 0))
        return (tensor(p["shape"], p["dtype"], p["offset"]),)

    def check(self, got) -> bool:
        p, f, a = self.p, self.p["family"], self.inputs[0]
        dt = TORCH_DTYPES[p["dtype"]]
        if f == "softmax":
            return ct.close(got, getattr(torch, p["op"])(a[0].float(), p["dim"]), dt)
        if f == "softmax_backward":
            return ct.close(got, backward_reference(p, a[0].float(), a[1].float()), dt)
        if f == "reduce":
            return self.check_reduce(got, a[0])
        if f == "topk":
            return self.check_topk(got, a[0])
        return torch.equal(got, self.eager(a))

    def check_reduce(self, got, x) -> bool:
        p = self.p
        kw = {} if p["dim"] is None else {"dim": p["dim"]}
        if p["dtype"] == "i32":
            if p["op"] == "sum":  # kgen's int32 sum wraps as int32 arithmetic
                return torch.equal(got, torch.sum(x, dtype=torch.int64, **kw).to(torch.int32))
            return torch.equal(got, getattr(torch, p["op"])(x, **kw))
        if p["op"] in ("sum", "mean"):
            x64 = x.double()
            n = x.numel() if p["dim"] is None else x.shape[p["dim"]]
            want, absolute = torch.sum(x64, **kw), torch.sum(x64.abs(), **kw)
            if p["op"] == "mean":
                want, absolute = want / n, absolute / n
            return ct.close_sum(got, want, absolute, TORCH_DTYPES[p["dtype"]])
        return torch.equal(got, getattr(torch, p["op"])(x, **kw))

    def check_topk(self, got, x) -> bool:
        p = self.p
        values, indices = got
        want, _ = torch.topk(x, p["k"], largest=p["largest"], sorted=p["sorted"])
        if not p["sorted"]:  # torch's unsorted order is its own: compare as sets
            values_s, want = torch.sort(values.float(), -1)[0], torch.sort(want.float(), -1)[0]
        else:
            values_s = values
        same = (values_s == want) | (values_s.isnan() & want.isnan()) if values.is_floating_point() \
            else values_s == want
        if not bool(same.all()):
            return False
        picked = torch.gather(x, 1, indices)  # every index names its value, once
        same = (picked == values) | (picked.isnan() & values.isnan()) if values.is_floating_point() \
            else picked == values
        distinct = bool((torch.sort(indices, -1)[0].diff(dim=-1) != 0).all()) if p["k"] > 1 else True
        return bool(same.all()) and distinct

    def time(self, fn, timer) -> float:
        """timer's median; a call past 5 ms gets 3 runs (seconds a problem otherwise)."""
        once = ct.Timer(1)(lambda s: fn(self.inputs[s]), 1)
        if once > 5000 and timer.reps > 3:
            timer = ct.Timer(3)
        return timer(lambda s: fn(self.inputs[s]), self.sets)


class CopyTable:
    """Device-to-device copy GB/s at powers of two, measured once: the % of
    copy of a problem moving T bytes compares with copying T/2 bytes."""

    def __init__(self, timer, largest: int):
        self.points = []
        b = 1 << 11
        while b <= max(largest, 1 << 12):
            self.points.append((math.log2(b), ct.copy_gbps(b, timer, MAX_SETS)))
            b <<= 2
        torch.cuda.empty_cache()

    def gbps(self, moved: int) -> float:
        x = math.log2(max(moved / 2, 1))
        pts = self.points
        if x <= pts[0][0]:
            return pts[0][1]
        for (x0, g0), (x1, g1) in zip(pts, pts[1:]):
            if x <= x1:
                return g0 + (g1 - g0) * (x - x0) / (x1 - x0)
        return pts[-1][1]


def compiled_us(problem: Problem, timer) -> float:
    """torch.compile(dynamic=False) of the eager call, compiled afresh for
    this shape (the cache is reset so that no earlier shape's limit applies)."""
    torch._dynamo.reset()
    fn = torch.compile(problem.eager, dynamic=False)
    fn(problem.inputs[0])
    return problem.time(fn, timer)


def scan_variants(problem: Problem, selected_us: float, reps: int) -> list:
    """(us, name) of every compiled variant of the family that runs this
    problem and gets it right, fastest first.  A variant ten times slower
    than the selected one on its first run is not timed further."""
    timer = ct.Timer(reps)
    one = ct.Timer(1)
    family = problem.p["family"]
    out = []
    for name in kgen.variants(family):
        try:
            got = problem.kgen(problem.inputs[0], name)
        except (kgen.Unsupported, kgen.InvalidArgument):  # not for this problem, or another dtype's
            continue
        except torch.OutOfMemoryError:  # a workspace past the GPU's memory: that variant is out
            out.append((float("inf"), name + " (out of memory)"))
            continue
        if not problem.check(got):
            out.append((float("inf"), name + " (WRONG)"))
            continue
        first = one(lambda s: problem.kgen(problem.inputs[s], name), 1)
        us = first if first > 10 * selected_us else problem.time(lambda a: problem.kgen(a, name), timer)
        out.append((us, name))
    return sorted(out)


# ---- the run --------------------------------------------------------------------------

def run_family(family, problems, timer, copies, args, log) -> list:
    rows = []
    compiled_left = args.compiled
    for i, p in enumerate(problems):
        row = dict(p, text=describe(p), bytes=traffic(p))
        try:
            prob = Problem(p)
            got = prob.kgen(prob.inputs[0])
            row["ok"] = prob.check(got)
            del got
            row["selected"] = kgen.selected(prob.kgen, prob.inputs[0])
            row["kgen_us"] = prob.time(prob.kgen, timer)
            row["torch_us"] = prob.time(prob.eager, timer)
            if row["torch_us"] < 0.95 * row["kgen_us"]:
                # timed again, each side its better median: a host stall
                # longer than the timer's hold (0.5 ms) lands in one run's
                # median now and then (23 of 1800 problems on an H100)
                row["kgen_us"] = min(row["kgen_us"], prob.time(prob.kgen, timer))
                row["torch_us"] = min(row["torch_us"], prob.time(prob.eager, timer))
            if compiled_left > 0 and row["bytes"] >= LARGE:
                row["compiled_us"] = compiled_us(prob, timer)
                compiled_left -= 1
        except (kgen.KgenError, RuntimeError, ValueError) as e:  # recorded, the sweep goes on
            row.update(ok=False, error=f"{type(e).__name__}: {e}"[:300])
        finally:
            prob = None
            torch.cuda.empty_cache()
        if "kgen_us" in row:
            row["ratio"] = row["torch_us"] / row["kgen_us"]
            g = copies.gbps(row["bytes"])
            row["kgen_pct"] = 100 * row["bytes"] / row["kgen_us"] / 1e3 / g
            row["torch_pct"] = 100 * row["bytes"] / row["torch_us"] / 1e3 / g
        rows.append(row)
        if "ratio" in row:
            log(f"{family:8} {i:4} {row['text'][:60]:60} {row['kgen_us']:9.1f} {row['torch_us']:9.1f} "
                f"{row['ratio']:6.2f}x {'ok' if row['ok'] else 'MISMATCH'} {row['selected']}")
        else:
            log(f"{family:8} {i:4} {row['text'][:60]:60} ERROR {row.get('error', '')}")
    return rows


def explain_worst(rows, args, log) -> None:
    """The worst problems of at least LARGE bytes: every variant timed."""
    timed = sorted((r for r in rows if "ratio" in r and r["bytes"] >= LARGE), key=lambda r: r["ratio"])
    for r in timed[:args.worst]:
        prob = Problem({k: r[k] for k in r if k in PROBLEM_KEYS})
        scan = scan_variants(prob, r["kgen_us"], args.variant_reps)
        prob = None
        torch.cuda.empty_cache()
        r["variants"] = [(round(us, 2), name) for us, name in scan[:8]]
        r["variants_run"] = len(scan)
        if scan:
            best_us, best = scan[0]
            r["fastest"], r["fastest_us"] = best, best_us
            # the selected variant timed again beside the scan (same reps)
            selected_now = next((us for us, name in scan if name == r["selected"]), r["kgen_us"])
            r["at_fault"] = "selection" if best_us < 0.9 * selected_now else "kernel"
        log(f"worst {r['family']:8} {r['text'][:60]:60} {r['ratio']:5.2f}x selected {r['selected']} "
            f"fastest {r.get('fastest')} {r.get('fastest_us', 0):.1f} us ({len(scan)} variants) "
            f"-> {r.get('at_fault')}")


PROBLEM_KEYS = ("family", "op", "shape", "dim", "dtype", "offset", "k", "data", "largest", "sorted", "perm", "src",
                "cond", "x", "y")


def geomean(values) -> float:
    values = list(values)
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def quantile(values, q) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))] if values else float("nan")


def summary(rows) -> dict:
    out = {}
    for f in FAMILIES:
        fam = [r for r in rows if r["family"] == f]
        if not fam:
            continue
        timed = [r for r in fam if "ratio" in r]
        large = [r["ratio"] for r in timed if r["bytes"] >= LARGE]
        allr = [r["ratio"] for r in timed]
        comp = [r["compiled_us"] / r["kgen_us"] for r in timed if "compiled_us" in r]
        out[f] = dict(problems=len(fam), failed=sum(not r.get("ok") for r in fam), large=len(large),
                      geomean=geomean(allr), geomean_large=geomean(large),
                      worst=min(allr, default=float("nan")), worst_large=min(large, default=float("nan")),
                      below_095=sum(v < 0.95 for v in allr), below_090=sum(v < 0.9 for v in allr),
                      below_095_large=sum(v < 0.95 for v in large), below_090_large=sum(v < 0.9 for v in large),
                      p05_large=quantile(large, 0.05), p25_large=quantile(large, 0.25),
                      median_large=quantile(large, 0.5), compiled=len(comp), geomean_compiled=geomean(comp),
                      worst_compiled=min(comp, default=float("nan")))
    return out


def write(rows, meta, out: Path) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    stem = out / f"{meta['gpu'].replace(' ', '_')}_sweep"
    stem.with_suffix(".json").write_text(json.dumps(dict(meta=meta, rows=rows), indent=0) + "\n")
    stem.with_suffix(".md").write_text(markdown(rows, meta))
    plot(rows, meta, stem.with_suffix(".png"))
    print(f"wrote {stem}.json, .md", flush=True)
    return stem


def markdown(rows, meta) -> str:
    s = summary(rows)
    lines = [f"# kgen against PyTorch on random problems: {meta['gpu']}", "",
             f"{meta['date']}, commit {meta['commit']}, kgen {meta['kgen']} ({meta['level']} level, "
             f"{meta['arch']}), torch {meta['torch']}, tuning database: {meta['database'] or 'none'}; "
             f"seed {meta['seed']}, {meta['count']} problems a family, {meta['seconds']:.0f} s.",
             "Ratio = torch eager us / kgen us (above 1: kgen faster), median of "
             f"{meta['reps']} CUDA-event-timed runs each; large = at least 1 MiB of minimum traffic.", "",
             "| family | problems | failed | geomean | worst | < 0.95x | < 0.9x | large | geomean large | "
             "worst large | p5 large | p25 large | median large | < 0.95x large | < 0.9x large | "
             "torch.compile geomean (n) | worst vs compile |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for f, v in s.items():
        lines.append(f"| {f} | {v['problems']} | {v['failed']} | {v['geomean']:.2f}x | {v['worst']:.2f}x | "
                     f"{v['below_095']} | {v['below_090']} | {v['large']} | {v['geomean_large']:.2f}x | "
                     f"{v['worst_large']:.2f}x | {v['p05_large']:.2f}x | {v['p25_large']:.2f}x | "
                     f"{v['median_large']:.2f}x | {v['below_095_large']} | {v['below_090_large']} | "
                     f"{v['geomean_compiled']:.2f}x ({v['compiled']}) | {v['worst_compiled']:.2f}x |")
    failed = [r for r in rows if not r.get("ok")]
    if failed:
        lines += ["", "## Failed checks or errors", ""]
        lines += [f"- {r['family']}: {r['text']}: {r.get('error', 'result differs from torch')}" for r in failed]
    for f in FAMILIES:
        worst = sorted((r for r in rows if r["family"] == f and "at_fault" in r), key=lambda r: r["ratio"])
        if not worst:
            continue
        lines += ["", f"## {f}: the worst large problems", "",
                  "| problem | MiB | kgen us | torch us | ratio | kgen % copy | torch % copy | selected | "
                  "fastest compiled variant | its us | at fault |", "|---|---:|---:|---:|---:|---:|---:|---|---|---:|---|"]
        for r in worst:
            lines.append(f"| {r['text']} | {r['bytes'] / MIB:.1f} | {r['kgen_us']:.1f} | {r['torch_us']:.1f} | "
                         f"{r['ratio']:.2f}x | {r['kgen_pct']:.0f} | {r['torch_pct']:.0f} | {r['selected']} | "
                         f"{r.get('fastest', '')} | {r.get('fastest_us', float('nan')):.1f} | {r['at_fault']} |")
    return "\n".join(lines) + "\n"


def plot(rows, meta, path: Path) -> None:
    """Per family: the distribution of the ratio (large problems apart) and
    % of copy against problem size, kgen beside torch."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not found: no plot (redraw with --plot <gpu>_sweep.json)")
        return
    fams = [f for f in FAMILIES if any(r["family"] == f and "ratio" in r for r in rows)]
    fig, axes = plt.subplots(2, len(fams), figsize=(3.2 * len(fams), 6.4), squeeze=False)
    for c, f in enumerate(fams):
        timed = [r for r in rows if r["family"] == f and "ratio" in r]
        ax = axes[0][c]
        bins = [2 ** (x / 8) for x in range(-40, 33)]
        ax.hist([[r["ratio"] for r in timed if r["bytes"] < LARGE], [r["ratio"] for r in timed
                                                                      if r["bytes"] >= LARGE]],
                bins=bins, stacked=True, label=["< 1 MiB", ">= 1 MiB"])
        ax.set_xscale("log")
        ax.axvline(1.0, color="black", linewidth=0.8)
        ax.axvline(0.9, color="red", linewidth=0.8, linestyle="--")
        ax.set_title(f"{f}: torch us / kgen us", fontsize=9)
        if c == 0:
            ax.legend(fontsize=7)
        ax = axes[1][c]
        ax.scatter([r["bytes"] for r in timed], [r["torch_pct"] for r in timed], s=5, label="torch", alpha=0.6)
        ax.scatter([r["bytes"] for r in timed], [r["kgen_pct"] for r in timed], s=5, label="kgen", alpha=0.6)
        ax.set_xscale("log")
        ax.set_xlabel("minimum traffic (bytes)", fontsize=8)
        if c == 0:
            ax.set_ylabel("% of device-to-device copy", fontsize=8)
            ax.legend(fontsize=7)
    fig.suptitle(f"kgen and PyTorch on random problems, {meta['gpu']} (seed {meta['seed']})", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    print(f"wrote {path}")


def run_facts(seed, args, start) -> dict:
    lib = kgen.library()
    return dict(gpu=torch.cuda.get_device_properties(0).name, seed=seed, count=args.count, reps=args.reps,
                date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                commit=os.environ.get("KGEN_COMMIT") or subprocess.run(
                    ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip(),
                kgen=kgen.version(), level=lib.kgen_build_level().decode(), arch=lib.kgen_build_arch().decode(),
                torch=torch.__version__, database=kgen.tuning_database(), seconds=time.time() - start)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=None, help="repeat a run (default: drawn and printed)")
    ap.add_argument("--count", type=int, default=300, help="problems a family")
    ap.add_argument("--families", default=",".join(FAMILIES))
    ap.add_argument("--max-elements", type=int, default=1 << 26, help="largest tensor a problem draws")
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--compiled", type=int, default=12, help="large problems a family also timed compiled")
    ap.add_argument("--worst", type=int, default=20, help="worst large problems a family run on every variant")
    ap.add_argument("--variant-reps", type=int, default=5)
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    ap.add_argument("--plot", type=Path, help="only redraw the plot of a <gpu>_sweep.json (no GPU)")
    ap.add_argument("--emit-problems", type=Path, help="write tuning problem lines to this folder (no GPU)")
    args = ap.parse_args(argv)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 31)
    if args.plot:
        data = json.loads(args.plot.read_text())
        plot(data["rows"], data["meta"], args.plot.with_suffix(".png"))
        return 0
    if args.emit_problems:
        emit_problems(args.emit_problems, seed, args.count, args.max_elements)
        return 0
    if torch is None or not torch.cuda.is_available():
        print(f"sweep: {ct.IMPORT_ERROR if torch is None else 'no CUDA device'}", file=sys.stderr)
        return 77
    warnings.filterwarnings("ignore")  # inductor's notes on how it compiled a reduction
    print(f"sweep: seed {seed} (--seed {seed} repeats this run)", flush=True)
    start = time.time()
    timer = ct.Timer(args.reps)
    copies = CopyTable(timer, 8 * args.max_elements)
    rows = []
    for f in args.families.split(","):
        t0 = time.time()
        fam = run_family(f, draw(f, seed, args.count, args.max_elements), timer, copies, args,
                         lambda s: print(s, flush=True))
        explain_worst(fam, args, lambda s: print(s, flush=True))
        rows += fam
        print(f"sweep: {f} in {time.time() - t0:.0f} s", flush=True)
        write(rows, run_facts(seed, args, start), args.out)  # after each family: a cut run keeps its part
    for f, v in summary(rows).items():
        print(f"{f:8} geomean {v['geomean']:.2f}x, large {v['geomean_large']:.2f}x, worst large "
              f"{v['worst_large']:.2f}x, < 0.9x large {v['below_090_large']}, failed {v['failed']}")
    print(f"sweep: {len(rows)} problems in {time.time() - start:.0f} s (seed {seed})")
    return 0 if all(r.get("ok") for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
