"""kgen from Python: the generated kernels over PyTorch tensors (or any
object with .shape, .dtype and .data_ptr() of device memory), through the C
API with ctypes.  The library is found through $KGEN_LIBRARY or next to the
installed package; torch is optional at import.

Every function runs on torch's current stream, returns its result (or
fills out=), and raises the library's errors as exceptions that carry its
message, which names the offending argument:
InvalidArgument (a ValueError), Unsupported, CudaError, InternalError,
all KgenError.  Non-contiguous torch inputs are made contiguous (as PyTorch
reads any strides); non-contiguous outputs and other objects are refused.

For benchmarks and tuning: every op takes variant="<name>" to run that
compiled variant instead of the library's choice (Unsupported when it cannot
run the problem), selected(op, *args, **kwargs) names the variant the call
would run, and variants(family) lists the compiled ones.
"""
from __future__ import annotations

import ctypes
from typing import List, Optional, Sequence, Tuple

from . import _tensor as T
from ._lib import (CudaError, InternalError, InvalidArgument, KgenError, MaskT as _MaskT, Unsupported, check,
                   fast_path, int64_array, int_array, library)

__all__ = ["softmax", "log_softmax", "softmax_backward", "log_softmax_backward", "softmax_masked", "sum", "mean", "amax", "amin", "argmax", "argmin", "topk", "permute",
           "expand", "where", "version", "tuning_database", "selected", "variants", "KgenError", "InvalidArgument", "Unsupported",
           "CudaError", "InternalError"]


def version() -> str:
    return library().kgen_version().decode()


def tuning_database() -> str:
    """The tuning database selection uses on the current device ("" when none)."""
    return library().kgen_tuning_database().decode()


def variants(family: Optional[str] = None) -> List[str]:
    """The compiled variants' names (of one family: "softmax", "reduce",
    "topk", "permute", "expand", "where", "softmax_backward")."""
    lib = library()
    return [lib.kgen_variant_name(i).decode() for i in range(lib.kgen_variant_count())
            if family is None or lib.kgen_variant_family(i).decode() == family]


def _decline(*args):
    return None


class _NoFastPath:
    """Where kgen._torch_ext is absent: every plain call takes the Python path."""

    def __getattr__(self, name):
        return _decline


class _FastPathOnFirstUse:
    """Finds kgen._torch_ext (_lib.fast_path) on the first plain call, so that
    `import kgen` loads neither torch nor the library."""

    def __getattr__(self, name):
        global _fast
        module = fast_path()
        _fast = module if module is not None else _NoFastPath()
        return getattr(_fast, name)


# The C++ path of plain calls (CUDA tensors, contiguous, no out= or variant=):
# each of its functions returns the result, or None for a call it does not
# take (the Python path then runs it, with every check and message).  It
# saves the Python path's host time a call (bench/python_host.py).
_fast = _FastPathOnFirstUse()


class _Selected:
    """The variant= value with which an op names its variant instead of running."""


_SELECTED = _Selected()


def selected(op, *args, **kwargs) -> str:
    """The variant op(*args, **kwargs) would run, e.g.
    selected(kgen.softmax, x, -1) -> "softmax_warp_f16_p8_c16_g32_r2_pad";
    "copy" where a plain copy runs, "" for an empty problem."""
    return op(*args, variant=_SELECTED, **kwargs)


def _launch(entry: str, variant, args, like, selected_args, variant_extra=(), selected_tail=(), named=None):
    """entry(*args, stream) on `like`'s device and current stream;
    named_variant(name, *args, *variant_extra, stream) for a named variant
    (named: entry unless the C API names the pair otherwise); for _SELECTED
    the name that named_selected(*selected_args, &name, *selected_tail)
    gives."""
    lib = library()
    named = named or entry
    with T.on_device(like):
        if variant is _SELECTED:
            name = ctypes.c_char_p()
            check(getattr(lib, named + "_selected")(*selected_args, ctypes.byref(name), *selected_tail))
            return (name.value or b"").decode()
        stream = T.stream_of(like)
        if variant is None:
            status = getattr(lib, entry)(*args, stream)
            if status:
                check(status)
        else:
            check(getattr(lib, named + "_variant")(str(variant).encode(), *args, *variant_extra, stream))
    return None


def _dim(dim: int, rank: int) -> int:
    """PyTorch's dim wrapping; a 0-d tensor takes dim 0 or -1."""
    n = max(rank, 1)
    if not -n <= dim < n:
        raise IndexError(f"dim: {dim} is out of range for a tensor of rank {rank} "
                         f"(expected [{-n}, {n - 1}])")
    return dim % n


def _split(shape: Tuple[int, ...], d: int) -> Tuple[int, int, int]:
    """(outer, axis, inner) of a row-major tensor around dim d."""
    if not shape:
        return 1, 1, 1
    return T.numel(shape[:d]), shape[d], T.numel(shape[d + 1:])


# ---- softmax ---------------------------------------------------------------

def _softmax(x, dim: int, out, log: int, variant):
    x = T.as_input(x, "x")
    shape = T.shape_of(x)
    code = T.dtype_code(x, "x")
    outer, axis, inner = _split(shape, _dim(dim, len(shape)))
    out = T.check_out(out, shape, code) if out is not None else T.new_output(x, shape, code)
    args = (log, code, outer, axis, inner, T.pointer(x), T.pointer(out))
    name = _launch("kgen_softmax_dim", variant, args, x, args)
    return out if name is None else name


def softmax(x, dim: int = -1, out=None, variant: Optional[str] = None):
    """torch.softmax(x, dim) (float32, float16, bfloat16, float64)."""
    if out is None and variant is None:
        y = _fast.softmax(x, dim, False)
        if y is not None:
            return y
    return _softmax(x, dim, out, 0, variant)


def log_softmax(x, dim: int = -1, out=None, variant: Optional[str] = None):
    """torch.log_softmax(x, dim)."""
    if out is None and variant is None:
        y = _fast.softmax(x, dim, True)
        if y is not None:
            return y
    return _softmax(x, dim, out, 1, variant)


def _softmax_backward(y, dy, dim: int, out, log: int, variant):
    y, dy = T.as_input(y, "y"), T.as_input(dy, "dy")
    shape = T.shape_of(y)
    code = T.dtype_code(y, "y")
    if T.shape_of(dy) != shape:
        raise ValueError(f"dy: shape {T.shape_of(dy)}, y's is {shape}")
    if T.dtype_code(dy, "dy") != code:
        raise TypeError(f"dy: dtype {T.NAMES[T.dtype_code(dy, 'dy')]}, y's is {T.NAMES[code]}")
    outer, axis, inner = _split(shape, _dim(dim, len(shape)))
    out = T.check_out(out, shape, code) if out is not None else T.new_output(y, shape, code, "dx")
    args = (log, code, outer, axis, inner, T.pointer(y), T.pointer(dy), T.pointer(out))
    name = _launch("kgen_softmax_backward_dim", variant, args, y, args, named="kgen_softmax_backward")
    return out if name is None else name


def softmax_backward(y, dy, dim: int = -1, out=None, variant: Optional[str] = None):
    """The gradient of softmax from its output y and the output's gradient
    dy: (dy - sum(y * dy, dim)) * y, as torch's _softmax_backward_data."""
    if out is None and variant is None:
        dx = _fast.softmax_backward(y, dy, dim, False)
        if dx is not None:
            return dx
    return _softmax_backward(y, dy, dim, out, 0, variant)


def log_softmax_backward(y, dy, dim: int = -1, out=None, variant: Optional[str] = None):
    """The gradient of log_softmax from its output y and dy: dy - exp(y) *
    sum(dy, dim)."""
    if out is None and variant is None:
        dx = _fast.softmax_backward(y, dy, dim, True)
        if dx is not None:
            return dx
    return _softmax_backward(y, dy, dim, out, 1, variant)


_MASK_KINDS = {"none": 0, "bool": 1, "additive": 2}


def softmax_masked(x, mask=None, scale: float = 1.0, causal: bool = False, safe: bool = False, out=None,
                   variant: Optional[str] = None):
    """softmax(scale * x + mask) over the last dim of x seen as (batch,
    heads, queries, keys) (rank 1 to 4; missing leading dims are 1), as
    attention computes it.  mask: None, a bool tensor (True keeps a key,
    torch scaled_dot_product_attention's convention) or one of x's dtype
    (added), of shape (mask_batch, mask_heads, mask_queries, keys) with each
    leading extent 1 or x's (fewer dims: leading 1s).  causal keeps key k of
    query q only when k <= q; a row with no key left gives NaN as torch
    does, or zeros when safe."""
    if out is None and variant is None:
        y = _fast.softmax_masked(x, mask, float(scale), bool(causal), bool(safe))
        if y is not None:
            return y
    x = T.as_input(x, "x")
    shape = T.shape_of(x)
    code = T.dtype_code(x, "x")
    if not 1 <= len(shape) <= 4:
        raise ValueError(f"x: rank {len(shape)}; the masked softmax takes rank 1 to 4 (batch, heads, queries, keys)")
    batch, heads, queries, keys = (1,) * (4 - len(shape)) + shape
    m = _MaskT(scale=float(scale), kind=_MASK_KINDS["none"], mask=None, mask_batch=1, mask_heads=1,
               mask_queries=1, causal=int(bool(causal)), safe=int(bool(safe)))
    if mask is not None:
        mask = T.as_input(mask, "mask")
        mshape = T.shape_of(mask)
        if not 1 <= len(mshape) <= 4:
            raise ValueError(f"mask: rank {len(mshape)}; expected 1 to 4 (mask_batch, mask_heads, mask_queries, keys)")
        m.mask_batch, m.mask_heads, m.mask_queries, mkeys = (1,) * (4 - len(mshape)) + mshape
        if mkeys != keys:
            raise ValueError(f"mask: last extent {mkeys}, x's keys are {keys}")
        mcode = T.dtype_code(mask, "mask")
        if mcode == T.DTYPES["bool"]:
            m.kind = _MASK_KINDS["bool"]
        elif mcode == code:
            m.kind = _MASK_KINDS["additive"]
        else:
            raise TypeError(f"mask: dtype {T.NAMES[mcode]}; expected bool or x's dtype {T.NAMES[code]}")
        m.mask = T.pointer(mask)
    out = T.check_out(out, shape, code) if out is not None else T.new_output(x, shape, code)
    args = (code, batch, heads, queries, keys, T.pointer(x), ctypes.byref(m), T.pointer(out))
    name = _launch("kgen_softmax_masked", variant, args, x, args)
    return out if name is None else name


# ---- reductions --------------------------------------------------------------

_OPS = {"sum": 0, "mean": 1, "amax": 2, "amin": 3, "argmax": 4, "argmin": 5}


def _reduce(op: str, x, dim: Optional[int], keepdim: bool, out, variant):
    if out is None and variant is None:
        got = _fast.reduce(_OPS[op], x, dim, bool(keepdim))
        if got is not None:
            return got
    x = T.as_input(x, "x")
    shape = T.shape_of(x)
    code = T.dtype_code(x, "x")
    if dim is None:  # the whole tensor, as torch.sum(x) / torch.argmax(x) (flattened index)
        outer, red, inner = 1, T.numel(shape), 1
        result = tuple(1 for _ in shape) if keepdim else ()
    else:
        d = _dim(dim, len(shape))
        outer, red, inner = _split(shape, d)
        result = shape[:d] + ((1,) if keepdim else ()) + shape[d + 1:] if shape else ()
    result_code = T.DTYPES["int64"] if op.startswith("arg") else code
    out = T.check_out(out, result, result_code) if out is not None else T.new_output(x, result, result_code)
    args = (_OPS[op], code, outer, red, inner, T.pointer(x), T.pointer(out))
    # a named variant's workspace: allocated as kgen_reduce does; the query
    # reports its size
    tail = (ctypes.byref(ctypes.c_size_t(0)),) if variant is _SELECTED else ()
    name = _launch("kgen_reduce", variant, args, x, args, variant_extra=(None, 0), selected_tail=tail)
    return out if name is None else name


def sum(x, dim: Optional[int] = None, keepdim: bool = False, out=None, variant: Optional[str] = None):
    """torch.sum over one dim or everything.  Unlike torch, an int32 sum
    stays int32 (and wraps)."""
    return _reduce("sum", x, dim, keepdim, out, variant)


def mean(x, dim: Optional[int] = None, keepdim: bool = False, out=None, variant: Optional[str] = None):
    """torch.mean (floating dtypes)."""
    return _reduce("mean", x, dim, keepdim, out, variant)


def amax(x, dim: Optional[int] = None, keepdim: bool = False, out=None, variant: Optional[str] = None):
    """torch.amax (NaN propagates)."""
    return _reduce("amax", x, dim, keepdim, out, variant)


def amin(x, dim: Optional[int] = None, keepdim: bool = False, out=None, variant: Optional[str] = None):
    """torch.amin (NaN propagates)."""
    return _reduce("amin", x, dim, keepdim, out, variant)


def argmax(x, dim: Optional[int] = None, keepdim: bool = False, out=None, variant: Optional[str] = None):
    """torch.argmax: int64 indices, the first maximum (the first NaN)."""
    return _reduce("argmax", x, dim, keepdim, out, variant)


def argmin(x, dim: Optional[int] = None, keepdim: bool = False, out=None, variant: Optional[str] = None):
    """torch.argmin."""
    return _reduce("argmin", x, dim, keepdim, out, variant)


# ---- top-k -------------------------------------------------------------------

def topk(x, k: int, dim: int = -1, largest: bool = True, sorted: bool = True, out=None,
         variant: Optional[str] = None):
    """torch.topk(x, k, dim, largest, sorted) along the last dim: (values,
    indices), indices int64; out= a (values, indices) pair."""
    if out is None and variant is None and dim == -1:
        got = _fast.topk(x, k, bool(largest), bool(sorted))
        if got is not None:
            return got
    x = T.as_input(x, "x")
    shape = T.shape_of(x)
    code = T.dtype_code(x, "x")
    rank = len(shape)
    if _dim(dim, rank) != max(rank, 1) - 1:
        raise ValueError(f"dim: kgen's topk runs along the last dim ({rank - 1}), got {dim}")
    n = shape[-1] if shape else 1
    batch = T.numel(shape[:-1]) if shape else 1
    result = (shape[:-1] if shape else ()) + ((k,) if shape else ())
    if out is not None:
        values = T.check_out(out[0], result, code, "out[0]")
        indices = T.check_out(out[1], result, T.DTYPES["int64"], "out[1]")
    else:
        values = T.new_output(x, result, code, "values")
        indices = T.new_output(x, result, T.DTYPES["int64"], "indices")
    query = (code, batch, n, k, int(largest), int(sorted), T.pointer(x))
    if variant is _SELECTED:
        return _launch("kgen_topk", variant, (), x, query)
    need = ctypes.c_size_t(0)
    with T.on_device(x):
        check(library().kgen_topk_workspace_size(None if variant is None else str(variant).encode(), *query,
                                                 ctypes.byref(need)))
    workspace = T.new_output(x, (need.value,), T.DTYPES["uint8"], "workspace") if need.value else None
    args = query + (T.pointer(values), T.pointer(indices),
                    T.pointer(workspace) if workspace is not None else None, need.value)
    _launch("kgen_topk", variant, args, x, query)
    return values, indices


# ---- permute, expand, where ------------------------------------------------------

def permute(x, perm: Sequence[int], out=None, variant: Optional[str] = None):
    """x.permute(perm).contiguous(), any element size."""
    if out is None and variant is None:
        y = _fast.permute(x, perm)
        if y is not None:
            return y
    x = T.as_input(x, "x")
    shape = T.shape_of(x)
    code = T.dtype_code(x, "x")
    rank = len(shape)
    perm = [int(p) + (rank if -rank <= int(p) < 0 else 0) for p in perm]
    if sorted(perm) != list(range(rank)):
        raise ValueError(f"perm: {perm} is not a permutation of the {rank} dims")
    result = tuple(shape[p] for p in perm)
    out = T.check_out(out, result, code) if out is not None else T.new_output(x, result, code)
    args = (T.SIZES[code], rank, int64_array(shape), int_array(perm), T.pointer(x), T.pointer(out))
    name = _launch("kgen_permute", variant, args, x, args)
    return out if name is None else name


def expand(x, shape: Sequence[int], out=None, variant: Optional[str] = None):
    """x.expand(shape).contiguous(); -1 keeps x's size."""
    if out is None and variant is None:
        y = _fast.expand(x, shape)
        if y is not None:
            return y
    x = T.as_input(x, "x")
    src = T.shape_of(x)
    code = T.dtype_code(x, "x")
    shape = [int(s) for s in shape]
    lead = len(shape) - len(src)
    result = tuple(src[k - lead] if s == -1 and k >= lead else s for k, s in enumerate(shape))
    if out is None and all(s >= 0 for s in result):
        out = T.new_output(x, result, code)
    elif out is not None:
        T.check_out(out, result, code)
    args = (code, len(src), int64_array(src), len(shape), int64_array(shape), T.pointer(x),
            T.pointer(out) if out is not None else None)
    name = _launch("kgen_expand", variant, args, x, args)
    return out if name is None else name


def where(condition, x, y, out=None, variant: Optional[str] = None):
    """torch.where(condition, x, y) with broadcasting; condition bool or
    uint8, x and y of one dtype."""
    if out is None and variant is None:
        got = _fast.where(condition, x, y)
        if got is not None:
            return got
    condition, x, y = (T.as_input(t, n) for t, n in ((condition, "condition"), (x, "x"), (y, "y")))
    cond_code, code = T.dtype_code(condition, "condition"), T.dtype_code(x, "x")
    if T.SIZES[cond_code] != 1:
        raise TypeError(f"condition: dtype {T.NAMES[cond_code]}, expected bool or uint8")
    if T.dtype_code(y, "y") != code:
        raise TypeError(f"y: dtype {T.NAMES[T.dtype_code(y, 'y')]}, x's is {T.NAMES[code]}")
    shapes = [T.shape_of(t) for t in (condition, x, y)]
    arrays = [int64_array(s) for s in shapes]
    ptrs = (ctypes.POINTER(ctypes.c_int64) * 3)(*[ctypes.cast(a, ctypes.POINTER(ctypes.c_int64)) for a in arrays])
    rank = ctypes.c_int(0)
    dims = (ctypes.c_int64 * 8)()
    check(library().kgen_broadcast_shape(3, int_array([len(s) for s in shapes]), ptrs, ctypes.byref(rank), dims))
    result = tuple(dims[k] for k in range(rank.value))
    out = T.check_out(out, result, code) if out is not None else T.new_output(x, result, code)
    args = (code, len(shapes[0]), arrays[0], len(shapes[1]), arrays[1], len(shapes[2]), arrays[2],
            T.pointer(condition), T.pointer(x), T.pointer(y), T.pointer(out))
    name = _launch("kgen_where", variant, args, x, args)
    return out if name is None else name
