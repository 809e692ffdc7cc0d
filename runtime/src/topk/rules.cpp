// Top-k capability (supports), preference (heuristic) and workspace plans.
//
// Capability: queue needs k <= 32 x capacity, block n <= block x items,
// tourney n <= 32 x items, cluster n <= 8 x block x items and k <= 128,
// stream k <= 128 (1024 with the buffer of 16384 keys) and k x 2 x items
// <= its buffer; a
// pack needs n to be a multiple of it and x aligned to it (every row then
// starts aligned), but for the stream and cluster tiers', which read a
// row's packs from the aligned one at or below its start.  multi and
// generic run anything valid.
// Preference: rows of up to 512 (the half types' 1024): tourney (a warp or
// a group of its lanes a row, the row in registers); many short rows and
// k <= 16: queue (one warp a row, the smallest capacity that holds k);
// rows past 16384 whose clusters fit one wave (the half types' past 32768:
// two, but for nearly full second waves): cluster; rows that fit a block,
// however few: block (the smallest row capacity that holds n); longer rows
// in batches of at least half the SMs, past a cluster's reach, or off the
// packs' alignment: stream (fewer rows in slices); k of 129-1024 in such
// rows, a block a row from 8 rows (the half types' from one) or slices
// over 7/8 of the SMs: stream's buffer of 16384 keys; else multi.
#include <algorithm>
#include <cstdint>
#include <cstdio>

#include "dtype.hpp"
#include "kgen_params.gen.hpp"
#include "tuning/bucket.hpp"
#include "topk/problem.hpp"
#include "validate.hpp"

namespace kgen {
namespace topk {
namespace {

using Params = gen::TopkParams;
using Tier = gen::TopkTier;

}  // namespace

bool supports(const VariantInfo& v, const void* problem) {
  const Problem& p = *static_cast<const Problem*>(problem);
  const Params& q = *static_cast<const Params*>(v.params);
  if (v.element != p.dtype) return false;
  if (q.tier == Tier::generic) return true;
  // the stream and cluster tiers read any row in the packs of its aligned
  // span (load_in_row); the others need every row aligned
  const bool spans = q.tier == Tier::stream || q.tier == Tier::cluster;
  if (spans ? !aligned_to(p.x, dtype_size(p.dtype)) : !rows_aligned(p, q.pack_size)) return false;
  switch (q.tier) {
    case Tier::queue: return p.k <= 32 * q.capacity;
    case Tier::tourney: return p.n <= int64_t{32} * q.items;
    case Tier::block: return p.n <= int64_t{q.block_size} * q.items;
    case Tier::cluster:
      return p.k <= kClusterK &&
             span_packs(p, q.pack_size) * q.pack_size <= int64_t{kClusterMax} * q.block_size * q.items &&
             p.batch * kClusterMax <= 0x7fffffff;  // a grid's x
    case Tier::stream:
      // n: its virtual indices (a row's, up to a pack's past its start) and
      // a chunk past them in 32 bits
      // the large buffer: 128 KB of dynamic shared memory a block beside
      // its static few KB (sm_86 and sm_89 give a block 99 KB)
      if (q.buffer > kStreamBuffer && p.device->smem_per_block_optin < kStreamKeyBytes * q.buffer + 4096)
        return false;
      return p.k <= (q.buffer > kStreamBuffer ? kStreamLargeK : kStreamK) && p.k * 2 * q.items <= q.buffer &&
             p.n <= 0xffffffff - 0x10000 && p.batch <= 0x7fffffff;
    default: return true;
  }
}

Score heuristic(const VariantInfo& v, const void* problem) {
  const Problem& p = *static_cast<const Problem*>(problem);
  const Params& q = *static_cast<const Params*>(v.params);
  const DeviceInfo& d = *p.device;
  Score s;
  // enough rows for a warp each on a quarter of the resident warps
  const bool rows_fill_warps = p.batch * 32 * 4 >= int64_t{d.sm_count} * d.max_threads_per_sm;
  switch (q.tier) {
    case Tier::queue:
      // its fast path (k <= 16: a bound from the lanes' maxima, one gather)
      // beats a block a row; past it, the running list does not (H100,
      // float32: 16384 x 1024, k 8: 66 us vs 134; 4096 x 4096, k 32:
      // 155 vs 125)
      if (!rows_fill_warps || p.n > 8192 || p.k > 16) return Score::reject();
      // a lane's element at a time: past short rows a block's pack-1 rounds
      // are faster (H100 sweep: 4231 x 3119 float32, k 4: 74 us against
      // 49; 106051 x 2: 114 us against 378 in blocks of 128)
      if (q.pack_size == 1 && p.n > 1024) return Score::reject();
      s.key[0] = 3;
      s.key[1] = -q.capacity;
      break;
    case Tier::tourney:
      // rows of up to 512 (items 8, 16), any k: the row in a warp's
      // registers, read once.  H100, bench/variants.py (topk v14): 16384 x
      // 256 float32 k 8 22.1 us against the queue's 26.2-30.8; 4096 x 512 k 32
      // 19.7 (items 16) against a block's 26.7; 8192 x 400 k 100 114 vs 139.
      // Items 32 for the half types' rows of 513-1024 (32-bit keys: a warp
      // sort of 1024 without spilling).  H200 (topk v42): bfloat16 27584 x
      // 529 k 193 random 313.1 us against the block's 600.6, sorted 312.2
      // against 948.3, unsorted 353.7 against 821.0; 4096 x 1000 k 100
      // 50.8 against 100.4; 1 x 1000 k 500 11.3 against 16.9; float16
      // 16384 x 1024 k 32 52.3 against 103.1.  But an unsorted k past 32
      // of fewer rows than fill the warps stays in the block, whose write
      // in index order is faster there (1 x 1000 bfloat16 k 500 8.4
      // against 16.4, 90 x 577 float16 k 511 13.3 against 17.1).
      if (q.items > 16 && (dtype_size(p.dtype) != 2 || (!p.sorted && p.k > 32 && !rows_fill_warps)))
        return Score::reject();
      // 4-byte rows past 256 sorted whole (16 64-bit keys a lane): a block
      // each row of few rows (4 x 500 k 250: 11.9 us; bfloat16 1 x 512 k
      // 100 stays: 6.1 against 9.2).  For k <= 32 the tourney's 32-bit
      // order bits (topk v32) beat the queue's fast path that took k <= 16
      // before (H200: 32768 x 400 float32 k 10 39.6 us against 56.7, 32768
      // x 512 sorted k 16 43.3 against 71.7)
      if (q.items > 8 && dtype_size(p.dtype) == 4 && p.k > 32 && !rows_fill_warps) return Score::reject();
      s.key[0] = 4;
      s.key[1] = -q.items;  // the tightest that holds the row
      // a row sorted whole (k > 32) sorts the registers its packs fill:
      // pack 1 fills the fewest (30505 x 64 float32 k 61: 57.8 us at pack
      // 1, 121.8 at pack 4)
      s.key[2] = p.k > 32 ? -q.pack_size : 0;
      break;
    case Tier::block:
      // a row that fits a block goes to the block however few the rows are:
      // the multi select's memset and 6-8 launches cost more than one SM a
      // row.  H100, kgen-bench topk --variants, batch 1-200 (topk v6): rows
      // of 2048-8192 10-14 us against 32-40, of 16384 15-25 against 33-59,
      // of 32768 18-38 against 35-68; H200 alike up to 8192.
      // Rows past 16384 (blocks of 1024 x 32 alone hold them) with k past
      // 1536: the multi tier, several blocks a row.  H200, sweeps (topk
      // v25): 60 x 20377 bfloat16 k 10897 59.3 -> 40.8 us, 949 x 16525
      // int32 k = n 1619 -> 1051, 400 x 27701 float16 k 1769 199 -> 171,
      // 1 x 21559 bfloat16 constant k 2605 59.3 -> 52.7.  Rows of repeated
      // values with k of 1107-1432 ran slower there (39 x 32768 float16 of
      // 1000 values k 1107 38.9 -> 64.3, 52 x 25057 bfloat16 of 4 k 1432
      // 54.0 -> 75.6, 64 x 23589 int32 constant k 1112 79.9 -> 97.5), hence
      // 1536, which left 133 x 25939 int32 descending k 1065 (145 us in
      // the block, 128 in the multi tier then) to the block.  And since,
      // int32 rows there with k past 1024: the unsorted 1024 x 32
      // spills 1.4 KB a thread, and the multi tier has gained since (topk
      // v27, v28).  H200, every variant (topk v30): 133 x 25939 k 1065,
      // descending 145.2 -> 109.4 us, random 179.6 -> 136.3; 64 x 23589
      // constant k 1112 79.8 -> 69.7.  The half types stay (39 x 32768
      // float16 k 1107: block 38.9, multi 60.5).
      // And the 4-byte types' unsorted k past the block's bound path (2k >
      // block) at pack 1: float32 multi 104.9 us, block 154.3 (133 x 25939
      // k 520), 114.0 against 158.0 (k 1065), 52.8-56.1 against 61.3 (1 x
      // 30001 k 800); int32 106.4 against 180.1 (133 x 25939 k 700);
      // at pack 4 the block stays (1 x 30000 k 800 40.5 against 52.5, 400
      // x 17000 k 1000 205.6 against 224.0; topk v31).
      if (int64_t{q.block_size} * q.items > 16384 &&
          (p.k > 1536 || (p.dtype == KGEN_INT32 && p.k > 1024) ||
           (dtype_size(p.dtype) == 4 && q.pack_size == 1 && !p.sorted && 2 * p.k > q.block_size)))
        return Score::reject();
      s.key[0] = 2;
      s.key[1] = -(int64_t{q.block_size} * q.items);  // the tightest row capacity
      // an unsorted k past the bound path of blocks up to 512 (2k <= block)
      // is ranked by one block scan a round of packs: the fewest rounds
      // (H100, topk v16: 614 x 1321 bfloat16 k 1105, 256 x 8 24.4 us,
      // 128 x 16 33.6, 256 x 16 43.1; 4096 x 4096 float32 k 2048 pack 4,
      // 512 x 8 146.4, 256 x 16 170.3; but 4231 x 3119 float32 k 4, 512 x
      // 8 74.5, 256 x 16 49.2).  Else the smaller block (4096 x 4096
      // float32 k 2048 sorted: 256 x 16 507.9 us, 512 x 8 568.2).
      // A sorted k's finish sorts by radix up to 8 keys a thread, past that
      // by a bitonic sort: the block that can (H200, topk v23: 2826 x 2921
      // float16 k 2232, 256 x 16 647 us, 512 x 8 369; 76 x 2112 bfloat16
      // k 2112, 48.8 -> 21.3).
      s.key[2] = !p.sorted && p.k > 256 ? -(q.items / q.pack_size)
                 : p.sorted && dtype_size(p.dtype) < 8 && p.k > 8 * int64_t{q.block_size} ? -1 : 0;
      s.key[3] = int64_t{q.radix} * 4096 - q.block_size;
      break;
    case Tier::cluster: {
      // Rows past 16384 whose clusters fit one wave (a CTA an SM): the
      // multi tier's 9-10 launches and a block's one SM a row cost more.
      // H200 (topk v31, v38): 1 x 128256 float32 k 50 12.0 us, multi 28.6
      // (v31's times); 1 x 32000 bfloat16 512 x 16 9.8, a block 16.7.
      // Below 16384 a block (1 x 8000 float32 k 20: 7.5 against 10.9), and
      // pack 1 loads a lane's elements one by one (8 x 50257 float32 42.2
      // against 31.6; both v31).
      // The half types' rows past 32768 up to 2 waves (the CTAs' threads
      // over 1024 an SM; but see v49 below), H200 (topk v40) against the
      // multi tier or the stream tier: bfloat16 32 x 128256 k 50 random 25.8
      // us against 40.2, sorted 52.5 against 51.5, reversed 48.8 against
      // 53.8; 64 x 128256 random 33.5 against 48.1, sorted 73.6 against
      // 60.3, reversed 71.4 against 62.0; 66 x 128256 random 33.6 against
      // the stream's 50.0, sorted 73.8 against 119.7; 32 x 262144 k 100
      // random 37.3 against 49.3, sorted 80.5 against 63.6; float16 32 x
      // 128256 reversed 39.8 against 54.0.  The 4-byte types lose there on
      // sorted and reversed rows (float32 32 x 262144 reversed 98.0 against
      // 64.1, 64 x 128256 91.6 against 61.7; int32 32 x 128256 sorted 56.1
      // against 47.8) and so do rows a block holds (bfloat16 128 x 32000
      // random 22.1 against 19.0, sorted 43.4 against 26.9): both keep one
      // wave.
      // Past 1.875 waves, where the stream tier splits the rows (2 x batch
      // up to the SMs), it has since caught up on random rows and stays
      // ahead on the others (H200, topk v49, bfloat16 and float16, k 8 and
      // 50, the stream tier against the cluster): 64 x 128256 random
      // 29.1-33.2 us against 31.8-33.5, sorted 33.1-40.8 against
      // 57.7-73.8, reversed 30.2-32.4 against 55.4-71.6, four values
      // 31.5-34.5 against 56.4-58.3; 32 x 262144 random 29.2-33.7 against
      // 32.9-36.0, sorted 33.7-39.5 against 60.2-77.3.  Below, the cluster
      // still wins random rows (bfloat16 50 x 128256 k 8, 1.5 waves: 24.3
      // against 28.9; 48 x 128256 k 50 24.9 against 32.9 in part A) and
      // keeps them, at twice its random time on sorted ones (51.8).  66
      // rows (half the SMs) go too since the stream tier splits them in two
      // (topk v50): k 50 random 33.7 -> 33.2 us, sorted 73.9 -> 41.2.  The
      // same test leaves 31 and 32 x 128256 to 1024 x 32 CTAs (5 a row,
      // 1.2 waves) over 1024 x 16 (8, 1.9): bfloat16 32 x 128256 random
      // k 50 24.1 against 25.8, sorted 50.8 against 52.2, reversed 49.4
      // against 48.7 (part A).
      // Rows off the packs' alignment rank as aligned ones (v45: read in
      // the packs of their aligned span): float32 1 x 128257 k 50 27.6 us
      // -> 13.1 (aligned 12.0), bfloat16 8 x 128256 with x one element off
      // 38.7 -> 12.2, 128 x 50257 33.1 -> 28.0.  Rows of few values lost
      // against the stream tier (bfloat16 83 x 62734 x off, k 25, 30.6 ->
      // 44.2), as aligned ones do (83 x 62736: the cluster 40.0, the
      // stream 25.5); random rows the other way (83 x 62734 25.7 against
      // 32.0).
      const int64_t per_cta = int64_t{q.block_size} * q.items;
      const bool wide = dtype_size(p.dtype) == 4;
      const int ctas = cluster_ctas(p, per_cta, q.pack_size);
      const int64_t waves = cluster_waves(p, q.block_size, per_cta, q.pack_size);
      const bool one_wave = p.batch * ctas <= d.sm_count;
      // past 1.875 waves of threads (1024 an SM), rows the stream tier
      // splits, past 65536 and aligned (measured on aligned rows of 128256
      // and 262144 only)
      const bool stream_ahead = 8 * p.batch * ctas * q.block_size > 15 * int64_t{d.sm_count} * 1024 &&
                                stream_splits(p) > 1 && p.n > 65536 && rows_aligned(p, q.pack_size);
      const bool two_waves = dtype_size(p.dtype) == 2 && p.n > 32768 && waves <= 2 && !stream_ahead;
      if (q.pack_size == 1 || p.n <= 16384 || !(one_wave || two_waves)) return Score::reject();
      s.key[0] = 3;
      // 32 a thread at 1024 threads spills for the 4-byte types and ran
      // 1.3-1.6x the 16 (1 x 128256 float32 27.1 us against 17.2, v31);
      // then the fewest waves, then the smallest CTA (1 x 32000 float32:
      // 512 x 16 14.3, 1024 x 16 16.1, v31)
      s.key[1] = wide && q.items > 16 ? 0 : 1;
      s.key[2] = -waves;
      s.key[3] = -per_cta;
      break;
    }
    case Tier::stream: {
      // rows past a block's 32768 that no cluster takes (past the
      // clusters' waves; k 1 over many elements before them): a block a
      // row reads x once where the multi tier's digit passes and gathers
      // read it again.
      // H200 (topk v39): 128 x 128256 float32 k 50 49.2 us against the
      // multi tier's 88.9, reversed 36.8 against 93.2; bfloat16 49.9
      // against 74.9; 128 x 262144 bfloat16 88.6 against 104.1; 256 x
      // 152064 bfloat16 k 100 123.6 against 129.8.  Sorted bfloat16 rows
      // lost (128 x 128256: 120.4 against 86.1) until the last whole chunk
      // went second (v43: 49.0).  At 64 rows the multi tier held its own
      // then (64 x 128256 bfloat16: 47.8 against 49.5 at items 8; no
      // longer at items 16 and since v46: 64 x 262144 bfloat16 k 50 47.2
      // against 73.9, topk v47).  Items 8: float32 64 x 128256 47.6
      // against 53.8 at 16 (bfloat16 ran faster at 16 there, 46.5 against
      // 49.5, and at 96 rows, 47.1 against 50.3; not measured at 128).
      // Fewer rows past a cluster's 8 x 1024 x 32: the row in slices, a
      // block each (stream_splits), against the multi tier (topk v43):
      // float32 1 x 2^24 k 64 59.5 us against 71.2, sorted 47.7 against
      // 77.6; 32 x 300000 k 50 42.7 against 64.0; bfloat16 1 x 2^24 few
      // values 59.7 against 90.3, 4 x 2^20 reversed 31.5 against 52.8.
      // Random half-type rows lost a little (bfloat16 8 x 10^6 k 100 52.7
      // against 48.7, 1 x 10^6 k 10 34.0 against 27.6) until v44's items 16
      // and merge to a floor: 44.2 against the multi tier's 48.1, 29.6
      // against 27.9; 1 x 2^24 k 64 57.3 against 64.5.
      // Rows off the packs' alignment that the cluster tier does not take
      // (past its waves; it reads them as the stream tier does since v45)
      // go to the stream tier's aligned span (topk v44: bfloat16 128 x
      // 50257 k 50 57.2 us -> 33.0 and 132 x 127100 k 64 84.4 -> 53.5,
      // both from the generic kernel; float32 1 x 16777215 k 64 74.6 ->
      // 67.4 from the multi tier's pack 1), unless it would split them over
      // a third of the SMs or less: the merge then cost more than the multi
      // tier's pack-1 passes (v44, rows the cluster tier now takes: float32
      // 1 x 128257 k 50 35.4 us against 26.9, 3 slices; bfloat16 4 x 128257
      // 44.1 against 31.1, 12 slices; but 16 x 100001 float32 k 10 31.8
      // against 36.8, 48 slices; a block a row without a merge even at 8 x
      // 50257 bfloat16, 31.0 against 30.4, and ahead at 32 rows, 31.1
      // against 42.5).  The cluster tier on those rows (v45): 1 x 128257
      // 13.1, 4 x 128257 bfloat16 12.0, 16 x 100001 21.9, 8 x 50257 10.5.
      if (p.n <= 32768) return Score::reject();
      if (q.pack_size * dtype_size(p.dtype) < 16) return Score::reject();  // measured at the widest pack only
      // Aligned rows of that band that no cluster takes (past its waves)
      // come here rather than to the multi tier, and k 1 comes here before
      // the clusters once a cluster would hold 32 a thread (n past 8 x 1024
      // x 16) or the batch holds 12 x 2^17 elements or more: the stream's
      // k 1 keeps a running best, no buffer (topk v46).  H200, every
      // variant timed (topk v47): float32 64 x 262144 k 1 28.2 us against
      // the multi tier's 83.0, k 8 40.2 against 86.0, k 50 48.9 against
      // 88.2; 17 x 128256 k 50 27.9 against 37.0 (the cluster, past its
      // one wave, 20.7); bfloat16 64 x 262144 k 1 25.0 against 69.0, k 50
      // 47.2 against 73.9.  k 1: float32 16 x 128256 14.2 against the
      // cluster's 18.6, 1 x 262144 11.0 against 15.1; bfloat16 32 x 128256
      // 14.1 against 24.0, 1 x 262144 11.0 against 13.3; the cluster keeps
      // 8 x 128256 (float32 11.0 against 13.0, bfloat16 10.4 against 13.2).
      // (splits > 1 only where 2 x batch <= SMs)
      const int64_t splits = stream_splits(p);
      if (p.n <= int64_t{kClusterMax} * 1024 * 32 && !rows_aligned(p, q.pack_size) && splits > 1 &&
          3 * p.batch * splits <= d.sm_count)
        return Score::reject();
      // k past kStreamK: the buffer of 16384 keys a block a row (from 8 rows;
      // the half types' from one row), or where slices fill 7/8 of the SMs
      // (their merge costs more than the multi tier's passes on fewer).
      // H200, every variant (topk v51), the stream tier against the multi
      // tier's best: float32 128 x 131072 k 200 57.6 us against 90.4,
      // reversed k 500 44.8 against 93.7; 512 x 65536 k 300 164.2 against
      // 176.1; 32 x 262144 k 256 (4 slices a row) 52.0 against 65.4; bfloat16
      // at items 8 61.6 against 53.3 (sorted 46.6 against 62.0), at items 16
      // (k up to 512, topk v52) 47.6 against 53.4 (sorted 43.2); 21 x 633161
      // k 640 reversed 69.8 against 195.9; 8 x 10^6 k 200 random 61.2 against
      // 50.2, at items 16 46.7 (reversed 39.2 against 61.3); float16 2 x
      // 2579175 repeated k 224 57.0 (items 8 67.3, the generic kernel 61.4).
      // Fewer CTAs in slices lost on random rows: int32 4 x 2097152 k 700 (92
      // CTAs) 104.2 against 81.2; float32 1 x 2^24 k 256 (64) 103.1 against
      // 81.1, k 1000 (16) 289.4 against 102.0; as did one block at items 8,
      // bfloat16 1 x 34312 k 179 46.0 against 41.8.  A block a row of 8-65
      // rows (rows up to 65535, no slices) wins too (topk v52): float32 8 x
      // 40000 k 300 36.3 against 37.3, 16 x 40000 36.5 against 38.5, 48 x
      // 60000 44.1 against 46.3, 64 x 40000 37.5 against 48.3; bfloat16 32 x
      // 40000 (items 16) 32.1 against 38.5.  Below 8 rows the 4-byte types
      // stay with the multi tier (float32 4 x 40000 35.3 against 36.3, but
      // sorted 1 x 40000 56.5 against 36.1); the half types' items 16 beat
      // the multi tier's pick there on every row measured (topk v53):
      // bfloat16 1 x 34312 k 179 random 28.2 against 31.6, sorted 39.6
      // against 45.9 (torch 40.7); 2 x 40000 k 300 31.5 against 36.5; 4 x
      // 60000 sorted 43.5 against 67.3; 1 x 50000 35.4 against 36.3; float16
      // 4 x 40000 30.4 against 37.6.
      const bool few_rows = p.batch < 8 && dtype_size(p.dtype) == 4;
      if (p.k > kStreamK && (splits > 1 ? 8 * p.batch * splits < 7 * int64_t{d.sm_count} : few_rows))
        return Score::reject();
      const bool best_of_many = p.n > int64_t{kClusterMax} * 1024 * 16 || p.batch * p.n >= int64_t{12} << 17;
      s.key[0] = p.k == 1 && best_of_many ? 4 : 2;
      s.key[1] = q.block_size;  // one SM's threads a row
      // items 16 for the half types, 8 for the 4-byte ones (the default
      // set's, generator/ops/topk.py: the same bytes a chunk)
      s.key[2] = q.items * dtype_size(p.dtype) == 32 ? 1 : 0;
      s.key[3] = q.buffer == kStreamBuffer ? 1 : 0;  // the large buffer for k past kStreamK only
      break;
    }
    case Tier::multi:
      s.key[0] = 1;
      s.key[1] = q.radix;
      s.key[2] = q.block_size == 512 ? 1 : 0;
      break;
    default: return Score::reject();  // generic: the fallback of select_variant
  }
  s.key[4] = q.pack_size;
  return s;
}

Plan plan_for(const VariantInfo& v, const Problem& p) {
  const Params& q = *static_cast<const Params*>(v.params);
  switch (q.tier) {
    case Tier::queue:
    case Tier::tourney:
    case Tier::cluster: return Plan{};
    case Tier::stream: return plan_stream(p);
    case Tier::block: return plan_block(p);
    default: return plan_multi(p, q.block_size, q.pack_size, q.radix);
  }
}

// By the power of two of the row length (the block tier's row capacity is a
// fit), a factor-4 class of k, and four classes of the batch: under 16 rows,
// under 256 (about two rows an SM), under 4096, more (the tiers turn on rows
// filling blocks or warps).
void bucket(const void* problem, char* out, int size) {
  const Problem& p = *static_cast<const Problem*>(problem);
  using tuning::log2_class;
  const int batch = p.batch < 16 ? 0 : p.batch < 256 ? 1 : p.batch < 4096 ? 2 : 3;
  std::snprintf(out, size, "b%d_n%d_k%d", batch, log2_class(p.n), (log2_class(p.k) + 1) / 2);
}

bool selection_key(const void* problem, ProblemKey* key) {
  const Problem& p = *static_cast<const Problem*>(problem);
  key->add(p.batch);
  key->add(p.n);
  key->add(p.k);
  key->add(int64_t{p.largest} | int64_t{p.sorted} << 1);
  key->add_address(p.x);
  key->add_address(p.values);
  key->add_address(p.indices);
  return true;
}

}  // namespace topk
}  // namespace kgen
