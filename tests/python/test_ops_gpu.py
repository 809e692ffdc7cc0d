"""kgen's torch operators and the binding's backward and masked softmax on a
GPU: values and gradients against torch's own ops and autograd, a module
under torch.compile(fullgraph=True), capture and replay in a CUDA graph,
and a tensor on a GPU other than the current one.  Skipped without torch
or a CUDA device."""
import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

import kgen  # noqa: E402
import kgen.ops as K  # noqa: E402

DEV = "cuda"
TOL = {torch.float32: 2e-5, torch.float16: 2e-3, torch.bfloat16: 1.6e-2, torch.float64: 1e-12}


def rand(shape, dtype, grad=False):
    x = (torch.randn(shape, device=DEV, dtype=torch.float32) * 3).to(dtype)
    return x.requires_grad_(grad)


def close(got, want, dtype):
    torch.testing.assert_close(got.float(), want.float(), rtol=TOL[dtype] * 4, atol=TOL[dtype] * 4)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("shape,dim", [((37, 1000), -1), ((8, 3, 50, 7), 1), ((2, 40000), -1)])
def test_softmax_backward_binding_matches_torch(dtype, shape, dim):
    x = rand(shape, dtype)
    dy = rand(shape, dtype)
    y = torch.softmax(x, dim)
    close(kgen.softmax_backward(y, dy, dim), torch._softmax_backward_data(dy, y, dim, dtype), dtype)
    ly = torch.log_softmax(x, dim)
    close(kgen.log_softmax_backward(ly, dy, dim), torch._log_softmax_backward_data(dy, ly, dim, dtype), dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_softmax_masked_binding_matches_torch(dtype):
    x = rand((2, 3, 5, 40), dtype)
    keep = torch.rand((2, 1, 5, 40), device=DEV) > 0.3
    keep[..., 0] = True  # every row keeps a key
    want = torch.softmax((x.float() * 0.125).masked_fill(~keep, float("-inf")), -1)
    close(kgen.softmax_masked(x, keep, 0.125), want, dtype)
    add = rand((1, 1, 1, 40), dtype)
    close(kgen.softmax_masked(x, add, 0.5), torch.softmax(x.float() * 0.5 + add.float(), -1), dtype)
    causal = torch.ones(5, 40, dtype=torch.bool, device=DEV).tril()
    close(kgen.softmax_masked(x, causal=True),
          torch.softmax(x.float().masked_fill(~causal, float("-inf")), -1), dtype)


def torch_twin(name):
    """The same computation with torch's own ops."""
    return {
        "softmax": lambda x, m: torch.softmax(x, 0),
        "log_softmax": lambda x, m: torch.log_softmax(x, -1),
        "softmax_masked": lambda x, m: torch.softmax(x * 0.5 + m, -1),
        "sum": lambda x, m: torch.sum(x, 1),
        "mean": lambda x, m: torch.mean(x),
        "amax": lambda x, m: torch.amax(x, 0, keepdim=True),
        "amin": lambda x, m: torch.amin(x),
        "topk": lambda x, m: torch.topk(x, 5)[0],
        "permute": lambda x, m: x.permute(1, 0).contiguous(),
        "expand": lambda x, m: x.expand(3, 64, 100).contiguous(),
        "where": lambda x, m: torch.where(x > 0, x, m),
    }[name]


def kgen_twin(name):
    return {
        "softmax": lambda x, m: K.softmax(x, 0),
        "log_softmax": lambda x, m: K.log_softmax(x, -1),
        "softmax_masked": lambda x, m: K.softmax_masked(x, m, 0.5),
        "sum": lambda x, m: K.sum(x, 1),
        "mean": lambda x, m: K.mean(x),
        "amax": lambda x, m: K.amax(x, 0, True),
        "amin": lambda x, m: K.amin(x),
        "topk": lambda x, m: K.topk(x, 5)[0],
        "permute": lambda x, m: K.permute(x, [1, 0]),
        "expand": lambda x, m: K.expand(x, [3, 64, 100]),
        "where": lambda x, m: K.where(x > 0, x, m),
    }[name]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("name", ["softmax", "log_softmax", "softmax_masked", "sum", "mean", "amax", "amin", "topk",
                                  "permute", "expand", "where"])
def test_values_and_gradients_match_torch_autograd(name, dtype):
    x0 = rand((64, 100), dtype)
    if name in ("amax", "amin"):
        x0[3, :] = x0.max() + 1  # ties: the gradient splits among them
        x0[:, 7] = x0.min() - 1
    m0 = rand((1, 100), dtype)
    grads = []
    for fn in (kgen_twin(name), torch_twin(name)):
        x, m = x0.clone().requires_grad_(), m0.clone().requires_grad_()
        y = fn(x, m)
        g = torch.ones_like(y) * torch.linspace(0.5, 1.5, y.numel(), device=DEV, dtype=dtype).reshape(y.shape)
        wrt = (x, m) if name in ("softmax_masked", "where") else (x,)
        grads.append((y.detach(), torch.autograd.grad(y, wrt, g)))
    (y, gk), (want, gt) = grads
    close(y, want, dtype)
    for a, b in zip(gk, gt):
        close(a, b, dtype)


def test_float64_gradcheck_of_softmax_family():
    x = rand((6, 33), torch.float64, grad=True)
    assert torch.autograd.gradcheck(lambda t: K.softmax(t, -1), (x,))
    assert torch.autograd.gradcheck(lambda t: K.log_softmax(t, 0), (x,))
    m = rand((1, 33), torch.float64, grad=True)
    assert torch.autograd.gradcheck(lambda t, a: K.softmax_masked(t, a, 0.25), (x, m))


def test_a_module_compiles_with_fullgraph():
    class Block(torch.nn.Module):
        def forward(self, a, b):
            p = K.softmax(a * 2, -1)
            s = K.sum(K.permute(p, [1, 0]), 1)
            return K.where(b, p, K.expand(s.unsqueeze(0), [a.shape[0], -1])[:, : a.shape[1]]) + K.amax(a)

    a = rand((64, 64), torch.float32)
    b = torch.rand((64, 64), device=DEV) > 0.5
    eager = Block()(a, b)
    compiled = torch.compile(Block(), fullgraph=True)
    close(compiled(a, b), eager, torch.float32)


def test_capture_and_replay_in_a_cuda_graph():
    x = rand((512, 1000), torch.float16)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up off the capture
        K.softmax(x, -1), K.sum(x, 1), K.topk(x, 8)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        y = K.softmax(x, -1)
        s = K.sum(x.float(), 1)
        values, indices = K.topk(x, 8)
    for _ in range(2):
        x.copy_(rand((512, 1000), torch.float16))
        graph.replay()
        torch.cuda.synchronize()
        close(y, torch.softmax(x.float(), -1), torch.float16)
        close(s, x.float().sum(1), torch.float32)
        close(values, torch.topk(x.float(), 8)[0], torch.float16)
        assert torch.equal(torch.gather(x, 1, indices), values)


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="one GPU")
def test_a_tensor_on_another_gpu_runs_there():
    assert torch.cuda.current_device() == 0
    x = rand((300, 1000), torch.float32).to("cuda:1")
    y = kgen.softmax(x, -1)
    assert y.device == x.device
    close(y, torch.softmax(x, -1), torch.float32)
    values, _ = kgen.topk(x, 4)
    close(values, torch.topk(x, 4)[0], torch.float32)
    close(kgen.sum(x, 1), x.sum(1), torch.float32)
    assert torch.cuda.current_device() == 0


def test_eager_calls_without_autograd_run_the_binding_and_match_the_operator():
    x = rand((33, 1000), torch.float16)
    same = lambda a, b: torch.equal(a.view(torch.int16), b.view(torch.int16))  # noqa: E731
    assert same(K.softmax(x, -1), torch.ops.kgen.softmax(x, -1, False))
    assert same(K.log_softmax(x, 0), torch.ops.kgen.softmax(x, 0, True))
    assert same(K.amax(x, 1), torch.ops.kgen.amax(x, 1, False))
    v, i = K.topk(x, 5)
    ov, oi = torch.ops.kgen.topk(x, 5, True, True)
    assert same(v, ov) and torch.equal(i, oi)


def test_a_dispatch_mode_and_autograd_still_see_the_operator():
    from torch.utils._python_dispatch import TorchDispatchMode

    class Seen(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.ops = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.ops.append(str(func))
            return func(*args, **(kwargs or {}))

    x = rand((8, 64), torch.float32)
    with Seen() as seen:
        K.softmax(x, -1)
        K.sum(x, 1)
    assert any("kgen.softmax" in op for op in seen.ops), seen.ops
    assert any("kgen.sum" in op for op in seen.ops), seen.ops
    g = rand((8, 64), torch.float32, grad=True)
    y = K.softmax(g, -1)
    assert y.grad_fn is not None
    with torch.no_grad():
        assert K.softmax(g, -1).grad_fn is None
