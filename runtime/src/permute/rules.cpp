// Permute capability (supports) and preference (heuristic).
//
// Capability: elem needs the simplified rank it was compiled for, and with
// int32 offsets fewer than 2^31 units; row needs the innermost dim
// preserved; tile needs it moved, both extents a multiple of the pack and
// both pointers aligned to a pack.  Launch shapes need fewer than 2^31
// blocks and dims below 2^31 (the fast division).
// Preference: whole rows when the innermost dim is preserved, tiles when it
// moves, per-unit index math (elem) where neither fits: rows of fewer than
// 256 bytes, transposes into dst rows of fewer than 320 bytes, or tiles
// that would move runs shorter than half a 32-byte sector or leave most of
// the tile empty.
#include <algorithm>
#include <cstdint>
#include <cstdio>

#include "kgen_params.gen.hpp"
#include "tuning/bucket.hpp"
#include "permute/problem.hpp"
#include "validate.hpp"

namespace kgen {
namespace permute {
namespace {

using Params = gen::PermuteParams;
using Tier = gen::PermuteTier;

constexpr int64_t kBelow31 = int64_t{1} << 31;
constexpr int kBlock = 256;  // every permute kernel's block (generator/ops/permute.py)
constexpr int64_t kShortRowTierBytes = 256;
constexpr int64_t kShortDstRowBytes = 320;
// A tile plane (I x J) of at most kNarrowPlaneBytes whose src rows (I)
// are shorter than kNarrowSrcRowBytes or dst rows (J) than
// kNarrowDstRowBytes, and join up: per-unit index math beats the tile
// (below).
constexpr int64_t kNarrowSrcRowBytes = 32;
constexpr int64_t kNarrowDstRowBytes = 128;
constexpr int64_t kNarrowPlaneBytes = int64_t{4} << 20;

struct TileFit {
  int64_t blocks;
  int64_t run_bytes;    // the shorter of the contiguous runs read and written
  int64_t write_bytes;  // the contiguous run written
  int used_pct;         // share of the tile's slots holding data
};

TileFit tile_fit(const Shape& s, const TileView& t, int ti, int tj) {
  TileFit f{};
  const int64_t tiles_i = div_up(t.ni, ti), tiles_j = div_up(t.nj, tj);
  f.blocks = tiles_i * tiles_j * t.batches;
  const int64_t ri = std::min<int64_t>(ti, t.ni), rj = std::min<int64_t>(tj, t.nj);
  // a whole extent in the tile whose neighbour dim follows it: rows join up
  const int64_t read = t.ni <= ti && t.src_stride_j == t.ni ? ri * rj : ri;
  const int64_t write = t.nj <= tj && t.dst_stride_i == t.nj ? ri * rj : rj;
  f.run_bytes = std::min(read, write) * s.movement;
  f.write_bytes = write * s.movement;
  f.used_pct = static_cast<int>(100 * t.ni * t.nj / (tiles_i * ti * tiles_j * tj));
  return f;
}

}  // namespace

bool supports(const VariantInfo& v, const void* problem) {
  const Problem& p = *static_cast<const Problem*>(problem);
  const Params& q = *static_cast<const Params*>(v.params);
  const Shape& s = p.shape;
  if (v.element != movement_key(s.movement)) return false;
  const int64_t n = units(s);
  switch (q.tier) {
    case Tier::generic:
      return div_up(n, kBlock * 4) < kBelow31;
    case Tier::elem:
      return s.rank == q.rank && (q.index == 1 ? div_up(n, kBlock * 4) < kBelow31 : n < kBelow31);
    case Tier::row:
      return keeps_last(s) && n / s.dims[s.rank - 1] < kBelow31;
    case Tier::tile: {
      if (s.rank < 2 || keeps_last(s)) return false;
      const TileView t = tile_view(s);
      if (t.ni >= kBelow31 || t.nj >= kBelow31 || t.batches >= kBelow31) return false;
      if (t.ni % q.pack != 0 || t.nj % q.pack != 0) return false;
      const int64_t bytes = int64_t{q.pack} * s.movement;
      return aligned_to(p.src, bytes) && aligned_to(p.dst, bytes) &&
             tile_fit(s, t, q.ti, q.tj).blocks < kBelow31;
    }
  }
  return false;
}

Score heuristic(const VariantInfo& v, const void* problem) {
  const Problem& p = *static_cast<const Problem*>(problem);
  const Params& q = *static_cast<const Params*>(v.params);
  const Shape& s = p.shape;
  Score sc;
  switch (q.tier) {
    case Tier::generic:
      return Score::reject();  // selection's last resort, not a choice
    case Tier::elem:
      sc.key[0] = 1;
      sc.key[1] = q.index == 0;  // int32 offsets: fast division
      return sc;
    case Tier::row: {
      const int64_t len = s.dims[s.rank - 1];
      if (len < 4) return Score::reject();
      // rows under 256 bytes: per-unit index math (elem) ran 1.4-2.4x faster
      // than a group a row (H100, bench/NOTES.md sweep v2: 35x6011x32x5
      // bfloat16 (2,0,1,3), rows of 10 bytes, 282 -> 116 us; 3x5x103x3x3x3x25
      // float64, rows of 200 bytes, 15.9 -> 7.4 us); below elem, above generic
      sc.key[0] = len * s.movement < kShortRowTierBytes ? 0 : 3;
      // the widest chunk (group x unroll units) the row fills, then wide groups
      const int64_t chunk = int64_t{q.group} * q.unroll;
      sc.key[1] = chunk <= len ? chunk : -chunk;
      sc.key[2] = q.group;
      return sc;
    }
    case Tier::tile: {
      const TileView t = tile_view(s);
      // dst rows of a few units that follow each other ((256,3,512,512) ->
      // (0,2,3,1)): the tile's write lanes mostly idle, while per-unit index
      // math writes whole lines and reads nj streams that L2 joins up
      // (H100: float32 73% of copy in 256x4 tiles, 99% elem; float16 38% / 86%)
      if (t.dst_stride_i == t.nj && t.nj * s.movement < 32) return Score::reject();
      const TileFit f = tile_fit(s, t, q.ti, q.tj);
      if (f.run_bytes < 16 || f.used_pct < 25) return Score::reject();
      // A plain transpose whose dst rows are short (fewer than 320 bytes:
      // a few hundred src rows), in pack-1 tiles: per-unit index math reads
      // the src rows in step and L2 joins them up.  H100 (bench/NOTES.md
      // sweep v2): elem took 0.3-0.8x the best pack-1 tile's time on
      // 77x410087 float16 (75 vs 123 us), 37x983149 float64, 60x1000003
      // float32 and 5-41 rows; pack-1 tiles won from 120 float32 and 200
      // float16 rows, packed ones at 128 float16 rows (64 x 64 at pack 4
      // 197 us, elem 549 us).  Below elem, above generic.
      sc.key[0] = q.pack == 1 && t.batches == 1 && t.nj * s.movement < kShortDstRowBytes ? 0 : 3;
      // A plane with a short side whose runs join up (src rows of a few
      // units that follow each other, or dst rows): the tile spans that side
      // in part, where per-unit index math reads or writes whole lines.
      // H200 sweeps (bench/NOTES.md permute v2): 256x599x2x17x3 (4,0,2,1,3)
      // bfloat16, src rows of 6 bytes, tile 69.1 us, elem 37.2; 8x13x11043x4
      // (0,3,1,2) float16 18.1 -> 10.0; 221647x6 (1,0) bfloat16 8.4 -> 5.6.
      // Src rows of 36-94 bytes ran 1.06-1.35x slower in elem (H100:
      // 37x17x73x16x37 (1,4,2,0,3) bfloat16, rows of 74 bytes, 103 -> 139
      // us); where the short side's runs do not join, 1.2-3.5x
      // (1559x34x4x6x16 (4,1,3,2,0) float16 77 -> 218 us); a plane past a
      // few MB would be read again for each dst row.
      const bool short_i = t.ni * s.movement < kNarrowSrcRowBytes && t.src_stride_j == t.ni;
      const bool short_j = t.nj * s.movement < kNarrowDstRowBytes && t.dst_stride_i == t.nj;
      if ((short_i || short_j) && t.ni * t.nj * s.movement <= kNarrowPlaneBytes) sc.key[0] = 0;
      if (t.batches == 1 && t.src_stride_j2 == 0) {
        // A plain transpose: whole sectors read and written first, then
        // wide accesses, then the longest write run: at equal sectors a
        // tile that writes long runs and reads short ones beat the reverse
        // and the square one (H100, bench/NOTES.md sweep v2: 8x128 tiles
        // against 128x8 on 200x1000003 float16 640 vs 1755 us; against
        // 32x32 on 4097x4099 float32 60 vs 74 us, on 250x400009 float32
        // 399 vs 677 us).  With batch dims the order below held (8x128
        // took 1.3-2x the time of 128x8 or 32x32 on six such problems).
        sc.key[1] = std::min<int64_t>(f.run_bytes, 32) / 16;
        sc.key[2] = int64_t{q.pack} * s.movement;
        sc.key[3] = std::min<int64_t>(f.write_bytes, 512) / 16;
        sc.key[4] = int64_t{f.used_pct / 10} * 1024 - std::abs(q.ti - q.tj);  // then full, square tiles
        return sc;
      }
      sc.key[1] = std::min<int64_t>(f.run_bytes, 128) / 16;  // full sectors, then lines
      sc.key[2] = f.used_pct / 10;
      sc.key[3] = int64_t{q.pack} * s.movement;  // wide accesses
      sc.key[4] = -std::abs(q.ti - q.tj);        // squarer tiles
      return sc;
    }
  }
  return Score::reject();
}

// A permute that keeps the innermost dim by its rank and a factor-4 class
// of the row length (in units); one that moves it by factor-4 classes
// (capped at 512 and up) of the two extents a tile spans, and whether there
// are batch dims.
void bucket(const void* problem, char* out, int size) {
  const Shape& s = static_cast<const Problem*>(problem)->shape;
  auto cls = [](int64_t n) { return std::min((tuning::log2_class(n) + 1) / 2, 5); };
  // tensors under 4 MiB apart (H100: the entry of tile_i2_j4_b1, timed on
  // 285 KB of float16 alone, moved a 78 MB float16 rank-5 permute from the
  // heuristic's 243.6 us to 545.7)
  const char* small = tuning::small_tag(units(s) * s.movement);
  if (is_copy(s)) {
    std::snprintf(out, size, "copy");
  } else if (keeps_last(s)) {
    std::snprintf(out, size, "row_r%d_l%d%s", s.rank, cls(s.dims[s.rank - 1]), small);
  } else {
    const TileView t = tile_view(s);
    std::snprintf(out, size, "tile_i%d_j%d_b%d%s", cls(t.ni), cls(t.nj), t.batches > 1 ? 1 : 0, small);
  }
}

bool selection_key(const void* problem, ProblemKey* key) {
  const Problem& p = *static_cast<const Problem*>(problem);
  const Shape& s = p.shape;
  key->add(s.movement);
  key->add(s.rank);
  static_assert(kMaxDims <= 15, "4 bits a perm entry");
  int64_t perm = 0;  // 4 bits an entry
  for (int k = 0; k < s.rank; ++k) {
    key->add(s.dims[k]);
    perm |= int64_t{s.perm[k]} << (4 * k);
  }
  key->add(perm);
  key->add_address(p.src);
  key->add_address(p.dst);
  return true;
}

}  // namespace permute
}  // namespace kgen
