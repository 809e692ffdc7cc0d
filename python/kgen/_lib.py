"""Finding and loading libkgen, the C API's prototypes, and its errors."""
from __future__ import annotations

import ctypes
import ctypes.util
import os
from pathlib import Path
from typing import List, Optional

c_int64_p = ctypes.POINTER(ctypes.c_int64)
c_int_p = ctypes.POINTER(ctypes.c_int)

STATUS = {0: "KGEN_OK", 1: "KGEN_ERROR_INVALID_ARGUMENT", 2: "KGEN_ERROR_UNSUPPORTED",
          3: "KGEN_ERROR_CUDA", 4: "KGEN_ERROR_INTERNAL"}


class KgenError(RuntimeError):
    """A kgen call failed.  `status` is the kgen_status_t's name, the message
    the library's (kgen_last_error()), which names the offending argument."""

    def __init__(self, status: str, message: str):
        super().__init__(f"{message} [{status}]")
        self.status = status
        self.message = message


class InvalidArgument(KgenError, ValueError):
    """KGEN_ERROR_INVALID_ARGUMENT: a bad size, pointer, dtype or name."""


class Unsupported(KgenError):
    """KGEN_ERROR_UNSUPPORTED: valid, but no compiled variant can run it."""


class CudaError(KgenError):
    """KGEN_ERROR_CUDA: the CUDA runtime reported an error."""


class InternalError(KgenError):
    """KGEN_ERROR_INTERNAL: a bug in kgen."""


_ERRORS = {1: InvalidArgument, 2: Unsupported, 3: CudaError, 4: InternalError}

class MaskT(ctypes.Structure):
    """kgen_softmax_mask_t."""
    _fields_ = [("scale", ctypes.c_double), ("kind", ctypes.c_int), ("mask", ctypes.c_void_p),
                ("mask_batch", ctypes.c_int64), ("mask_heads", ctypes.c_int64), ("mask_queries", ctypes.c_int64),
                ("causal", ctypes.c_int), ("safe", ctypes.c_int)]


# (name, restype, argtypes) of every entry point the binding calls
_PROTOTYPES = [
    ("kgen_last_error", ctypes.c_char_p, []),
    ("kgen_version", ctypes.c_char_p, []),
    ("kgen_build_arch", ctypes.c_char_p, []),
    ("kgen_build_level", ctypes.c_char_p, []),
    ("kgen_tuning_database", ctypes.c_char_p, []),
    ("kgen_dtype_size", ctypes.c_int, [ctypes.c_int]),
    ("kgen_softmax_dim", ctypes.c_int,
     [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p,
      ctypes.c_void_p, ctypes.c_void_p]),
    ("kgen_softmax_backward_dim", ctypes.c_int,
     [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p,
      ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]),
    ("kgen_softmax_masked", ctypes.c_int,
     [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p,
      ctypes.POINTER(MaskT), ctypes.c_void_p, ctypes.c_void_p]),
    ("kgen_reduce", ctypes.c_int,
     [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p,
      ctypes.c_void_p, ctypes.c_void_p]),
    ("kgen_permute", ctypes.c_int,
     [ctypes.c_size_t, ctypes.c_int, c_int64_p, c_int_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]),
    ("kgen_broadcast_shape", ctypes.c_int,
     [ctypes.c_int, c_int_p, ctypes.POINTER(c_int64_p), c_int_p, c_int64_p]),
    ("kgen_expand", ctypes.c_int,
     [ctypes.c_int, ctypes.c_int, c_int64_p, ctypes.c_int, c_int64_p, ctypes.c_void_p, ctypes.c_void_p,
      ctypes.c_void_p]),
    ("kgen_where", ctypes.c_int,
     [ctypes.c_int, ctypes.c_int, c_int64_p, ctypes.c_int, c_int64_p, ctypes.c_int, c_int64_p,
      ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]),
    ("kgen_topk_workspace_size", ctypes.c_int,
     [ctypes.c_char_p, ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_int, ctypes.c_int,
      ctypes.c_void_p, ctypes.POINTER(ctypes.c_size_t)]),
    ("kgen_topk", ctypes.c_int,
     [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_int, ctypes.c_int, ctypes.c_void_p,
      ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]),
    ("kgen_variant_count", ctypes.c_int64, []),
    ("kgen_variant_name", ctypes.c_char_p, [ctypes.c_int64]),
    ("kgen_variant_family", ctypes.c_char_p, [ctypes.c_int64]),
]
_c_char_pp = ctypes.POINTER(ctypes.c_char_p)
_c_size_t_p = ctypes.POINTER(ctypes.c_size_t)


def _variant_and_selected(name: str, argtypes, selected_argtypes):
    """An entry point's *_variant twin (the variant's name first, then the
    same arguments) and its *_selected query (no stream; the chosen
    variant's name through the last argument)."""
    return [(name + "_variant", ctypes.c_int, [ctypes.c_char_p] + argtypes),
            (name + "_selected", ctypes.c_int, selected_argtypes)]


for _entry in list(_PROTOTYPES):
    _name, _, _args = _entry
    if _name in ("kgen_softmax_dim", "kgen_softmax_masked"):
        _PROTOTYPES += _variant_and_selected(_name, _args, _args[:-1] + [_c_char_pp])
    elif _name == "kgen_softmax_backward_dim":  # its pair is named kgen_softmax_backward_*
        _PROTOTYPES += _variant_and_selected("kgen_softmax_backward", _args, _args[:-1] + [_c_char_pp])
    elif _name == "kgen_reduce":  # the variant call takes a workspace before the stream
        _PROTOTYPES += _variant_and_selected(_name, _args[:-1] + [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p],
                                             _args[:-1] + [_c_char_pp, _c_size_t_p])
    elif _name in ("kgen_permute", "kgen_expand", "kgen_where"):
        _PROTOTYPES += _variant_and_selected(_name, _args, _args[:-1] + [_c_char_pp])
    elif _name == "kgen_topk":  # the query takes no outputs
        _PROTOTYPES += _variant_and_selected(_name, _args, _args[:7] + [_c_char_pp])


def candidates() -> List[Path]:
    """Where the library is looked for when $KGEN_LIBRARY is not set: next to
    this package as `meson install` lays it out (<prefix>/lib/pythonX/
    site-packages/kgen -> <prefix>/lib/libkgen.so) or in a build tree."""
    out = []
    try:  # an installed package knows the library's folder
        from ._paths import LIBDIR
        out.append(Path(LIBDIR) / "libkgen.so")
    except ImportError:  # a source tree
        pass
    here = Path(__file__).resolve().parent
    for parent in list(here.parents)[:5]:
        for sub in ("", "lib", "lib64", "build/runtime"):
            out.append(parent / sub / "libkgen.so")
    return out


_lib: Optional[ctypes.CDLL] = None


def library() -> ctypes.CDLL:
    """The loaded library (loaded on first use)."""
    global _lib
    if _lib is not None:
        return _lib
    tried = []
    found = None
    env = os.environ.get("KGEN_LIBRARY")
    if env:
        if not Path(env).is_file():
            raise OSError(f"kgen: KGEN_LIBRARY={env} is not a file")
        found = env
    for path in [] if found else candidates():
        tried.append(str(path))
        if path.is_file():
            found = str(path)
            break
    if found is None:
        found = ctypes.util.find_library("kgen")
        tried.append("the system's library path")
    if found is None:
        raise OSError("kgen: libkgen.so not found; set KGEN_LIBRARY to its path (looked in: "
                      + ", ".join(tried) + ")")
    lib = ctypes.CDLL(found)
    for name, restype, argtypes in _PROTOTYPES:
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes
    _lib = lib
    return lib


# the entry points kgen._torch_ext calls (its bind() takes their addresses)
_FAST_ENTRIES = ("kgen_softmax_dim", "kgen_softmax_backward_dim", "kgen_softmax_masked", "kgen_reduce",
                 "kgen_topk_workspace_size", "kgen_topk", "kgen_permute", "kgen_broadcast_shape", "kgen_expand",
                 "kgen_where")


def fast_path():
    """kgen._torch_ext bound to the loaded library: the binding's plain calls
    (CUDA tensors, contiguous, no out= or variant=) in C++; None where it was
    not built (no torch at build time), torch is absent, or
    KGEN_TORCH_EXT=0.  Looked for: $KGEN_TORCH_EXT (a path), this package
    (`meson install` puts it there), then a build tree's python/ beside the
    library's runtime/."""
    env = os.environ.get("KGEN_TORCH_EXT", "")
    if env == "0":
        return None
    try:
        import torch  # noqa: F401  (the extension needs libtorch loaded)
    except ImportError:
        return None
    import importlib.machinery
    import importlib.util
    lib = library()
    paths = [Path(env)] if env else []
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        paths.append(Path(__file__).resolve().parent / ("_torch_ext" + suffix))
        paths.append(Path(lib._name).resolve().parent.parent / "python" / ("_torch_ext" + suffix))
    for path in paths:
        if not path.is_file():
            continue
        spec = importlib.util.spec_from_file_location("kgen._torch_ext", str(path))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        module.bind({name: ctypes.cast(getattr(lib, name), ctypes.c_void_p).value for name in _FAST_ENTRIES})
        return module
    if env:
        raise OSError(f"kgen: KGEN_TORCH_EXT={env} is not a file")
    return None


def check(status: int) -> None:
    """Raises the exception of a failed call's status, with the library's message."""
    if status == 0:
        return
    message = library().kgen_last_error().decode(errors="replace")
    raise _ERRORS.get(status, KgenError)(STATUS.get(status, f"status {status}"), message)


def int64_array(values) -> ctypes.Array:
    values = [int(v) for v in values]
    return (ctypes.c_int64 * max(1, len(values)))(*values)


def int_array(values) -> ctypes.Array:
    values = [int(v) for v in values]
    return (ctypes.c_int * max(1, len(values)))(*values)
