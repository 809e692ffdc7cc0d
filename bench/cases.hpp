// The problems kgen-bench and kgen-tune measure: a line of key=value words
// (a line of tuning/problems/<family>.txt or of a held-out file, or one that
// kgen-bench makes from its shape tables) made into device buffers and a way
// to launch any variant of the family on them, through the public C API's
// *_variant entry points (the path users' calls take, validation and
// simplification included).
//
// A line is key=value words; `dtypes=f32,f16` limits it to those dtypes.
//   softmax           outer=R axis=C [inner=I] [log=1]
//                     [mask=bool|additive|none [causal=1] [batch=B heads=H]
//                      [mask_batch=1|B] [mask_heads=1|H] [mask_queries=1|R]]
//                     (a mask makes it the masked softmax of 0.125 x, x seen
//                     as (batch, heads, outer, axis) with batch and heads 1
//                     unless given, the mask as (mask_batch, mask_heads,
//                     mask_queries, axis), by default (1, 1, outer, axis);
//                     batch=, heads= and mask_*= need mask=)
//   softmax_backward  outer=R axis=C [inner=I] [log=1]
//   reduce            outer=O reduce=R inner=I [op=sum|mean|max|min|argmax|argmin]
//   permute           shape=AxBxC perm=2,0,1        (the dtype gives the element size)
//   expand            src=Ax1xC dst=AxBxC           (a shape () is a scalar)
//   where             cond=AxB x=AxB y=1xB          (cond: one byte an element)
//   topk              batch=B n=N k=K               (largest, sorted)
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kgen/kgen.h"

namespace cases {

struct Case {
  std::string family, dtype, text;  // text: the line's words without dtypes=
  // the bytes GB/s counts: each input read once and each output written
  // once (reduce and topk: the input only; their outputs are small)
  double traffic = 0;
  int sets = 1;  // buffer sets, rotated so that together they exceed the L2

  virtual ~Case();
  // Allocates and fills the buffers (cases are made ahead, measured one at
  // a time); release() frees them.
  void prepare();
  void release();
  // Launches `variant` (null: the library's own selection) on buffer set
  // `set`; KGEN_ERROR_UNSUPPORTED for a variant that does not support the
  // problem.
  virtual kgen_status_t run(const char* variant, int set) = 0;
  // The variant the library selects for this problem.
  virtual kgen_status_t selected(const char** variant) = 0;
  // Variants not worth a single run here (they would take seconds).
  virtual bool hopeless(const std::string&) const { return false; }

 protected:
  // the tensors: their bytes and fill (a kgen_dtype_t of random values, or
  // -1: none), set by each family's constructor
  std::vector<size_t> tensor_bytes;
  std::vector<int> tensor_fill;
  // per set, the buffers of each tensor, after prepare()
  std::vector<std::vector<void*>> buffers;
  virtual void prepared() {}  // extra set-up once the buffers exist
  virtual void released() {}
};

// The words of one line.
using Words = std::map<std::string, std::string>;
bool parse_line(const std::string& line, Words* words, std::string* error);

// The case of one problem line for one dtype; null with *error when the
// line is malformed.
std::unique_ptr<Case> make_case(const std::string& family, const std::string& dtype, const Words& words,
                                const cudaDeviceProp& prop, std::string* error);

// The dtypes a line applies to, out of `wanted`.
std::vector<std::string> line_dtypes(const Words& words, const std::vector<std::string>& wanted);

}  // namespace cases
