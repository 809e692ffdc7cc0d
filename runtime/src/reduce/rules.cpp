// Reduction capability (supports), preference (heuristic) and launch plans.
//
// Capability: the row tiers need inner == 1 and take any row (its aligned
// body in packs, head and tail in narrower loads: reduction.cuh cut_row);
// the col, col_thread and slab tiers need inner > 1, a pack that divides
// inner and x aligned to it (slab: at most half a block of packs of inner).
// Preference for rows: a group of lanes per row sized
// so that each lane loads about one batch (`fold` packs) of its row, as long
// as rows x lanes keep the GPU busy; else a block per row when the rows fill
// a wave of blocks; else the split tier, whose blocks share rows.  The
// generic variant (a block per row, split when rows are few, pack 1) takes
// what no other compiled variant can.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "dtype.hpp"
#include "validate.hpp"
#include "kgen_params.gen.hpp"
#include "tuning/bucket.hpp"
#include "reduce/problem.hpp"

namespace kgen {
namespace reduce {
namespace {

using Params = gen::ReduceParams;
using Tier = gen::ReduceTier;

int log2_floor(int64_t v) {
  int l = 0;
  while (v > 1) v >>= 1, ++l;
  return l;
}

bool row_tier(Tier t) { return t == Tier::thread || t == Tier::warp || t == Tier::block || t == Tier::split; }

}  // namespace

bool supports(const VariantInfo& v, const void* problem) {
  const Problem& p = *static_cast<const Problem*>(problem);
  const Params& q = *static_cast<const Params*>(v.params);
  if (v.element != p.dtype) return false;
  if (q.tier == Tier::generic) return true;
  if (row_tier(q.tier) == (p.inner > 1)) return false;
  // rows: any length and element alignment (each row's aligned body in
  // packs, its head and tail element-wide; reduction.cuh cut_row, fold_few)
  if (row_tier(q.tier)) return true;
  // a slab pass holds two rows or more
  if (q.tier == Tier::slab && p.inner / q.pack_size > q.block_size / 2) return false;
  return p.inner % q.pack_size == 0 && aligned_to(p.x, int64_t{q.pack_size} * dtype_size(p.dtype));
}

Score heuristic(const VariantInfo& v, const void* problem) {
  const Problem& p = *static_cast<const Problem*>(problem);
  const Params& q = *static_cast<const Params*>(v.params);
  const DeviceInfo& d = *p.device;
  const int64_t resident_threads = int64_t{d.sm_count} * d.max_threads_per_sm;
  Score s;
  s.key[1] = q.pack_size;  // widest loads first
  // but a row cut into head, packs and tail (misaligned, or a length the
  // pack does not divide) shorter than 4 packs below pack 1: its cut costs
  // more than the packs save (H200 random sweep, a thread a row: float16
  // rows of 3 at pack 8 39.4 us, at pack 1 18.7; bfloat16 rows of 17
  // 54.3 us, 37.1)
  const bool cut = row_tier(q.tier) && rows_cut(p, q.pack_size, dtype_size(p.dtype));
  if (cut && p.reduce < 4 * int64_t{q.pack_size}) s.key[1] = 0;
  const int64_t row_bytes = p.reduce * dtype_size(p.dtype);  // a row of the row tiers
  switch (q.tier) {
    case Tier::thread:
    case Tier::warp: {
      const int64_t packs = p.reduce / q.pack_size;
      // lanes that give each about one batch of the row
      const int64_t want = int64_t{1} << std::min(5, log2_floor(std::max<int64_t>(1, packs / q.fold)));
      // a quarter of the resident threads busy is enough with batched loads;
      // fewer rows leave the GPU idle: a block per row (generic included)
      // does better, unless rows are so short (4 batches of a warp or less)
      // that a block would idle instead (H100 random sweep: 57472 rows of 5
      // int32 one element into their storage, 81.7 us a block a row, 4.0 us
      // a thread a row)
      // (8 packs a lane or fewer stay with a warp: H100, 854 rows of 778
      // float32, a warp of 32 lanes 4.3 us, a block of 512 7.0; bfloat16
      // argmax over 1909 rows of 1936 (242 packs) 7.8 us, a block 11.3;
      // 484 packs of float32 a block 9.2 us, the best of every variant)
      if (p.outer * q.group_width < resident_threads / 4 && packs > 8 * 32) return Score::reject();
      // sum / max / min over rows that a full warp covers in more than 4
      // batches of 16-byte loads go to a block each when there are enough
      // rows (H100, 16384 x 8192 float32: warp per row 99%, block per row
      // 104% of copy); argmax / argmin stay with a warp, whose per-element
      // work a block does not shorten (float16: warp 95%, blocks 80-89%;
      // bench/NOTES.md reduce v2).  Counted in bytes, not packs: a row
      // that only takes pack 1 (float16 rows of 700, 1400 bytes) is short
      // for a block (kgen-tune --report, H100: block 1.8x the warp's time)
      s.key[0] = !is_arg(p.op) && row_bytes > int64_t{32} * q.fold * 4 * 16 ? 2 : 6;
      s.key[2] = -std::abs(log2_floor(q.group_width) - log2_floor(want));
      s.key[3] = -std::abs(q.fold - 4);
      s.key[4] = -q.group_width;  // at equal fit: more rows per warp, fewer shuffles
      return s;
    }
    case Tier::block: {
      // two rows an SM keep every SM busy at the block size the row wants
      // (below); fewer are the split tier's but for short rows (next).
      // Counted for every block size alike: a wave of small blocks would
      // send short rows to blocks far wider than they fill (H100, 400 rows
      // of 3000 float32: 1024 threads 7.9 us, 256 threads 4.7)
      // Rows of at most one an SM: a block a row still comes first where
      // one SM streams its row sooner than the split tier's second launch
      // lands: rows of 16-256 KB for sum, max and min, 16-128 KB for argmax
      // and argmin, whose per-element work a block does not shorten (H100,
      // bench/variants.py and the reduce sweeps: float16 max of one row of
      // 65537 5.3 us against the split's 7.5, of 131072 5.8 against 7.5;
      // float32 max of 64 rows of 50257 9.7 against 12.6; lost: one float32
      // row of 131072 8.0 against 7.6, bfloat16 sum of 251020 10.8 against
      // 8.7, float32 max of 200 rows of 20000 11.0 against 9.9; under 16 KB
      // the split is one block too; bench/NOTES.md reduce v6)
      const bool streams = p.outer <= d.sm_count && row_bytes >= 16 * int64_t{1024} &&
                           row_bytes <= (is_arg(p.op) ? 128 : 256) * int64_t{1024};
      s.key[0] = p.outer >= int64_t{2} * d.sm_count || streams ? 4 : 1;
      // threads that each load one batch of 4 packs of the row: H100,
      // 16384 x 8192 float16 (1024 packs): 256 threads 96-99% of copy,
      // 512 85-87%, 1024 52-66% (bench/NOTES.md reduce v1)
      const int64_t want = std::max<int64_t>(1, p.reduce / q.pack_size / 4);
      s.key[2] = -std::abs(log2_floor(q.block_size) - log2_floor(want));
      s.key[3] = -std::abs(q.fold - 4);
      s.key[4] = q.tree == 0;  // the trees were within noise of shuffles
      return s;
    }
    case Tier::split:
      // 8 packs in flight a thread, 256 threads: within 3% of the best
      // split on 128 x 2^20 and 2^28 elements, float32 and float16
      // (bench/NOTES.md reduce v2)
      s.key[0] = 3;
      s.key[2] = -std::abs(q.fold - 8);
      s.key[3] = -std::abs(q.block_size - 256);
      return s;
    case Tier::col: {
      const int64_t ipacks = p.inner / q.pack_size;
      s.key[0] = 3;
      // Threads idle past the reduced extent (rows of threads) or past
      // inner (lanes of the last tile), and sectors half read (a row
      // segment of under 32 bytes, unless the tile spans whole rows, which
      // then lie back to back): the most busy eighths first, then the
      // widest pack.  H100 random sweep (bench/NOTES.md sweep v1, v2):
      // amin over dim 0 of 2x787x8x64 bfloat16 took 75 us in 8 lanes x 64
      // rows of threads (2 busy), 5.9 us in 32 lanes x 4 rows; argmin over
      // dim 3 of float16 923x3x2x929x8 518 us in 8-byte packs (1 lane of 8
      // busy), 72 us at pack 1; float16 195741x167 over dim 0 110 us in
      // 8 lanes (16-byte segments), 51 us in 32.
      const int64_t by = q.block_size / q.lanes;
      const int64_t lane_slots = (ipacks + q.lanes - 1) / q.lanes * q.lanes;
      const int64_t segment = int64_t{q.lanes} * q.pack_size * dtype_size(p.dtype);
      const int64_t sector_halves = q.lanes >= ipacks || segment >= 32 ? 2 : 1;
      const int64_t slots = by * std::max<int64_t>(1, lane_slots) * 2;
      s.key[1] = (std::min(by, p.reduce) * ipacks * 8 * sector_halves + slots / 2) / slots;  // rounded
      s.key[2] = q.pack_size;
      // (64, 4096, 512), bench/NOTES.md reduce v2: about 16 elements in
      // flight a thread (float16 at fold 4 ran out of registers: 60-72% of
      // copy, at fold 2 84-91%); row segments of 128 bytes or more (at pack
      // 1 the sweep's float32 325x471x273 over dim 0 took 117 us in 8
      // lanes, 89 us in 32)
      // At pack 1 the count is of bytes: 16 a thread, so fold 8 for half
      // types and fold 4 for 4-byte ones, and fold 4 where a thread's
      // rows are fewer than 8 (H200 reduce sweeps, seeds 1 and 2, pack-1
      // fold 8 against 4: bfloat16 sum over dim 0 of 6595 x 5381 55.8 ->
      // 45.3 us, 159 x 179 7.5 -> 4.8; int32 argmin over dim 1 of
      // 2705 x 71 x 25 21.0 -> 29.5, argmax 325 x 471 x 273 80.4 -> 102.9;
      // reduced axes of 3-9 rows +0.2-0.9 us)
      const int64_t target = q.pack_size > 1 ? 16
                             : dtype_size(p.dtype) <= 2 && p.reduce >= by * 8 ? 8
                                                                              : 4;
      s.key[3] = -std::abs(q.fold * q.pack_size - target) * 256 - std::max(0, 7 - log2_floor(segment));
      // 8 rows of threads a block, then 256 threads: 64 rows (8 lanes x
      // 512) took 1.2-5.9x the best tile's time on 8 col problems (H100,
      // bench/NOTES.md sweep v2: argmax over dim 1 of bfloat16
      // 32x200x16384 496 us, 84-117 us in 4-8 rows; float32 8x300x65536
      // 360 us, 207 us)
      s.key[4] = -std::abs(by - 8) * 1024 - std::abs(q.block_size - 256);
      return s;
    }
    case Tier::col_thread: {
      // A thread per output pack, when the packs give half the resident
      // threads, or a sixteenth of them over a reduced axis of 64 or less
      // (a thread's serial loads stay few); then above a col tile of the
      // same pack and busy eighths (tiles idle lanes past a narrow inner and
      // rows of threads past a short axis, and pay a block combine), below
      // a wider pack.  H100 random sweep (bench/NOTES.md sweep v2): pack-1
      // col tiles ran float16 11x5697563 over dim 0 at 12% of copy and
      // int32 108495x2x13 over dim 1 at 3%; float32 19x256x1069 over dim 0
      // (68416 packs of 4) took 19.2 us in col tiles, 11.1 us here.
      const int64_t threads = p.outer * (p.inner / q.pack_size);
      if (threads < resident_threads / 2 && !(p.reduce <= 64 && threads >= resident_threads / 16))
        return Score::reject();
      s.key[0] = 3;
      s.key[1] = 8;
      s.key[2] = q.pack_size;
      s.key[3] = 1;  // above every col tile's (at most 0)
      s.key[4] = -std::abs(q.fold - 4) * 1024 + (q.block_size == 256);
      return s;
    }
    case Tier::slab: {
      // Busy eighths as the col tiles count theirs (rows of threads past a
      // short axis idle), every sector used.  Above the col tiles and a
      // thread an output pack where a row's inner run is under 256 bytes
      // (their row segments straddle sectors, a warp's loads spread over
      // rows a stride apart), half the threads or more are busy, a pass
      // takes 4 rows or more, and a block's part of a slab is large: 32
      // KB, or 64 KB when slabs split (their combine).  Below them
      // otherwise.  H100 reduce sweeps, seeds 1-3: argmax over dim 1 of
      // 1247x2237x10 float16 (44 KB slabs) 125 -> 49.5 us, of 8x1272973x3
      // int32 (115 KB a block) 122 -> 75; lost on 812-byte slabs (amax
      // over dim 3 of 79x5x10x7x29 float32 4.6 -> 26.9 us), on one pack a
      // row (argmin over dim 3 of float16 923x3x2x929x8 71 -> 152), on
      // 39 KB split parts (amax over dim 0 of 358031x29 int32 31.6 ->
      // 40.3) and on passes of 2 rows (argmax over dim 1 of 631x641x97
      // float16 77.5 -> 90.4).
      const int64_t ipacks = p.inner / q.pack_size;
      const int64_t rs = q.block_size / ipacks;
      const int64_t splits = plan_slab(p, q.block_size, q.pack_size, q.fold).splits;
      const int64_t per = div_up(p.reduce, splits);
      const int64_t part_bytes = per * p.inner * dtype_size(p.dtype);
      const bool narrow = p.inner * dtype_size(p.dtype) < 256;
      const bool worth = ipacks >= 2 && rs >= 4 && part_bytes >= (splits > 1 ? 64 : 32) * int64_t{1024};
      s.key[1] = (std::min(rs, per) * ipacks * 8 + q.block_size / 2) / q.block_size;
      s.key[0] = narrow && worth && s.key[1] >= 4 ? 4 : 2;
      s.key[2] = q.pack_size;
      s.key[4] = -std::abs(q.fold * q.pack_size * dtype_size(p.dtype) - 32) * 1024 - std::abs(q.block_size - 256);
      return s;
    }
    case Tier::generic:
      s.key[0] = -1;
      return s;
  }
  return Score::reject();
}

Plan plan_for(const VariantInfo& v, const Problem& p) {
  const Params& q = *static_cast<const Params*>(v.params);
  switch (q.tier) {
    case Tier::split: return plan_rows(p, q.block_size, q.pack_size, q.fold, true);
    case Tier::col: return plan_cols(p, q.block_size, q.pack_size, q.fold, q.lanes);
    case Tier::slab: return plan_slab(p, q.block_size, q.pack_size, q.fold);
    case Tier::generic:
      return p.inner == 1 ? plan_rows(p, q.block_size, q.pack_size, q.fold, true)
                          : plan_cols(p, q.block_size, q.pack_size, q.fold, q.lanes);
    default: return plan_rows(p, q.block_size, q.pack_size, q.fold, false);
  }
}

// Values and arg reductions apart (their partials differ in size); the last
// dim by the power of two of the row length, under 1024 rows apart (few long
// rows are split across blocks); a middle axis by factor-4 classes of the
// reduced and inner extents; the whole tensor by a factor-4 class of its size.
void bucket(const void* problem, char* out, int size) {
  const Problem& p = *static_cast<const Problem*>(problem);
  using tuning::log2_class;
  const char* kind = is_arg(p.op) ? "arg" : "val";
  // rows that the widest pack no longer than them (16 bytes at most) does
  // not cover whole (misaligned, or of a length it does not divide) apart:
  // the row kernels cut them into head, packs and tail, and an entry timed
  // on whole rows (2^k elements, aligned) need not win there (H100, a
  // float32 sum over rows of 3: the database's thread at pack 4 26.1 us,
  // the heuristic's pack 1 22.3)
  int64_t fit = 16 / dtype_size(p.dtype);
  while (fit > 1 && fit > p.reduce) fit /= 2;
  const bool cut = p.inner == 1 && rows_cut(p, fit, dtype_size(p.dtype));
  const char* cut_tag = cut ? "_cut" : "";
  // inputs under 4 MiB apart (H100: the entry of val_mid_r3_i8, timed on
  // 256 MB, summed 32x35x4x131 float32 over dim 0 in 7.7 us against the
  // heuristic's 4.5)
  const char* small = tuning::small_tag(p.outer * p.reduce * p.inner * dtype_size(p.dtype));
  if (p.inner == 1 && p.outer == 1)
    std::snprintf(out, size, "%s_all_r%d%s", kind, (log2_class(p.reduce) + 1) / 2, cut_tag);
  else if (p.inner == 1)
    std::snprintf(out, size, "%s_last_r%d%s%s%s", kind, log2_class(p.reduce), p.outer < 1024 ? "_few" : "", cut_tag,
                  small);
  else
    std::snprintf(out, size, "%s_mid_r%d_i%d%s", kind, (log2_class(p.reduce) + 1) / 2,
                  (log2_class(p.inner) + 1) / 2, small);
}

bool selection_key(const void* problem, ProblemKey* key) {
  const Problem& p = *static_cast<const Problem*>(problem);
  key->add(p.op);
  key->add(p.outer);
  key->add(p.reduce);
  key->add(p.inner);
  key->add_address(p.x);
  key->add_address(p.out);
  return true;
}

}  // namespace reduce
}  // namespace kgen
