"""Top-k on the issue shapes and data (sampling, routing, long rows; ten
values, all equal, sorted, NaN-heavy, shared top bits): kgen.topk against
torch.topk in the same run, CUDA events around each call behind a spin
kernel that holds the stream (the GPU's time only, not the host's), median
of 25, inputs rotated past 4x the L2; GB/s and % of a device copy of 256
MiB (its read and write counted) over one read of x.

    KGEN_LIBRARY=build/runtime/libkgen.so PYTHONPATH=python python3 bench/topk_shapes.py [--large]

--large: k past one block's sort (4096), sorted and unsorted, largest and
smallest, from the random-shape sweep's worst problems.
"""
import sys, torch
import kgen
from compare_torch import Timer
D = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16, "i32": torch.int32}
L2 = torch.cuda.get_device_properties(0).L2_cache_size


def data(kind, batch, n, dt):
    if kind == "random" and dt == torch.int32:
        return torch.randint(-2 ** 31, 2 ** 31 - 1, (batch, n), device="cuda", dtype=dt)
    if kind == "random": v = torch.randn(batch, n, device="cuda")
    elif kind == "ten": v = torch.randint(0, 10, (batch, n), device="cuda").float()
    elif kind == "equal": v = torch.full((batch, n), 3.0, device="cuda")
    elif kind == "asc": v = torch.arange(n, device="cuda").float().repeat(batch, 1)
    elif kind == "desc": v = torch.arange(n, device="cuda").float().flip(0).repeat(batch, 1)
    elif kind == "nan":
        v = torch.randn(batch, n, device="cuda"); v[torch.rand_like(v) < 0.3] = float("nan")
    elif kind == "digits": v = 1.0 + torch.rand(batch, n, device="cuda") * 2 ** -12  # share the top bits
    return v.to(dt)


def med(fn, sets, reps=25):
    # the stream held before each run (compare_torch.Timer): the binding's
    # host time is not the kernel's
    return Timer(reps)(fn, sets)

big = torch.empty(1 << 28, dtype=torch.uint8, device="cuda"); dst = torch.empty_like(big)
tc = med(lambda s: dst.copy_(big), 1, 30); copy_bw = 2 * big.numel() / tc / 1e3
print(f"copy {copy_bw:.0f} GB/s", flush=True); del big, dst
CASES = [(b, n, k, dt, "random", True, True) for dt in ("f32", "bf16") for (b, n, k) in
         [(16384, 256, 8), (65536, 256, 8), (16384, 64, 2), (65536, 128, 4),
          (1, 32000, 50), (1, 128256, 50), (1, 262144, 100), (32, 128256, 50), (256, 32000, 1),
          (256, 152064, 100), (64, 262144, 20), (1, 1 << 24, 1), (1, 1 << 24, 64), (1, 1 << 24, 2048)]]
CASES += [(b, n, k, dt, kind, True, True) for kind in ("ten", "equal", "asc", "desc", "nan", "digits")
          for dt in ("f32", "bf16") for (b, n, k) in [(1, 1 << 24, 64), (256, 128256, 50), (65536, 256, 8)]]
# (batch, n, k, dtype, data, largest, sorted)
LARGE = [(73, 53395, 39652, "f16", "random", False, False), (73, 92049, 92049, "f32", "random", False, False),
         (4, 103867, 9637, "bf16", "ten", False, False), (2, 107267, 8706, "i32", "asc", True, False),
         (60, 20377, 10897, "bf16", "desc", True, False), (2, 5225013, 2442251, "bf16", "nan", True, True),
         (6, 1560237, 1560237, "f16", "equal", True, True), (8, 560863, 140055, "f16", "asc", True, True),
         (2, 3047637, 1993177, "f16", "nan", True, True), (4, 2066809, 71867, "f16", "ten", True, True),
         (34, 93125, 65761, "f32", "asc", True, True), (1, 9124882, 9124882, "f32", "random", True, True),
         (64, 50000, 40000, "f32", "random", True, True), (1000, 8000, 6000, "f16", "random", True, True),
         (200, 20000, 5000, "f32", "random", True, True), (200, 20000, 5000, "bf16", "random", True, False),
         (1, 1 << 24, 100000, "f32", "random", True, True), (1, 1 << 24, 100000, "f32", "random", True, False),
         (16, 1 << 20, 65536, "bf16", "random", True, False), (16, 1 << 20, 65536, "bf16", "ten", True, True),
         # the block tier's sorted k of 1025-4096
         (2826, 2921, 2232, "f16", "ten", True, True), (400, 27701, 1769, "f16", "desc", True, True),
         (76, 2112, 2112, "bf16", "ten", True, True), (1, 21559, 2605, "bf16", "equal", False, True),
         (2, 4096, 2197, "f16", "asc", False, True), (1000, 4096, 2048, "bf16", "random", True, True),
         (1095, 3606, 3606, "i32", "random", True, True)]
for b, n, k, dt, kind, largest, sort in (LARGE if "--large" in sys.argv else CASES):
    nbytes = b * n * D[dt].itemsize
    sets = max(1, -(-4 * L2 // nbytes))
    xs = [data(kind, b, n, D[dt]) for _ in range(sets)]
    sel = kgen.selected(kgen.topk, xs[0], k, largest=largest, sorted=sort)
    gv, gi = kgen.topk(xs[0], k, largest=largest, sorted=sort)
    wv, wi = torch.topk(xs[0], k, largest=largest, sorted=sort)
    if not sort:  # torch's unsorted order is its own: compare the values as sets
        gv, wv = gv.sort(dim=-1).values, wv.sort(dim=-1).values
    ok = torch.equal(gv.double().nan_to_num(7e7), wv.double().nan_to_num(7e7))
    tk = med(lambda s: kgen.topk(xs[s], k, largest=largest, sorted=sort), sets)
    tt = med(lambda s: torch.topk(xs[s], k, largest=largest, sorted=sort), sets)
    gbs = nbytes / tk / 1e3
    flags = ("" if largest else " smallest") + ("" if sort else " unsorted")
    print(f"{b:6d}x{n:<9d} k{k:<7d} {dt:4s} {kind:6s} kgen {tk:9.1f} us {gbs:6.0f} GB/s {100*gbs/copy_bw:5.1f}%  torch {tt:9.1f}  {tt/tk:6.2f}x  {'ok' if ok else 'VALUES DIFFER'} {sel}{flags}", flush=True)
    del xs
