"""kgen's torch operators without a GPU: every op is registered, its fake
(shape-only) implementation gives torch's shapes and dtypes on meta
tensors, its gradient formula gives the input's shape, and torch.export
sees each op as one node.  Skipped without torch."""
import pytest

torch = pytest.importorskip("torch")

import kgen.ops as K  # noqa: E402

OPS = ["softmax", "softmax_backward", "softmax_masked", "sum", "mean", "amax", "amin", "argmax", "argmin", "topk",
       "permute", "expand", "where"]


def meta(*shape, dtype=torch.float32, grad=False):
    return torch.empty(shape, dtype=dtype, device="meta", requires_grad=grad)


def test_every_op_is_registered_under_kgen():
    for name in OPS:
        assert hasattr(torch.ops.kgen, name), name


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_fake_shapes_and_dtypes_match_torch(dtype):
    x = meta(4, 6, 8, dtype=dtype)
    assert K.softmax(x, 1).shape == x.shape and K.log_softmax(x, 1).dtype == dtype
    assert K.softmax_backward(x, x, -1, True).shape == x.shape
    for dim, keep in ((1, False), (1, True), (None, False), (None, True), (-1, False)):
        want = torch.sum(x, dim, keepdim=keep) if dim is not None else (
            torch.sum(x) if not keep else torch.sum(x, (0, 1, 2), keepdim=True))
        for op in (K.sum, K.mean, K.amax, K.amin):
            assert op(x, dim, keep).shape == want.shape, (op, dim, keep)
        assert K.argmax(x, dim, keep).dtype == torch.int64
        assert K.argmin(x, dim, keep).shape == want.shape
    values, indices = K.topk(x, 3)
    assert values.shape == (4, 6, 3) and values.dtype == dtype and indices.dtype == torch.int64
    assert K.permute(x, [2, 0, 1]).shape == (8, 4, 6)
    assert K.expand(meta(6, 1, dtype=dtype), [4, -1, 8]).shape == (4, 6, 8)
    cond = meta(6, 1, dtype=torch.bool)
    assert K.where(cond, x, meta(8, dtype=dtype)).shape == (4, 6, 8)
    assert K.softmax_masked(x, meta(6, 8, dtype=torch.bool), 0.5).shape == x.shape


def test_fake_implementations_refuse_what_the_library_refuses():
    with pytest.raises(IndexError, match="dim"):
        K.softmax(meta(4, 8), 2)
    with pytest.raises(ValueError, match="perm"):
        K.permute(meta(4, 8), [0, 0])
    with pytest.raises(ValueError, match="cannot expand"):
        K.expand(meta(3, 8), [4, 8])
    with pytest.raises(ValueError, match="last dim"):
        K.topk(meta(4, 8), 2, dim=0)


@pytest.mark.parametrize("name", ["softmax", "log_softmax", "softmax_masked_additive", "sum", "mean", "amax", "amin",
                                  "topk", "permute", "expand", "where"])
def test_gradients_have_the_inputs_shapes(name):
    x = meta(4, 8, grad=True)
    run = {
        "softmax": lambda: K.softmax(x, 0),
        "log_softmax": lambda: K.log_softmax(x, -1),
        "softmax_masked_additive": lambda: K.softmax_masked(x, mask, 0.5),
        "sum": lambda: K.sum(x, 1),
        "mean": lambda: K.mean(x),
        "amax": lambda: K.amax(x, 0, True),
        "amin": lambda: K.amin(x),
        "topk": lambda: K.topk(x, 3)[0],
        "permute": lambda: K.permute(x, [1, 0]),
        "expand": lambda: K.expand(x, [2, 4, 8]),
        "where": lambda: K.where(meta(4, 1, dtype=torch.bool), x, mask),
    }
    mask = meta(1, 8, grad=True)
    y = run[name]()
    inputs = (x, mask) if name in ("softmax_masked_additive", "where") else (x,)
    grads = torch.autograd.grad(y, inputs, torch.ones_like(y))
    assert [g.shape for g in grads] == [t.shape for t in inputs]


def test_export_keeps_each_op_as_one_node():
    class Block(torch.nn.Module):
        def forward(self, a, b):
            p = K.softmax(a, -1)
            s = K.sum(K.permute(p, [1, 0]), 1)
            return K.where(b, K.expand(s, [4, 8]), p) + K.topk(a, 2)[0].sum()

    ep = torch.export.export(Block(), (meta(4, 8), meta(4, 8, dtype=torch.bool)))
    targets = {str(n.target) for n in ep.graph.nodes if n.op == "call_function"}
    for op in ("kgen.softmax.default", "kgen.sum.default", "kgen.permute.default", "kgen.where.default",
               "kgen.expand.default", "kgen.topk.default"):
        assert op in targets, (op, targets)
