"""Permute: dst = src.permute(perm).contiguous() for a contiguous src of rank
<= 8, any element size.

The runtime simplifies every problem first (runtime/src/permute/simplify.cpp):
size-1 dims dropped, dims that stay adjacent and in order merged, and the
element widened to the widest movement (1-16 bytes) that the preserved
innermost bytes and both pointers allow.  Kernels therefore only move units
of `movement` bytes, and variants are compiled per movement size (the
element axis of this family: b1 .. b16), not per dtype.

Tiers:
  elem     per-unit index math in dst order, rank fixed at compile time;
           int32 offsets with fast division by invariant integers, or int64
  row      the innermost dim is preserved: a group of `group` lanes copies
           one row of units, `unroll` units in flight a lane; the row's
           source offset is computed once per row
  tile     the innermost dim moves: a ti x tj tile (ti along the source's
           contiguous dim, tj along the destination's) staged in shared
           memory (XOR-swizzled chunks against bank conflicts), `pack`
           units per global access on both sides (a pack x pack register
           transpose), the other dims as batch, decomposed once per tile
  generic  elem with the rank read at run time and int64 offsets: every
           problem of its movement size
"""
from ..core import Param, Tier
from ..dtypes import MOVEMENTS

OP = "permute"
ELEMENTS = MOVEMENTS
DTYPES = tuple(MOVEMENTS)
SUPPORTS = "kgen::permute::supports"
PROBLEM_HEADER = "permute/problem.hpp"

INDEX = ("i32", "i64")
BLOCK = 256  # threads of every permute kernel
TILE_SIDES = (4, 8, 16, 32, 64, 128, 256)


def elem_default(d, p):
    # every rank with int32 offsets: ranks 5-8 ran at 2-2.6x the generic
    # kernel's speed (H100, bench/NOTES.md sweep v2: 7x5x23x37x32x3x7x2 float32
    # 385 -> 173 us), and int64 offsets only past 2^31 units
    return p["index"] == 0


def row_default(d, p):
    return (p["group"], p["unroll"]) in ((8, 4), (32, 4))


def packs(d):
    return [v for v in (1, 2, 4, 8, 16) if v * d.size <= 16]


def tile_valid(d, p, arches):
    ti, tj, v = p["ti"], p["tj"], p["pack"]
    if ti % v or tj % v:
        return False
    if not 1024 <= ti * tj <= 16384 or ti * tj * d.size > 32 * 1024:
        return False
    # both phases give every thread at least one pack
    return (ti // v) * tj >= BLOCK and (ti // v) * (tj // v) >= BLOCK


def tile_default(d, p):
    ti, tj, v = p["ti"], p["tj"], p["pack"]
    if ti == tj:  # square: the plain transposes
        if d.size >= 4:
            return (ti, v) in ((32, 1), (64, 16 // d.size))
        return ti == 64 and v == 4
    # narrow: one side a few units (dims like 3 or 8), the other long
    return v == 1 and {ti, tj} in ({4, 256}, {8, 128})


# compile cost of a variant relative to a softmax one (Tier.cost: about 0.1 s
# of nvcc a variant past a bundle's fixed cost, against 0.56 s)
COST = 0.25

TIERS = (
    Tier(
        name="elem",
        template="permute_elem.cu.j2",
        params=(Param("rank", "r", lambda d: range(2, 9)),
                Param("index", "", lambda d: range(len(INDEX)), words=INDEX)),
        in_default=elem_default,
        cost=COST,
    ),
    Tier(
        name="row",
        template="permute_row.cu.j2",
        params=(Param("group", "g", lambda d: (4, 8, 16, 32)),
                Param("unroll", "u", lambda d: (1, 2, 4, 8))),
        in_default=row_default,
        cost=COST,
    ),
    Tier(
        name="tile",
        template="permute_tile.cu.j2",
        params=(Param("ti", "ti", lambda d: TILE_SIDES), Param("tj", "tj", lambda d: TILE_SIDES),
                Param("pack", "v", packs)),
        valid=tile_valid,
        in_default=tile_default,
        cost=COST,
    ),
    Tier(
        name="generic",
        template="permute_elem.cu.j2",
        params=(),
        generic=True,
        fixed=(("rank", 0), ("index", 1)),
        cost=COST,
    ),
)
