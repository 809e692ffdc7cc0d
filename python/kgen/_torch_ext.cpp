// kgen._torch_ext: the binding's plain calls in C++, so that a call from
// PyTorch costs on the host about what torch's own op does.
//
// Plain: CUDA tensors, contiguous, not empty, no out= and no variant=.
// Every function returns None for anything else, and for any failure of
// the library; the Python path (kgen/__init__.py) then runs the call with
// its checks and messages, so errors, conversions and edge cases stay
// defined in one place.  The library writes nothing when it fails.
//
// The library is called through the addresses the ctypes binding hands to
// bind(): one libkgen in the process, and this module links none of it.
// Built only where torch is (meson option torch_ext); `import kgen` works
// without it.
#include <ATen/ATen.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/utils/pybind.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "kgen/kgen.h"

namespace py = pybind11;

namespace {

// The entry points, set by bind()
struct Api {
  decltype(&kgen_softmax_dim) softmax_dim = nullptr;
  decltype(&kgen_softmax_backward_dim) softmax_backward_dim = nullptr;
  decltype(&kgen_softmax_masked) softmax_masked = nullptr;
  decltype(&kgen_reduce) reduce = nullptr;
  decltype(&kgen_topk_workspace_size) topk_workspace_size = nullptr;
  decltype(&kgen_topk) topk = nullptr;
  decltype(&kgen_permute) permute = nullptr;
  decltype(&kgen_broadcast_shape) broadcast_shape = nullptr;
  decltype(&kgen_expand) expand = nullptr;
  decltype(&kgen_where) where = nullptr;
} api;

template <class F>
void set(F* slot, const py::dict& addresses, const char* name) {
  *slot = reinterpret_cast<F>(py::cast<uintptr_t>(addresses[name]));
}

void bind(const py::dict& a) {
  set(&api.softmax_dim, a, "kgen_softmax_dim");
  set(&api.softmax_backward_dim, a, "kgen_softmax_backward_dim");
  set(&api.softmax_masked, a, "kgen_softmax_masked");
  set(&api.reduce, a, "kgen_reduce");
  set(&api.topk_workspace_size, a, "kgen_topk_workspace_size");
  set(&api.topk, a, "kgen_topk");
  set(&api.permute, a, "kgen_permute");
  set(&api.broadcast_shape, a, "kgen_broadcast_shape");
  set(&api.expand, a, "kgen_expand");
  set(&api.where, a, "kgen_where");
}

// Arguments arrive as Python objects and are taken only when they are what
// the plain call expects (a torch.Tensor, an int, a list or tuple of ints):
// anything else goes to the Python path, which converts or refuses it.
bool as_tensor(py::handle h, at::Tensor* t) {
  if (!THPVariable_Check(h.ptr())) return false;
  *t = THPVariable_Unpack(h.ptr());
  return true;
}

bool as_int(py::handle h, int64_t* v) {
  if (!PyLong_Check(h.ptr())) return false;
  int overflow = 0;
  *v = PyLong_AsLongLongAndOverflow(h.ptr(), &overflow);
  return !overflow && !(*v == -1 && PyErr_Occurred());
}

bool as_ints(py::handle h, std::vector<int64_t>* v) {
  if (!PyList_Check(h.ptr()) && !PyTuple_Check(h.ptr())) return false;
  const py::sequence seq = py::reinterpret_borrow<py::sequence>(h);
  v->resize(seq.size());
  for (size_t k = 0; k < v->size(); ++k)
    if (!as_int(seq[k], &(*v)[k])) return false;
  return true;
}

// kgen_dtype_t of a torch dtype, -1 for one kgen does not take
int code_of(at::ScalarType t) {
  switch (t) {
    case at::kFloat: return KGEN_FLOAT32;
    case at::kHalf: return KGEN_FLOAT16;
    case at::kBFloat16: return KGEN_BFLOAT16;
    case at::kDouble: return KGEN_FLOAT64;
    case at::kInt: return KGEN_INT32;
    case at::kLong: return KGEN_INT64;
    case at::kBool: return KGEN_BOOL;
    case at::kByte: return KGEN_UINT8;
    default: return -1;
  }
}

// A plain input: on a GPU, contiguous, not empty, a dtype kgen takes (its code)
bool plain(const at::Tensor& t, int* code) {
  if (!t.defined() || !t.is_cuda() || t.numel() == 0 || !t.is_contiguous()) return false;
  *code = code_of(t.scalar_type());
  return *code >= 0;
}

kgen_stream_t stream_of(const at::Tensor& t) {
  return reinterpret_cast<kgen_stream_t>(c10::cuda::getCurrentCUDAStream(t.get_device()).stream());
}

// PyTorch's dim wrapping (a 0-d tensor takes 0 or -1); false when out of range
bool wrap(int64_t dim, int64_t rank, int64_t* d) {
  const int64_t n = rank > 0 ? rank : 1;
  if (dim < -n || dim >= n) return false;
  *d = dim < 0 ? dim + n : dim;
  return true;
}

// (outer, axis, inner) of a row-major tensor around dim d (a 0-d tensor: 1, 1, 1)
void split(at::IntArrayRef s, int64_t d, int64_t* outer, int64_t* axis, int64_t* inner) {
  *outer = *axis = *inner = 1;
  if (s.empty()) return;
  for (int64_t k = 0; k < d; ++k) *outer *= s[k];
  *axis = s[d];
  for (int64_t k = d + 1; k < static_cast<int64_t>(s.size()); ++k) *inner *= s[k];
}

py::object softmax(py::handle xo, py::handle dimo, bool log) {
  at::Tensor x;
  int code;
  int64_t dim, d, outer, axis, inner;
  if (!as_tensor(xo, &x) || !as_int(dimo, &dim) || !plain(x, &code) || !wrap(dim, x.dim(), &d)) return py::none();
  split(x.sizes(), d, &outer, &axis, &inner);
  const c10::cuda::CUDAGuard guard(x.device());
  at::Tensor y = at::empty(x.sizes(), x.options());
  if (api.softmax_dim(log, static_cast<kgen_dtype_t>(code), outer, axis, inner, x.data_ptr(), y.data_ptr(),
                      stream_of(x)) != KGEN_OK)
    return py::none();
  return py::cast(y);
}

py::object softmax_backward(py::handle yo, py::handle dyo, py::handle dimo, bool log) {
  at::Tensor y, dy;
  int code, dcode;
  int64_t dim, d, outer, axis, inner;
  if (!as_tensor(yo, &y) || !as_tensor(dyo, &dy) || !as_int(dimo, &dim) || !plain(y, &code) ||
      !plain(dy, &dcode) || dcode != code || y.sizes() != dy.sizes() || y.device() != dy.device() ||
      !wrap(dim, y.dim(), &d))
    return py::none();
  split(y.sizes(), d, &outer, &axis, &inner);
  const c10::cuda::CUDAGuard guard(y.device());
  at::Tensor dx = at::empty(y.sizes(), y.options());
  if (api.softmax_backward_dim(log, static_cast<kgen_dtype_t>(code), outer, axis, inner, y.data_ptr(),
                               dy.data_ptr(), dx.data_ptr(), stream_of(y)) != KGEN_OK)
    return py::none();
  return py::cast(dx);
}

// x of rank 1-4 seen as (batch, heads, queries, keys); mask None, or bool
// (keep) or x's dtype (added), of rank 1-4 over (mask_batch, mask_heads,
// mask_queries, keys)
py::object softmax_masked(py::handle xo, py::handle masko, double scale, bool causal, bool safe) {
  at::Tensor x, mask;
  int code, mcode = -1;
  if (!as_tensor(xo, &x) || !plain(x, &code) || x.dim() < 1 || x.dim() > 4) return py::none();
  int64_t e[4] = {1, 1, 1, 1};
  for (int64_t k = 0; k < x.dim(); ++k) e[4 - x.dim() + k] = x.size(k);
  kgen_softmax_mask_t m{scale, KGEN_MASK_NONE, nullptr, 1, 1, 1, causal, safe};
  if (!masko.is_none()) {
    if (!as_tensor(masko, &mask) || !plain(mask, &mcode) || mask.dim() < 1 || mask.dim() > 4 ||
        mask.size(-1) != e[3] || mask.device() != x.device() || (mcode != KGEN_BOOL && mcode != code))
      return py::none();
    int64_t me[3] = {1, 1, 1};
    for (int64_t k = 0; k + 1 < mask.dim(); ++k) me[4 - mask.dim() + k] = mask.size(k);
    m.kind = mcode == KGEN_BOOL ? KGEN_MASK_BOOL : KGEN_MASK_ADDITIVE;
    m.mask = mask.data_ptr();
    m.mask_batch = me[0];
    m.mask_heads = me[1];
    m.mask_queries = me[2];
  }
  const c10::cuda::CUDAGuard guard(x.device());
  at::Tensor y = at::empty(x.sizes(), x.options());
  if (api.softmax_masked(static_cast<kgen_dtype_t>(code), e[0], e[1], e[2], e[3], x.data_ptr(), &m, y.data_ptr(),
                         stream_of(x)) != KGEN_OK)
    return py::none();
  return py::cast(y);
}

// op: kgen_reduce_op_t; dim: None for the whole tensor
py::object reduce(int op, py::handle xo, py::handle dimo, bool keepdim) {
  at::Tensor x;
  int code;
  std::optional<int64_t> dim;
  if (!dimo.is_none()) {
    int64_t v;
    if (!as_int(dimo, &v)) return py::none();
    dim = v;
  }
  if (!as_tensor(xo, &x) || !plain(x, &code)) return py::none();
  const int64_t rank = x.dim();
  int64_t outer = 1, red = x.numel(), inner = 1;
  std::vector<int64_t> result;
  if (!dim) {
    if (keepdim) result.assign(static_cast<size_t>(rank), 1);
  } else {
    int64_t d;
    if (!wrap(*dim, rank, &d)) return py::none();
    split(x.sizes(), d, &outer, &red, &inner);
    for (int64_t k = 0; k < rank; ++k)
      if (k != d) result.push_back(x.size(k));
      else if (keepdim) result.push_back(1);
  }
  const bool arg = op == KGEN_REDUCE_ARGMAX || op == KGEN_REDUCE_ARGMIN;
  const c10::cuda::CUDAGuard guard(x.device());
  at::Tensor out = at::empty(result, x.options().dtype(arg ? at::kLong : x.scalar_type()));
  if (api.reduce(static_cast<kgen_reduce_op_t>(op), static_cast<kgen_dtype_t>(code), outer, red, inner,
                 x.data_ptr(), out.data_ptr(), stream_of(x)) != KGEN_OK)
    return py::none();
  return py::cast(out);
}

// along the last dim
py::object topk(py::handle xo, py::handle ko, bool largest, bool sorted) {
  at::Tensor x;
  int code;
  int64_t k;
  if (!as_tensor(xo, &x) || !as_int(ko, &k) || !plain(x, &code) || x.dim() == 0 || k < 1 || k > x.size(-1))
    return py::none();
  const int64_t n = x.size(-1), batch = x.numel() / n;
  const auto kg = static_cast<kgen_dtype_t>(code);
  const c10::cuda::CUDAGuard guard(x.device());
  size_t need = 0;
  if (api.topk_workspace_size(nullptr, kg, batch, n, k, largest, sorted, x.data_ptr(), &need) != KGEN_OK)
    return py::none();
  std::vector<int64_t> result(x.sizes().begin(), x.sizes().end());
  result.back() = k;
  at::Tensor values = at::empty(result, x.options());
  at::Tensor indices = at::empty(result, x.options().dtype(at::kLong));
  at::Tensor workspace;
  if (need) workspace = at::empty({static_cast<int64_t>(need)}, x.options().dtype(at::kByte));
  if (api.topk(kg, batch, n, k, largest, sorted, x.data_ptr(), values.data_ptr(),
               indices.data_ptr<int64_t>(), need ? workspace.data_ptr() : nullptr, need,
               stream_of(x)) != KGEN_OK)
    return py::none();
  return py::make_tuple(values, indices);
}

py::object permute(py::handle xo, py::handle permo) {
  at::Tensor x;
  std::vector<int64_t> perm;
  int code;
  if (!as_tensor(xo, &x) || !as_ints(permo, &perm)) return py::none();
  const int64_t rank = x.dim();
  if (!plain(x, &code) || rank > 8 || static_cast<int64_t>(perm.size()) != rank) return py::none();
  int p[8];
  int64_t shape[8];
  std::vector<int64_t> result(static_cast<size_t>(rank));
  unsigned seen = 0;
  for (int64_t k = 0; k < rank; ++k) {
    int64_t d;
    if (!wrap(perm[k], rank, &d) || (seen >> d & 1u)) return py::none();
    seen |= 1u << d;
    p[k] = static_cast<int>(d);
    shape[k] = x.size(k);
  }
  for (int64_t k = 0; k < rank; ++k) result[k] = shape[p[k]];
  const c10::cuda::CUDAGuard guard(x.device());
  at::Tensor out = at::empty(result, x.options());
  if (api.permute(x.element_size(), static_cast<int>(rank), shape, p, x.data_ptr(), out.data_ptr(),
                  stream_of(x)) != KGEN_OK)
    return py::none();
  return py::cast(out);
}

// shape: the result's, -1 keeps x's size there
py::object expand(py::handle xo, py::handle shapeo) {
  at::Tensor x;
  std::vector<int64_t> shape;
  int code;
  if (!as_tensor(xo, &x) || !as_ints(shapeo, &shape)) return py::none();
  const int64_t rank = x.dim(), out_rank = static_cast<int64_t>(shape.size());
  if (!plain(x, &code) || out_rank > 8 || out_rank < rank) return py::none();
  std::vector<int64_t> result(shape);
  const int64_t lead = out_rank - rank;
  for (int64_t k = 0; k < out_rank; ++k) {
    if (result[k] == -1 && k >= lead) result[k] = x.size(k - lead);
    if (result[k] < 0) return py::none();
  }
  const c10::cuda::CUDAGuard guard(x.device());
  at::Tensor out = at::empty(result, x.options());
  if (out.numel() == 0) return py::none();
  if (api.expand(static_cast<kgen_dtype_t>(code), static_cast<int>(rank), x.sizes().data(),
                 static_cast<int>(out_rank), shape.data(), x.data_ptr(), out.data_ptr(), stream_of(x)) != KGEN_OK)
    return py::none();
  return py::cast(out);
}

py::object where(py::handle co, py::handle xo, py::handle yo) {
  at::Tensor c, x, y;
  int ccode, code, ycode;
  if (!as_tensor(co, &c) || !as_tensor(xo, &x) || !as_tensor(yo, &y) || !plain(c, &ccode) || !plain(x, &code) ||
      !plain(y, &ycode) || ycode != code || (ccode != KGEN_BOOL && ccode != KGEN_UINT8) || c.dim() > 8 ||
      x.dim() > 8 || y.dim() > 8 ||
      c.device() != x.device() || y.device() != x.device())
    return py::none();
  const int ranks[3] = {static_cast<int>(c.dim()), static_cast<int>(x.dim()), static_cast<int>(y.dim())};
  const int64_t* shapes[3] = {c.sizes().data(), x.sizes().data(), y.sizes().data()};
  int out_rank = 0;
  int64_t dims[8];
  if (api.broadcast_shape(3, ranks, shapes, &out_rank, dims) != KGEN_OK) return py::none();
  const c10::cuda::CUDAGuard guard(x.device());
  at::Tensor out = at::empty(at::IntArrayRef(dims, static_cast<size_t>(out_rank)), x.options());
  if (out.numel() == 0) return py::none();
  if (api.where(static_cast<kgen_dtype_t>(code), ranks[0], shapes[0], ranks[1], shapes[1], ranks[2], shapes[2],
                c.data_ptr(), x.data_ptr(), y.data_ptr(), out.data_ptr(), stream_of(x)) != KGEN_OK)
    return py::none();
  return py::cast(out);
}

}  // namespace

PYBIND11_MODULE(_torch_ext, m) {
  m.doc() = "kgen's plain calls from PyTorch in C++ (None: take the Python path)";
  m.def("bind", &bind, "set the library's entry points from {name: address}");
  m.def("softmax", &softmax);
  m.def("softmax_backward", &softmax_backward);
  m.def("softmax_masked", &softmax_masked);
  m.def("reduce", &reduce);
  m.def("topk", &topk);
  m.def("permute", &permute);
  m.def("expand", &expand);
  m.def("where", &where);
}
