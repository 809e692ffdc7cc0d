"""kgen's ops as PyTorch operators: torch.ops.kgen.*, registered through
torch.library with fake (shape-only) implementations and autograd, so that
autograd, torch.compile(fullgraph=True) and CUDA graphs see each one as a
single op.  Importing this module needs torch (2.4 or later); `import kgen`
alone does not.

    import kgen.ops as K
    y = K.softmax(x, -1)                 # = torch.ops.kgen.softmax(x, -1, False)
    y.backward(g)                        # through kgen's own backward kernel

softmax, log_softmax and the masked softmax differentiate through kgen's
backward kernels (kgen::softmax_backward); reductions, top-k, permute,
expand and where through their standard gradients (sum and mean spread the
gradient, amax and amin split it evenly among tied extremes as torch does,
top-k scatters it to the indices, permute inverts, expand sums over the
broadcast dims, where routes it by the condition).  The ops run on their
tensors' device and torch's current stream there.  An eager call with no
autograd to record runs the binding directly (_eager): the same kernels,
without the operator's Python layers.
"""
from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

import torch

import kgen as _k

__all__ = ["softmax", "log_softmax", "softmax_backward", "softmax_masked", "sum", "mean", "amax", "amin", "argmax",
           "argmin", "topk", "permute", "expand", "where"]

Tensor = torch.Tensor


def _eager(*tensors: Tensor) -> bool:
    """Whether a call may run the binding directly instead of the operator:
    eager CUDA tensors of the plain Tensor type, no autograd to record, and
    nothing that wants to see the op (torch.compile tracing, a dispatch or
    torch-function mode, a functorch transform).  The result is the same
    either way; the operator's Python layers (custom_op's wrapper, its
    autograd kernel) cost several times the kernel launch on the host
    (bench/python_host.py)."""
    grad = torch.is_grad_enabled()
    for t in tensors:
        if type(t) is not Tensor or not t.is_cuda or (grad and t.requires_grad):
            return False
    return not (torch.compiler.is_compiling() or torch._C._len_torch_dispatch_stack()
                or torch._C._is_torch_function_mode_enabled() or torch._C._are_functorch_transforms_active())


def _new(like: Tensor, shape, dtype=None) -> Tensor:
    return torch.empty(tuple(shape), dtype=dtype or like.dtype, device=like.device)


def _wrap(dim: int, rank: int) -> int:
    n = max(rank, 1)
    if not -n <= dim < n:
        raise IndexError(f"dim: {dim} is out of range for a tensor of rank {rank} (expected [{-n}, {n - 1}])")
    return dim % n


# ---- softmax ---------------------------------------------------------------

@torch.library.custom_op("kgen::softmax", mutates_args=())
def _softmax(x: Tensor, dim: int, log: bool) -> Tensor:
    return _k.log_softmax(x, dim) if log else _k.softmax(x, dim)


@_softmax.register_fake
def _(x, dim, log):
    _wrap(dim, x.dim())
    return _new(x, x.shape)


@torch.library.custom_op("kgen::softmax_backward", mutates_args=())
def _softmax_backward(y: Tensor, dy: Tensor, dim: int, log: bool) -> Tensor:
    return _k.log_softmax_backward(y, dy, dim) if log else _k.softmax_backward(y, dy, dim)


@_softmax_backward.register_fake
def _(y, dy, dim, log):
    _wrap(dim, y.dim())
    return _new(y, y.shape)


def _softmax_setup(ctx, inputs, output):
    ctx.dim, ctx.log = inputs[1], inputs[2]
    ctx.save_for_backward(output)


def _softmax_grad(ctx, grad):
    (y,) = ctx.saved_tensors
    return _softmax_backward(y, grad.contiguous(), ctx.dim, ctx.log), None, None


_softmax.register_autograd(_softmax_grad, setup_context=_softmax_setup)


def softmax(x: Tensor, dim: int = -1) -> Tensor:
    """torch.softmax(x, dim)."""
    if _eager(x):
        return _k.softmax(x, dim)
    return _softmax(x, dim, False)


def log_softmax(x: Tensor, dim: int = -1) -> Tensor:
    """torch.log_softmax(x, dim)."""
    if _eager(x):
        return _k.log_softmax(x, dim)
    return _softmax(x, dim, True)


def softmax_backward(y: Tensor, dy: Tensor, dim: int = -1, log: bool = False) -> Tensor:
    """The gradient of softmax (log: log_softmax) from its output y and dy."""
    if _eager(y, dy):
        return _k.log_softmax_backward(y, dy, dim) if log else _k.softmax_backward(y, dy, dim)
    return _softmax_backward(y, dy, dim, log)


@torch.library.custom_op("kgen::softmax_masked", mutates_args=())
def _softmax_masked(x: Tensor, mask: Optional[Tensor], scale: float, causal: bool, safe: bool) -> Tensor:
    return _k.softmax_masked(x, mask, scale, causal, safe)


@_softmax_masked.register_fake
def _(x, mask, scale, causal, safe):
    return _new(x, x.shape)


def _masked_setup(ctx, inputs, output):
    x, mask, scale = inputs[0], inputs[1], inputs[2]
    ctx.scale = scale
    ctx.mask_shape = None if mask is None or mask.dtype == torch.bool else tuple(mask.shape)
    ctx.save_for_backward(output)


def _masked_grad(ctx, grad):
    # y = softmax(scale * x + mask): d(scale * x + mask) is softmax's
    # gradient, dx that times scale, an additive mask's that summed over the
    # dims it was broadcast along
    (y,) = ctx.saved_tensors
    dz = _softmax_backward(y, grad.contiguous(), -1, False)
    dmask = None
    if ctx.mask_shape is not None:
        dmask = dz.reshape((1,) * (4 - dz.dim()) + tuple(dz.shape))
        dmask = dmask.sum_to_size((1,) * (4 - len(ctx.mask_shape)) + ctx.mask_shape).reshape(ctx.mask_shape)
    return dz * ctx.scale, dmask, None, None, None


_softmax_masked.register_autograd(_masked_grad, setup_context=_masked_setup)


def softmax_masked(x: Tensor, mask: Optional[Tensor] = None, scale: float = 1.0, causal: bool = False,
                   safe: bool = False) -> Tensor:
    """softmax(scale * x + mask) over the last dim (kgen.softmax_masked)."""
    if _eager(x) if mask is None else _eager(x, mask):
        return _k.softmax_masked(x, mask, float(scale), bool(causal), bool(safe))
    return _softmax_masked(x, mask, float(scale), bool(causal), bool(safe))


# ---- reductions --------------------------------------------------------------

def _reduced_shape(shape: Sequence[int], dim: Optional[int], keepdim: bool) -> List[int]:
    if dim is None:
        return [1] * len(shape) if keepdim else []
    d = _wrap(dim, len(shape))
    if not shape:
        return []
    return list(shape[:d]) + ([1] if keepdim else []) + list(shape[d + 1:])


def _kept(t: Tensor, shape: Sequence[int], dim: Optional[int], keepdim: bool) -> Tensor:
    """A reduction's output (or its gradient) viewed with the reduced dims
    kept as 1, so that it broadcasts against the input."""
    if keepdim or not shape:
        return t
    if dim is None:
        return t.reshape([1] * len(shape))
    return t.unsqueeze(_wrap(dim, len(shape)))


def _reduction(name: str, integer_out: bool = False):
    fn = getattr(_k, name)

    def run(x: Tensor, dim: Optional[int], keepdim: bool) -> Tensor:
        return fn(x, dim, keepdim)

    op = torch.library.custom_op("kgen::" + name, run, mutates_args=())

    @op.register_fake
    def _(x, dim, keepdim):
        return _new(x, _reduced_shape(x.shape, dim, keepdim), torch.int64 if integer_out else None)

    return op


_sum, _mean, _amax, _amin = (_reduction(n) for n in ("sum", "mean", "amax", "amin"))
_argmax, _argmin = (_reduction(n, integer_out=True) for n in ("argmax", "argmin"))


def _reduce_setup(ctx, inputs, output):
    x, ctx.dim, ctx.keepdim = inputs
    ctx.shape = tuple(x.shape)
    ctx.count = x.numel() if ctx.dim is None or not ctx.shape else x.shape[_wrap(ctx.dim, x.dim())]
    ctx.save_for_backward(x, output)


def _spread_grad(ctx, grad):
    g = _kept(grad, ctx.shape, ctx.dim, ctx.keepdim).expand(ctx.shape)
    return g, None, None


def _mean_grad(ctx, grad):
    g = _kept(grad, ctx.shape, ctx.dim, ctx.keepdim).expand(ctx.shape)
    return g / max(ctx.count, 1), None, None


def _extreme_grad(ctx, grad):
    # torch's amax / amin backward: the gradient split evenly among the
    # elements equal to the extreme
    x, out = ctx.saved_tensors
    hit = (x == _kept(out, ctx.shape, ctx.dim, ctx.keepdim)).to(grad.dtype)
    dims = None if ctx.dim is None else _wrap(ctx.dim, len(ctx.shape))
    count = hit.sum() if dims is None else hit.sum(dims, keepdim=True)
    return hit * _kept(grad, ctx.shape, ctx.dim, ctx.keepdim) / count, None, None


for _op, _grad in ((_sum, _spread_grad), (_mean, _mean_grad), (_amax, _extreme_grad), (_amin, _extreme_grad)):
    _op.register_autograd(_grad, setup_context=_reduce_setup)


def sum(x: Tensor, dim: Optional[int] = None, keepdim: bool = False) -> Tensor:  # noqa: A001 - torch's name
    return _k.sum(x, dim, keepdim) if _eager(x) else _sum(x, dim, keepdim)


def mean(x: Tensor, dim: Optional[int] = None, keepdim: bool = False) -> Tensor:
    return _k.mean(x, dim, keepdim) if _eager(x) else _mean(x, dim, keepdim)


def amax(x: Tensor, dim: Optional[int] = None, keepdim: bool = False) -> Tensor:
    return _k.amax(x, dim, keepdim) if _eager(x) else _amax(x, dim, keepdim)


def amin(x: Tensor, dim: Optional[int] = None, keepdim: bool = False) -> Tensor:
    return _k.amin(x, dim, keepdim) if _eager(x) else _amin(x, dim, keepdim)


def argmax(x: Tensor, dim: Optional[int] = None, keepdim: bool = False) -> Tensor:
    return _k.argmax(x, dim, keepdim) if _eager(x) else _argmax(x, dim, keepdim)


def argmin(x: Tensor, dim: Optional[int] = None, keepdim: bool = False) -> Tensor:
    return _k.argmin(x, dim, keepdim) if _eager(x) else _argmin(x, dim, keepdim)


# ---- top-k -------------------------------------------------------------------

@torch.library.custom_op("kgen::topk", mutates_args=())
def _topk(x: Tensor, k: int, largest: bool, sorted: bool) -> Tuple[Tensor, Tensor]:
    return _k.topk(x, k, -1, largest, sorted)


@_topk.register_fake
def _(x, k, largest, sorted):
    shape = list(x.shape[:-1]) + [k] if x.dim() else []
    return _new(x, shape), _new(x, shape, torch.int64)


def _topk_setup(ctx, inputs, output):
    ctx.shape = tuple(inputs[0].shape)
    ctx.save_for_backward(output[1])


def _topk_grad(ctx, grad_values, grad_indices):
    (indices,) = ctx.saved_tensors
    dx = torch.zeros(ctx.shape, dtype=grad_values.dtype, device=grad_values.device)
    if not ctx.shape:
        return dx + grad_values, None, None, None
    return dx.scatter(-1, indices, grad_values), None, None, None


_topk.register_autograd(_topk_grad, setup_context=_topk_setup)


def topk(x: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> Tuple[Tensor, Tensor]:
    """torch.topk along the last dim: (values, indices)."""
    if _wrap(dim, x.dim()) != max(x.dim(), 1) - 1:
        raise ValueError(f"dim: kgen's topk runs along the last dim ({x.dim() - 1}), got {dim}")
    if _eager(x):
        return _k.topk(x, k, -1, largest, sorted)
    return _topk(x, k, largest, sorted)


# ---- permute, expand, where --------------------------------------------------

@torch.library.custom_op("kgen::permute", mutates_args=())
def _permute(x: Tensor, perm: List[int]) -> Tensor:
    return _k.permute(x, perm)


@_permute.register_fake
def _(x, perm):
    rank = x.dim()
    perm = [p % rank if rank else p for p in perm]
    if sorted(perm) != list(range(rank)):
        raise ValueError(f"perm: {perm} is not a permutation of the {rank} dims")
    return _new(x, [x.shape[p] for p in perm])


def _permute_setup(ctx, inputs, output):
    rank = inputs[0].dim()
    perm = [p % rank for p in inputs[1]] if rank else []
    ctx.inverse = [perm.index(k) for k in range(rank)]


def _permute_grad(ctx, grad):
    return _permute(grad.contiguous(), ctx.inverse), None


_permute.register_autograd(_permute_grad, setup_context=_permute_setup)


def permute(x: Tensor, perm: Sequence[int]) -> Tensor:
    """x.permute(perm).contiguous()."""
    if _eager(x):
        return _k.permute(x, perm)
    return _permute(x, [int(p) for p in perm])


def _expanded_shape(src: Sequence[int], shape: Sequence[int]) -> List[int]:
    lead = len(shape) - len(src)
    if lead < 0:
        raise ValueError(f"shape: {list(shape)} has fewer dims than x's {list(src)}")
    out = []
    for k, s in enumerate(shape):
        have = src[k - lead] if k >= lead else None
        if s == -1:
            if have is None:
                raise ValueError(f"shape: -1 at a new leading dim {k}")
            s = have
        if have is not None and have != 1 and have != s:
            raise ValueError(f"shape: dim {k} of x is {have}, cannot expand it to {s}")
        out.append(s)
    return out


@torch.library.custom_op("kgen::expand", mutates_args=())
def _expand(x: Tensor, shape: List[int]) -> Tensor:
    return _k.expand(x, shape)


@_expand.register_fake
def _(x, shape):
    return _new(x, _expanded_shape(list(x.shape), shape))


def _expand_setup(ctx, inputs, output):
    ctx.shape = tuple(inputs[0].shape)


def _expand_grad(ctx, grad):
    return grad.sum_to_size(ctx.shape) if ctx.shape else grad.sum(), None


_expand.register_autograd(_expand_grad, setup_context=_expand_setup)


def expand(x: Tensor, shape: Sequence[int]) -> Tensor:
    """x.expand(shape).contiguous()."""
    if _eager(x):
        return _k.expand(x, shape)
    return _expand(x, [int(s) for s in shape])


@torch.library.custom_op("kgen::where", mutates_args=())
def _where(condition: Tensor, x: Tensor, y: Tensor) -> Tensor:
    return _k.where(condition, x, y)


@_where.register_fake
def _(condition, x, y):
    return _new(x, torch.broadcast_shapes(condition.shape, x.shape, y.shape))


def _where_setup(ctx, inputs, output):
    condition, x, y = inputs
    ctx.x_shape, ctx.y_shape = tuple(x.shape), tuple(y.shape)
    ctx.save_for_backward(condition)


def _where_grad(ctx, grad):
    (condition,) = ctx.saved_tensors
    keep = condition.to(torch.bool)
    zero = torch.zeros((), dtype=grad.dtype, device=grad.device)
    dx = torch.where(keep, grad, zero)
    dy = torch.where(keep, zero, grad)
    return (None, dx.sum_to_size(ctx.x_shape) if ctx.x_shape else dx.sum(),
            dy.sum_to_size(ctx.y_shape) if ctx.y_shape else dy.sum())


_where.register_autograd(_where_grad, setup_context=_where_setup)


def where(condition: Tensor, x: Tensor, y: Tensor) -> Tensor:
    """torch.where(condition, x, y) with broadcasting."""
    if _eager(condition, x, y):
        return _k.where(condition, x, y)
    return _where(condition, x, y)
