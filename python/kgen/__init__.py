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
from ._lib import (CudaError, InternalError, InvalidArgument, KgenError, Unsupported, check, int64_array,
                   int_array, library)

__all__ = ["softmax", "log_softmax", "sum", "mean", "amax", "amin", "argmax", "argmin", "topk", "permute",
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


class _Selected:
    """The variant= value with which an op names its variant instead of running."""


_SELECTED = _Selected()


def selected(op, *args, **kwargs) -> str:
    """The variant op(*args, **kwargs) would run, e.g.
    selected(kgen.softmax, x, -1) -> "softmax_warp_f16_p8_c16_g32_r2_pad";
    "copy" where a plain copy runs, "" for an empty problem."""
    return op(*args, variant=_SELECTED, **kwargs)


def _launch(entry: str, variant, args, stream, selected_args, variant_extra=(), selected_tail=()):
    """entry(*args, stream); entry_variant(name, *args, *variant_extra,
    stream) for a named variant; for _SELECTED the name that
    entry_selected(*selected_args, &name, *selected_tail) gives."""
    lib = library()
    if variant is _SELECTED:
        name = ctypes.c_char_p()
        check(getattr(lib, entry + "_selected")(*selected_args, ctypes.byref(name), *selected_tail))
        return (name.value or b"").decode()
    if variant is None:
        check(getattr(lib, entry)(*args, stream))
    else:
        check(getattr(lib, entry + "_variant")(str(variant).encode(), *args, *variant_extra, stream))
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
    name = _launch("kgen_softmax_dim", variant, args, T.stream_of(x), args)
    return out if name is None else name


def softmax(x, dim: int = -1, out=None, variant: Optional[str] = None):
    """torch.softmax(x, dim) (float32, float16, bfloat16, float64)."""
    return _softmax(x, dim, out, 0, variant)


def log_softmax(x, dim: int = -1, out=None, variant: Optional[str] = None):
    """torch.log_softmax(x, dim)."""
    return _softmax(x, dim, out, 1, variant)


# ---- reductions --------------------------------------------------------------

_OPS = {"sum": 0, "mean": 1, "amax": 2, "amin": 3, "argmax": 4, "argmin": 5}


def _reduce(op: str, x, dim: Optional[int], keepdim: bool, out, variant):
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
    workspace_bytes = ctypes.c_size_t(0)
    name = _launch("kgen_reduce", variant, args, T.stream_of(x), args, variant_extra=(None, 0),
                   selected_tail=(ctypes.byref(workspace_bytes),))  # a named variant's workspace: allocated as kgen_reduce does
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
        return _launch("kgen_topk", variant, (), None, query)
    need = ctypes.c_size_t(0)
    check(library().kgen_topk_workspace_size(None if variant is None else str(variant).encode(), *query,
                                             ctypes.byref(need)))
    workspace = T.new_output(x, (need.value,), T.DTYPES["uint8"], "workspace") if need.value else None
    args = query + (T.pointer(values), T.pointer(indices),
                    T.pointer(workspace) if workspace is not None else None, need.value)
    _launch("kgen_topk", variant, args, T.stream_of(x), query)
    return values, indices


# ---- permute, expand, where ------------------------------------------------------

def permute(x, perm: Sequence[int], out=None, variant: Optional[str] = None):
    """x.permute(perm).contiguous(), any element size."""
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
    name = _launch("kgen_permute", variant, args, T.stream_of(x), args)
    return out if name is None else name


def expand(x, shape: Sequence[int], out=None, variant: Optional[str] = None):
    """x.expand(shape).contiguous(); -1 keeps x's size."""
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
    name = _launch("kgen_expand", variant, args, T.stream_of(x), args)
    return out if name is None else name


def where(condition, x, y, out=None, variant: Optional[str] = None):
    """torch.where(condition, x, y) with broadcasting; condition bool or
    uint8, x and y of one dtype."""
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
    name = _launch("kgen_where", variant, args, T.stream_of(x), args)
    return out if name is None else name
