// The randomized tests' invalid calls (gpu/test_random.cpp,
// host/test_random_invalid.cpp): for each family a small valid problem with
// one fault drawn from its catalogue, and the outcome the call must have
// (its status and the argument its message names first).  Plain C++ over
// the C API, like reference.hpp.
#pragma once

#include "reference.hpp"

namespace test {
namespace rnd {

// ---- invalid calls ----------------------------------------------------------
//
// An invalid call is drawn as a small valid problem with one fault put in.
// Its tensors lie in one block of memory (the arena: device memory on a GPU,
// host memory in the host tests), each past guard bytes; the caller fills
// the whole block with a pattern, makes the call, and checks that the
// status and the message are the expected ones and that not one byte of
// the block changed (inputs, outputs and the guards between them).

// Where a pointer argument points.
struct Ptr {
  enum Where { null, arena, host } where = arena;
  size_t offset = 0;  // bytes from the start of the arena (or of the host block)
};

// The memory the pointers of a call resolve against: the arena, and a block
// of host memory of the same size that stands in for device memory in the
// faults that only a device-pointer check catches.
struct Bases {
  unsigned char* arena;
  unsigned char* host;
};

inline void* resolve(const Ptr& p, Bases b) {
  switch (p.where) {
    case Ptr::null: return nullptr;
    case Ptr::arena: return b.arena + p.offset;
    case Ptr::host: return b.host + p.offset;
  }
  return nullptr;
}

struct Expect {
  kgen_status_t status;
  std::string name;  // the message starts with "name:"
};

struct InvalidCall {
  std::string problem, fault;
  Expect expect;
  size_t arena_bytes;
  std::function<kgen_status_t(Bases)> call;
};

enum class Family { softmax, softmax_backward, softmax_masked, reduce, permute, expand, where, topk };

inline const char* family_text(Family f) {
  switch (f) {
    case Family::softmax: return "softmax";
    case Family::softmax_backward: return "softmax_backward";
    case Family::softmax_masked: return "softmax_masked";
    case Family::reduce: return "reduce";
    case Family::permute: return "permute";
    case Family::expand: return "expand";
    case Family::where: return "where";
    case Family::topk: return "topk";
  }
  return "?";
}

// Lays tensors out in the arena: each at a 256-byte boundary past a guard
// of at least 64 bytes, then shifted by a few bytes; total() leaves room
// past the last tensor for a pointer that a fault moves by up to a
// tensor's length.
class Placer {
 public:
  size_t place(size_t bytes, size_t shift) {
    const size_t at = round_up(end_ + 64, 256) + shift;
    end_ = at + bytes;
    largest_ = std::max(largest_, bytes);
    return at;
  }
  size_t total() const { return round_up(end_ + 64 + largest_, 256) + 256; }

 private:
  static size_t round_up(size_t v, size_t to) { return (v + to - 1) / to * to; }
  size_t end_ = 0, largest_ = 0;
};

// The faults that apply to one drawn problem: each sets the fault's text
// and the expected outcome when applied.
class Faults {
 public:
  void add(std::function<void()> f) { list_.push_back(std::move(f)); }
  void apply_one(Rng& g) { list_[static_cast<size_t>(uniform(g, 0, static_cast<int64_t>(list_.size()) - 1))](); }

 private:
  std::vector<std::function<void()>> list_;
};

// Shared pieces of the faults.
inline int bad_dtype(Rng& g) { return static_cast<int>(pick(g, std::vector<int64_t>{8, 9, 42, -1, -7, INT_MAX, INT_MIN})); }
inline int64_t negative(Rng& g) { return chance(g, 0.2) ? INT64_MIN : -uniform(g, 1, 1000); }
// a byte offset that breaks the natural alignment of elements of `elem` bytes (elem >= 2)
inline size_t misalign(Rng& g, int elem) { return static_cast<size_t>(uniform(g, 1, elem - 1)); }
// A start, a multiple of `unit` from the arena's start, for a tensor of
// `bytes` bytes that overlaps the bytes [at, at + len) of another; not `at`
// itself when not_same (where the same start is in place, and allowed).
// Never before the arena's start; the Placer's tail room keeps it inside.
inline size_t overlapping(Rng& g, size_t at, size_t len, size_t bytes, size_t unit, bool not_same) {
  const size_t lo = at + 1 > bytes ? (at + 1 - bytes + unit - 1) / unit : 0, hi = (at + len - 1) / unit;
  for (;;) {
    const size_t s = static_cast<size_t>(uniform(g, static_cast<int64_t>(lo), static_cast<int64_t>(hi))) * unit;
    if (!not_same || s != at || lo == hi) return s;
  }
}
// two powers of two whose product is at least 2^62 (times any element size
// of 2 or more: past int64), each at most 2^max_log
inline std::pair<int64_t, int64_t> overflowing_pair(Rng& g, int max_log = 62) {
  const int a = static_cast<int>(uniform(g, 62 - max_log, max_log));
  const int b = static_cast<int>(std::min<int64_t>(max_log, 62 - a + uniform(g, 0, 1)));
  return {int64_t{1} << a, int64_t{1} << b};
}

// The operand a broadcast error names: at the first dim where sizes
// disagree, the first operand (in argument order) whose size is neither 1
// nor the size of the first operand that is not 1 there.  "" if none.
inline std::string broadcast_culprit(const std::vector<std::vector<int64_t>>& shapes,
                                     const std::vector<std::string>& names) {
  size_t r = 0;
  for (const auto& s : shapes) r = std::max(r, s.size());
  for (size_t k = 0; k < r; ++k) {
    int64_t size = 1;
    for (size_t i = 0; i < shapes.size(); ++i) {
      const int64_t j = static_cast<int64_t>(k) - static_cast<int64_t>(r - shapes[i].size());
      const int64_t s = j < 0 ? 1 : shapes[i][static_cast<size_t>(j)];
      if (s == 1) continue;
      if (size == 1) size = s;
      else if (s != size) return names[i];
    }
  }
  return "";
}

// -- softmax, log_softmax, any dim: kgen_softmax, kgen_log_softmax, kgen_softmax_dim

inline InvalidCall invalid_softmax(Rng& g, bool device_faults) {
  struct Args {
    int entry, log, dtype;
    int64_t outer, axis, inner;
    Ptr x, y;
  };
  Args a{static_cast<int>(uniform(g, 0, 2)), static_cast<int>(uniform(g, 0, 1)),
         static_cast<int>(uniform(g, KGEN_FLOAT32, KGEN_FLOAT64)), uniform(g, 1, 16), uniform(g, 1, 64), 1, {}, {}};
  const bool dim = a.entry == 2;
  if (dim && chance(g, 0.7)) a.inner = uniform(g, 2, 8);
  const int e = kgen_dtype_size(static_cast<kgen_dtype_t>(a.dtype));
  const auto n = static_cast<size_t>(a.outer * a.axis * a.inner), bytes = n * e;
  Placer pl;
  a.x.offset = pl.place(bytes, e * static_cast<size_t>(uniform(g, 0, 7)));
  a.y.offset = pl.place(bytes, e * static_cast<size_t>(uniform(g, 0, 7)));
  InvalidCall c;
  c.arena_bytes = pl.total();
  const char* outer_name = dim ? "outer" : "rows";
  const char* axis_name = dim ? "axis" : "cols";
  const char* extent_name = dim ? "outer x axis x inner" : "rows x cols";
  auto expect = [&c](std::string fault, std::string name) {
    c.fault = std::move(fault);
    c.expect = {KGEN_ERROR_INVALID_ARGUMENT, std::move(name)};
  };
  Faults f;
  f.add([&] {
    a.dtype = chance(g, 0.5) ? bad_dtype(g) : static_cast<int>(uniform(g, KGEN_INT32, KGEN_UINT8));
    expect("dtype " + std::to_string(a.dtype), "dtype");
  });
  f.add([&] {
    const int which = static_cast<int>(uniform(g, 0, dim ? 2 : 1));
    int64_t& v = which == 0 ? a.outer : which == 1 ? a.axis : a.inner;
    v = negative(g);
    expect("a negative extent", which == 0 ? outer_name : which == 1 ? axis_name : "inner");
  });
  f.add([&] {
    const auto p = overflowing_pair(g);
    a.outer = p.first, a.axis = p.second;
    if (dim && chance(g, 0.5)) std::swap(a.axis, a.inner);  // the overflow between axis and inner
    expect("a tensor past 64-bit sizes", extent_name);
  });
  f.add([&] { a.x.where = Ptr::null, expect("x null", "x"); });
  f.add([&] { a.y.where = Ptr::null, expect("y null", "y"); });
  f.add([&] { a.x.offset += misalign(g, e), expect("x misaligned", "x"); });
  f.add([&] { a.y.offset += misalign(g, e), expect("y misaligned", "y"); });
  if (n >= 2) f.add([&] { a.y.offset = overlapping(g, a.x.offset, bytes, bytes, e, true), expect("y partly overlaps x", "y"); });
  if (device_faults) {
    f.add([&] { a.x.where = Ptr::host, expect("x in host memory", "x"); });
    f.add([&] { a.y.where = Ptr::host, expect("y in host memory", "y"); });
  }
  c.problem = std::string(a.entry == 0 ? "kgen_softmax" : a.entry == 1 ? "kgen_log_softmax" : "kgen_softmax_dim") +
              " " + dtype_text(a.dtype) + " outer " + std::to_string(a.outer) + " axis " + std::to_string(a.axis) +
              " inner " + std::to_string(a.inner);
  f.apply_one(g);
  c.call = [a](Bases b) {
    const auto d = static_cast<kgen_dtype_t>(a.dtype);
    const void* x = resolve(a.x, b);
    void* y = resolve(a.y, b);
    if (a.entry == 0) return kgen_softmax(d, a.outer, a.axis, x, y, nullptr);
    if (a.entry == 1) return kgen_log_softmax(d, a.outer, a.axis, x, y, nullptr);
    return kgen_softmax_dim(a.log, d, a.outer, a.axis, a.inner, x, y, nullptr);
  };
  return c;
}

// -- the backward: kgen_softmax_backward, kgen_log_softmax_backward, kgen_softmax_backward_dim

inline InvalidCall invalid_softmax_backward(Rng& g, bool device_faults) {
  struct Args {
    int entry, log, dtype;
    int64_t outer, axis, inner;
    Ptr y, dy, dx;
  };
  Args a{static_cast<int>(uniform(g, 0, 2)), static_cast<int>(uniform(g, 0, 1)),
         static_cast<int>(uniform(g, KGEN_FLOAT32, KGEN_FLOAT64)), uniform(g, 1, 16), uniform(g, 1, 64), 1, {}, {}, {}};
  const bool dim = a.entry == 2;
  if (dim && chance(g, 0.7)) a.inner = uniform(g, 2, 8);
  const int e = kgen_dtype_size(static_cast<kgen_dtype_t>(a.dtype));
  const auto n = static_cast<size_t>(a.outer * a.axis * a.inner), bytes = n * e;
  Placer pl;
  for (Ptr* p : {&a.y, &a.dy, &a.dx}) p->offset = pl.place(bytes, e * static_cast<size_t>(uniform(g, 0, 7)));
  InvalidCall c;
  c.arena_bytes = pl.total();
  const char* outer_name = dim ? "outer" : "rows";
  const char* axis_name = dim ? "axis" : "cols";
  auto expect = [&c](std::string fault, std::string name) {
    c.fault = std::move(fault);
    c.expect = {KGEN_ERROR_INVALID_ARGUMENT, std::move(name)};
  };
  Faults f;
  f.add([&] {
    a.dtype = chance(g, 0.5) ? bad_dtype(g) : static_cast<int>(uniform(g, KGEN_INT32, KGEN_UINT8));
    expect("dtype " + std::to_string(a.dtype), "dtype");
  });
  f.add([&] {
    const int which = static_cast<int>(uniform(g, 0, dim ? 2 : 1));
    int64_t& v = which == 0 ? a.outer : which == 1 ? a.axis : a.inner;
    v = negative(g);
    expect("a negative extent", which == 0 ? outer_name : which == 1 ? axis_name : "inner");
  });
  f.add([&] {
    const auto p = overflowing_pair(g);
    a.outer = p.first, a.axis = p.second;
    expect("a tensor past 64-bit sizes", dim ? "outer x axis x inner" : "rows x cols");
  });
  const char* names[] = {"y", "dy", "dx"};
  Ptr* ptrs[] = {&a.y, &a.dy, &a.dx};
  for (int i = 0; i < 3; ++i) {
    f.add([&, i] { ptrs[i]->where = Ptr::null, expect(std::string(names[i]) + " null", names[i]); });
    f.add([&, i] { ptrs[i]->offset += misalign(g, e), expect(std::string(names[i]) + " misaligned", names[i]); });
    if (device_faults)
      f.add([&, i] { ptrs[i]->where = Ptr::host, expect(std::string(names[i]) + " in host memory", names[i]); });
  }
  if (n >= 2) {
    // dx may be y or dy itself (in place), never a part of either
    f.add([&] { a.dx.offset = overlapping(g, a.y.offset, bytes, bytes, e, true), expect("dx partly overlaps y", "dx"); });
    f.add([&] { a.dx.offset = overlapping(g, a.dy.offset, bytes, bytes, e, true), expect("dx partly overlaps dy", "dx"); });
  }
  c.problem = std::string(a.entry == 0 ? "kgen_softmax_backward" : a.entry == 1 ? "kgen_log_softmax_backward"
                                                                                   : "kgen_softmax_backward_dim") +
              " " + dtype_text(a.dtype) + " outer " + std::to_string(a.outer) + " axis " + std::to_string(a.axis) +
              " inner " + std::to_string(a.inner);
  f.apply_one(g);
  c.call = [a](Bases b) {
    const auto d = static_cast<kgen_dtype_t>(a.dtype);
    const void *y = resolve(a.y, b), *dy = resolve(a.dy, b);
    void* dx = resolve(a.dx, b);
    if (a.entry == 0) return kgen_softmax_backward(d, a.outer, a.axis, y, dy, dx, nullptr);
    if (a.entry == 1) return kgen_log_softmax_backward(d, a.outer, a.axis, y, dy, dx, nullptr);
    return kgen_softmax_backward_dim(a.log, d, a.outer, a.axis, a.inner, y, dy, dx, nullptr);
  };
  return c;
}

// -- kgen_softmax_masked

inline InvalidCall invalid_softmax_masked(Rng& g, bool device_faults) {
  struct Args {
    int dtype;
    int64_t batch, heads, queries, keys;
    kgen_softmax_mask_t m;
    bool null_struct;
    Ptr x, y, mask;
  };
  Args a{};
  a.dtype = static_cast<int>(uniform(g, KGEN_FLOAT32, KGEN_FLOAT64));
  a.batch = uniform(g, 1, 4), a.heads = uniform(g, 1, 4), a.queries = uniform(g, 1, 16), a.keys = uniform(g, 1, 64);
  a.m.scale = chance(g, 0.5) ? 1.0 : 0.125;
  a.m.kind = static_cast<kgen_mask_kind_t>(uniform(g, 0, 2));
  a.m.mask_batch = chance(g, 0.5) ? 1 : a.batch;
  a.m.mask_heads = chance(g, 0.5) ? 1 : a.heads;
  a.m.mask_queries = chance(g, 0.5) ? 1 : a.queries;
  a.m.causal = static_cast<int>(uniform(g, 0, 1));
  a.m.safe = static_cast<int>(uniform(g, 0, 1));
  const int e = kgen_dtype_size(static_cast<kgen_dtype_t>(a.dtype));
  const int mask_e = a.m.kind == KGEN_MASK_ADDITIVE ? e : 1;
  const auto n = static_cast<size_t>(a.batch * a.heads * a.queries * a.keys), bytes = n * e;
  const auto mask_bytes = static_cast<size_t>(a.m.mask_batch * a.m.mask_heads * a.m.mask_queries * a.keys) * mask_e;
  Placer pl;
  a.x.offset = pl.place(bytes, e * static_cast<size_t>(uniform(g, 0, 7)));
  a.y.offset = pl.place(bytes, e * static_cast<size_t>(uniform(g, 0, 7)));
  a.mask.offset = pl.place(mask_bytes, mask_e * static_cast<size_t>(uniform(g, 0, 7)));
  if (a.m.kind == KGEN_MASK_NONE && chance(g, 0.5)) a.mask.where = Ptr::null;
  InvalidCall c;
  c.arena_bytes = pl.total();
  auto expect = [&c](std::string fault, std::string name) {
    c.fault = std::move(fault);
    c.expect = {KGEN_ERROR_INVALID_ARGUMENT, std::move(name)};
  };
  Faults f;
  f.add([&] {
    a.dtype = chance(g, 0.5) ? bad_dtype(g) : static_cast<int>(uniform(g, KGEN_INT32, KGEN_UINT8));
    expect("dtype " + std::to_string(a.dtype), "dtype");
  });
  f.add([&] {
    const char* names[] = {"batch", "heads", "queries", "keys"};
    int64_t* v[] = {&a.batch, &a.heads, &a.queries, &a.keys};
    const auto which = static_cast<size_t>(uniform(g, 0, 3));
    *v[which] = negative(g);
    expect("a negative extent", names[which]);
  });
  f.add([&] { a.null_struct = true, expect("no kgen_softmax_mask_t", "mask"); });
  f.add([&] {
    a.m.kind = static_cast<kgen_mask_kind_t>(pick(g, std::vector<int64_t>{3, 4, 100, -1}));
    expect("mask kind " + std::to_string(static_cast<int>(a.m.kind)), "kind");
  });
  f.add([&] {
    a.m.scale = pick(g, std::vector<double>{NAN, INFINITY, -INFINITY});
    expect("scale " + std::to_string(a.m.scale), "scale");
  });
  f.add([&] {
    const char* names[] = {"mask_batch", "mask_heads", "mask_queries"};
    int64_t* v[] = {&a.m.mask_batch, &a.m.mask_heads, &a.m.mask_queries};
    const int64_t x_extent[] = {a.batch, a.heads, a.queries};
    const auto which = static_cast<size_t>(uniform(g, 0, 2));
    do *v[which] = uniform(g, -2, 40); while (*v[which] == 1 || *v[which] == x_extent[which]);
    expect(std::string(names[which]) + " " + std::to_string(*v[which]), names[which]);
  });
  f.add([&] {
    // the products in the order they are formed, every mask extent 1
    a.m.mask_batch = a.m.mask_heads = a.m.mask_queries = 1;
    const int which = static_cast<int>(uniform(g, 0, 2));
    if (which == 0) {
      const auto p = overflowing_pair(g);
      a.batch = p.first, a.heads = p.second;
      expect("batch x heads past 64-bit sizes", "batch x heads");
    } else if (which == 1) {
      a.batch = int64_t{1} << 20, a.heads = int64_t{1} << 20, a.queries = int64_t{1} << 30;
      expect("batch x heads x queries past 64-bit sizes", "batch x heads x queries");
    } else {
      a.batch = int64_t{1} << 10, a.heads = int64_t{1} << 20, a.queries = int64_t{1} << 20, a.keys = int64_t{1} << 20;
      expect("x past 64-bit sizes", "batch x heads x queries x keys");
    }
  });
  f.add([&] { a.x.where = Ptr::null, expect("x null", "x"); });
  f.add([&] { a.y.where = Ptr::null, expect("y null", "y"); });
  f.add([&] { a.x.offset += misalign(g, e), expect("x misaligned", "x"); });
  f.add([&] { a.y.offset += misalign(g, e), expect("y misaligned", "y"); });
  if (n >= 2) f.add([&] { a.y.offset = overlapping(g, a.x.offset, bytes, bytes, e, true), expect("y partly overlaps x", "y"); });
  if (a.m.kind != KGEN_MASK_NONE) {
    f.add([&] { a.mask.where = Ptr::null, expect("mask null", "mask"); });
    f.add([&] { a.y.offset = overlapping(g, a.mask.offset, mask_bytes, bytes, e, false), expect("y overlaps the mask", "y"); });
    if (a.m.kind == KGEN_MASK_ADDITIVE) f.add([&] { a.mask.offset += misalign(g, e), expect("mask misaligned", "mask"); });
    if (device_faults) f.add([&] { a.mask.where = Ptr::host, expect("mask in host memory", "mask"); });
  }
  if (device_faults) {
    f.add([&] { a.x.where = Ptr::host, expect("x in host memory", "x"); });
    f.add([&] { a.y.where = Ptr::host, expect("y in host memory", "y"); });
  }
  const char* kinds[] = {"none", "bool", "additive"};
  c.problem = std::string("kgen_softmax_masked ") + dtype_text(a.dtype) + " x " +
              show(std::vector<int64_t>{a.batch, a.heads, a.queries, a.keys}) + " mask " + kinds[a.m.kind] + " " +
              show(std::vector<int64_t>{a.m.mask_batch, a.m.mask_heads, a.m.mask_queries, a.keys}) +
              (a.m.causal ? " causal" : "") + (a.m.safe ? " safe" : "");
  f.apply_one(g);
  c.call = [a](Bases b) {
    kgen_softmax_mask_t m = a.m;
    m.mask = resolve(a.mask, b);
    return kgen_softmax_masked(static_cast<kgen_dtype_t>(a.dtype), a.batch, a.heads, a.queries, a.keys,
                               resolve(a.x, b), a.null_struct ? nullptr : &m, resolve(a.y, b), nullptr);
  };
  return c;
}

// -- kgen_reduce

inline InvalidCall invalid_reduce(Rng& g, bool device_faults) {
  struct Args {
    int op, dtype;
    int64_t outer, reduce, inner;
    Ptr x, out;
  };
  Args a{static_cast<int>(uniform(g, KGEN_REDUCE_SUM, KGEN_REDUCE_ARGMIN)), 0, uniform(g, 1, 16),
         uniform(g, 1, 256), chance(g, 0.5) ? 1 : uniform(g, 2, 16), {}, {}};
  a.dtype = static_cast<int>(uniform(g, KGEN_FLOAT32, a.op == KGEN_REDUCE_MEAN ? KGEN_FLOAT64 : KGEN_INT32));
  const bool arg = a.op == KGEN_REDUCE_ARGMAX || a.op == KGEN_REDUCE_ARGMIN;
  const int e = kgen_dtype_size(static_cast<kgen_dtype_t>(a.dtype)), oe = arg ? 8 : e;
  const auto x_bytes = static_cast<size_t>(a.outer * a.reduce * a.inner) * e;
  const auto out_bytes = static_cast<size_t>(a.outer * a.inner) * oe;
  Placer pl;
  a.x.offset = pl.place(x_bytes, e * static_cast<size_t>(uniform(g, 0, 7)));
  a.out.offset = pl.place(out_bytes, oe * static_cast<size_t>(uniform(g, 0, 7)));
  InvalidCall c;
  c.arena_bytes = pl.total();
  auto expect = [&c](std::string fault, std::string name) {
    c.fault = std::move(fault);
    c.expect = {KGEN_ERROR_INVALID_ARGUMENT, std::move(name)};
  };
  Faults f;
  f.add([&] {
    a.op = static_cast<int>(pick(g, std::vector<int64_t>{6, 7, 100, -1}));
    expect("op " + std::to_string(a.op), "op");
  });
  f.add([&] { a.dtype = bad_dtype(g), expect("dtype " + std::to_string(a.dtype), "dtype"); });
  f.add([&] {
    a.dtype = static_cast<int>(uniform(g, KGEN_INT64, KGEN_UINT8));
    expect(std::string("dtype ") + dtype_text(a.dtype), "dtype");
  });
  f.add([&] { a.op = KGEN_REDUCE_MEAN, a.dtype = KGEN_INT32, expect("mean of int32", "dtype"); });
  f.add([&] {
    const char* names[] = {"outer", "reduce", "inner"};
    int64_t* v[] = {&a.outer, &a.reduce, &a.inner};
    const auto which = static_cast<size_t>(uniform(g, 0, 2));
    *v[which] = negative(g);
    expect("a negative extent", names[which]);
  });
  f.add([&] {
    // undefined without elements; sum (0) and mean (NaN) are not
    if (a.op == KGEN_REDUCE_SUM || a.op == KGEN_REDUCE_MEAN)
      a.op = static_cast<int>(uniform(g, KGEN_REDUCE_MAX, KGEN_REDUCE_ARGMIN));
    a.reduce = 0;
    expect(std::string(reduce_op_text(a.op)) + " over reduce == 0", "reduce");
  });
  f.add([&] {
    // each product of the extents in the order they are checked
    const int which = static_cast<int>(uniform(g, 0, 2));
    if (which == 0) {
      const auto p = overflowing_pair(g);
      a.outer = p.first, a.inner = p.second;
      expect("outer x inner past 64-bit sizes", "outer x inner");
    } else if (which == 1) {
      a.outer = uniform(g, 1, 3), a.inner = 1, a.reduce = int64_t{1} << 62;
      expect("outer x reduce past 64-bit sizes", "outer x reduce");
    } else {
      const int lo = static_cast<int>(uniform(g, 0, 2));
      a.outer = int64_t{1} << lo, a.reduce = int64_t{1} << (32 - lo), a.inner = int64_t{1} << (32 - lo);
      expect("outer x reduce x inner past 64-bit sizes", "outer x reduce x inner");
    }
  });
  f.add([&] { a.x.where = Ptr::null, expect("x null", "x"); });
  f.add([&] { a.out.where = Ptr::null, expect("out null", "out"); });
  f.add([&] { a.x.offset += misalign(g, e), expect("x misaligned", "x"); });
  f.add([&] { a.out.offset += misalign(g, oe), expect("out misaligned", "out"); });
  f.add([&] { a.out.offset = overlapping(g, a.x.offset, x_bytes, out_bytes, oe, false), expect("out overlaps x", "out"); });
  if (device_faults) {
    f.add([&] { a.x.where = Ptr::host, expect("x in host memory", "x"); });
    f.add([&] { a.out.where = Ptr::host, expect("out in host memory", "out"); });
  }
  c.problem = std::string("kgen_reduce ") + reduce_op_text(a.op) + " " + dtype_text(a.dtype) + " " +
              show(std::vector<int64_t>{a.outer, a.reduce, a.inner});
  f.apply_one(g);
  c.call = [a](Bases b) {
    return kgen_reduce(static_cast<kgen_reduce_op_t>(a.op), static_cast<kgen_dtype_t>(a.dtype), a.outer, a.reduce,
                       a.inner, resolve(a.x, b), resolve(a.out, b), nullptr);
  };
  return c;
}

// -- kgen_permute

inline InvalidCall invalid_permute(Rng& g, bool device_faults) {
  struct Args {
    size_t elem;
    int rank;
    std::vector<int64_t> shape;  // 16 entries: a rank past the limit reads no further
    std::vector<int> perm;
    bool null_shape, null_perm;
    Ptr src, dst;
  };
  Args a{static_cast<size_t>(pick(g, std::vector<int64_t>{1, 2, 4, 8, 16, 3, 6, 12})),
         static_cast<int>(uniform(g, 1, 6)), {}, {}, false, false, {}, {}};
  a.shape = draw_shape(g, a.rank, 2048);
  a.perm.resize(static_cast<size_t>(a.rank));
  std::iota(a.perm.begin(), a.perm.end(), 0);
  std::shuffle(a.perm.begin(), a.perm.end(), g);
  a.shape.resize(16, 1);
  for (int k = a.rank; k < 16; ++k) a.perm.push_back(k);
  const auto bytes = static_cast<size_t>(numel(std::vector<int64_t>(a.shape.begin(), a.shape.begin() + a.rank))) * a.elem;
  Placer pl;
  a.src.offset = pl.place(bytes, static_cast<size_t>(uniform(g, 0, 31)));
  a.dst.offset = pl.place(bytes, static_cast<size_t>(uniform(g, 0, 31)));
  const std::vector<int64_t> shape0(a.shape.begin(), a.shape.begin() + a.rank);
  const std::vector<int> perm0(a.perm.begin(), a.perm.begin() + a.rank);
  InvalidCall c;
  c.arena_bytes = pl.total();
  auto expect = [&c](std::string fault, std::string name) {
    c.fault = std::move(fault);
    c.expect = {KGEN_ERROR_INVALID_ARGUMENT, std::move(name)};
  };
  Faults f;
  f.add([&] {
    a.elem = chance(g, 0.5) ? 0 : pick(g, std::vector<size_t>{(size_t{1} << 30) + 1, size_t{1} << 40, SIZE_MAX});
    expect("elem_size " + std::to_string(a.elem), "elem_size");
  });
  f.add([&] {
    a.rank = static_cast<int>(chance(g, 0.5) ? uniform(g, 9, 16) : -uniform(g, 1, 5));
    expect("rank " + std::to_string(a.rank), "rank");
  });
  f.add([&] { a.null_shape = true, expect("shape null", "shape"); });
  f.add([&] { a.null_perm = true, expect("perm null", "perm"); });
  f.add([&] {
    const auto k = static_cast<size_t>(uniform(g, 0, a.rank - 1));
    a.shape[k] = negative(g);
    expect("shape[" + std::to_string(k) + "] negative", "shape[" + std::to_string(k) + "]");
  });
  f.add([&] {
    const auto k = static_cast<size_t>(uniform(g, 0, a.rank - 1));
    a.perm[k] = static_cast<int>(chance(g, 0.5) ? a.rank + uniform(g, 0, 5) : -uniform(g, 1, 5));
    expect("perm[" + std::to_string(k) + "] = " + std::to_string(a.perm[k]), "perm");
  });
  if (a.rank >= 2)
    f.add([&] {
      const auto i = static_cast<size_t>(uniform(g, 0, a.rank - 1));
      size_t j = i;
      while (j == i) j = static_cast<size_t>(uniform(g, 0, a.rank - 1));
      a.perm[j] = a.perm[i];
      expect("perm repeats a dim", "perm");
    });
  if (a.rank >= 2 || a.elem >= 2)
    f.add([&] {
      if (a.rank >= 2) {
        a.shape[0] = int64_t{1} << uniform(g, 31, 40);
        a.shape[static_cast<size_t>(a.rank - 1)] = int64_t{1} << 33;
      } else {
        a.shape[0] = INT64_MAX / static_cast<int64_t>(a.elem) + 1;
      }
      expect("a tensor past 64-bit sizes", "shape");
    });
  f.add([&] { a.src.where = Ptr::null, expect("src null", "src"); });
  f.add([&] { a.dst.where = Ptr::null, expect("dst null", "dst"); });
  f.add([&] {
    // never in place, not even dst == src
    a.dst.offset = chance(g, 0.2) ? a.src.offset : overlapping(g, a.src.offset, bytes, bytes, 1, false);
    expect("dst overlaps src", "dst");
  });
  if (device_faults) {
    f.add([&] { a.src.where = Ptr::host, expect("src in host memory", "src"); });
    f.add([&] { a.dst.where = Ptr::host, expect("dst in host memory", "dst"); });
  }
  c.problem = "kgen_permute elem " + std::to_string(a.elem) + " shape " + show(shape0) + " perm " + show(perm0);
  f.apply_one(g);
  c.call = [a](Bases b) {
    return kgen_permute(a.elem, a.rank, a.null_shape ? nullptr : a.shape.data(), a.null_perm ? nullptr : a.perm.data(),
                        resolve(a.src, b), resolve(a.dst, b), nullptr);
  };
  return c;
}

// -- kgen_expand

inline InvalidCall invalid_expand(Rng& g, bool device_faults) {
  struct Args {
    int dtype;
    int src_rank, dst_rank;
    std::vector<int64_t> src_shape, dst_shape;  // 16 entries each
    bool null_src_shape, null_dst_shape;
    Ptr src, dst;
  };
  Args a{};
  a.dtype = static_cast<int>(uniform(g, KGEN_FLOAT32, KGEN_UINT8));
  a.dst_rank = static_cast<int>(uniform(g, 1, 6));
  a.src_rank = static_cast<int>(uniform(g, 0, a.dst_rank));
  const std::vector<int64_t> out = draw_shape(g, a.dst_rank, 2048);
  const int added = a.dst_rank - a.src_rank;
  for (int k = 0; k < a.src_rank; ++k) a.src_shape.push_back(chance(g, 0.5) ? out[k + added] : 1);
  a.dst_shape = out;
  for (int k = added; k < a.dst_rank; ++k)
    if (chance(g, 0.2)) a.dst_shape[k] = -1, a.src_shape[k - added] = out[k];  // -1 keeps src's size
  const std::vector<int64_t> src0 = a.src_shape, dst0 = a.dst_shape;
  a.src_shape.resize(16, 1);
  a.dst_shape.resize(16, 1);
  const int e = kgen_dtype_size(static_cast<kgen_dtype_t>(a.dtype));
  const auto src_bytes = static_cast<size_t>(numel(src0)) * e, dst_bytes = static_cast<size_t>(numel(out)) * e;
  Placer pl;
  a.src.offset = pl.place(src_bytes, static_cast<size_t>(uniform(g, 0, 31)));
  a.dst.offset = pl.place(dst_bytes, static_cast<size_t>(uniform(g, 0, 31)));
  InvalidCall c;
  c.arena_bytes = pl.total();
  auto expect = [&c](std::string fault, std::string name) {
    c.fault = std::move(fault);
    c.expect = {KGEN_ERROR_INVALID_ARGUMENT, std::move(name)};
  };
  auto dst_name = [](int k) { return "dst_shape[" + std::to_string(k) + "]"; };
  Faults f;
  f.add([&] { a.dtype = bad_dtype(g), expect("dtype " + std::to_string(a.dtype), "dtype"); });
  f.add([&] {
    a.src_rank = static_cast<int>(chance(g, 0.5) ? uniform(g, 9, 16) : -uniform(g, 1, 5));
    expect("src_rank " + std::to_string(a.src_rank), "src_rank");
  });
  f.add([&] {
    a.dst_rank = static_cast<int>(chance(g, 0.5) ? uniform(g, 9, 16) : -uniform(g, 1, 5));
    expect("dst_rank " + std::to_string(a.dst_rank), "dst_rank");
  });
  if (a.src_rank >= 1) {
    f.add([&] {
      a.dst_rank = static_cast<int>(uniform(g, 0, a.src_rank - 1));
      expect("dst_rank below src_rank", "dst_rank");
    });
    f.add([&] { a.null_src_shape = true, expect("src_shape null", "src_shape"); });
    f.add([&] {
      const auto k = static_cast<size_t>(uniform(g, 0, a.src_rank - 1));
      a.src_shape[k] = negative(g);
      expect("src_shape[" + std::to_string(k) + "] negative", "src_shape[" + std::to_string(k) + "]");
    });
  }
  f.add([&] { a.null_dst_shape = true, expect("dst_shape null", "dst_shape"); });
  f.add([&] {
    const int k = static_cast<int>(uniform(g, 0, a.dst_rank - 1));
    a.dst_shape[static_cast<size_t>(k)] = chance(g, 0.2) ? INT64_MIN : -uniform(g, 2, 1000);
    expect(dst_name(k) + " below -1", dst_name(k));
  });
  if (added >= 1)
    f.add([&] {
      const int k = static_cast<int>(uniform(g, 0, added - 1));
      a.dst_shape[static_cast<size_t>(k)] = -1;
      expect(dst_name(k) + " -1 on an added dim", dst_name(k));
    });
  std::vector<int> grown;  // dims of dst whose src size is neither 1 nor -1's
  for (int k = added; k < a.dst_rank; ++k)
    if (src0[static_cast<size_t>(k - added)] != 1) grown.push_back(k);
  if (!grown.empty())
    f.add([&] {
      const int k = pick(g, grown);
      a.dst_shape[static_cast<size_t>(k)] = out[static_cast<size_t>(k)] + uniform(g, 1, 5) * (chance(g, 0.5) ? 1 : -1);
      if (a.dst_shape[static_cast<size_t>(k)] < 0 || a.dst_shape[static_cast<size_t>(k)] == 1)
        a.dst_shape[static_cast<size_t>(k)] = out[static_cast<size_t>(k)] + 1;
      expect(dst_name(k) + " grows a dim that is not 1", dst_name(k));
    });
  f.add([&] {
    // two added leading dims whose product with the rest overflows
    a.src_shape.assign(16, 1);
    a.src_rank = 1;
    a.dst_rank = 3;
    a.dst_shape[0] = int64_t{1} << 32, a.dst_shape[1] = int64_t{1} << 32, a.dst_shape[2] = 1;
    expect("dst past 64-bit sizes", "dst_shape");
  });
  f.add([&] { a.src.where = Ptr::null, expect("src null", "src"); });
  f.add([&] { a.dst.where = Ptr::null, expect("dst null", "dst"); });
  f.add([&] { a.dst.offset = overlapping(g, a.src.offset, src_bytes, dst_bytes, 1, false), expect("dst overlaps src", "dst"); });
  if (device_faults) {
    f.add([&] { a.src.where = Ptr::host, expect("src in host memory", "src"); });
    f.add([&] { a.dst.where = Ptr::host, expect("dst in host memory", "dst"); });
  }
  c.problem = std::string("kgen_expand ") + dtype_text(a.dtype) + " " + show(src0) + " -> " + show(dst0);
  f.apply_one(g);
  c.call = [a](Bases b) {
    return kgen_expand(static_cast<kgen_dtype_t>(a.dtype), a.src_rank, a.null_src_shape ? nullptr : a.src_shape.data(),
                       a.dst_rank, a.null_dst_shape ? nullptr : a.dst_shape.data(), resolve(a.src, b),
                       resolve(a.dst, b), nullptr);
  };
  return c;
}

// -- kgen_where

inline InvalidCall invalid_where(Rng& g, bool device_faults) {
  struct Args {
    int dtype;
    int rank[3];
    std::vector<int64_t> shape[3];  // cond, x, y; 16 entries each
    bool null_shape[3];
    Ptr in[3], out;
  };
  Args a{};
  a.dtype = static_cast<int>(uniform(g, KGEN_FLOAT32, KGEN_UINT8));
  const int out_rank = static_cast<int>(uniform(g, 1, 5));
  const std::vector<int64_t> out = draw_shape(g, out_rank, 2048);
  std::vector<int64_t> shape0[3];
  for (int i = 0; i < 3; ++i) {
    a.rank[i] = static_cast<int>(uniform(g, 0, out_rank));
    for (int k = out_rank - a.rank[i]; k < out_rank; ++k) shape0[i].push_back(chance(g, 0.6) ? out[k] : 1);
  }
  const std::vector<int64_t> out0 = broadcast_of({&shape0[0], &shape0[1], &shape0[2]});
  for (int i = 0; i < 3; ++i) (a.shape[i] = shape0[i]).resize(16, 1);
  const int e = kgen_dtype_size(static_cast<kgen_dtype_t>(a.dtype));
  const int unit[3] = {1, e, e};
  size_t in_bytes[3];
  const auto out_bytes = static_cast<size_t>(numel(out0)) * e;
  Placer pl;
  for (int i = 0; i < 3; ++i) {
    in_bytes[i] = static_cast<size_t>(numel(shape0[i])) * unit[i];
    a.in[i].offset = pl.place(in_bytes[i], unit[i] * static_cast<size_t>(uniform(g, 0, 7)));
  }
  a.out.offset = pl.place(out_bytes, e * static_cast<size_t>(uniform(g, 0, 7)));
  InvalidCall c;
  c.arena_bytes = pl.total();
  auto expect = [&c](std::string fault, std::string name) {
    c.fault = std::move(fault);
    c.expect = {KGEN_ERROR_INVALID_ARGUMENT, std::move(name)};
  };
  const std::string names[3] = {"cond", "x", "y"};
  Faults f;
  f.add([&] { a.dtype = bad_dtype(g), expect("dtype " + std::to_string(a.dtype), "dtype"); });
  for (int i = 0; i < 3; ++i) {
    f.add([&, i] {
      a.rank[i] = static_cast<int>(chance(g, 0.5) ? uniform(g, 9, 16) : -uniform(g, 1, 5));
      expect(names[i] + "_rank " + std::to_string(a.rank[i]), names[i] + "_rank");
    });
    if (a.rank[i] >= 1) {
      f.add([&, i] { a.null_shape[i] = true, expect(names[i] + "_shape null", names[i] + "_shape"); });
      f.add([&, i] {
        const auto k = static_cast<size_t>(uniform(g, 0, a.rank[i] - 1));
        a.shape[i][k] = negative(g);
        const std::string name = names[i] + "_shape[" + std::to_string(k) + "]";
        expect(name + " negative", name);
      });
    }
    f.add([&, i] { a.in[i].where = Ptr::null, expect(names[i] + " null", names[i]); });
    if (i > 0 && e > 1) f.add([&, i] { a.in[i].offset += misalign(g, e), expect(names[i] + " misaligned", names[i]); });
    if (device_faults) f.add([&, i] { a.in[i].where = Ptr::host, expect(names[i] + " in host memory", names[i]); });
  }
  // a size of one operand that disagrees with another operand's (not 1) at the same dim
  std::vector<std::pair<int, int>> spots;  // (operand, its dim)
  for (int i = 0; i < 3; ++i)
    for (int k = 0; k < a.rank[i]; ++k) {
      const int K = out_rank - a.rank[i] + k;
      for (int j = 0; j < 3; ++j) {
        const int kj = K - (out_rank - a.rank[j]);
        if (j != i && kj >= 0 && shape0[j][static_cast<size_t>(kj)] != 1) {
          spots.emplace_back(i, k);
          break;
        }
      }
    }
  if (!spots.empty())
    f.add([&] {
      const auto s = pick(g, spots);
      auto& d = a.shape[s.first][static_cast<size_t>(s.second)];
      const int64_t other = out[static_cast<size_t>(out_rank - a.rank[s.first] + s.second)];
      d = other + uniform(g, 1, 3);
      std::vector<std::vector<int64_t>> shapes;
      for (int i = 0; i < 3; ++i) shapes.emplace_back(a.shape[i].begin(), a.shape[i].begin() + a.rank[i]);
      expect(names[s.first] + " does not broadcast", broadcast_culprit(shapes, {"cond", "x", "y"}));
    });
  f.add([&] {
    // x of 2^64 elements, cond and y scalars
    a.rank[0] = a.rank[2] = 0;
    a.rank[1] = 2;
    a.shape[1][0] = int64_t{1} << 32, a.shape[1][1] = int64_t{1} << 32;
    expect("out past 64-bit sizes", "out shape");
  });
  f.add([&] { a.out.where = Ptr::null, expect("out null", "out"); });
  if (e > 1) f.add([&] { a.out.offset += misalign(g, e), expect("out misaligned", "out"); });
  for (int i = 1; i < 3; ++i) {
    // out may be x or y itself only where that input has out's shape
    if (numel(shape0[i]) + numel(out0) > 2)
      f.add([&, i] {
        a.out.offset = overlapping(g, a.in[i].offset, in_bytes[i], out_bytes, static_cast<size_t>(e), true);
        expect("out partly overlaps " + names[i], "out");
      });
    if (numel(shape0[i]) < numel(out0))
      f.add([&, i] { a.out.offset = a.in[i].offset, expect("out is the broadcast " + names[i], "out"); });
  }
  if (device_faults) f.add([&] { a.out.where = Ptr::host, expect("out in host memory", "out"); });
  c.problem = std::string("kgen_where ") + dtype_text(a.dtype) + " cond " + show(shape0[0]) + " x " + show(shape0[1]) +
              " y " + show(shape0[2]);
  f.apply_one(g);
  c.call = [a](Bases b) {
    return kgen_where(static_cast<kgen_dtype_t>(a.dtype), a.rank[0], a.null_shape[0] ? nullptr : a.shape[0].data(),
                      a.rank[1], a.null_shape[1] ? nullptr : a.shape[1].data(), a.rank[2],
                      a.null_shape[2] ? nullptr : a.shape[2].data(), resolve(a.in[0], b), resolve(a.in[1], b),
                      resolve(a.in[2], b), resolve(a.out, b), nullptr);
  };
  return c;
}

// -- kgen_topk (the workspace faults need a device: the GPU tests draw those)

inline InvalidCall invalid_topk(Rng& g, bool device_faults) {
  struct Args {
    int dtype;
    int64_t batch, n, k;
    int largest, sorted;
    Ptr x, values, indices;
  };
  Args a{static_cast<int>(uniform(g, KGEN_FLOAT32, KGEN_INT32)), uniform(g, 1, 16), uniform(g, 1, 256), 0,
         static_cast<int>(uniform(g, 0, 1)), static_cast<int>(uniform(g, 0, 1)), {}, {}, {}};
  a.k = uniform(g, 1, a.n);
  const int e = kgen_dtype_size(static_cast<kgen_dtype_t>(a.dtype));
  const auto x_bytes = static_cast<size_t>(a.batch * a.n) * e, v_bytes = static_cast<size_t>(a.batch * a.k) * e,
             i_bytes = static_cast<size_t>(a.batch * a.k) * 8;
  Placer pl;
  a.x.offset = pl.place(x_bytes, e * static_cast<size_t>(uniform(g, 0, 7)));
  a.values.offset = pl.place(v_bytes, e * static_cast<size_t>(uniform(g, 0, 7)));
  a.indices.offset = pl.place(i_bytes, 8 * static_cast<size_t>(uniform(g, 0, 3)));
  InvalidCall c;
  c.arena_bytes = pl.total();
  auto expect = [&c](std::string fault, std::string name, kgen_status_t st = KGEN_ERROR_INVALID_ARGUMENT) {
    c.fault = std::move(fault);
    c.expect = {st, std::move(name)};
  };
  Faults f;
  f.add([&] { a.dtype = bad_dtype(g), expect("dtype " + std::to_string(a.dtype), "dtype"); });
  f.add([&] {
    a.dtype = static_cast<int>(uniform(g, KGEN_INT64, KGEN_UINT8));
    expect(std::string("dtype ") + dtype_text(a.dtype), "dtype");
  });
  f.add([&] { a.batch = negative(g), expect("batch negative", "batch"); });
  f.add([&] { a.n = negative(g), expect("n negative", "n"); });
  f.add([&] { a.k = negative(g), expect("k negative", "k"); });
  f.add([&] {
    a.k = a.n + (chance(g, 0.5) ? 1 : uniform(g, 2, 1000));
    if (chance(g, 0.2)) a.batch = 0;  // an error even without rows, as in PyTorch
    expect("k past n", "k");
  });
  f.add([&] {
    a.n = (int64_t{1} << 32) + uniform(g, 0, 1000);
    expect("a row of 2^32 elements or more", "n", KGEN_ERROR_UNSUPPORTED);
  });
  f.add([&] {
    a.batch = (int64_t{1} << 31) + uniform(g, 0, 1000), a.n = (int64_t{1} << 31) + uniform(g, 0, 1000);
    expect("batch x n past 64-bit sizes", "batch x n");
  });
  f.add([&] { a.x.where = Ptr::null, expect("x null", "x"); });
  f.add([&] { a.values.where = Ptr::null, expect("values null", "values"); });
  f.add([&] { a.indices.where = Ptr::null, expect("indices null", "indices"); });
  f.add([&] { a.x.offset += misalign(g, e), expect("x misaligned", "x"); });
  f.add([&] { a.values.offset += misalign(g, e), expect("values misaligned", "values"); });
  f.add([&] { a.indices.offset += misalign(g, 8), expect("indices misaligned", "indices"); });
  f.add([&] {
    a.values.offset = overlapping(g, a.x.offset, x_bytes, v_bytes, static_cast<size_t>(e), false);
    expect("values overlap x", "values");
  });
  f.add([&] {
    a.indices.offset = overlapping(g, a.values.offset, v_bytes, i_bytes, 8, false);
    expect("indices overlap values", "indices");
  });
  f.add([&] {
    a.indices.offset = overlapping(g, a.x.offset, x_bytes, i_bytes, 8, false);
    expect("indices overlap x", "indices");
  });
  if (device_faults) {
    f.add([&] { a.x.where = Ptr::host, expect("x in host memory", "x"); });
    f.add([&] { a.values.where = Ptr::host, expect("values in host memory", "values"); });
    f.add([&] { a.indices.where = Ptr::host, expect("indices in host memory", "indices"); });
  }
  c.problem = std::string("kgen_topk ") + dtype_text(a.dtype) + " batch " + std::to_string(a.batch) + " n " +
              std::to_string(a.n) + " k " + std::to_string(a.k) + (a.largest ? " largest" : " smallest") +
              (a.sorted ? " sorted" : " unsorted");
  f.apply_one(g);
  c.call = [a](Bases b) {
    return kgen_topk(static_cast<kgen_dtype_t>(a.dtype), a.batch, a.n, a.k, a.largest, a.sorted, resolve(a.x, b),
                     resolve(a.values, b), static_cast<int64_t*>(resolve(a.indices, b)), nullptr, 0, nullptr);
  };
  return c;
}

// One invalid call of the family; device_faults adds the faults that only a
// device-pointer check catches (an input or output in ordinary host memory).
inline InvalidCall draw_invalid(Family f, Rng& g, bool device_faults) {
  switch (f) {
    case Family::softmax: return invalid_softmax(g, device_faults);
    case Family::softmax_backward: return invalid_softmax_backward(g, device_faults);
    case Family::softmax_masked: return invalid_softmax_masked(g, device_faults);
    case Family::reduce: return invalid_reduce(g, device_faults);
    case Family::permute: return invalid_permute(g, device_faults);
    case Family::expand: return invalid_expand(g, device_faults);
    case Family::where: return invalid_where(g, device_faults);
    case Family::topk: return invalid_topk(g, device_faults);
  }
  return {};
}

// The message names `name` first, as every validation message does ("name: ...").
inline bool message_names(const std::string& message, const std::string& name) {
  return message.rfind(name + ":", 0) == 0;
}

// Bytes that differ between two copies of the arena, and the first one.
inline size_t changed_bytes(const std::vector<unsigned char>& before, const std::vector<unsigned char>& after,
                            size_t* first) {
  size_t n = 0;
  *first = SIZE_MAX;
  for (size_t i = 0; i < before.size() && i < after.size(); ++i)
    if (before[i] != after[i] && n++ == 0) *first = i;
  return n;
}

}  // namespace rnd
}  // namespace test
