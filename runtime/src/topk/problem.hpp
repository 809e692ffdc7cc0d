// A top-k problem after validation, and the workspace plan that the runtime
// and the generated launchers both compute from it, so that the workspace
// the caller provides is the one a kernel uses.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "dtype.hpp"
#include "select.hpp"
#include "validate.hpp"
#include "variant.hpp"

namespace kgen {
namespace topk {

struct Problem {
  kgen_dtype_t dtype;
  int64_t batch, n, k;  // batch >= 1, 1 <= k <= n < 2^32 (empty problems never get here)
  bool largest, sorted;
  const void* x;
  void* values;
  int64_t* indices;
  void* workspace;  // plan_for(...).bytes of scratch, or null when 0
  std::size_t workspace_bytes;
  const DeviceInfo* device;
};

// Keys are the dtype's order bits followed by the inverted 32-bit index, so
// every element of a row has a distinct key: rows longer than this are
// refused.
constexpr int64_t kMaxRow = 0xffffffffll;

// The selected k of a row are sorted inside one block when they fit its
// shared memory (32 KiB of keys: 4096 8-byte keys, 2048 16-byte ones for
// float64); past that they are written in index order and sorted by the
// global sort (PairSort).
inline int key_bytes(kgen_dtype_t d) { return d == KGEN_FLOAT64 ? 16 : 8; }
// The order bits of a dtype's key (topk_keys.cuh): the value's, before the index.
inline int order_bits(kgen_dtype_t d) {
  return d == KGEN_FLOAT64 ? 64 : d == KGEN_FLOAT16 || d == KGEN_BFLOAT16 ? 16 : 32;
}
inline int64_t block_sort_capacity(kgen_dtype_t d) { return 32768 / key_bytes(d); }
inline bool sorts_in_block(const Problem& p) { return p.k <= block_sort_capacity(p.dtype); }

// The global sort takes int item counts.
constexpr int64_t kMaxSortedItems = 0x7fffffffll;

inline int64_t div_up(int64_t a, int64_t b) { return (a + b - 1) / b; }
inline std::size_t round_up(std::size_t a) { return (a + 255) / 256 * 256; }

// Workspace regions, each 256-byte aligned; unused ones have size 0.
struct Plan {
  int64_t blocks_per_row = 1;  // multi: blocks that share one row
  int64_t offers_per_warp = 0;  // multi: keys each warp offers for the bound (0: no bound pass)
  int64_t candidates = 0;      // multi: capacity of a row's candidate list
  std::size_t state = 0, hist = 0, selected = 0, cand = 0, tops = 0, ties = 0;  // multi's
  std::size_t pair_keys = 0, pair_indices = 0, sort_temp = 0;  // the global sort's (two buffers of each)
  std::size_t bytes = 0;
  std::size_t zeroed = 0;  // bytes from the start that a call zeroes first (multi's)
  // byte offsets of the regions, laid out as state, hist, tops, selected, cand, ties, then the sort's
  std::size_t state_at = 0, hist_at = 0, selected_at = 0, cand_at = 0, tops_at = 0, ties_at = 0;
  std::size_t pair_keys_at = 0, pair_indices_at = 0, sort_temp_at = 0;
};

// Per-row state of the multi-block select (workspace, zeroed each call).
// stage: row (the keys in play are found by reading the row), list (they
// are in candidate list `cur`), selected (the row's k keys are in its
// selected list), small (the keys in play, in list `cur`, and the selected
// ones fit one block's sort: the finishing block sorts them all), bound (a
// key is known below which the row's k-th cannot be: prefix holds it),
// ties (the order bits are decided and the keys in play, too many for a
// list, are ties: each block's count of them is in the ties region, and
// the `remaining` of the lowest index are chosen in one ordered pass),
// bound_ties (the gather found the bound's value to be the k-th's: fewer
// than k keys of the row have a better value; the pass after chooses them
// all and the `remaining` ties of the bound's value (prefix) of the lowest
// index, each block's counts of both in the ties region).
enum : unsigned { kRow = 0, kList = 1, kSelected = 2, kSmall = 3, kBound = 4, kTies = 5, kBoundTies = 6 };
struct alignas(16) RowState {
  unsigned arrived;     // blocks of the current pass done
  unsigned selected;    // keys appended to the row's selected list
  unsigned listed[2];   // keys in each candidate list
  unsigned stage, cur;
  unsigned remaining;   // keys still to choose among those with the decided digits
  unsigned count;       // keys with the decided digits
  unsigned done;        // they are all chosen
  unsigned crowded;     // the gather overflowed a block's stage or left ties out: ties or few distinct values
  unsigned ties_left;   // the gather left ties of the bound's value out of the list
  unsigned long long prefix_lo, prefix_hi;  // the decided digits
};

// The global sort (runtime/src/topk/sort.cu): CUB's device-wide radix sort
// of (key, index) pairs, descending by key, stable.  The kernels write a
// row's selected elements in index order (sorts_all: every element), so the
// stable sort leaves equal values by index without sorting the index bits:
// the key is the order bits alone, 16 for the half types, with the row's
// rank (batch - 1 - row) folded above them so that one sort takes the
// whole batch.  (Before, the keys were the 48-96 bits of order and
// inverted index, sorted with the row carried, then stably by row: H200,
// 2 x 5225013 bfloat16 k = 2442251, 1065 us against torch's 440.)  A few
// rows of millions are sorted one after another, unfolded: the row bits
// cost more than a second sort's fixed cost (H200, topk v10: 2 rows of 1.2M
// and more 0.80-0.90x); so are float64 rows of a batch, whose 64 order bits
// leave no room.
constexpr int64_t kRowSortedKeys = 1 << 20;
inline bool sorts_row_by_row(int64_t items, int64_t segments) {
  return segments > 1 && items / segments >= kRowSortedKeys * (segments - 1);
}
inline int bits_for(int64_t values) {  // bits that hold 0 .. values - 1
  int b = 0;
  while (b < 62 && (int64_t{1} << b) < values) ++b;
  return b;
}
struct PairSort {
  int64_t rows, per_row;  // per_row: k, or n when every element is sorted
  bool fold;              // the row's rank above the order bits, the batch in one sort
  int bits;               // the key's significant bits
  int key_bytes;          // 4 or 8
};
inline PairSort pair_sort(const Problem& p, int64_t per_row) {
  PairSort s{p.batch, per_row, false, order_bits(p.dtype), 0};
  s.fold = p.batch > 1 && !sorts_row_by_row(p.batch * per_row, p.batch) && p.dtype != KGEN_FLOAT64;
  if (s.fold) s.bits += bits_for(p.batch);
  s.key_bytes = s.bits <= 32 ? 4 : 8;
  return s;
}
std::size_t global_sort_bytes(const PairSort& s);
// Sorts the pairs of keys[0] and indices[0]; *in_second: they ended in keys[1] and indices[1].
cudaError_t global_sort(const PairSort& s, void* const keys[2], unsigned* const indices[2], void* temp,
                        std::size_t temp_bytes, cudaStream_t stream, bool* in_second);

inline void lay_out(Plan& pl) {
  std::size_t at = 0;
  auto put = [&at](std::size_t size, std::size_t* where) {
    *where = at;
    at += round_up(size);
  };
  put(pl.state, &pl.state_at);
  put(pl.hist, &pl.hist_at);
  put(pl.tops, &pl.tops_at);
  put(pl.selected, &pl.selected_at);
  put(pl.cand, &pl.cand_at);
  put(pl.ties, &pl.ties_at);
  put(pl.pair_keys, &pl.pair_keys_at);
  put(pl.pair_indices, &pl.pair_indices_at);
  put(pl.sort_temp, &pl.sort_temp_at);
  pl.bytes = at;
}

// The global sort's regions for a sorted k past one block's sort: two
// buffers of `per_row` pairs a row and the sort's scratch.
inline void plan_sort(Plan& pl, const Problem& p, int64_t per_row) {
  if (!p.sorted || sorts_in_block(p)) return;
  const PairSort s = pair_sort(p, per_row);
  const auto items = static_cast<std::size_t>(p.batch * per_row);
  pl.pair_keys = 2 * round_up(items * s.key_bytes);
  pl.pair_indices = 2 * round_up(items * sizeof(unsigned));
  pl.sort_temp = global_sort_bytes(s);
}

// Blocks per row of the multi-block select: one wave over the batch, each
// block loading at least 4 rounds of block x pack elements.
inline int64_t multi_blocks_per_row(const Problem& p, int block, int pack) {
  const DeviceInfo& d = *p.device;
  int64_t per_sm = d.max_threads_per_sm / block;
  if (per_sm > d.max_blocks_per_sm) per_sm = d.max_blocks_per_sm;
  const int64_t wave = int64_t{d.sm_count} * (per_sm < 1 ? 1 : per_sm);
  int64_t bpr = div_up(wave, p.batch);
  const int64_t most = div_up(p.n, int64_t{block} * pack * 4);
  if (bpr > most) bpr = most;
  if (bpr > 65535) bpr = 65535;
  return bpr < 1 ? 1 : bpr;
}

// A row's two candidate lists take the keys still in play once they are at
// most a sixteenth of the row and 65536 (random data: n / 2^radix after the
// first digit); later digit passes read the list, not the row, and write the
// keys still in play to the other list.  Until then each pass reads the row.
inline int64_t multi_candidates(const Problem& p) {
  int64_t c = p.n / 16;
  if (c > 65536) c = 65536;
  if (c < 4096) c = 4096;
  return c < p.n ? c : p.n;
}

// A sorted k of at least half the row, past one block's sort: every key of
// the row is written and sorted, and the first k emitted; selecting first
// would only add passes over a row that nearly all goes to the sort (H200,
// 1 x 9124882 float32, k = n: 2.2 ms, of which the sort of the selected
// keys about 0.4).  The batch's keys must fit the sort's int counts.
inline bool sorts_all(const Problem& p) {
  return p.sorted && !sorts_in_block(p) && 2 * p.k >= p.n && p.batch * p.n <= kMaxSortedItems;
}

inline Plan plan_sort_all(const Problem& p) {
  Plan pl;
  plan_sort(pl, p, p.n);
  lay_out(pl);
  return pl;
}

// A k past one block's sort (and not sorts_all): no keys are collected.
// R-bit digit passes over the row find the k-th's order bits alone, then
// each block counts its share's keys of a better value and of that value,
// and the row is written in index order (the output, or the global sort's
// pairs).  Regions: the row states, the digit counts, two counts a block.
inline Plan plan_large_k(const Problem& p, int block, int pack, int radix) {
  Plan pl;
  pl.blocks_per_row = multi_blocks_per_row(p, block, pack);
  pl.state = static_cast<std::size_t>(p.batch) * sizeof(RowState);
  pl.hist = static_cast<std::size_t>(p.batch) * (std::size_t{1} << radix) * sizeof(unsigned);
  pl.ties = 2 * static_cast<std::size_t>(p.batch * pl.blocks_per_row) * sizeof(unsigned);
  plan_sort(pl, p, p.k);
  lay_out(pl);
  pl.zeroed = pl.hist_at + pl.hist;  // the row states and digit counts
  return pl;
}

inline Plan plan_multi(const Problem& p, int block, int pack, int radix) {
  if (sorts_all(p)) return plan_sort_all(p);
  if (!sorts_in_block(p)) return plan_large_k(p, block, pack, radix);
  Plan pl;
  pl.blocks_per_row = multi_blocks_per_row(p, block, pack);
  pl.candidates = multi_candidates(p);
  pl.state = static_cast<std::size_t>(p.batch) * sizeof(RowState);
  pl.hist = static_cast<std::size_t>(p.batch) * (std::size_t{1} << radix) * sizeof(unsigned);
  pl.selected = static_cast<std::size_t>(p.batch * p.k) * key_bytes(p.dtype);
  pl.cand = 2 * static_cast<std::size_t>(p.batch * pl.candidates) * key_bytes(p.dtype);
  // two counts a block: keys in play once they are ties, and (the gather's)
  // keys with a better value than the bound's
  pl.ties = 2 * static_cast<std::size_t>(p.batch * pl.blocks_per_row) * sizeof(unsigned);
  // The bound pass: each warp offers the `t` largest of its lanes' maxima;
  // the k-th largest offer bounds the row's k-th from below, and the keys
  // above it (random rows: a few times k) usually fit one block's sort.
  // Used while the offers fit the registers of a block of 1024 threads (16
  // a thread) and the result can fit the sort.
  const int64_t warps = pl.blocks_per_row * (block / 32);
  // Enough offers from one block's warps alone to bound a row whose best k
  // lie in one block's share (sorted, reversed), up to 4 a warp.  H200
  // sweeps (topk v29): 140 x 77367 int32 sorted k 11 193.6 -> 78.6 us,
  // 2 x 4752221 bfloat16 reversed k 24 142.6 -> 68.8, 1 x 48589 reversed
  // k 27 43.7 -> 27.4; at 12 a warp the bound's reads cost random rows
  // more (10 x 280308 float32 of 1000 values k 182 43.2 -> 47.6).
  // The bound kernel holds 16 offers a thread of 1024; a k of at most half
  // the block is bounded by the offer kernel's last block, over any number
  // (H200, 1 x 2^24 float32 sorted k 64: 528 blocks, one offer a warp put
  // the bound four shares below the k-th).
  // Folded offers (own bound) cost no bound kernel: up to 16 a warp.  By
  // the plan, a sorted row's k-th, whose value's ties span several blocks'
  // shares, is then bounded at its own value, where one offer a warp
  // bounded it lower and the row took the digit passes (not profiled).
  // H200, topk v35, the generic variant (256 threads): 1 x 13455485
  // bfloat16 sorted k 65 208.8 -> 107.9 us, 3 x 850617 k 93 91.6 -> 51.9;
  // at 512 threads a row of repeated values ran slower (not profiled):
  // 10 x 280308 float32 k 182 42.8 -> 46.0.
  const bool own_bound = 2 * p.k <= block;
  const int64_t t_row = div_up(p.k, warps), t_block = div_up(p.k, block / 32);
  const int64_t t_most = own_bound ? 16 : 4;
  const int64_t t =
      t_block > t_row && t_block <= t_most && (own_bound || warps * t_block <= 1024 * 16) ? t_block : t_row;
  if (2 * p.k <= block_sort_capacity(p.dtype) && 2 * t <= 32 && (own_bound || warps * t <= 1024 * 16)) {
    pl.offers_per_warp = t;
    // the offers a row, or (own bound) a row's offers folded into `block`
    // zeroed slots of at most 8 bytes
    pl.tops = own_bound ? static_cast<std::size_t>(p.batch * block) * 8
                        : static_cast<std::size_t>(p.batch * warps * t) * key_bytes(p.dtype);
  }
  lay_out(pl);
  // the row states and digit counts start at zero, and the folded offers
  pl.zeroed = own_bound && pl.tops ? pl.tops_at + pl.tops : pl.hist_at + pl.hist;
  return pl;
}

// The block writes a selection in index order from its registers: the
// unsorted output (no sort), or a sorted k's pairs for the global sort.
inline Plan plan_block(const Problem& p) {
  Plan pl;
  plan_sort(pl, p, p.k);
  lay_out(pl);
  return pl;
}

// The cluster tier: its CTAs a row, enough to hold the row at `per_cta`
// elements each, and more while the batch leaves SMs idle (a row of 32000
// over one SM's load and select took 18 us); clusters of up to 8, the size
// every sm_90 GPU schedules.
constexpr int kClusterMax = 8;
constexpr int kClusterK = 128;  // the first CTA's warp sorts the selection
// The stream tier: k <= 128, and the buffer of 4096 keys keeps room for a
// chunk's keys above a threads' bound (k x items) beside the k it keeps.
constexpr int kStreamK = 128;
constexpr int kStreamBuffer = 4096;
// Or a buffer of 16384 keys (128 KB of dynamic shared memory, one block an
// SM as before) for k up to 1024 at items 8 (512 at the half types' items
// 16, topk v52): rows past a block's reach with k past 128, read once where
// the multi tier's digit passes read them again and again (adversarial
// rows; topk v51).  Past kStreamK the k best are sorted by the block
// (finish_candidates), not one warp.
constexpr int kStreamLargeK = 1024;
constexpr int kStreamLargeBuffer = 16384;
// A buffered key's bytes (key_t of every type but float64, which the
// stream tier does not take).
constexpr std::size_t kStreamKeyBytes = 8;
// A batch that leaves SMs idle splits its rows into slices of at least
// kStreamSlice elements, a CTA each, at most one CTA an SM over the batch;
// each slice's k best keys go to the workspace and a second kernel selects
// a row's k from its slices' (stream_merge_kernel), which holds at most
// kStreamMerged of them in its registers.  A batch of exactly half the SMs
// splits too: a block a row left the other half idle (H200, 66 x 128256
// float32 k 50: 40.0 us -> 33.1 in two slices; topk v50).
constexpr int64_t kStreamSlice = 32768;
constexpr int kStreamMerged = 16384;
inline int64_t stream_splits(const Problem& p) {
  const int64_t sms = p.device->sm_count;
  if (2 * p.batch > sms || p.k <= 0) return 1;
  return std::max<int64_t>(1, std::min({sms / p.batch, p.n / kStreamSlice, kStreamMerged / p.k}));
}
inline Plan plan_stream(const Problem& p) {
  Plan pl;
  const int64_t splits = stream_splits(p);
  if (splits > 1) {
    pl.cand = static_cast<std::size_t>(p.batch * splits * p.k) * 8;  // 64-bit keys
    pl.bytes = round_up(pl.cand);
  }
  return pl;
}
// Whether every row starts on a pack of `pack` elements and spans whole
// packs; else the stream and cluster tiers read a row in the packs of the
// aligned span around it (load_in_row), up to pack - 1 elements before the
// row and after it.
inline bool rows_aligned(const Problem& p, int pack) {
  return p.n % pack == 0 && aligned_to(p.x, int64_t{pack} * dtype_size(p.dtype));
}
// The packs of any row's aligned span, at most.
inline int64_t span_packs(const Problem& p, int pack) {
  return rows_aligned(p, pack) ? p.n / pack : (p.n + 2 * (pack - 1)) / pack;
}
// The CTAs of a row of a cluster variant (`pack`: its pack, for the span
// of a row off its alignment).
inline int cluster_ctas(const Problem& p, int64_t per_cta, int pack) {
  const int64_t need = div_up(span_packs(p, pack) * pack, per_cta);
  const int64_t idle = std::min<int64_t>(div_up(p.device->sm_count, p.batch), kClusterMax);
  return static_cast<int>(std::max(need, idle));
}
// Waves of a cluster variant's CTAs over the SMs, at 1024 threads an SM
// (its launch bounds give a thread 64 registers: 1024 fill the register file).
inline int64_t cluster_waves(const Problem& p, int block, int64_t per_cta, int pack) {
  return div_up(p.batch * cluster_ctas(p, per_cta, pack) * block, int64_t{p.device->sm_count} * 1024);
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

}  // namespace topk
}  // namespace kgen
