"""The Python binding without a GPU: bad arguments raise the right exception,
with the library's message naming the argument, before anything runs.
Tensors here are plain objects with .shape, .dtype and .data_ptr() (torch is
not needed)."""
import os
import subprocess
import sys

import pytest

import kgen


class Fake:
    """A tensor as the binding sees one: shape, dtype name, a device address."""

    def __init__(self, shape, dtype="float32", ptr=1 << 32, strides=None):
        self.shape = tuple(shape)
        self.dtype = dtype
        self._ptr = ptr
        if strides is not None:
            self.strides = strides

    def data_ptr(self):
        return self._ptr


def test_library_facts():
    assert kgen.version().count(".") == 2
    assert isinstance(kgen.tuning_database(), str)


def test_variants_lists_the_compiled_ones_by_family():
    for family in ("softmax", "reduce", "topk", "permute", "expand", "where"):
        names = kgen.variants(family)
        assert names and all(n.startswith(family + "_") for n in names), family
        assert set(names) <= set(kgen.variants())
    assert kgen.variants("no_such_family") == []


def test_softmax_of_an_integer_dtype_is_the_library_error_naming_dtype():
    x = Fake((4, 8), "int32")
    with pytest.raises(kgen.InvalidArgument, match="dtype") as e:
        kgen.softmax(x, out=Fake((4, 8), "int32", ptr=1 << 33))
    assert e.value.status == "KGEN_ERROR_INVALID_ARGUMENT"
    assert isinstance(e.value, ValueError)


def test_dim_out_of_range_is_an_index_error():
    with pytest.raises(IndexError, match="dim"):
        kgen.softmax(Fake((4, 8)), dim=2, out=Fake((4, 8)))
    with pytest.raises(IndexError, match="dim"):
        kgen.sum(Fake((4, 8)), dim=-3, out=Fake((4,)))


def test_unknown_dtype_is_a_type_error_naming_the_tensor():
    with pytest.raises(TypeError, match="x: dtype complex64"):
        kgen.softmax(Fake((4, 8), "complex64"), out=Fake((4, 8)))


def test_out_of_the_wrong_shape_or_dtype_is_refused():
    with pytest.raises(ValueError, match="out: shape"):
        kgen.softmax(Fake((4, 8)), out=Fake((4, 9)))
    with pytest.raises(TypeError, match="out: dtype"):
        kgen.log_softmax(Fake((4, 8)), out=Fake((4, 8), "float16"))
    with pytest.raises(TypeError, match="out: dtype"):
        kgen.argmax(Fake((4, 8)), dim=1, out=Fake((4,), "int32"))  # indices are int64


def test_non_contiguous_objects_are_refused_not_misread():
    x = Fake((4, 8), strides=(1, 4))  # a transposed view
    with pytest.raises(ValueError, match="x: not contiguous"):
        kgen.softmax(x, out=Fake((4, 8)))
    with pytest.raises(ValueError, match="out: not contiguous"):
        kgen.softmax(Fake((4, 8)), out=Fake((4, 8), strides=(1, 4)))


def test_outputs_need_torch_or_out():
    try:
        import torch  # noqa: F401
        pytest.skip("torch is installed: outputs are allocated")
    except ImportError:
        pass
    with pytest.raises(TypeError, match="pass out="):
        kgen.softmax(Fake((4, 8)))


def test_topk_k_past_the_row_names_k():
    with pytest.raises(kgen.InvalidArgument, match="k:"):
        kgen.topk(Fake((2, 5)), 6, out=(Fake((2, 6)), Fake((2, 6), "int64")))
    with pytest.raises(ValueError, match="last dim"):
        kgen.topk(Fake((2, 5)), 1, dim=0, out=(Fake((1, 5)), Fake((1, 5), "int64")))


def test_reduce_mean_of_integers_is_the_library_error():
    with pytest.raises(kgen.InvalidArgument) as e:
        kgen.mean(Fake((4, 8), "int32"), dim=1, out=Fake((4,), "int32"))
    assert "mean" in e.value.message or "dtype" in e.value.message


def test_permute_needs_a_permutation():
    with pytest.raises(ValueError, match="perm"):
        kgen.permute(Fake((2, 3, 4)), (0, 0, 1), out=Fake((2, 2, 3)))
    with pytest.raises(ValueError, match="perm"):
        kgen.permute(Fake((2, 3, 4)), (0, 1), out=Fake((2, 3)))


def test_expand_and_where_shape_errors_name_the_dims():
    with pytest.raises(kgen.InvalidArgument) as e:
        kgen.expand(Fake((3, 4)), (2, 5, 4), out=Fake((2, 5, 4)))
    assert "3" in e.value.message
    with pytest.raises(kgen.InvalidArgument):
        kgen.where(Fake((4, 5), "bool"), Fake((4, 6)), Fake((4, 6)), out=Fake((4, 6)))
    with pytest.raises(TypeError, match="condition"):
        kgen.where(Fake((4,), "float32"), Fake((4,)), Fake((4,)), out=Fake((4,)))
    with pytest.raises(TypeError, match="y: dtype"):
        kgen.where(Fake((4,), "bool"), Fake((4,)), Fake((4,), "float16"), out=Fake((4,)))


def test_a_missing_kgen_library_is_a_clear_error():
    env = dict(os.environ, KGEN_LIBRARY="/nonexistent/libkgen.so")
    r = subprocess.run([sys.executable, "-c", "import kgen; kgen.version()"], env=env, capture_output=True,
                       text=True)
    assert r.returncode != 0
    assert "KGEN_LIBRARY=/nonexistent/libkgen.so is not a file" in r.stderr
    # importing alone needs no library
    r = subprocess.run([sys.executable, "-c", "import kgen"], env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_softmax_backward_checks_its_pair_of_inputs():
    y, dy, dx = Fake((4, 8)), Fake((4, 8), ptr=1 << 33), Fake((4, 8), ptr=1 << 34)
    with pytest.raises(ValueError, match="dy: shape"):
        kgen.softmax_backward(y, Fake((4, 9), ptr=1 << 33), out=dx)
    with pytest.raises(TypeError, match="dy: dtype float16"):
        kgen.log_softmax_backward(y, Fake((4, 8), "float16", ptr=1 << 33), out=dx)
    with pytest.raises(IndexError, match="dim"):
        kgen.softmax_backward(y, dy, dim=2, out=dx)
    with pytest.raises(kgen.InvalidArgument, match="dtype"):
        kgen.softmax_backward(Fake((4, 8), "int32"), Fake((4, 8), "int32", ptr=1 << 33),
                              out=Fake((4, 8), "int32", ptr=1 << 34))


def test_softmax_masked_checks_its_mask():
    x, y = Fake((2, 3, 5, 8), "float16"), Fake((2, 3, 5, 8), "float16", ptr=1 << 33)
    with pytest.raises(ValueError, match="x: rank 5"):
        kgen.softmax_masked(Fake((1, 2, 3, 5, 8), "float16"), out=Fake((1, 2, 3, 5, 8), "float16", ptr=1 << 33))
    with pytest.raises(ValueError, match="mask: last extent 7"):
        kgen.softmax_masked(x, Fake((2, 1, 5, 7), "bool", ptr=1 << 34), out=y)
    with pytest.raises(TypeError, match="mask: dtype float32"):
        kgen.softmax_masked(x, Fake((2, 1, 5, 8), "float32", ptr=1 << 34), out=y)
    # a mask extent that is neither 1 nor x's: the library's error names it
    with pytest.raises(kgen.InvalidArgument, match="mask"):
        kgen.softmax_masked(x, Fake((2, 2, 5, 8), "bool", ptr=1 << 34), out=y)


def test_every_c_entry_point_has_a_prototype():
    lib = kgen._lib.library()
    for name in ("kgen_softmax_backward_dim", "kgen_softmax_backward_variant", "kgen_softmax_backward_selected",
                 "kgen_softmax_masked", "kgen_softmax_masked_variant", "kgen_softmax_masked_selected"):
        assert getattr(lib, name).argtypes, name


def test_the_torch_fast_path_declines_what_it_cannot_run():
    """kgen._torch_ext (built where torch is) takes only CUDA tensors: CPU
    tensors and other objects go to the Python path, whose errors stand."""
    torch = pytest.importorskip("torch")
    from kgen._lib import fast_path
    ext = fast_path()
    if ext is None:
        pytest.skip("kgen._torch_ext is not built (meson option torch_ext)")
    x = torch.randn(4, 8)
    assert ext.softmax(x, -1, False) is None
    assert ext.softmax_backward(x, x, -1, True) is None
    assert ext.reduce(0, x, None, False) is None
    assert ext.topk(x, 2, True, True) is None
    assert ext.permute(x, [1, 0]) is None
    assert ext.expand(x, [2, 4, 8]) is None
    assert ext.where(x > 0, x, x) is None
    assert ext.softmax(Fake((4, 8)), -1, False) is None
    with pytest.raises(kgen.KgenError):
        kgen.softmax(x, -1)  # the library's error (host memory; no GPU here), through the Python path
