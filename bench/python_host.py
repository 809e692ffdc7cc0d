"""Host time a call from Python on a tiny tensor: the binding (kgen.*) through
its C++ path (kgen._torch_ext, where built) and through its Python path, the
torch operators (kgen.ops, through torch's dispatcher) and torch's own op,
side by side in one process.  Calls are issued back to back without
synchronizing (the GPU work is a few microseconds, so the host is what is
timed); median over batches, the least of 3 rounds (the rows interleaved).

    KGEN_LIBRARY=build/runtime/libkgen.so PYTHONPATH=python python3 bench/python_host.py [--md FILE]
"""
import argparse
import statistics
import time

import torch

import kgen
import kgen.ops as K

CALLS, BATCHES = 200, 41


def per_call_us(fn) -> float:
    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(BATCHES):
        t0 = time.perf_counter()
        for _ in range(CALLS):
            fn()
        times.append((time.perf_counter() - t0) / CALLS * 1e6)
        torch.cuda.synchronize()
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--md")
    args = ap.parse_args()
    dev = "cuda"
    x = torch.randn(4, 64, device=dev)
    y = torch.randn(4, 64, device=dev)
    m = torch.ones(2, 2, 8, 8, dtype=torch.bool, device=dev)
    x4 = torch.randn(2, 2, 8, 8, device=dev)
    c = torch.rand(4, 64, device=dev) > 0.5
    rows = [
        ("softmax 4x64 f32", lambda: kgen.softmax(x, -1), lambda: K.softmax(x, -1), lambda: torch.softmax(x, -1)),
        ("log_softmax 4x64 f32", lambda: kgen.log_softmax(x, -1), lambda: K.log_softmax(x, -1),
         lambda: torch.log_softmax(x, -1)),
        ("softmax_backward 4x64 f32", lambda: kgen.softmax_backward(x, y, -1), lambda: K.softmax_backward(x, y, -1),
         lambda: torch._softmax_backward_data(y, x, -1, torch.float32)),
        ("softmax_masked 2x2x8x8 f32 bool", lambda: kgen.softmax_masked(x4, m), lambda: K.softmax_masked(x4, m),
         lambda: torch.softmax(x4.masked_fill(~m, float("-inf")), -1)),
        ("sum 4x64 f32 dim 1", lambda: kgen.sum(x, 1), lambda: K.sum(x, 1), lambda: torch.sum(x, 1)),
        ("argmax 4x64 f32 dim 1", lambda: kgen.argmax(x, 1), lambda: K.argmax(x, 1), lambda: torch.argmax(x, 1)),
        ("topk k 4 of 4x64 f32", lambda: kgen.topk(x, 4), lambda: K.topk(x, 4), lambda: torch.topk(x, 4)),
        ("permute 4x64 f32 (1, 0)", lambda: kgen.permute(x, [1, 0]), lambda: K.permute(x, [1, 0]),
         lambda: x.permute(1, 0).contiguous()),
        ("expand 1x64 -> 4x64 f32", lambda: kgen.expand(x[:1], [4, 64]), lambda: K.expand(x[:1], [4, 64]),
         lambda: x[:1].expand(4, 64).contiguous()),
        ("where 4x64 f32", lambda: kgen.where(c, x, y), lambda: K.where(c, x, y), lambda: torch.where(c, x, y)),
    ]
    kgen.softmax(x, -1)  # finds the C++ path
    fast = kgen._fast
    built = not isinstance(fast, kgen._NoFastPath)

    def python_path(fn):
        def run():
            kgen._fast = kgen._NoFastPath()
            try:
                fn()
            finally:
                kgen._fast = fast
        return run

    best = {}
    for _ in range(3):
        for name, binding, op, ref in rows:
            got = (per_call_us(binding), per_call_us(python_path(binding)), per_call_us(op), per_call_us(ref))
            best[name] = tuple(min(a, b) for a, b in zip(best.get(name, got), got))
    lines = [f"# Python host time a call ({torch.cuda.get_device_name()}, torch {torch.__version__}, "
             f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})", "",
             f"{CALLS} calls a batch, median of {BATCHES} batches, the least of 3 rounds; us of host time a call. "
             f"C++ path: kgen._torch_ext {'(built)' if built else '(not built: the Python path)'}; the Python path "
             "column swaps the module's _fast for each call (a few tenths of a microsecond of its own).", "",
             "| call | kgen, C++ path | kgen, Python path | kgen.ops (torch op) | torch | C++ path / torch |",
             "|---|---:|---:|---:|---:|---:|"]
    for name, *_ in rows:
        b, p, o, r = best[name]
        lines.append(f"| {name} | {b:.1f} | {p:.1f} | {o:.1f} | {r:.1f} | {b / r:.2f}x |")
    text = "\n".join(lines)
    print(text)
    if args.md:
        with open(args.md, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
