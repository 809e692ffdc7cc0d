"""The Python binding on a GPU against PyTorch: values within tolerance,
indices equal, out= and non-contiguous inputs, torch's current stream,
library errors as exceptions.  Skipped without torch or a CUDA device."""
import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

import kgen  # noqa: E402

DEV = "cuda"
FLOATS = [torch.float32, torch.float16, torch.bfloat16]
TOL = {torch.float32: 2e-5, torch.float16: 2e-3, torch.bfloat16: 1.6e-2, torch.float64: 1e-12}


def rand(shape, dtype):
    return (torch.randn(shape, device=DEV, dtype=torch.float32) * 3).to(dtype)


def close(got, want, dtype):
    torch.testing.assert_close(got.float(), want.float(), rtol=TOL[dtype] * 4, atol=TOL[dtype] * 4)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape,dim", [((37, 1000), -1), ((8, 3, 50, 7), 1), ((5, 4096), 0), ((2, 3, 131072), -1),
                                       ((), 0)])
def test_softmax_and_log_softmax(dtype, shape, dim):
    x = rand(shape, dtype)
    close(kgen.softmax(x, dim), torch.softmax(x.float(), dim), dtype)
    close(kgen.log_softmax(x, dim), torch.log_softmax(x.float(), dim), dtype)


@pytest.mark.parametrize("dtype", FLOATS + [torch.int32])
@pytest.mark.parametrize("shape,dim", [((64, 1000), -1), ((16, 300, 20), 1), ((1 << 20,), None), ((7, 9), 0)])
def test_reductions(dtype, shape, dim):
    x = rand(shape, dtype) if dtype != torch.int32 else torch.randint(-1000, 1000, shape, device=DEV,
                                                                        dtype=torch.int32)
    kw = {} if dim is None else {"dim": dim}
    if dtype != torch.int32:
        close(kgen.sum(x, **kw), torch.sum(x.float(), **kw), dtype if dim is not None else torch.float16)
        close(kgen.mean(x, **kw), torch.mean(x.float(), **kw), dtype)
    assert torch.equal(kgen.amax(x, **kw), torch.amax(x, **kw) if dim is not None else x.max())
    assert torch.equal(kgen.amin(x, **kw), torch.amin(x, **kw) if dim is not None else x.min())
    assert torch.equal(kgen.argmax(x, **kw), torch.argmax(x, **kw))
    assert torch.equal(kgen.argmin(x, **kw), torch.argmin(x, **kw))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape,k", [((64, 1000), 5), ((1, 1 << 20), 100), ((300, 4096), 64)])
def test_topk(dtype, shape, k):
    x = rand(shape, dtype)
    for largest in (True, False):
        values, indices = kgen.topk(x, k, largest=largest)
        want_v, _ = torch.topk(x, k, largest=largest, sorted=True)
        assert torch.equal(values, want_v)
        assert torch.equal(torch.gather(x, -1, indices), values)  # ties: any index of an equal value


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int64, torch.uint8])
@pytest.mark.parametrize("shape,perm", [((64, 128, 32), (2, 0, 1)), ((256, 3, 32, 32), (0, 2, 3, 1)),
                                        ((8, 16, 16, 16, 16, 4), (5, 3, 1, 4, 2, 0))])
def test_permute(dtype, shape, perm):
    x = torch.randint(0, 100, shape, device=DEV).to(dtype)
    assert torch.equal(kgen.permute(x, perm), x.permute(perm).contiguous())


def test_expand_and_where():
    x = rand((64, 1, 128), torch.float16)
    assert torch.equal(kgen.expand(x, (64, 16, 128)), x.expand(64, 16, 128).contiguous())
    assert torch.equal(kgen.expand(x, (2, -1, 8, -1)), x.expand(2, -1, 8, -1).contiguous())
    c = torch.rand((8, 1, 32, 64), device=DEV) > 0.5
    a, b = rand((8, 4, 32, 64), torch.float32), rand((64,), torch.float32)
    assert torch.equal(kgen.where(c, a, b), torch.where(c, a, b))


def test_a_named_variant_runs_and_selected_names_the_choice():
    x = rand((64, 1000), torch.float16)
    calls = [(kgen.softmax, "softmax", (x, -1), {}), (kgen.sum, "reduce", (x,), {"dim": 1}),
             (kgen.topk, "topk", (x, 5), {}), (kgen.permute, "permute", (x, (1, 0)), {}),
             (kgen.expand, "expand", (x[:1], (8, 1000)), {}),
             (kgen.where, "where", (x > 0, x, x.flip(0)), {})]
    for op, family, args, kwargs in calls:
        name = kgen.selected(op, *args, **kwargs)
        assert name in kgen.variants(family), (family, name)
        want = op(*args, **kwargs)
        got = op(*args, variant=name, **kwargs)
        for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
            assert torch.equal(g, w), family
    with pytest.raises(kgen.Unsupported, match="no_such_variant"):
        kgen.softmax(x, -1, variant="no_such_variant")
    wrong = [n for n in kgen.variants("softmax") if "_f32_" in n][0]
    with pytest.raises(kgen.InvalidArgument, match="dtype"):
        kgen.softmax(x, -1, variant=wrong)


def test_out_and_non_contiguous_inputs():
    x = rand((128, 64), torch.float32).t()  # non-contiguous: made contiguous like PyTorch reads it
    out = torch.empty((64, 128), device=DEV)
    assert kgen.softmax(x, -1, out=out) is out
    close(out, torch.softmax(x, -1), torch.float32)
    with pytest.raises(ValueError, match="out: not contiguous"):
        kgen.softmax(x, -1, out=torch.empty((128, 64), device=DEV).t())


def test_runs_on_torchs_current_stream():
    x = rand((4096, 1024), torch.float32)
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        y = kgen.softmax(x)
    s.synchronize()
    close(y, torch.softmax(x, -1), torch.float32)


def test_library_errors_become_exceptions_naming_the_argument():
    host = torch.randn(4, 8)  # host memory
    with pytest.raises(kgen.InvalidArgument, match="x:"):
        kgen.softmax(host, out=torch.empty(4, 8, device=DEV))
    assert kgen.tuning_database() == "" or "SMs" in kgen.tuning_database()
