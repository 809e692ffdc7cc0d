// Permute capability (supports) and preference (heuristic).
//
// Capability: elem needs the simplified rank it was compiled for, and with
// int32 offsets fewer than 2^31 units; row needs the innermost dim
// preserved; tile needs it moved, both extents a multiple of the pack and
// both pointers aligned to a pack.  Launch shapes need fewer than 2^31
// blocks and dims below 2^31 (the fast division).
// Preference: whole rows when the innermost dim is preserved, tiles when it
// moves, per-unit index math (elem) where neither fits: rows of fewer than 4
// units, or tiles that would move runs shorter than half a 32-byte sector
// or leave most of the tile empty.
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

struct TileFit {
  int64_t blocks;
  int64_t run_bytes;  // the shorter of the contiguous runs read and written
  int used_pct;       // share of the tile's slots holding data
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
      sc.key[0] = 3;
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
      sc.key[0] = 3;
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
  if (is_copy(s)) {
    std::snprintf(out, size, "copy");
  } else if (keeps_last(s)) {
    std::snprintf(out, size, "row_r%d_l%d", s.rank, cls(s.dims[s.rank - 1]));
  } else {
    const TileView t = tile_view(s);
    std::snprintf(out, size, "tile_i%d_j%d_b%d", cls(t.ni), cls(t.nj), t.batches > 1 ? 1 : 0);
  }
}

}  // namespace permute
}  // namespace kgen
