"""What the binding needs of a tensor: shape, dtype, device pointer,
contiguity, and (through torch, when it is there) new outputs and the
current stream.  Any object with .shape, .dtype and .data_ptr() works as an
input; outputs need torch or out=."""
from __future__ import annotations

import contextlib
import math
from typing import Optional, Sequence, Tuple

try:  # torch is optional at import
    import torch
except ImportError:  # pragma: no cover - depends on the machine
    torch = None

# kgen_dtype_t codes by name
DTYPES = {"float32": 0, "float16": 1, "bfloat16": 2, "float64": 3, "int32": 4, "int64": 5, "bool": 6,
          "uint8": 7}
SIZES = {0: 4, 1: 2, 2: 2, 3: 8, 4: 4, 5: 8, 6: 1, 7: 1}
NAMES = {code: name for name, code in DTYPES.items()}


_CODES = {}  # dtype object -> code, filled as dtypes are seen (a call's host time counts)


def dtype_code(t, what: str) -> int:
    """The kgen_dtype_t of a tensor's dtype (torch.float16, numpy's, or a
    name such as "float16"); TypeError naming `what` for any other."""
    dtype = getattr(t, "dtype", None)
    try:
        return _CODES[dtype]
    except (KeyError, TypeError):  # not seen yet, or not hashable
        pass
    name = str(dtype).split(".")[-1]  # "torch.float16" -> "float16"
    if name not in DTYPES:
        raise TypeError(f"{what}: dtype {name} is not one kgen handles ({', '.join(DTYPES)})")
    try:
        _CODES[dtype] = DTYPES[name]
    except TypeError:
        pass
    return DTYPES[name]


def shape_of(t) -> Tuple[int, ...]:
    if torch is not None and isinstance(t, torch.Tensor):
        return tuple(t.shape)  # a torch.Size holds ints
    return tuple(int(s) for s in t.shape)


def numel(shape: Sequence[int]) -> int:
    return math.prod(shape)


def pointer(t) -> int:
    return int(t.data_ptr())


def contiguous_strides(shape: Sequence[int]) -> Tuple[int, ...]:
    out, step = [], 1
    for s in reversed(shape):
        out.append(step)
        step *= max(1, s)
    return tuple(reversed(out))


def is_contiguous(t) -> bool:
    if hasattr(t, "is_contiguous"):
        return bool(t.is_contiguous())
    strides = getattr(t, "strides", None)  # in elements, when an object gives them
    if strides is None:
        return True
    shape = shape_of(t)
    return all(n <= 1 or s == c for n, s, c in zip(shape, strides, contiguous_strides(shape)))


def as_input(t, what: str):
    """A contiguous view of an input: torch tensors are made contiguous (as
    PyTorch's own ops accept any strides); any other object must be."""
    if is_contiguous(t):
        return t
    if torch is not None and isinstance(t, torch.Tensor):
        return t.contiguous()
    raise ValueError(f"{what}: not contiguous (strides {getattr(t, 'strides', None)}); "
                     "kgen reads row-major contiguous tensors")


def check_out(out, shape: Sequence[int], code: int, what: str = "out"):
    """out= must be contiguous, of the result's shape and dtype."""
    if shape_of(out) != tuple(shape):
        raise ValueError(f"{what}: shape {shape_of(out)}, the result's is {tuple(shape)}")
    if dtype_code(out, what) != code:
        raise TypeError(f"{what}: dtype {NAMES[dtype_code(out, what)]}, the result's is {NAMES[code]}")
    if not is_contiguous(out):
        raise ValueError(f"{what}: not contiguous; kgen writes row-major contiguous tensors")
    return out


def new_output(like, shape: Sequence[int], code: int, what: str = "out"):
    """A new contiguous tensor on `like`'s device (torch needed), through
    Tensor.new_empty, which takes the device from `like`."""
    if torch is None or not isinstance(like, torch.Tensor):
        raise TypeError(f"{what}: no torch tensor to allocate it like; pass {what}=")
    return like.new_empty(tuple(shape), dtype=getattr(torch, NAMES[code]))


# torch's own accessors of the current device and raw stream, where it has
# them: torch.cuda.current_stream() builds a Stream object on each call
_raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None) if torch is not None else None
_current_device = getattr(torch._C, "_cuda_getDevice", None) if torch is not None else None


def stream_of(like) -> Optional[int]:
    """torch's current stream on `like`'s device (None: the default stream)."""
    if torch is not None and isinstance(like, torch.Tensor) and like.is_cuda:
        if _raw_stream is not None:
            return _raw_stream(like.device.index) or None
        return torch.cuda.current_stream(like.device).cuda_stream or None
    return None


def on_device(like):
    """A context that makes `like`'s GPU the current device while a call
    runs, as torch's own ops do: the C library takes pointers of the current
    device only.  Nothing to do (a null context) when it already is."""
    if torch is not None and isinstance(like, torch.Tensor) and like.is_cuda:
        index = like.device.index
        current = _current_device() if _current_device is not None else torch.cuda.current_device()
        if index is not None and index != current:
            return torch.cuda.device(index)
    return _NO_GUARD


_NO_GUARD = contextlib.nullcontext()
