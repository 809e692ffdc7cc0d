// A softmax problem after validation: what capability checks, the heuristic
// and the generated launchers read.  One struct for both directions and both
// layouts, so that the two families share their rules.
#pragma once

#include <cstdint>

#include "dtype.hpp"
#include "select.hpp"
#include "variant.hpp"

namespace kgen {
namespace softmax {

// The masked softmax's extra inputs (forward, last dim): x is (batch, heads,
// queries, keys) and the mask row of x's row r sits at
// b * batch_stride + h * head_stride + q * query_stride elements (a stride
// of 0 broadcasts).
struct Mask {
  kgen_mask_kind_t kind;
  const void* data;  // nullptr for KGEN_MASK_NONE
  double scale;
  int64_t heads, queries;
  int64_t batch_stride, head_stride, query_stride;
  bool causal, safe;
};

struct Problem {
  kgen_dtype_t dtype;
  bool log;               // log_softmax
  int64_t rows, cols;     // outer and axis: rows >= 1, cols >= 1
  const void* x;          // forward: x; backward: the forward's output y
  void* y;                // forward: y; backward: dx
  const DeviceInfo* device;
  int64_t inner = 1;      // > 1: the softmax dim is not the last (strided tiers)
  const void* dy = nullptr;    // backward only: the gradient of y
  const Mask* mask = nullptr;  // forward, inner == 1 only
  void* workspace = nullptr;   // split tier: workspace_bytes(variant, problem) bytes
};

inline bool backward(const Problem& p) { return p.dy != nullptr; }

// The selection cache's key of a Problem (select.hpp's KeyFn; rules.cpp).
bool selection_key(const void* problem, ProblemKey* key);

// Bytes one element takes in the smem tier's row cache: the forward keeps x
// in its own dtype, the masked forward keeps scale * x + mask in the compute
// type (so that half inputs are not rounded after scaling), the backward
// keeps y and dy.
inline int64_t smem_element_bytes(const Problem& p, int elem_size) {
  if (backward(p)) return 2 * elem_size;
  if (p.mask) return elem_size == 8 ? 8 : 4;
  return elem_size;
}
// Shared memory the smem tier needs for one row, beyond its static scratch.
inline int64_t smem_row_bytes(const Problem& p, int elem_size) {
  return p.cols * smem_element_bytes(p, elem_size);
}
// Static shared memory of the block reductions, kept free when sizing rows.
constexpr int64_t kSmemReserve = 1024;

// Blocks of the smem tier one SM holds at this block size (by shared memory,
// threads and the block limit; at least 1).  Used by the heuristic and by the
// launcher's grid size.
inline int64_t smem_blocks_per_sm(const Problem& p, int block, int elem_size) {
  const DeviceInfo& d = *p.device;
  const int64_t by_smem = static_cast<int64_t>(d.smem_per_sm) / (smem_row_bytes(p, elem_size) + kSmemReserve);
  int64_t blocks = d.max_threads_per_sm / block;
  if (by_smem < blocks) blocks = by_smem;
  if (d.max_blocks_per_sm < blocks) blocks = d.max_blocks_per_sm;
  return blocks < 1 ? 1 : blocks;
}

// Strided tiers: a block holds up to strided_max_warps warps (the forward's
// register tile fits 64 registers a thread, so 1024 threads; the backward
// holds y and dy, ~100-115 registers, so 512); a warp covers 32 / col_lanes
// axis positions per round.
constexpr int kStridedMaxWarpsForward = 32;
constexpr int kStridedMaxWarpsBackward = 16;
constexpr int strided_max_warps(bool backward) {
  return backward ? kStridedMaxWarpsBackward : kStridedMaxWarpsForward;
}
inline int64_t strided_axis_per_warp(int col_lanes, int axis_per_thread) {
  return int64_t{32 / col_lanes} * axis_per_thread;
}
// The longest axis a register-tile variant covers.
inline int64_t strided_reach(int col_lanes, int axis_per_thread, bool backward) {
  return strided_max_warps(backward) * strided_axis_per_warp(col_lanes, axis_per_thread);
}
// Warps the register-tile strided kernel launches to cover the axis.
inline int strided_warps(const Problem& p, int col_lanes, int axis_per_thread) {
  const int64_t per = strided_axis_per_warp(col_lanes, axis_per_thread);
  return static_cast<int>((p.cols + per - 1) / per);
}

// The column tier's block (threads), a pack a thread each of its columns.
constexpr int kColumnBlock = 128;

// Blocks of `block` threads the device holds at once, by threads alone
// (block 32: the warps of a wave).
inline int64_t resident_blocks(const DeviceInfo& d, int block) {
  return int64_t{d.sm_count} * (d.max_threads_per_sm / block);
}

// The split tier: a row (or an axis x inner slab) cut into this
// many chunks, a CTA each, so that the rows fill one wave of `block`-thread
// CTAs, with at least 16 bytes a thread.  Each CTA leaves a partial of at
// most kSplitPartialBytes (the forward's (max, sum), the backward's sum) in
// the workspace, one per inner position.
constexpr int64_t kSplitPartialBytes = 16;
inline int64_t split_parts(const Problem& p, int block, int elem_size) {
  const int64_t resident = resident_blocks(*p.device, block);
  const int64_t most = p.cols * p.inner * elem_size / 16 / block;
  int64_t parts = (resident + p.rows - 1) / p.rows;
  if (parts > most) parts = most;
  return parts < 1 ? 1 : parts;
}
// The split over a dim that is not the last: the inner positions share a
// block (block / inner threads each), at least 4 threads each.
inline bool split_holds_inner(const Problem& p, int block) { return p.inner == 1 || p.inner * 4 <= block; }
// Strided problems whose strided tiers (a CTA per column tile, a 16-32
// byte segment of inner at the least: outer x ceil(inner bytes / 32)) would
// leave at least half the SMs idle.
inline bool strided_few_columns(const Problem& p) {
  const int64_t tiles = (p.inner * dtype_size(p.dtype) + 31) / 32;
  return p.inner > 1 && p.rows * tiles * 2 <= p.device->sm_count;
}
inline int64_t split_workspace_bytes(const Problem& p, int block, int elem_size) {
  return p.rows * split_parts(p, block, elem_size) * p.inner * kSplitPartialBytes;
}

// The grid tier: a row cut into this many slices, a CTA each, so that the
// rows take kGridCtasPerSm<block> CTAs an SM at most (all resident at once:
// the launch is cooperative); one (max, sum) partial a CTA in the workspace.
template <int B>
constexpr int kGridCtasPerSm = B <= 256 ? 2 : 1;
inline int64_t grid_ctas_per_sm(int block) { return block <= 256 ? 2 : 1; }
inline int64_t grid_parts(const Problem& p, int block) {
  const int64_t resident = int64_t{p.device->sm_count} * grid_ctas_per_sm(block);
  return p.rows > 0 && p.rows <= resident ? resident / p.rows : 1;
}
inline int64_t grid_workspace_bytes(const Problem& p, int block) {
  return p.rows * grid_parts(p, block) * kSplitPartialBytes;
}

// The tile tier: whole units (a row, or the axis x inner slab of one outer
// position; both contiguous) staged through shared memory, `capacity`
// elements a tile (block_size x cols_per_thread), the tile's units cut into
// columns that groups of `group` lanes compute.  A slab longer than the
// tile is cut along inner instead: a tile holds `width` inner positions of
// one outer position, `axis` segments of them (each contiguous), `chunks`
// tiles an outer position.
struct TileShape {
  int64_t units;     // rows, or outer positions
  int64_t unit;      // elements a unit: axis x inner
  int64_t tiles;
  int64_t axis, inner;
  int64_t width;     // 0: whole units; else inner positions a tile (a multiple of a pack)
  int64_t chunks;    // width > 0: tiles an outer position
  int per_tile;      // whole units: units a tile
  int group;         // lanes a column: a power of two up to 32
};
// Values a lane folds before the group widens (a row of 29 in groups of 4):
// enough work per lane to pay for the shuffles, rows of up to 256 in a warp.
constexpr int64_t kTileValuesPerLane = 8;
// Tiles an SM the tier needs to pay (runtime/src/softmax/rules.cpp), and
// what a segment cut along inner aims for.
constexpr int64_t kTileWaves = 5;
// The shortest segment along inner, in 16-byte packs: shorter ones spend
// more on their unaligned ends than the wide accesses save.
constexpr int64_t kTileMinSegmentPacks = 4;
inline TileShape tile_shape(const Problem& p, int64_t capacity, int elem_size) {
  TileShape s{};
  s.units = p.rows;
  s.unit = p.cols * p.inner;
  s.axis = p.cols;
  s.inner = p.inner;
  s.group = 1;
  while (s.group < 32 && s.group * kTileValuesPerLane < s.axis) s.group *= 2;
  if (s.unit <= capacity || p.inner == 1) {
    const int64_t fit = s.unit > 0 ? capacity / s.unit : 0;
    s.per_tile = static_cast<int>(fit < 1 ? 1 : fit > s.units ? s.units : fit);
    s.tiles = (s.units + s.per_tile - 1) / s.per_tile;
    return s;
  }
  // segments of width + a pack (the misaligned start) each, axis of them
  const int64_t pack = 16 / elem_size;
  int64_t width = ((capacity + pack) / p.cols - pack) / pack * pack;
  // no wider than makes kTileWaves tiles an SM, no narrower than the shortest segment
  const int64_t want_tiles = kTileWaves * p.device->sm_count;
  const int64_t per_outer = (want_tiles + p.rows - 1) / p.rows;
  const int64_t even = ((p.inner + per_outer - 1) / per_outer + pack - 1) / pack * pack;
  if (even < width) width = even;
  if (width < kTileMinSegmentPacks * pack) width = kTileMinSegmentPacks * pack;
  if (p.cols * (width + pack) > capacity + pack) return TileShape{};  // tiles 0: does not fit
  s.width = width;
  s.chunks = (p.inner + width - 1) / width;
  s.per_tile = 1;
  s.tiles = p.rows * s.chunks;
  return s;
}
// Whether a tile of `capacity` elements holds p (whole units, or segments).
inline bool tile_fits(const Problem& p, int64_t capacity, int elem_size) {
  return p.cols * p.inner <= capacity || (p.inner > 1 && tile_shape(p, capacity, elem_size).tiles > 0);
}
// Shared memory of one tile: each of `inputs` staged spans, a 16-byte pack
// of slack for the span's misaligned start.
inline int64_t tile_smem_bytes(int64_t capacity, int elem_size, int inputs) {
  return inputs * (capacity * elem_size + 16);
}

bool supports(const VariantInfo& v, const void* problem);
// Device bytes variant v needs as workspace for p (0 for all but the split tier).
int64_t workspace_bytes(const VariantInfo& v, const Problem& p);
bool supports_backward(const VariantInfo& v, const void* problem);
Score heuristic(const VariantInfo& v, const void* problem);
// The tuning bucket of a problem (runtime/src/tuning/bucket.hpp).
void bucket(const void* problem, char* out, int size);

}  // namespace softmax
}  // namespace kgen
