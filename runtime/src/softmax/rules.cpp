// Softmax capability (supports) and preference (heuristic).
//
// Capability is decided from the real problem: pack width against cols and
// pointer alignment, row length against the tier's reach, shared memory
// against what this device gives one block.  Preference follows OneFlow's
// dispatch: registers when the row fits a warp tier variant, else shared
// memory, else the two-pass uncached kernel; within a tier the widest pack,
// the tightest fit, and for shared memory the block size that keeps the most
// warps resident.  A dim that is not the last (inner > 1) goes to the strided
// tiers: the register tile when the axis fits it, else the two-pass kernel.
// The backward family has the same tiers and is judged by the same rules.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstdint>
#include <cstdio>

#include "dtype.hpp"
#include "validate.hpp"
#include "kgen_params.gen.hpp"
#include "tuning/bucket.hpp"
#include "softmax/problem.hpp"

namespace kgen {
namespace softmax {
namespace {

// An axis shorter than a warp over a wide inner extent: a warp's lanes must
// span 32 adjacent columns, or each load is a few bytes of a sector and the
// two-pass plan re-reads them.  H100 random sweep, pack-1 problems with an
// axis of 2-11 over an inner of 281-530302: the 16-lane two-pass variant ran
// at 0.08-0.57x torch, the 8-lane register tile 3.3-13.5x slower still, and
// the generic variant (32 lanes a column) took 0.47-0.61x of its time
// (bench/NOTES.md sweep v1).
bool narrow_on_short_axis(const Problem& p, int64_t col_lanes, int64_t pack) {
  return p.cols < 32 && p.inner >= 32 && col_lanes * pack < 32;
}

// Warps an SM keeps resident for the smem tier at this block size.
int64_t smem_active_warps(const Problem& p, int block) {
  return smem_blocks_per_sm(p, block, dtype_size(p.dtype)) * block / 32;
}

bool aligned_all(const Problem& p, int64_t bytes) {
  return aligned_to(p.x, bytes) && aligned_to(p.y, bytes) && (!p.dy || aligned_to(p.dy, bytes));
}

// Whether packs of `bytes` cover the unit (the row, or inner when the dim
// is not the last) and every pointer's alignment.
bool pack_covers(const Problem& p, int64_t bytes) {
  const int64_t unit = p.inner == 1 ? p.cols : p.inner;
  return aligned_all(p, bytes) && unit % (bytes / dtype_size(p.dtype)) == 0;
}

// Whether y lies at x's offset modulo 16 bytes, so that the row tiers that
// read x's aligned body in 16-byte packs can store y in the same packs
// (otherwise they store it an element at a time).
bool rows_congruent(const void* a, const void* b) {
  return (reinterpret_cast<uintptr_t>(a) - reinterpret_cast<uintptr_t>(b)) % 16 == 0;
}
bool congruent_xy(const Problem& p) { return rows_congruent(p.x, p.y); }

// Packs a thread of the block and cluster tiers holds in registers
// (rows::kSliceRegPacks); forward clusters of 16 packs a thread keep the
// rest in shared memory, beside the reductions' few static bytes.
constexpr int64_t kSliceRegPacks = 8;
constexpr int64_t kSliceSmemReserve = 1024;

// The block and cluster tiers (row_slice.cuh): a row's aligned body in
// 16-byte packs (pack_size elements), split evenly over cluster_size CTAs of
// block_size threads holding cols_per_thread values each; the unaligned
// head and tail (under a pack each) one element a thread.  Any length and
// alignment; one cluster a row, so rows x cluster_size CTAs must fit a grid.
struct SliceShape {
  int64_t pack, per_thread, block, cluster;
  int64_t capacity() const { return block * per_thread / pack; }  // packs a CTA holds
  // packs a thread keeps in shared memory past the 8 in registers (rows::Held)
  int64_t held() const { return std::max<int64_t>(0, per_thread / pack - kSliceRegPacks); }
  int64_t held_bytes() const { return 16 * block * held(); }
  // body packs a CTA holds at most (an aligned row: no head)
  int64_t packs_per_cta(const Problem& p) const { return (p.cols / pack + cluster - 1) / cluster; }
};
template <class Params>
SliceShape slice_shape(const Params& q) {
  return SliceShape{q.pack_size, q.cols_per_thread, q.block_size, q.cluster_size};
}
template <class Params>
bool slice_supports(const Params& q, const Problem& p) {
  if (p.inner != 1 || p.mask) return false;
  const SliceShape sh = slice_shape(q);
  return sh.packs_per_cta(p) <= sh.capacity() && p.rows <= INT32_MAX / sh.cluster &&
         sh.held_bytes() + kSliceSmemReserve <= static_cast<int64_t>(p.device->smem_per_block_optin);
}

// The span tier (softmax.cuh and softmax_backward.cuh span_kernel): a lane
// group holds a row's aligned body in 16-byte packs (cols_per_thread /
// pack_size a lane) and its head and tail an element a lane: rows of 2 x
// pack - 1 values at least (a body pack), at most group_width x that many
// body packs.
template <class Params>
bool span_supports(const Params& q, const Problem& p) {
  // the backward reads dy in y's packs
  return p.inner == 1 && !p.mask && (!p.dy || rows_congruent(p.x, p.dy)) && p.cols >= 2 * q.pack_size - 1 &&
         p.cols / q.pack_size <= int64_t{q.group_width} * (q.cols_per_thread / q.pack_size);
}

// The grid tier (softmax.cuh grid_kernel): the forward's last dim, no
// mask; the rows' slices, one a CTA, all resident at once (grid_parts) and
// each within the CTA's block_size x cols_per_thread values.
template <class Params>
bool grid_supports(const Params& q, const Problem& p) {
  if (p.inner != 1 || p.mask || backward(p) || p.rows < 1) return false;
  const int64_t resident = int64_t{p.device->sm_count} * grid_ctas_per_sm(q.block_size);
  if (p.rows > resident) return false;
  const int64_t parts = grid_parts(p, q.block_size);
  const int64_t body = p.cols / q.pack_size + 1;  // body packs at most (any alignment)
  // packs past kSliceRegPacks a thread in shared memory, every CTA an SM
  // takes resident at once
  const int64_t held = int64_t{16} * q.block_size * std::max<int64_t>(0, q.cols_per_thread / q.pack_size - kSliceRegPacks);
  const int64_t per_sm = grid_ctas_per_sm(q.block_size) * (held + kSliceSmemReserve);
  if (held + kSliceSmemReserve > static_cast<int64_t>(p.device->smem_per_block_optin) ||
      per_sm > static_cast<int64_t>(p.device->smem_per_sm))
    return false;
  return (body + parts - 1) / parts <= int64_t{q.block_size} * (q.cols_per_thread / q.pack_size);
}

// The two families' params structs are generated from the same tiers (the
// backward family reuses the forward's), so one set of rules reads both.
template <class Params, class Tier>
bool supports_as(const VariantInfo& v, const Problem& p) {
  const Params& q = *static_cast<const Params*>(v.params);
  if (v.element != p.dtype) return false;
  if (q.tier == Tier::block || q.tier == Tier::cluster) return slice_supports(q, p);
  if (q.tier == Tier::split)
    return split_holds_inner(p, q.block_size) && !p.mask &&
           p.rows * split_parts(p, q.block_size, dtype_size(p.dtype)) <= INT32_MAX;
  if (q.tier == Tier::tile)
    return !p.mask && tile_fits(p, int64_t{q.block_size} * q.cols_per_thread, dtype_size(p.dtype));
  if (q.tier == Tier::span) return span_supports(q, p);
  if (q.tier == Tier::grid) return grid_supports(q, p);
  const int64_t pack_bytes = int64_t{q.pack_size} * dtype_size(p.dtype);
  const bool strided = q.tier == Tier::strided || q.tier == Tier::strided_uncached || q.tier == Tier::column;
  if (strided) {
    // a column pack never straddles two outer positions; no fused mask
    if (p.mask || p.inner % q.pack_size != 0 || !aligned_all(p, pack_bytes)) return false;
  } else if (q.tier != Tier::generic) {
    // the row tiers: the last dim, packs along it; a mask read a pack at a time
    if (p.inner != 1 || p.cols % q.pack_size != 0 || !aligned_all(p, pack_bytes)) return false;
    if (p.mask && p.mask->data) {
      const int64_t mask_pack = p.mask->kind == KGEN_MASK_BOOL ? q.pack_size : pack_bytes;
      if (!aligned_to(p.mask->data, mask_pack)) return false;
    }
  }
  switch (q.tier) {
    case Tier::warp: {
      const int64_t reach = int64_t{q.cols_per_thread} * q.group_width;
      return q.padding ? p.cols <= reach : p.cols == reach;
    }
    case Tier::smem: {
      const int64_t need = smem_row_bytes(p, dtype_size(p.dtype)) + kSmemReserve;
      return p.cols <= INT32_MAX && need <= static_cast<int64_t>(p.device->smem_per_block_optin);
    }
    case Tier::strided:
      return p.cols <= strided_reach(q.col_lanes, q.axis_per_thread, backward(p));
    case Tier::column:
      return p.cols <= q.axis_per_thread;
    case Tier::uncached:
    case Tier::strided_uncached:
    case Tier::generic:
      return true;
    case Tier::block:
    case Tier::cluster:
    case Tier::split:
    case Tier::tile:
    case Tier::span:
    case Tier::grid:
      return false;  // above
  }
  return false;
}

// Rows past the warp tier (1024 values; 2048 for the forward's plain
// softmax of half types, whose warp variants reach 98% of copy there) go to
// a block or a cluster: x read once.  (Half-type log_softmax of 2048: 74-76%
// in the warp tier, 98-99% in blocks of 128 x 16 values; of 1536: 77-79%
// against 90-93%; H100, bench/NOTES.md split v1.)  Among the shapes that hold the row (H100, kgen-bench --variants
// over the full level, bench/NOTES.md slice v1):
//  1. the fewest idle quarters of the CTA's capacity (a float32 variant
//     holding 4-16x the row of 2048 ran at 18-57% of copy, one that fits at 99%);
//  2. enough CTAs to give every SM one (32 float32 rows of 32768: 87% in
//     clusters of 8, 83% in clusters of 2);
//  3. one block (float32 16384: 96% against 92% in clusters; float32
//     32768: 91% in a block of 1024, 81-91% in clusters, and on an H200,
//     bench/NOTES.md slice v3, 94-95% against 84-88%; half types 65536 in
//     512 threads x 16 packs, 8 of them in shared memory: 89-92% against
//     80-86% in clusters on an H200, 94-96% against 89-93% on an H100),
//     then clusters of at most 512
//     threads, then of 1024 (54-76%);
//  4. values a thread near 32 in a block, 16 bytes x 8 in a cluster (bfloat16
//     65536: 64 values 76%, 32 values 65%), 16 in the backward (y and dy);
//     then the smallest block (float32 backward 32768: clusters of 128
//     threads 98%, of 512 93%).
//     Among clusters, blocks of 256 threads first (the backward's too,
//     slice v4: float32 rows of 32768 in 8 x 256 99% on an H200, 96% in
//     16 x 128, even on an H100; forward: H100, 256 MiB, bench/
//     NOTES.md slice v2: float16 and bfloat16 rows of 32768 in 2 x 256
//     threads 89-92% against 89% in 4 x 128; 50257 in 4 x 256 84-86%
//     against 84% in 8 x 128; 131072 in 8 x 256 85-87% against 84-85% in
//     16 x 128; float32 50257 in 8 x 256 83% against 79% in 16 x 128).
// The half types' backward once kept to one block (in clusters it ran at
// 50-57% where the uncached tier reached 84-88%, bfloat16 32768, H100);
// since, its clusters lead there on both GPUs (kgen-bench softmax_backward
// --variants, 256 MiB, bench/NOTES.md slice v4): float16 rows of 32768 in
// 8 x 256 threads 88 / 95% of copy (plain / log) on an H100 against 80 /
// 75% in the smem tier, 79 / 87% on an H200 against 64 / 60%; 65536 in
// clusters of 256-512 threads 81-91% on an H100 and 72-81% on an H200
// against 65-76% and 69-78% uncached.
// Forward clusters of 16 packs a thread (8 of them in shared memory) in
// blocks of 256 lead the 8-pack clusters where no 8-pack cluster of 2-16
// CTAs (128-512 threads) is 7/8 full (float32 in 256 threads: 3/4) and x
// spans 4 such CTAs of 64 KB an SM.  kgen-bench --variants, 256 MiB, every
// cluster variant (bench/NOTES.md slice v9), % of copy, 8 packs -> 16,
// H200 / H100: float16 rows of 152064 (8 packs a thread: 58% full) 64-68 ->
// 93 / 88-89 -> 97-98; 200019 (76%) 77-82 -> 91-93 / 98-99 -> 97-98; 100277
// (76%) 85-87 -> 93 / 99-100 -> 97-98; float32 152064 74-79 -> 95 / 90-95
// -> 98-99; 200019 (76% in 512 threads) 80-89 -> 93 / 93-98 -> 97-98.  Rows
// 7/8 full or more stay at 8 packs: float16 128256-131072 in 8 x 256
// threads 95-97% against 89-92 in 4 x 256 x 16 packs / 97-101 against
// 96-98; float32 in 16 x 256 96-99 against 90-95 / 98-101 against 95-98.
// So do float32 rows 3/4 full in 256 threads (100277 in 16 x 256: 91-94
// against 91-94 / 99-100 against 95-96).  Smaller problems keep their CTAs
// (float32 128 rows of 50257: 104-106% in 8 x 256 x 8 packs, 100% in 4 x
// 256 x 16, H100).
constexpr int64_t k8PackReach = 16 * 512 * kSliceRegPacks;  // packs of the largest 8-pack cluster
int64_t row_packs(const Problem& p, int size) { return p.cols * size / 16; }
bool beyond_8_packs(const Problem& p, int size) { return row_packs(p, size) > k8PackReach; }

bool held_clusters_lead(const Problem& p, int size) {
  if (backward(p) || size > 4) return false;
  constexpr int64_t kHeldCta = 256 * 16;  // packs a CTA of 256 threads holds
  const int64_t packs = row_packs(p, size);
  if (p.rows * packs < 4 * kHeldCta * p.device->sm_count) return false;
  if (packs > k8PackReach) return true;
  int64_t cap = 2 * 128 * kSliceRegPacks;  // the smallest 8-pack cluster
  while (cap < packs) cap *= 2;
  // eighths: float32 rows 3/4 full in clusters of 256 threads stay
  const int64_t full = size == 2 || cap > 16 * 256 * kSliceRegPacks ? 7 : 6;
  return packs * 8 < cap * full;
}

template <class Params>
Score slice_heuristic(const Params& q, const Problem& p) {
  const int size = dtype_size(p.dtype);
  const SliceShape sh = slice_shape(q);
  const bool bwd = backward(p);
  // The half types' log backward past 65536 values: the uncached tier's
  // first pass reads dy alone (H200: 131072 in 16 x 512 threads 65% of
  // copy, 75% uncached; 262144 58% against 75%; H100 even at 131072)
  if (size == 2 && bwd && p.log && sh.cluster > 1 && p.cols > 65536) return Score::reject();
  // Packs in shared memory (rows of 524289-1048576 values in clusters of
  // 16): when the clusters give every SM a CTA; fewer rows are the split
  // tier's.  H100, kgen-bench --variants (bench/NOTES.md held v1): 64
  // float32 rows of 1M 71-74% of copy against 57% split, 16 bfloat16 rows
  // 70-71% against 65-66%, but 8 float32 rows (128 CTAs) 65% split.
  if (sh.held() > 0 && p.rows * sh.cluster < p.device->sm_count) return Score::reject();
  // Rows an 8-pack cluster holds take 16 packs a thread in a cluster only
  // where those lead (held_clusters_lead): 32 float16 rows of 152064 (4.9
  // MB) ran 18.1 -> 19.5 us in 5 x 256 x 16 packs against 16 x 256 x 8 on
  // the H100 (18.3 -> 18.2 on the H200; bench/NOTES.md slice v9).
  if (sh.held() > 0 && sh.cluster > 1 && !held_clusters_lead(p, size) && !beyond_8_packs(p, size))
    return Score::reject();
  // Blocks of one and two warps: forward rows of 513-2048 that no 8-byte
  // pack covers, above the warp and smem tiers, which read them one
  // element a load.  H100, kgen-bench softmax --variants at 64 MiB (bench/
  // NOTES.md tile v2): rows of 673, 1001 and 1999 at 88-104% of copy in the
  // block of the least padding (32 x 32 values for 673 and 1001, 64 x 32
  // for 1999), against 78-86% (plain) and 52-61% (log) for the half types
  // in the warp and smem tiers, 91-95% for float32.  Rows of 333 (512
  // values a block, 65% used) lost for the half types' plain softmax (68%
  // against 89% in the warp tier); the backward was not measured.  A block
  // under half full is not taken; rows of 547 in 32 x 32 values (53% used):
  // bfloat16 87% (plain) and 90% (log) against 81-82% in the warp tier,
  // float32 even (H100, 64 MiB, bench/NOTES.md warp v1).  Odd rows, the
  // class measured, and the half types' even rows with y apart from x
  // (5039x2048 float16, x one element in, y fresh: 17.5 / 18.1 us in 64 x
  // 32 values, 19.4 / 21.4 in the smem tier, H200 / H100; 49.6 us when the
  // block stored y an element at a time, bench/NOTES.md slice v10; float32's
  // lost: 53x23x620 log_softmax one element in 5.5 us in 64 x 16 values,
  // 5.2 in the warp tier at pack 1, H100).  Among them 64 bytes a
  // thread (float32 log_softmax of 1001: 102% in 64 x 16 values, 95% in
  // 32 x 32; float16 of 673 93-94% in 32 x 32, 70-81% in 64 x 16).
  const int64_t cap = sh.capacity(), per = sh.packs_per_cta(p);
  const bool small_block = sh.block < 128;
  const bool even_unmeasured = p.cols % 2 == 0 && (size != 2 || congruent_xy(p));
  if (small_block && (bwd || p.cols <= 512 || even_unmeasured || per * 2 < cap)) return Score::reject();
  Score s;
  s.key[1] = -((cap - per) * 4 / cap);
  if (small_block || p.cols > (size == 2 && !bwd && !p.log ? 2048 : 1024)) {
    s.key[0] = 4;
  } else if (!congruent_xy(p) && (!bwd || size == 2)) {
    // rows a warp variant could hold, when none fits, with y apart from x:
    // above the smem tier, below the warp tier (the half types' shifted
    // packs, softmax.cuh slice_kernel; 5039x2048 float16, x one element
    // in, y fresh: 20.4 / 21.0 us in 128 x 16 values, 19.4 / 21.4 in
    // smem, H200 / H100, about even; element stores took 33 us).  The
    // backward's half types with dx apart from y likewise
    // (softmax_backward.cuh slice_kernel SHIFT; H100, y and dy one element
    // in, dx fresh, 64 MiB: rows of 673-1001 at 81-100% of copy in 128 x 8
    // values against 74-75% in smem, 88-96% in the warp tier; element
    // stores 40-54%; bench/NOTES.md slice v11)
    s.key[0] = 2;
    s.key[1] += 50;
  } else {
    // the same rows with x and y both off 16 bytes alike, and the float32
    // and float64 backward's: below the smem tier (from the y-apart case
    // above when its stores were an element at a time; not measured since)
    s.key[0] = 2;
    s.key[1] -= 100;
  }
  s.key[2] = std::min<int64_t>(8, p.rows * sh.cluster * 8 / std::max(1, p.device->sm_count));
  // (small blocks below one of 128-512 threads that holds the row as well:
  // float32 log_softmax of 1999 102% in 128 x 16 values, 97% in 64 x 32)
  // A block that holds the row first, except a block of 1024 threads, and
  // one with packs in shared memory that the row fills 7/8 or more of,
  // where clusters now run faster (their partials pushed, bench/NOTES.md
  // slice v7; kgen-bench --variants, 256 MiB, H200 / H100): float32 rows of
  // 32768 in 1024 x 32 values 94.7-95.1% / 97.5-98.2% of copy, clusters
  // 96.3-97.4% / 99.8-99.9% (20000 on the H200: 83-88% against 90-95%);
  // half-type rows of 60000-65536 in 512 x 128 values (64 of them in
  // shared memory) 89-92% / 95-96%, clusters 92-98% / 97-99%; the
  // backward's half-type rows of 12289-16384 in 1024 x 16 83-95% /
  // 101.2-101.5%, clusters 86-102% / 101.8-102%.  Under 7/8 the held block
  // stays first: 8 packs a thread in clusters leave registers idle, and the
  // H200 lost (rows of 40000: 73-77% against 87-96% in the block; 50257:
  // 84-88% against 90-93%) where the H100 ran within 3% at 40000 and 4%
  // faster at 50257 (99% against 95%).
  // A CTA of more than 36 KB of x only when the rows come near filling the
  // SMs: with fewer, a cluster's CTAs read the row in parallel (one row,
  // H200 and H100 sweeps: float32 19439 (76 KB) 7.5 us in a block, 5.2 in
  // a cluster of 4; float16 19487-28221 (39-56 KB) 6.1-6.5 against 5.6-5.8
  // in clusters of 2), while up to 33 KB one block stays faster (bfloat16
  // 12277: 5.2 us against 6.0 in a cluster of 2; float32 8337: 5.4 against
  // 5.8).
  const bool big_cta = sh.packs_per_cta(p) * 16 > 36 * 1024 && p.rows * 2 < p.device->sm_count;
  const bool block_first =
      sh.cluster == 1 && sh.block < 1024 && (sh.held() == 0 || per * 8 < cap * 7) && !big_cta;
  s.key[3] = small_block ? 1 : block_first ? 2 : sh.block < 1024 ? 1 : 0;
  // Half-type forward rows that fill under 5/8 of the block of 32 values a
  // thread that would hold them (rows of 4097-5119 in 256 threads, of
  // 8193-10239 in 512): 64 values a thread in half the threads, each CTA
  // as full and twice as many rows an SM.  kgen-tune sweeps, every block
  // variant (float16 and bfloat16, plain and log): rows of 4600 38.1-44.3
  // us in 128 x 64 against 51.8-53.0 in 256 x 32 (H200) and 52.2-52.6
  // against 56.8-58.0 (H100); rows of 9500 43.8-44.7 in 256 x 64 against
  // 52.9-56.9 (H200), 52.3-52.7 against 57.9-59.2 (H100).  Fuller rows
  // stay at 32: rows of 4096-8192 within 2% either way, 6144-7000 1-4%
  // faster at 32 on the H100 and 5-11% slower on the H200.  Only where the
  // rows fill every SM 8 times over: with fewer, the threads an SM runs
  // count more than how full each CTA is (H100 sweep: 254 bfloat16 rows of
  // 10025 7.8 us in 512 x 32, 8.0 in 256 x 64; one float16 row of 8829 4.9
  // against 5.2).
  int64_t cap32 = 4096;  // values a block of 32 a thread holds, from 128 threads
  while (cap32 < p.cols) cap32 *= 2;
  const bool sparse32 = size == 2 && !bwd && sh.cluster == 1 && !small_block && p.cols * 8 < cap32 * 5 &&
                        p.rows >= 8 * int64_t{p.device->sm_count};
  const int64_t pref = small_block                    ? 64 / size
                       : bwd                            ? 16
                       : sh.cluster == 1                ? (sparse32 ? 64 : 32)
                       : held_clusters_lead(p, size)    ? 256 / size
                                                        : 128 / size;
  s.key[4] = -std::abs(sh.per_thread - pref) * 64 - (sh.cluster > 1 ? std::abs(sh.block - 256) : sh.block) / 128;
  return s;
}

// Rows that leave most SMs idle in a block a row (at most half as many rows
// as SMs) and that no block or cluster holds: above the uncached tier, and
// under a quarter of the SMs above the smem tier too (reasoned, not timed:
// the smem tier would run such rows on at most a quarter of the SMs).  H100, kgen-bench
// --variants (bench/NOTES.md split v1): one float32 row of 4M in 31 us
// (the uncached tier takes a block a row: one SM of 132); 128 bfloat16
// backward rows of 65536 in 79 us against 38 us uncached.  x is read twice
// (55-63% of copy at 64 MiB against the ceiling of 67%).
//
// Over a dim that is not the last: when the strided tiers would leave half
// the SMs idle (strided_few_columns) and a slab makes kSplitLeastStridedParts
// runs at least (32 KB and more at 128 threads), above every strided tier.
// H200 sweep (bench/NOTES.md split v2): 3.5-300x faster on long axes
// (448133x13 float16 dim 0 11076 -> 37 us, torch 5722); smaller slabs lose the second
// launch: 2048x7 float16 (28 KB) 8.2 -> 9.1 us, 3691x3 float32 (44 KB)
// 12.0 -> 10.6.
//
// An inner extent under kSplitNarrowInnerBytes over an axis no register
// tile holds: the two-pass plans (the strided_uncached tier, and the
// generic variant's 32 lanes a column) spread a warp's loads over 32 outer
// positions a few bytes each.  H100, bench/variants.py over every default
// variant (bench/NOTES.md tile v5): (117, 6421, 3) bfloat16 forward 172 us
// in strided_uncached against 22.8 in the split (torch 20.7), backward
// 404 in the generic variant against 25.0 (torch 23.2); (381, 56556, 2)
// bfloat16 one element in 2929 against 150 (torch 282), its backward 6604
// against 201 (torch 247); (50, 20000, 5) float16 399 against 30.  So the
// split takes such problems however many slabs (one slab a CTA at least),
// above the generic variant, and the strided_uncached tier leaves them.
//
// A row no 16-byte pack covers (odd, or x, y or dy off 16 bytes) that
// reaches the uncached tier (no block or cluster holds it): that tier runs
// it at pack 1, the split reads the aligned body in 16-byte packs.  So the
// split ranks above it at any number of rows, unless a half type's dy lies
// off y's offset modulo 16 bytes (the split would read it an element at a
// time; not measured there, so it keeps the uncached tier).
// H200, bench/variants.py (bench/NOTES.md split v5), us at pack 1 against
// the split: 3x61x2x79595 bfloat16 log backward 104.6 against 68.4 (torch
// 67.0); 100x2000003 bfloat16 814.7 against 379.3; float32 80x1500001 log,
// x one element in, 811.1 against 490.4; 16x9x292095 float32 log backward,
// y and dy one element in, 302.5 against 198.3.  But y and dy one element
// in, dx fresh: 200x1000003 bfloat16 backward 809.8 against 1333.9,
// 1000x65537 float16 log backward 208.6 against 387.5, when the split
// stored dx an element at a time; its stores are now shifted 16-byte packs
// (split v6: y or dx off the input's offset).
constexpr int64_t kSplitNarrowInnerBytes = 32;
bool narrow_inner(const Problem& p) { return p.inner > 1 && p.inner * dtype_size(p.dtype) < kSplitNarrowInnerBytes; }
bool row_split_beats_uncached(const Problem& p) {
  if (p.inner != 1 || pack_covers(p, 16)) return false;
  return dtype_size(p.dtype) >= 4 || !p.dy || rows_congruent(p.x, p.dy);
}
constexpr int64_t kSplitLeastStridedParts = 16;
constexpr int64_t kSplitSerialMerges = 16;
template <class Params>
Score split_heuristic(const Params& q, const Problem& p) {
  const int sms = p.device->sm_count;
  const bool few = p.inner > 1 ? strided_few_columns(p) : p.rows * 2 <= sms;
  // a slab of a few CTAs' runs costs the second launch more than it saves
  const int64_t least = p.inner > 1 ? kSplitLeastStridedParts : 2;
  const int64_t parts = split_parts(p, q.block_size, dtype_size(p.dtype));
  const bool wide = few && parts >= least;
  if (!wide && !narrow_inner(p) && !row_split_beats_uncached(p)) return Score::reject();
  Score s;
  // outside the wide case: a narrow inner's split above the generic variant
  // only, a row's above the uncached tier (key[1])
  s.key[0] = !wide ? 1 : p.inner > 1 ? 7 : p.rows * 4 <= sms ? 2 : 1;
  s.key[1] = 1000;
  s.key[2] = -std::abs(q.block_size - 512);
  if (p.inner > 1) {
    // A thread of the second kernel folds parts x inner / block of its
    // column's partials one after another: the smallest block that keeps
    // that at kSplitSerialMerges or fewer, else the fewest (H200, every
    // block timed: (4, 65536, 3) float32 128-256 threads 25.6-25.9 us, 512
    // 31.0, 1024 44.9; (2, 100000, 64) 1024 66 us, 512 78, 256 137).
    const int64_t serial = parts * p.inner / q.block_size;
    s.key[2] = serial <= kSplitSerialMerges ? -q.block_size : -(int64_t{1} << 20) - serial;
  }
  return s;
}

// The grid tier: rows that the grid holds and no cluster takes (past 1M
// values, or 1M with too few rows for the held clusters), above the split
// tier, below every tier that holds the row; the fullest CTAs (the fewest
// values a thread that hold the slice), then 512 threads.  H200,
// kgen-bench softmax_dim (bench/NOTES.md grid v1): 2 rows of 1M 16.5-19.8
// us against the split's 18.9-21.6 (float32, float16, bfloat16); where
// clusters hold the row they ran 1.5-5 us faster than the grid (one
// float16 or bfloat16 row of 131072: 9.3-11.1 us in a cluster, 12.2-14.3 in
// the grid; the cooperative launch and its grid-wide barrier).
constexpr int64_t kGridMinCols = 16384;
template <class Params>
Score grid_heuristic(const Params& q, const Problem& p) {
  if (p.cols < kGridMinCols) return Score::reject();
  const int64_t parts = grid_parts(p, q.block_size);
  const int64_t per = (p.cols / q.pack_size + parts) / parts;  // packs a CTA
  const int64_t cap = int64_t{q.block_size} * (q.cols_per_thread / q.pack_size);
  Score s;
  s.key[0] = 3;
  s.key[1] = -((cap - per) * 4 / cap);
  s.key[2] = q.block_size;
  return s;
}

// Units (a row, or a strided axis x inner slab) whose 16-byte packs the
// register tiers cannot use: a row or inner extent that no 16-byte pack
// divides, or a tensor off a 16-byte boundary.  H100, bench/variants.py
// (bench/NOTES.md tile v1), against the best other variant:
//  - rows of 5-29 values: 1.3-1.8x faster (957497x5 float16 18.0 us
//    against 31.2 us in a pack-1 warp variant, 587x307x29 17.0 against
//    31.0); rows of 3-4 even or slower in the first kernel (1242x182x3x4
//    float16 12.7 against 13.0 us), faster since (below);
//    rows of 333-2048 slower (4x256x41x2x333 bfloat16 85 us against 64.5,
//    a column of a row computed by one warp, values read from shared
//    memory), so rows take the tile from kTileMinRow to kTileMaxRow values;
//  - slabs of a short axis: (8192, 3, 281) float16 31.9 us against 46.2
//    in the pack-1 strided tile, (4919x2, 613, 2) 49 against 87;
//  - problems of a few tiles: a lane computes up to 32 columns one after
//    another, 2-4.7x a pack-1 warp variant on tensors of 2-800 KB, and
//    1.2-1.6x at 3.3-4.5 tiles an SM (20681x43 bfloat16 one element in 10.9
//    us against 6.9, 1025x17x5x14 10.9 against 8.9; random sweep), so the
//    tile tier needs kTileWaves tiles an SM (91127x17 bfloat16, 5.7 tiles
//    an SM, 10.4 us against 13.5);
//  - slabs whose inner extent takes 8-byte packs keep the strided tier
//    forward (bfloat16 (16320, 3, 860): 86-95% of copy in its 4-value
//    packs, 38-60% in a tile; kgen-bench softmax_dim); the backward has no
//    8-byte strided variant of the half types and takes the tile there
//    ((16320, 3, 860) float16 and bfloat16 61-78% against 48-57%; (8192, 3,
//    281) 71-85% against 43-70%, every dtype);
//  - slabs longer than a tile are cut along inner into segments
//    (TileShape::width), forward and 2-byte types only: (16, 5, 838861)
//    bfloat16 50% against 49% in the strided tier, float32 67-70% against
//    74%, the backward 63-73% against 73-74%; on a slab of 2 x 390510
//    (L2-sized) 77-125% against 67-97% forward.  Segments of under
//    kTileMinSelectedSegmentPacks lose: (275, 17, 351) bfloat16 in segments of 112 values 20.1 us
//    against 8.5 in the strided tier (random sweep).  A variant that holds
//    the whole slab ranks first ((16320, 3, 860) bfloat16: 147 us whole,
//    162 in segments);
//  - rows of 3-4 (after the tile's slots past the axis were skipped):
//    1242x182x3x4 float16 10.8 us against 13.1 in the warp tier,
//    2x512x149x5x3 float32 12.9 against 14.1 (random sweep);
//  - forward rows past tile_max_forward_row go to the warp tier: H200,
//    kgen-bench softmax --variants, 64 MiB, with the forward's flat rows
//    (bench/NOTES.md tile v4): float32 rows of 41-42 86% of copy in the
//    tile against 64-70% in the warp tier (2 values a lane; H100, 128 MiB:
//    0.81-0.87x its time), 57-127 74-93% against 75-100%.  The half types'
//    rows of 41-63 ran 1.15-1.6x faster in the tile at 64-128 MiB on both
//    GPUs, but in the H100 sweep log_softmax 14675x8x55 float16 one element
//    in (12.9 MB) took 25.8 us there against 20.6 in the warp tier, and
//    775x23x97 (3.4 MB) 9.6 against 7.6: they keep rows up to 40 until it
//    is known where the tile loses.  (Before, float32 rows of 41-63 at 10
//    MB had run 1.03-1.39x the warp tier's time in the tile: tile v3.)  The
//    backward was not measured and keeps rows up to 64.  (Since, the
//    span tier runs forward rows of span_first_row and more that no
//    16-byte pack covers, ahead of the tile: span_heuristic above.)
//  - backward rows (H100, bench/variants.py over every default variant,
//    5-200 MB; bench/NOTES.md tile v5): float32 rows of 2-8 ran 1.2-1.45x
//    faster in the warp tier's groups of 2-8 lanes (300000x7 10.6 us
//    against 14.3, 400000x6 12.4 against 14.8), rows of 9-32 as fast or
//    faster in the tile (600000x17 46.6 against 62.7, 400000x23 42.0
//    against 54.8), rows of 37-63 4-10% slower there (250000x63 68.0
//    against 64.6); so float32 took the tile for rows of 9-32 (9-16 since
//    the warp tier's two rows an access, below), and
//    for rows of 2-8 in tensors past kBackwardShortRowMaxBytes (random
//    sweep: 131072x67x5 float32 over dim 2, 44M values, 176.5 us in the
//    tile, 195.9 in the warp tier's groups of 8; 1600000x5, 32 MB, 37.5
//    against 39.8).  The half types with dx apart from y (y and dy one
//    element in) ran rows of 3-7 1.07-1.7x slower in the tile than in the
//    warp tier or in columns (575126x4 bfloat16 17.0 us against 10.0,
//    598080x7 22.8 against 17.2); congruent, rows of 4-17 stay (1500000x5
//    bfloat16 26.3 against 33.0 in columns, 1000000x13 float16 39.1
//    against 49.9 in the warp tier).  From rows of kSpanBackwardFirstRow
//    the half types' spans rank above the tile (span_heuristic).
// Among tiles: the fewest idle eighths of the tile, then blocks of 64
// threads (32-128 within 5% on the sweep's problems but bfloat16 rows of
// 673, which no rule gives the tile), then the smaller tile.
constexpr int64_t kTileMinRow = 3, kTileMaxRow = 64;
// float32 rows past 16 values: a full warp, a value or two a lane, two
// rows an access (the warp tier) beat the tile at every size measured:
// H100, bench/variants.py (bench/NOTES.md warp v5), 38767x23 log backward
// 7.2 us against 9.0, 200003x31 one element in 28.0 against 36.4,
// 1000003x29 117.5 against 121.8-126.3
constexpr int64_t kTileBackwardWarpRow = 8, kTileBackwardMaxRowF32 = 16;
// The backward's short rows ran faster outside the tile in tensors (y, dy
// and dx each) of up to 11-12 MB (float32 rows of 2-8, 0.6-2.8M values;
// the half types' rows of 3 in columns, 6M values: 20.9 us against 21.6),
// even at 24 MB (4000000x3 float16 36.7 against 36.6) and slower from 32
// MB (1600000x5 float32 39.8 against 37.5; the columns' 3x517x79x128x3
// float16, 94 MB, 130.1 against 111.0): the tile past this many bytes.
constexpr int64_t kBackwardShortRowMaxBytes = int64_t{1} << 24;
bool backward_short_rows_small(const Problem& p) {
  return p.rows * p.cols * dtype_size(p.dtype) <= kBackwardShortRowMaxBytes;
}
// Whether the backward leaves a row of p to the warp tier, not the tile.
bool backward_row_past_tile(const Problem& p) {
  const int size = dtype_size(p.dtype);
  if (size == 4 && p.cols > kTileBackwardMaxRowF32) return true;
  if (p.cols > kTileBackwardWarpRow) return false;
  return size == 2 ? !congruent_xy(p) : size == 4 && backward_short_rows_small(p);
}
constexpr int64_t tile_max_forward_row(int size) { return size == 4 ? 48 : 40; }
// Segments selection takes, in 16-byte packs (tile_shape allows
// kTileMinSegmentPacks, so that every variant runs such slabs).
constexpr int64_t kTileMinSelectedSegmentPacks = 32;
// Forward rows no 16-byte pack covers (odd lengths, tensors a few
// elements into their storage), in tensors of kSpanMinBytes or more.  H200, kgen-bench softmax --variants at 64 MiB
// (bench/NOTES.md span v1), % of copy: half-type rows of 33-511 at 70-105%
// against 35-70% in the warp tier's element loads and 53-70% in the tile;
// of 777 and 1001 100-108% against 87-106% in blocks of one warp; float32
// rows of 13-511 87-106% against 76-89% (tile) and 75-100% (warp).  So
// above every other tier from span_first_row on (key 4: the blocks of one
// and two warps too); shorter rows (float32 7-12: 87-95% in the tile, 81-88%
// in spans; half types 15-29: 58-68% in either on the H200, and rows of 29
// 1.04-1.07x the tile's time in spans on the H100) stay the tile's where it
// fills the GPU, the span above the warp tier otherwise.  Small tensors
// ran 0.2-0.4 us slower than in the warp tier (H200 sweep: log_softmax 223
// float32 3.3 -> 3.6 us, 49x89 bfloat16 3.5 -> 4.0: a warp's longer chain
// of dependent instructions where nothing hides it).  y off x's alignment
// leaves through shared memory in its own packs (store_span_rows; stored
// an element at a time, 7x16x1117x421 float16 one element into its storage
// took 259 us against 68 in the warp tier): x one element in, y aligned,
// half-type rows of 55-1001 0.58-0.92x the warp tier's time on the H200
// and 0.61-0.96x on the H100 (log_softmax rows of 87 float16 80.5 -> 52.7
// us, 1.48x torch), float32 rows of 41 0.76x / 0.90x the tile's, of 127
// even with the warp tier; float32 rows of 64 at 1 MB 4.0 -> 4.3 us
// (H200), so float32 from kSpanApartMinBytes (bench/NOTES.md span v3).  Among spans: the fewest idle eighths of the group's packs,
// then the fewest lanes a row (more packs a lane: half-type rows of 333
// 92-94% in 16 lanes x 4 packs, 82-92% in 32 x 2; float32 rows of 77
// 98-99% in 8 x 4, 93-97% in 16 x 2), then one row a group unless a lane
// holds one pack.
constexpr int64_t kSpanMinBytes = int64_t{1} << 19, kSpanApartMinBytes = int64_t{1} << 22;
// The backward's dx apart from y leaves through the same staging (y and dy
// one element in, dx fresh, kgen-bench softmax_backward --offset 1
// --variants, 64 MiB; bench/NOTES.md slice v11): half-type rows of
// 333-1001 at 98-104% of copy in spans against 77-87% in the warp tier
// (H200; 673 and 1001 on the H100: 100-102% against 88-96%), of 127
// 87-91% against 85-87% (H200), but of 77 65-69% against 75-76%.
// Groups of 4 lanes (rows of up to 64) ran dx apart as well as congruent
// (H100, bench/variants.py at 20-200 MB, bench/NOTES.md tile v5): half-type
// rows of 23-64 with y and dy one element in at 0.66-0.95x the tile's
// time (1000000x31 float16 73.7 us against 100.8, 600000x52 65.3 against
// 93.6 and 78.9 in the warp tier), congruent ones at 0.64-0.86x (700000x31
// float16 47.4 against 60.3, 63x2136x37 bfloat16 13.1 against 20.5); rows
// of 20 even (43.2 against 44.1), of 15-17 1.1-1.35x the tile's time.  So
// the backward's spans rank above the tile from kSpanBackwardFirstRow, and
// those of 4 lanes take dx apart from there too.
constexpr int64_t kSpanApartBackwardMinRow = 127, kSpanBackwardFirstRow = 21;
constexpr int64_t span_first_row(int size) { return size == 4 ? 13 : 33; }
// Three packs a lane (bench/NOTES.md span v2): H200 kgen-bench softmax at
// 128 MiB, half-type rows of 181-555 in groups of 8-32 lanes at 95-101% of
// copy against 84-97% at four packs (fewer slots that re-read the body's
// last pack; H100 at copy speed either way, 0.95-1.03x the time).  In
// groups of 4 lanes (half-type rows of 77-97) from 10% below to 6% above
// four packs, and float32 0-5% below (--variants, 64 MiB): only the half
// types in groups of 8 or more.
// The backward (dy congruent to y: span_supports), H200 kgen-bench
// softmax_backward at 128 MiB: half-type rows of 127-1001 at 94-106% of
// copy in spans against 65-93% in the warp tier's element loads, rows of
// 77 at 82-90% against 82-84% (H100: 94-102% against 91-93%); float32 at
// 103-106% either way, so float32 keeps the warp tier.  Above the warp
// tier, below the tile.  Not 4 lanes x 4 packs (a lane holds y and dy:
// twice the forward's values): H200 --variants at 128 MiB, rows of 127 at
// 80-99% there against 94-104% in 8 lanes x 3 packs, and bfloat16
// log_softmax rows of 77 at 66% against 90% (float16 and the plain
// softmax: 89-94% against 82-85%).
template <class Params>
Score span_heuristic(const Params& q, const Problem& p) {
  const int size = dtype_size(p.dtype);
  const bool bwd = backward(p);
  const int packs = q.cols_per_thread / q.pack_size;  // a lane
  const int64_t bytes = p.rows * p.cols * size;
  if (pack_covers(p, 16) || bytes < kSpanMinBytes) return Score::reject();
  // y apart from x: float32 in larger tensors; the backward's (half types
  // only) from rows of kSpanApartBackwardMinRow
  const bool narrow_group = q.group_width == 4 && p.cols >= kSpanBackwardFirstRow;
  if (!congruent_xy(p) && ((size == 4 && bytes < kSpanApartMinBytes) ||
                           (bwd && p.cols < kSpanApartBackwardMinRow && !narrow_group)))
    return Score::reject();
  if ((packs == 3 && (size != 2 || q.group_width < 8)) || (bwd && (size != 2 || (packs == 4 && q.group_width == 4))))
    return Score::reject();
  Score s;
  s.key[0] = !bwd && p.cols >= span_first_row(size) ? 4 : 3;
  // key 3: above the warp tier (at most 16), below the tile (99-100); the
  // backward's rows from kSpanBackwardFirstRow above the tile
  s.key[1] = bwd && p.cols >= kSpanBackwardFirstRow ? 101 : 50;
  const int64_t cap = int64_t{q.group_width} * packs;  // body packs
  const int64_t body = std::min(cap, p.cols / q.pack_size);
  s.key[2] = -((cap - body) * 8 / cap);
  s.key[3] = bwd && packs == 3 ? 5 : packs;  // the backward: 3 packs before 4 (rows of 77: 82-90% against 72-77%)
  s.key[4] = (q.rows_per_access == 2) == (packs == 1);
  return s;
}

template <class Params>
Score tile_heuristic(const Params& q, const Problem& p) {
  const int size = dtype_size(p.dtype);
  // the widest pack the register tiers could use instead: 16 bytes, and
  // forward slabs 8 (see above)
  const bool slab = p.inner > 1;
  if (pack_covers(p, 16) || (slab && !backward(p) && size < 8 && pack_covers(p, 8)) ||
      (!slab && (p.cols < kTileMinRow || p.cols > (backward(p) ? kTileMaxRow : tile_max_forward_row(size)))) ||
      (!slab && backward(p) && backward_row_past_tile(p)))
    return Score::reject();
  const int64_t cap = int64_t{q.block_size} * q.cols_per_thread;
  const TileShape sh = tile_shape(p, cap, size);
  if (sh.tiles < kTileWaves * p.device->sm_count) return Score::reject();
  if (sh.width > 0 && (backward(p) || size != 2 || sh.width * size < kTileMinSelectedSegmentPacks * 16))
    return Score::reject();
  Score s;
  s.key[0] = p.inner == 1 ? 3 : 7;
  s.key[1] = sh.width > 0 ? 99 : 100;
  // idle eighths of the tile (segments: axis x width of it)
  const int64_t used = std::min(cap, sh.width > 0 ? p.cols * sh.width : sh.per_tile * sh.unit);
  s.key[2] = -((cap - used) * 8 / cap);
  s.key[3] = -std::abs(q.block_size - 64);
  s.key[4] = -q.cols_per_thread;
  return s;
}

// A short axis over inner > 1: a thread a column pack, the axis in its
// registers (softmax_strided.cuh column_kernel), above the register tile,
// the tile and the split.  H200, kgen-bench softmax_dim on tensors of
// 26-512 MiB against the previous pick (bench/NOTES.md column v1): odd
// inner extents 0.55-0.90x the time forward ((1, 3, 22369621) float16 42%
// -> 75% of copy, (4096, 16, 1025) float32 56% -> 83%), 0.49-0.99x
// backward; aligned ones 0.76-1.01x forward ((16320, 3, 860) bfloat16 77%
// -> 100%, float32 100% -> 99%).  The backward's column variants
// hold 16 values a thread, so the half types' 16-byte packs stop at an
// axis of 2 there: where a wider pack than the variant's divides inner, the
// backward keeps the register tile ((256, 2, 262144) float16 97% of copy
// in the tile's 16-byte packs, 90% in 8-byte columns).  The forward does
// the same over an inner extent under kColumnWidePackInnerBytes ((11509,
// 5, 16) bfloat16 log_softmax: columns of 8-byte packs 6.8 us on the H200
// and 7.4 on the H100, the tile's 16-byte packs 5.6 and 5.9); over longer
// ones its narrower columns won ((32, 7, 2240) bfloat16, 8-byte packs
// against 16: 0.88x the time; (1, 5, 29000) 0.82x).  Among column
// variants: the widest pack, the fewest axis slots past the axis (a slot
// re-reads the last position), then the most columns a thread while the
// tiles still give every SM kColumnBlocksPerSm blocks, else the fewest.
// An inner extent under kColumnMinInnerBytes leaves a warp's loads
// scattered over 32 outer positions, a few bytes of each (H200 sweep:
// (34304, 9, 2) bfloat16 11.0 us in columns against 5.8 in the register
// tile; (17425, 5, 14) bfloat16, 28 bytes, 6.6 against 8.6 and 12.6 in
// the tile).
//
// Forward rows (inner == 1) of kColumnMinRow-kColumnMaxRow values: a thread
// a row, the row in its registers, no shuffles.  H200, bench/variants.py
// over every default variant (bench/NOTES.md column v2): rows of 2-4 ran
// fastest in columns at every size but a few hundred thousand rows of 2
// (warp 4.1 us, columns 4.3) -- 1039x479x3 bfloat16 one element in 6.8 us
// against 13.5 in the tile and 10.0 in the warp tier, 3000000x4 bfloat16
// one element in 25.3 against 36.9, 1500000x3 bfloat16 12.6 against 17.0;
// float32 rows of 4, which 16-byte warp packs cover, even (7.5-7.7 us at
// 400000 rows).  Rows of 5-6 lose to the tile where it fills the GPU
// (400000x6 float32 17.1 us against 11.3, 1500000x5 29.3 against 24.7)
// and win where it does not and the warp tier takes them (79133x5 float32
// 4.9 against 5.7, 38x6089x5 bfloat16 6.8 against 9.2, 16x3x31x79x6
// bfloat16 one element in 5.4 against 6.8), so they rank between the two;
// rows of 7 lost to both (120000x7 float32 8.0 us against 7.1).
// Backward rows (H100, bench/variants.py; bench/NOTES.md tile v5): the half
// types' rows of 2-3 ran fastest in columns of 4 rows a thread (2000000x2
// bfloat16 13.2 us against 15.2 in the warp tier, 1500000x3 bfloat16 one
// element in 16.9 against 20.0 and 23.9 in the tile, 300000x3 float16 6.4
// against 7.4); rows of 4 and every float32 row 1.07-1.18x slower than in
// the warp tier (575126x4 bfloat16 11.3 against 10.0, 300000x3 float32
// 8.0 against 7.0): only the half types' rows up to kColumnBackwardMaxRow,
// those of 3 (which the tile takes) in tensors of up to
// kBackwardShortRowMaxBytes (random sweep: 3x517x79x128x3 float16 over dim
// 4, 94 MB, 110.5 us in the tile, 130.1 in columns); rows of 2, which the
// tile does not take, at any size (6000000x2 bfloat16 one element in 33.6
// us against 36.4 in the warp tier).
constexpr int64_t kColumnBlocksPerSm = 4;
constexpr int64_t kColumnMinInnerBytes = 16;
constexpr int64_t kColumnWidePackInnerBytes = 64;
constexpr int64_t kColumnMinRow = 2, kColumnFirstRow = 4, kColumnMaxRow = 6, kColumnBackwardMaxRow = 3;
// The longest row (inner == 1) the column tier takes: the forward's up to
// kColumnMaxRow; the backward's half types' up to kColumnBackwardMaxRow in
// tensors of up to kBackwardShortRowMaxBytes, else rows of kColumnMinRow;
// no float32 or float64 backward row.
int64_t column_max_row(const Problem& p) {
  if (!backward(p)) return kColumnMaxRow;
  if (dtype_size(p.dtype) != 2) return 0;
  return backward_short_rows_small(p) ? kColumnBackwardMaxRow : kColumnMinRow;
}

template <class Params>
Score column_heuristic(const Params& q, const Problem& p) {
  const int size = dtype_size(p.dtype);
  Score s;
  if (p.inner == 1) {
    if (p.cols < kColumnMinRow || p.cols > column_max_row(p)) return Score::reject();
    // the row tiers' class (key 3): above the tile (key[1] 99-100) up to
    // kColumnFirstRow, else between it and the warp tier (at most 16)
    s.key[0] = 3;
    s.key[1] = p.cols <= kColumnFirstRow ? 101 : 98;
  } else {
    if (p.inner * size < kColumnMinInnerBytes) return Score::reject();
    int64_t widest = 16 / size;
    while (widest > 1 && !pack_covers(p, widest * size)) widest /= 2;
    const bool narrower = q.pack_size < widest && (backward(p) || p.inner * size < kColumnWidePackInnerBytes);
    s.key[0] = narrower ? 5 : 8;
    s.key[1] = q.pack_size;
  }
  s.key[2] = -q.axis_per_thread;
  const int64_t packs = p.rows * (p.inner / q.pack_size);
  const int64_t per_block = int64_t{kColumnBlock} * (q.cols_per_thread / q.pack_size);
  const bool fills = (packs + per_block - 1) / per_block >= kColumnBlocksPerSm * p.device->sm_count;
  s.key[3] = fills ? q.cols_per_thread : -q.cols_per_thread;
  return s;
}

template <class Params, class Tier>
Score heuristic_as(const VariantInfo& v, const Problem& p) {
  const Params& q = *static_cast<const Params*>(v.params);
  Score s;
  s.key[1] = q.pack_size;  // widest accesses first (the smem tier overrides)
  switch (q.tier) {
    case Tier::warp: {
      s.key[0] = 3;
      const int64_t reach = int64_t{q.cols_per_thread} * q.group_width;
      // Widest pack first, unless it comes only in variants 4x or more the
      // row's length (the narrowest 8-byte-pack float16 variants hold 512
      // values): each doubling past 2x ranks below any pack that fits.
      // H100 random sweep, float16 rows of 4 (1242x182x3x4 over dim 3):
      // 0.05x torch in the 512-wide pack-4 variant, 12.9 us in a 4-lane
      // pack-1 one (bench/NOTES.md sweep v1).
      int64_t waste = 0;
      while (reach >= std::max<int64_t>(1, p.cols) << (waste + 2)) ++waste;
      s.key[1] = -waste * 16 + q.pack_size;
      // half types at 64 values a lane: 8-byte packs (float16 and bfloat16
      // rows of 2048: 98% of copy against 85% in 16-byte packs; of 1536:
      // 92% against 85%; H100, bench/NOTES.md split v1; masked rows not
      // measured)
      if (dtype_size(p.dtype) == 2 && q.cols_per_thread > 32 && q.pack_size == 8 && !p.mask) s.key[1] -= 5;
      s.key[2] = -reach;  // least padding: fewer registers, fewer idle lanes
      // two rows an access hide latency for narrow groups, and for full
      // warps in the forward where a lane holds one or two packs a row (its
      // loads are all issued before the first use); wider rows already
      // have their packs in flight (the generator's warp_rows_per_access)
      const int packs = q.cols_per_thread / q.pack_size;
      bool two_rows = q.group_width < 32 || (!backward(p) && packs <= 2);
      // the backward's full warps at pack 1, one or two values a lane, in
      // rows that fill a wave: H100, bench/variants.py (bench/NOTES.md warp
      // v5), float32 log backward 38767x23 7.2 us in two rows an access,
      // 9.7 in one; 49x313x19 4.9 against 5.9; 200003x31 28.0 (the tile
      // 36.4); under a wave one row: the H100 sweep's tiny problems ran
      // 0.3-0.5 us slower in two (77x21 bfloat16 3.5 -> 4.0 us), and so did
      // 16-byte packs (128x89x264 bfloat16 8.6 -> 9.4)
      if (backward(p) && q.group_width == 32)
        two_rows = q.pack_size == 1 && packs <= 2 && p.rows >= resident_blocks(*p.device, 32);
      s.key[3] = (q.rows_per_access == 2) == two_rows;
      s.key[4] = !q.padding;  // exact fit: no bounds checks
      // (log_softmax rows of more than 16 values a lane at pack 1 ranked
      // below the smem tier while their loads waited one behind another:
      // since, H100 kgen-bench --variants at 64 MiB, rows of 547 float32
      // 101% of copy here against 90% in smem, bfloat16 81% against 43%;
      // rows of 777 103% / 92% against 96% / 53%; bench/NOTES.md warp v1)
      return s;
    }
    case Tier::smem: {
      s.key[0] = 2;
      // 4-byte packs: on an H100 they reached 86-94% of copy for 2048-8192
      // cols where 16-byte packs reached 30-65% (the wide-pack kernels spill
      // under the 32-register cap of full residency; bench/NOTES.md v3)
      s.key[1] = -std::abs(q.pack_size * dtype_size(p.dtype) - 4);
      s.key[2] = smem_active_warps(p, q.block_size);
      // at equal occupancy the smallest block: more rows in flight per SM
      // and cheaper barriers (H100, 2048-8192 cols: 128-thread blocks beat
      // 512-1024 by 5-25%; bench/NOTES.md v1)
      s.key[3] = -q.block_size;
      return s;
    }
    case Tier::uncached:
      s.key[0] = 1;
      s.key[2] = q.block_size;
      return s;
    case Tier::block:
    case Tier::cluster:
      return slice_heuristic(q, p);
    case Tier::split:
      return split_heuristic(q, p);
    case Tier::tile:
      return tile_heuristic(q, p);
    case Tier::span:
      return span_heuristic(q, p);
    case Tier::grid:
      return grid_heuristic(q, p);
    case Tier::strided: {
      // Above the row tiers when the dim is not the last (they cannot run
      // it); below the generic one when it is (a column a lane,
      // uncoalesced).  The order below reproduces the winners of the H100
      // sweep (bench/NOTES.md v4): a warp's column segment of 32 bytes at
      // least (1-lane tiles ran at 8-20% of copy); the fewest idle axis
      // slots; 8-byte packs or wider (4-byte tiles lost 20-30 points), then
      // float32's segments of 64 bytes (bench/NOTES.md strided pick); then
      // backward the fewest values a thread (y and dy in registers: smaller
      // tiles keep more warps resident, 96% against 75% at (256,64,3136)
      // float16) and forward the fewest warps (fewer partials to combine),
      // then the larger tile.
      if (narrow_on_short_axis(p, q.col_lanes, q.pack_size)) return Score::reject();
      const int size = dtype_size(p.dtype);
      const int64_t segment = int64_t{q.col_lanes} * q.pack_size * size;
      const bool coalesced = segment >= 32 || int64_t{q.col_lanes} * q.pack_size >= p.inner;
      s.key[0] = p.inner == 1 ? -2 : coalesced ? 6 : 4;
      const int64_t per = strided_axis_per_warp(q.col_lanes, q.axis_per_thread);
      const int64_t warps = strided_warps(p, q.col_lanes, q.axis_per_thread);
      s.key[1] = -((warps * per - p.cols) * 8 / (warps * per));  // idle eighths
      // and, for 4-byte types and wider, segments of 64 bytes or more: a
      // warp's 32-byte segments (the fewest warps' pick) ran float32 at
      // 1.3-1.8x the best default variant's time (kgen-tune sweeps of the
      // full level, default variants only: 1024 x 128 x 196 in 2 lanes x 4
      // values 142.8 us, 16 lanes 78.3 on the H100; 111.3 against 62.9 on
      // the H200); the half types' 32-byte segments of 4 lanes x 4 values
      // stay (rows of 1024 over an inner of 16 or 4096: 8 lanes 1.13-1.17x
      // their time)
      s.key[2] = (q.pack_size * size >= 8) * 2 + (segment >= 64 && size >= 4);
      const int64_t values = int64_t{q.pack_size} * q.axis_per_thread;
      s.key[3] = backward(p) ? -values : -warps;
      // forward, at equal warps the larger tile (float32 (64,1024,4096):
      // 16 columns x 8 values 86.5% against 16 x 4 at 84.5%)
      s.key[4] = backward(p) ? -warps : values;
      return s;
    }
    case Tier::strided_uncached: {
      // A row (inner == 1) is the generic variant's (the uncached row kernel
      // at pack 1): this tier gives it one column a warp, 0.01x torch on
      // rows of 0.3-57M elements (H100, random sweep, bench/NOTES.md sweep v1).
      // a narrow inner is the split's (split_heuristic)
      if (p.inner == 1 || narrow_on_short_axis(p, q.col_lanes, q.pack_size) || narrow_inner(p))
        return Score::reject();
      // below any register tile; the most threads along the axis (fewest
      // lanes a column) in a coalesced segment: (8, 8192, 64) ran at 35% of
      // copy with 2 lanes, 9-15% with 8
      const int64_t segment = int64_t{q.col_lanes} * q.pack_size * dtype_size(p.dtype);
      s.key[0] = 5;
      s.key[1] = segment >= 16 || int64_t{q.col_lanes} * q.pack_size >= p.inner;
      s.key[2] = -q.col_lanes;
      s.key[3] = q.pack_size;
      return s;
    }
    case Tier::column:
      return column_heuristic(q, p);
    case Tier::generic:
      s.key[0] = 0;
      return s;
  }
  return Score::reject();
}

template <class Params, class Tier>
int64_t workspace_as(const VariantInfo& v, const Problem& p) {
  const Params& q = *static_cast<const Params*>(v.params);
  if (q.tier == Tier::grid) return grid_workspace_bytes(p, q.block_size);
  return q.tier == Tier::split ? split_workspace_bytes(p, q.block_size, dtype_size(p.dtype)) : 0;
}

}  // namespace

bool supports(const VariantInfo& v, const void* problem) {
  return supports_as<gen::SoftmaxParams, gen::SoftmaxTier>(v, *static_cast<const Problem*>(problem));
}

bool supports_backward(const VariantInfo& v, const void* problem) {
  return supports_as<gen::SoftmaxBackwardParams, gen::SoftmaxBackwardTier>(
      v, *static_cast<const Problem*>(problem));
}

Score heuristic(const VariantInfo& v, const void* problem) {
  const Problem& p = *static_cast<const Problem*>(problem);
  if (v.family == Family::softmax_backward)
    return heuristic_as<gen::SoftmaxBackwardParams, gen::SoftmaxBackwardTier>(v, p);
  return heuristic_as<gen::SoftmaxParams, gen::SoftmaxTier>(v, p);
}

int64_t workspace_bytes(const VariantInfo& v, const Problem& p) {
  if (v.family == Family::softmax_backward)
    return workspace_as<gen::SoftmaxBackwardParams, gen::SoftmaxBackwardTier>(v, p);
  return workspace_as<gen::SoftmaxParams, gen::SoftmaxTier>(v, p);
}

// The warp tier's row capacities (32 lanes x cols_per_thread, narrower lane
// groups below 32 columns): a row up to 2048 columns is bucketed by the
// smallest that holds it, so that the rows of a bucket share the warp
// variant that fits them (H100 sweep: float16 rows of 768 and 1024 want
// pack 4 at 24 and 32 values a lane, a power-of-two bucket cannot hold both).
constexpr int64_t kWarpCapacities[] = {1, 2, 4, 8, 16, 32, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048};

// Rows (masked or not) by warp capacity, longer rows by half powers of two
// of their length (row_l<floor(2 log2 cols)>: the smem tier's blocks an SM
// halve at each power of two; H100 sweep: float16 rows of 49152 and 65536
// columns want the smem and the uncached tier); under 1024 rows (under a
// wave of blocks) apart.  The
// strided layout by factor-4 classes of the axis and of inner (the register
// tile's fit and the block's warps), problems of few columns apart.
// Every field the tiers' supports() and the heuristic read, pointers mod 16
// (the generated supports() and the rules above look at alignment and at
// the congruence of x and y, never past 16 bytes).
bool selection_key(const void* problem, ProblemKey* key) {
  const Problem& p = *static_cast<const Problem*>(problem);
  key->add(p.log);
  key->add(p.rows);
  key->add(p.cols);
  key->add(p.inner);
  key->add_address(p.x);
  key->add_address(p.y);
  key->add_address(p.dy);
  if (const Mask* m = p.mask) {
    key->add(m->kind);
    key->add_address(m->data);
    key->add(m->heads);
    key->add(m->queries);
    key->add(m->batch_stride);
    key->add(m->head_stride);
    key->add(m->query_stride);
    key->add(int64_t{m->causal} | int64_t{m->safe} << 1);
  }
  return true;
}

void bucket(const void* problem, char* out, int size) {
  const Problem& p = *static_cast<const Problem*>(problem);
  using tuning::log2_class;
  // The backward's dx apart from y (mod 16 bytes) in buckets of their own:
  // the sweeps time congruent tensors (tuning/problems), and there the
  // backward's blocks and the span tier run alike, where with dx apart the
  // spans lead (H100, y and dy one element in, dx fresh: bfloat16 rows of
  // 1001 86-92% of copy in the database's block of 128 x 16 values, 100%
  // in the heuristic's span; float32 92-101% in its block, 100% in the
  // warp tier).  The forward's y apart keeps the congruent buckets: two of
  // the three H100 sweep problems (seeds 1 and 2) that its own buckets
  // moved ran slower (log_softmax of one bfloat16 row of 119533 one
  // element in, 6.2 -> 7.8 us; softmax 77x2048x32 float32 over dim 1, 37.3
  // -> 40.2 us), its blocks and clusters shifting y as fast as congruent
  // ones (bench/NOTES.md slice v11)
  const char* apart = backward(p) && !congruent_xy(p) ? "_apart" : "";
  if (p.inner > 1) {
    // few columns (the split heuristic's condition) apart: their tier is
    // the split; tensors under 4 MiB apart (H100: the split at 1024 threads,
    // 4.6% ahead on 8 x 8192 x 64 float32, ran 4786 x 23 over dim 0 at 12.0
    // us against the heuristic's 10.5)
    const bool few = strided_few_columns(p);
    std::snprintf(out, size, "strided_a%d_i%d%s%s%s", (log2_class(p.cols) + 1) / 2, (log2_class(p.inner) + 1) / 2,
                  few ? "_few" : "", tuning::small_tag(p.rows * p.cols * p.inner * dtype_size(p.dtype)), apart);
    return;
  }
  const char* kind = p.mask ? "masked" : "row";
  // Under 1024 rows, by the rows an SM: a variant's CTAs a row decide
  // there, and one bucket from 1 row to 1023 took a cluster of 2 measured
  // on tens of rows for a single row (H100 softmax sweep: one bfloat16 row
  // of 114407 6.8 -> 11.1 us against the heuristic's cluster of 8;
  // bench/NOTES.md tuning v4).  Classes: under a quarter of the SMs' rows,
  // a row an SM, 4 rows an SM, more.
  char few[8] = "";
  if (p.rows < 1024) {
    const int64_t sms = std::max(1, p.device->sm_count);
    const int cls = p.rows * 4 < sms ? 0 : p.rows < sms ? 1 : p.rows < 4 * sms ? 2 : 3;
    std::snprintf(few, sizeof few, "_few%d", cls);
  }
  for (int64_t cap : kWarpCapacities)
    if (p.cols <= cap) {
      std::snprintf(out, size, "%s_w%lld%s%s", kind, static_cast<long long>(cap), few, apart);
      return;
    }
  std::snprintf(out, size, "%s_l%d%s%s", kind, static_cast<int>(std::floor(2 * std::log2(static_cast<double>(p.cols)))),
                few, apart);
}

}  // namespace softmax
}  // namespace kgen
