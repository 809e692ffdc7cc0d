"""PyTorch's torch.topk on kgen-bench topk's cases, timed the way kgen-bench
times (CUDA events around each call, warm-up, median; inputs rotated so that
they exceed 4x the L2).  Writes "dtype,batch,n,k,us" lines for
`kgen-bench topk --torch FILE`, which prints the speedup column.

    python3 bench/topk_torch.py OUT.csv [--reps 30]
"""
import argparse
import sys

CASES = [(1, 1 << 24, 1), (1, 1 << 24, 64), (1, 1 << 24, 2048), (1024, 32768, 64),
         (4096, 4096, 32), (64, 262144, 256), (16384, 1024, 8)]


def median_us(torch, fn, sets, reps):
    for i in range(10):
        fn(i % sets)
    torch.cuda.synchronize()
    times = []
    for i in range(reps):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        fn(i % sets)
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1000.0)
    times.sort()
    return times[len(times) // 2]


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("out")
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--dtypes", default="f32,f16")
    args = ap.parse_args(argv)
    import torch
    if not torch.cuda.is_available():
        print("topk_torch: no CUDA device", file=sys.stderr)
        return 77
    dtypes = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    lines = []
    for name in args.dtypes.split(","):
        dt = dtypes[name]
        for batch, n, k in CASES:
            nbytes = batch * n * torch.finfo(dt).bits // 8
            sets = max(1, -(-4 * l2 // nbytes))
            xs = [torch.randn(batch, n, device="cuda", dtype=dt) for _ in range(sets)]
            us = median_us(torch, lambda s: torch.topk(xs[s], k, dim=-1, largest=True, sorted=True),
                           sets, args.reps)
            lines.append(f"{name},{batch},{n},{k},{us:.2f}")
            print(f"torch.topk {name} ({batch},{n},{k}): {us:.1f} us", flush=True)
            del xs
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
