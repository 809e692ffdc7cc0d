"""Top-k on the issue shapes and data (sampling, routing, long rows; ten
values, all equal, sorted, NaN-heavy, shared top bits): kgen.topk against
torch.topk in the same run, CUDA events, median of 25, inputs rotated past
4x the L2; GB/s and % of a device copy over one read of x.

    KGEN_LIBRARY=build/runtime/libkgen.so PYTHONPATH=python python3 bench/topk_shapes.py
"""
import sys, torch, statistics, math
import kgen
D = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}
L2 = torch.cuda.get_device_properties(0).L2_cache_size


def data(kind, batch, n, dt):
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
    for i in range(5): fn(i % sets)
    torch.cuda.synchronize(); ts = []
    for i in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); fn(i % sets); b.record(); b.synchronize(); ts.append(a.elapsed_time(b) * 1000)
    return statistics.median(ts)

big = torch.empty(1 << 28, dtype=torch.uint8, device="cuda"); dst = torch.empty_like(big)
tc = med(lambda s: dst.copy_(big), 1, 30); copy_bw = 2 * big.numel() / tc / 1e3
print(f"copy {copy_bw:.0f} GB/s", flush=True); del big, dst
CASES = [(b, n, k, dt, "random") for dt in ("f32", "bf16") for (b, n, k) in
         [(16384, 256, 8), (65536, 256, 8), (16384, 64, 2), (65536, 128, 4),
          (1, 32000, 50), (1, 128256, 50), (1, 262144, 100), (32, 128256, 50), (256, 32000, 1),
          (256, 152064, 100), (64, 262144, 20), (1, 1 << 24, 1), (1, 1 << 24, 64), (1, 1 << 24, 2048)]]
CASES += [(b, n, k, dt, kind) for kind in ("ten", "equal", "asc", "desc", "nan", "digits") for dt in ("f32", "bf16")
          for (b, n, k) in [(1, 1 << 24, 64), (256, 128256, 50), (65536, 256, 8)]]
for b, n, k, dt, kind in CASES:
    nbytes = b * n * D[dt].itemsize
    sets = max(1, -(-4 * L2 // nbytes))
    xs = [data(kind, b, n, D[dt]) for _ in range(sets)]
    sel = kgen.selected(kgen.topk, xs[0], k)
    gv, gi = kgen.topk(xs[0], k); wv, wi = torch.topk(xs[0], k)
    ok = torch.equal(gv.float().nan_to_num(7e7), wv.float().nan_to_num(7e7))
    tk = med(lambda s: kgen.topk(xs[s], k), sets); tt = med(lambda s: torch.topk(xs[s], k), sets)
    gbs = nbytes / tk / 1e3
    print(f"{b:6d}x{n:<9d} k{k:<5d} {dt:4s} {kind:6s} kgen {tk:9.1f} us {gbs:6.0f} GB/s {100*gbs/copy_bw:5.1f}%  torch {tt:9.1f}  {tt/tk:6.2f}x  {'ok' if ok else 'VALUES DIFFER'} {sel}", flush=True)
    del xs
