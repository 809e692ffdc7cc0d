"""Compile and link flags of a C++ extension against the torch that this
Python imports, for meson (python/meson.build): four lines, the include
folders, the library folders (';'-separated), the C++11 ABI flag (0 or 1) and
torch's version.  Exits 1 where torch is not importable."""
import sys

try:
    import torch
    from torch.utils import cpp_extension
except ImportError:
    sys.exit(1)


def call(fn):
    try:  # torch 2.6+: device_type=; before: cuda=
        return fn(device_type="cuda")
    except TypeError:
        return fn(cuda=True)


# CUDA's own folders come from meson's cuda dependency: only torch's here
includes = [p for p in call(cpp_extension.include_paths) if "torch" in p]
libraries = [p for p in call(cpp_extension.library_paths) if "torch" in p]
print(";".join(includes))
print(";".join(libraries))
print(int(torch._C._GLIBCXX_USE_CXX11_ABI))
print(torch.__version__)
