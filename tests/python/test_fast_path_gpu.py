"""kgen._torch_ext, the C++ path of the binding's plain calls, on a GPU: it
takes every plain call and gives what the Python path gives (bit for bit:
the same kernels) and what torch gives; it declines every other call (the
Python path then runs it), and runs on the current stream of the tensor's
device.  Skipped without torch or a CUDA device; where torch is, the
extension must have been built (meson option torch_ext) unless
KGEN_TORCH_EXT=0 says to do without it."""
import os

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)
if os.environ.get("KGEN_TORCH_EXT") == "0":
    pytest.skip("KGEN_TORCH_EXT=0: the Python path only", allow_module_level=True)

import kgen  # noqa: E402
from kgen._lib import fast_path  # noqa: E402

EXT = fast_path()
DEV = "cuda"
DTYPES = [torch.float32, torch.float16, torch.bfloat16]
TOL = {torch.float32: 2e-5, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}


def rand(shape, dtype):
    return (torch.randn(shape, device=DEV) * 3).to(dtype)


def close(got, want, dtype):
    torch.testing.assert_close(got.float(), want.float(), rtol=TOL[dtype] * 4, atol=TOL[dtype] * 4)


def same(got, want):
    """Bit for bit (the Python path runs the same kernel)."""
    assert got.shape == want.shape and got.dtype == want.dtype
    got, want = got.reshape(-1), want.reshape(-1)  # a 0-dim tensor has no byte view
    assert torch.equal(got.view(torch.uint8) if got.dtype.is_floating_point else got,
                       want.view(torch.uint8) if want.dtype.is_floating_point else want)


def poisoned(like, shape=None, dtype=None):
    """An out= tensor full of NaN (or -7): the Python path must overwrite all of it."""
    t = torch.empty(shape if shape is not None else like.shape, dtype=dtype or like.dtype, device=like.device)
    return t.fill_(float("nan") if t.dtype.is_floating_point else -7)


def test_the_extension_is_built_where_torch_is():
    assert EXT is not None, "kgen._torch_ext not found: build with meson -Dtorch_ext=enabled, or set KGEN_TORCH_EXT=0"


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,dim", [((37, 129), -1), ((8, 3, 50, 7), 1), ((5,), 0), ((2, 3001), 0)])
def test_softmax_and_its_backward(dtype, shape, dim):
    x, dy = rand(shape, dtype), rand(shape, dtype)
    for log, want in ((False, torch.softmax(x.float(), dim)), (True, torch.log_softmax(x.float(), dim))):
        y = EXT.softmax(x, dim, log)
        close(y, want, dtype)
        same(y, (kgen.log_softmax if log else kgen.softmax)(x, dim, out=poisoned(x)))
        dx = EXT.softmax_backward(y, dy, dim, log)
        backward = torch._log_softmax_backward_data if log else torch._softmax_backward_data
        close(dx, backward(dy.float(), y.float(), dim, torch.float32), dtype)
        same(dx, (kgen.log_softmax_backward if log else kgen.softmax_backward)(y, dy, dim, out=poisoned(y)))


@pytest.mark.parametrize("dtype", DTYPES)
def test_masked_softmax(dtype):
    x = rand((2, 3, 17, 40), dtype)
    keep = torch.rand((2, 1, 17, 40), device=DEV) > 0.3
    keep[..., 0] = True  # no row without a key
    add = rand((1, 3, 1, 40), dtype)
    cases = [(None, 0.5, False, torch.softmax(x.float() * 0.5, -1)),
             (keep, 1.0, False, torch.softmax(x.float().masked_fill(~keep, float("-inf")), -1)),
             (add, 0.25, False, torch.softmax(x.float() * 0.25 + add.float(), -1)),
             (None, 1.0, True, torch.softmax(x.float().masked_fill(
                 torch.ones(17, 40, dtype=torch.bool, device=DEV).triu(1), float("-inf")), -1))]
    for mask, scale, causal, want in cases:
        y = EXT.softmax_masked(x, mask, scale, causal, False)
        close(y, want, dtype)
        same(y, kgen.softmax_masked(x, mask, scale, causal, out=poisoned(x)))
    assert EXT.softmax_masked(x, keep.int(), 1.0, False, False) is None  # an int mask: the Python path refuses it
    assert EXT.softmax_masked(x[..., :39], keep, 1.0, False, False) is None  # keys differ


@pytest.mark.parametrize("dtype", DTYPES + [torch.int32])
@pytest.mark.parametrize("op", ["sum", "mean", "amax", "amin", "argmax", "argmin"])
def test_reductions(dtype, op):
    if op == "mean" and dtype == torch.int32:
        return
    if dtype == torch.int32:
        x = torch.randint(-50, 50, (9, 301, 5), device=DEV, dtype=torch.int32)
    else:
        x = rand((9, 301, 5), dtype)
    code = ["sum", "mean", "amax", "amin", "argmax", "argmin"].index(op)
    for dim in (None, 0, 1, -1):
        for keepdim in (False, True):
            got = EXT.reduce(code, x, dim, keepdim)
            # the Python path refuses an out= of another shape or dtype
            same(got, getattr(kgen, op)(x, dim, keepdim, out=poisoned(x, got.shape, got.dtype)))
            if op.startswith("arg"):
                want = getattr(torch, op)(x, dim=dim, keepdim=keepdim)
                assert got.shape == want.shape and torch.equal(got, want)
                continue
            want = getattr(torch, op)(x.double(), dim=() if dim is None else dim, keepdim=keepdim)
            assert got.numel() == want.numel()
            if op in ("amax", "amin") or dtype == torch.int32:
                assert torch.equal(got.double().reshape(-1), want.reshape(-1))
            else:
                bound = 1e-5 * x.double().abs().sum().item() + TOL[dtype] * 8 * want.abs().reshape(-1)
                assert bool(((got.double().reshape(-1) - want.reshape(-1)).abs() <= bound).all())


@pytest.mark.parametrize("dtype", DTYPES)
def test_topk_permute_expand_where(dtype):
    x = rand((33, 1000), dtype)
    for largest in (True, False):
        v, i = EXT.topk(x, 17, largest, True)
        tv, _ = torch.topk(x, 17, largest=largest)
        # half types repeat values: the indices of tied values may come in another order than torch's
        assert torch.equal(v, tv) and torch.equal(x.gather(1, i), v)
        assert all(len(set(row)) == 17 for row in i.tolist())
        pv, pi = kgen.topk(x, 17, largest=largest, out=(poisoned(x, (33, 17)), poisoned(x, (33, 17), torch.int64)))
        same(v, pv), same(i, pi)
    z = rand((4, 5, 6, 7), dtype)
    y = EXT.permute(z, (2, 0, -1, 1))
    assert torch.equal(y, z.permute(2, 0, 3, 1).contiguous())
    s = rand((1, 6, 1), dtype)
    e = EXT.expand(s, [3, 5, -1, 4])
    assert torch.equal(e, s.expand(3, 5, 6, 4).contiguous())
    c = torch.rand((5, 1, 7), device=DEV) > 0.5
    a, b = rand((6, 7), dtype), rand((1, 1, 7), dtype)
    w = EXT.where(c, a, b)
    assert torch.equal(w, torch.where(c, a, b))


def test_calls_it_does_not_take_are_declined():
    x = rand((16, 32), torch.float32)
    declined = [
        EXT.softmax(x.t(), -1, False),                   # not contiguous
        EXT.softmax(x.cpu(), -1, False),                 # not on a GPU
        EXT.softmax(x[:0], -1, False),                   # empty
        EXT.softmax(x, 2, False),                        # dim out of range
        EXT.softmax(x, 1.0, False),                      # not an int
        EXT.softmax(x.long(), -1, False),                # the library refuses the dtype
        EXT.softmax([1.0, 2.0], -1, False),              # not a tensor
        EXT.softmax_backward(x, x[:8], -1, False),       # shapes differ
        EXT.softmax_backward(x, x.half(), -1, False),    # dtypes differ
        EXT.reduce(1, x.int(), 0, False),                # an int32 mean
        EXT.reduce(0, x, "0", False),                    # not an int
        EXT.topk(x, 0, True, True),                      # k = 0
        EXT.topk(x, 33, True, True),                     # k > n
        EXT.permute(x, (0, 0)),                          # not a permutation
        EXT.permute(x, (0,)),                            # too short
        EXT.expand(x, [16, 33]),                         # not broadcastable: the library refuses
        EXT.expand(x, [-1, 16, 32]),                     # -1 on a new dim
        EXT.where(x > 0, x, x.half()),                   # dtypes differ
        EXT.where(x, x, x),                              # a float condition
    ]
    assert all(d is None for d in declined), [k for k, d in enumerate(declined) if d is not None]


def test_the_public_functions_keep_their_errors():
    x = rand((16, 32), torch.float32)
    with pytest.raises(IndexError, match="dim"):
        kgen.softmax(x, 2)
    with pytest.raises(kgen.InvalidArgument, match="k"):
        kgen.topk(x, 33)
    with pytest.raises(ValueError, match="perm"):
        kgen.permute(x, (0, 0))
    with pytest.raises(kgen.InvalidArgument, match="dtype"):
        kgen.softmax(x.long())


def test_calls_run_on_the_current_stream():
    x = rand((512, 4096), torch.float16)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        torch.cuda._sleep(2_000_000)  # holds the side stream: a call on another stream would finish first
        y = kgen.softmax(x, -1)
        m = kgen.amax(y, 1)
    side.synchronize()
    close(y, torch.softmax(x.float(), -1), torch.float16)
    close(m, torch.softmax(x.float(), -1).amax(1), torch.float16)
