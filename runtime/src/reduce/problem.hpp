// A reduction problem after validation, and the launch plans (grid split and
// workspace) that the runtime and the generated launchers both compute from
// it, so that the workspace the runtime provides is the one a kernel uses.
#pragma once

#include <cstddef>
#include <cstdint>

#include "dtype.hpp"
#include "select.hpp"
#include "variant.hpp"

namespace kgen {
namespace reduce {

struct Problem {
  kgen_reduce_op_t op;
  kgen_dtype_t dtype;
  int64_t outer, reduce, inner;  // outer * inner >= 1 outputs; reduce >= 0
  const void* x;
  void* out;
  void* workspace;               // plan_for(...).bytes of scratch, or null when 0
  std::size_t workspace_bytes;
  const DeviceInfo* device;
};

inline bool is_arg(kgen_reduce_op_t op) { return op == KGEN_REDUCE_ARGMAX || op == KGEN_REDUCE_ARGMIN; }

// Bytes of one partial result: the accumulator of the op in the dtype's
// compute type; (value, int64 index) pairs for argmax/argmin.
inline int acc_bytes(kgen_reduce_op_t op, kgen_dtype_t dtype) {
  if (is_arg(op)) return 16;
  return dtype == KGEN_FLOAT64 ? 8 : 4;
}

// How a kernel splits the reduced axis across blocks.  With splits > 1 each
// of `groups` output groups (a row, or a tile of `width` outputs) gets
// `splits` partials in the workspace and a counter; the last block of a
// group combines them.
struct Plan {
  int64_t groups = 0, splits = 1, width = 1;
  std::size_t counter_bytes = 0, bytes = 0;  // workspace: counters, then partials
};

inline int64_t div_up(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Blocks of `block` threads that fill every SM once.
inline int64_t one_wave(const DeviceInfo& d, int block) {
  int64_t per_sm = d.max_threads_per_sm / block;
  if (per_sm > d.max_blocks_per_sm) per_sm = d.max_blocks_per_sm;
  return int64_t{d.sm_count} * (per_sm < 1 ? 1 : per_sm);
}

// Splits so that groups x splits blocks fill the GPU once and no more (a
// second, partial wave idles most SMs at the end: H100, 128 rows of 2^20
// float32 in 640 blocks of 512 threads, 95.6% of copy; in 128 blocks, 101.9%),
// while each block still loads at least `batches` batches of `chunk` items
// (fewer would spend more on the combine than on the loads), and a reduced
// extent of two batches or less stays one block.
inline int64_t splits_for(int64_t groups, int64_t items, int64_t chunk, int64_t wave, int64_t batches) {
  if (groups >= wave || items <= 2 * chunk) return 1;
  int64_t s = wave / groups;
  const int64_t most = items / (batches * chunk);
  if (s > most) s = most;
  if (s > 65535) s = 65535;  // grid.y / grid.x limits of the launch shapes
  return s < 1 ? 1 : s;
}

inline Plan finish_plan(Plan pl, const Problem& p) {
  if (pl.splits <= 1) {
    pl.splits = 1;
    return pl;
  }
  pl.counter_bytes = static_cast<std::size_t>(div_up(pl.groups * 4, 256) * 256);
  pl.bytes = pl.counter_bytes +
             static_cast<std::size_t>(pl.groups * pl.splits * pl.width) * acc_bytes(p.op, p.dtype);
  return pl;
}

// Rows of a tensor under this split down to one batch a block, larger ones
// and column tiles to two.  H100 reduce sweeps, seeds 1-3 (bench/NOTES.md
// reduce v7): at one batch, rows under 4 MiB ran 0.82-0.90x the time
// (argmax of 89559 float16 11.7 -> 9.6 us, argmin of 2^21 float16 11.2 ->
// 9.8); larger ones lost (a row of 20034089 float16 22.0 -> 24.3 us,
// 186 rows of 45707 bfloat16 14.2 -> 16.8), and so did column tiles (float32
// argmax over dim 0 of 511 x 21 5.4 -> 9.7 us).
constexpr int64_t kOneBatchSplitBytes = int64_t{4} << 20;

// inner == 1: rows of `reduce` elements; `split` allows several blocks a row.
inline Plan plan_rows(const Problem& p, int block, int pack, int fold, bool split) {
  Plan pl;
  pl.groups = p.outer;
  if (split) {
    const int64_t batches = p.outer * p.reduce * dtype_size(p.dtype) < kOneBatchSplitBytes ? 1 : 2;
    pl.splits = splits_for(p.outer, p.reduce / pack, int64_t{block} * fold, one_wave(*p.device, block), batches);
  }
  return finish_plan(pl, p);
}

// Whether rows read `pack` elements of `elem_bytes` a load are cut into
// head, packs and tail (reduction.cuh cut_row): a length the pack does not
// divide, or x off the pack's alignment.  Read by the launch (the cut
// kernel or the whole-row one), the heuristic and the tuning bucket.
inline bool rows_cut(const Problem& p, int64_t pack, int64_t elem_bytes) {
  return pack > 1 && (p.reduce % pack != 0 || reinterpret_cast<uintptr_t>(p.x) % (pack * elem_bytes) != 0);
}

// inner > 1: tiles of lanes x pack outputs; block / lanes threads down reduce.
inline Plan plan_cols(const Problem& p, int block, int pack, int fold, int lanes) {
  Plan pl;
  pl.width = int64_t{lanes} * pack;
  pl.groups = p.outer * div_up(p.inner / pack, lanes);
  pl.splits = splits_for(pl.groups, p.reduce, int64_t{block / lanes} * fold, one_wave(*p.device, block), 2);
  return finish_plan(pl, p);
}

// inner > 1, at most block / 2 packs of it: a block a slab (outer position),
// block / (inner / pack) rows of it a pass; splits share a slab's rows.
inline Plan plan_slab(const Problem& p, int block, int pack, int fold) {
  Plan pl;
  pl.width = p.inner;
  pl.groups = p.outer;
  const int64_t rows_a_pass = block / (p.inner / pack);
  pl.splits = splits_for(pl.groups, p.reduce, rows_a_pass * fold, one_wave(p.device[0], block), 2);
  return finish_plan(pl, p);
}

bool supports(const VariantInfo& v, const void* problem);
Score heuristic(const VariantInfo& v, const void* problem);
// The tuning bucket of a problem (runtime/src/tuning/bucket.hpp).
void bucket(const void* problem, char* out, int size);
// The selection cache's key (select.hpp's KeyFn): every field supports()
// and the heuristic read, pointers mod 16.
bool selection_key(const void* problem, ProblemKey* key);
// The plan of variant v for problem p (its workspace size in .bytes).
Plan plan_for(const VariantInfo& v, const Problem& p);

}  // namespace reduce
}  // namespace kgen
