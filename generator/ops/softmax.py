"""Softmax / log-softmax over one dim of a tensor seen as (outer, axis, inner).

Rows (inner == 1, the last dim): three tiers as in OneFlow's design:
  warp     whole row in registers; a group of `group_width` lanes owns a row,
           each lane holds `cols_per_thread` values loaded `pack_size` at a time;
           `rows_per_access` rows per group per pass; `padding` masks a tail.
  smem     one block per row, the row cached in shared memory (opt-in above
           48 KB), `block_size` chosen by the runtime from occupancy.
  uncached one block per row, two passes over global memory (online max+sum,
           then normalise); any length.
  block    one block per row, the row in its registers (`cols_per_thread`
           values a thread, `pack_size` a 16-byte load): x read once, the
           aligned body in 16-byte packs at any length and alignment, the
           unaligned head and tail one element a thread.
  cluster  the block tier across the `cluster_size` CTAs of a thread-block
           cluster (sm_90), the partial max and sum of each CTA read by the
           others through distributed shared memory: rows of up to
           cluster_size x block_size x cols_per_thread values read once.
  split    few long rows: each row cut into chunks of 16-byte packs, a CTA
           of `block_size` threads each, as many as fill the GPU; one
           kernel leaves each chunk's max and sum in a workspace, a second
           combines them and writes y (x read twice, the second time
           backwards, from L2 where it still is).
  grid     few rows that fit the registers of every SM's CTAs (forward):
           a CTA a slice, one cooperative launch, the slices' max and sum
           exchanged through the workspace across a grid-wide barrier;
           x read once.
  tile     short rows (or short axes, below) whose 16-byte packs the
           register tiers cannot use: whole rows staged through shared
           memory in 16-byte vectors at any length and alignment, computed
           there by groups of lanes, stored back in vectors.
  span     rows no 16-byte pack divides (odd lengths, misaligned tensors)
           of up to a warp's reach: a group of `group_width` lanes holds a
           row's aligned body in 16-byte packs, `cols_per_thread` values a
           lane, and its head and tail an element a lane.
Strided (inner > 1, a middle dim, no transpose): a thread owns a pack of
`pack_size` adjacent inner positions ("columns") and a share of the axis;
`col_lanes` lanes of a warp cover adjacent packs (coalesced along inner), the
other lanes and the block's warps split the axis.
  strided           the column tile in registers, `axis_per_thread` values a
                    thread; the block's warps chosen by the runtime to reach
                    the axis.
  strided_uncached  two passes over global memory (online max and sum); any
                    axis length.
  column            short axes (up to `axis_per_thread`): a thread owns
                    `cols_per_thread` columns, a pack at a time, packs a
                    block apart, and the whole axis of each in registers.
  tile              (as above) whole (axis x inner) slabs of short axes
                    over an inner extent no 16-byte pack divides.
  split             (as above) a long axis over a few columns (inner
                    up to a quarter of the block): each contiguous slab cut
                    into runs of axis positions, a CTA a run, its threads
                    reading the run in order, each at one inner position.
  generic  pack 1: the uncached row kernel when inner == 1, the strided
           uncached one otherwise; every valid problem, any alignment.
softmax and log_softmax share each variant: the mode is a run-time argument
that picks one of the instantiations compiled into the variant (the row tiers
also hold the masked softmax: scale and mask fused on load).  The backward
family (softmax_backward.py) has the same tiers and parameter space.
"""
from ..core import Param, Tier
from ..dtypes import max_pack

OP = "softmax"
DTYPES = ("f32", "f16", "bf16", "f64")
# C++ function deciding capability from the real problem (runtime/src/softmax)
SUPPORTS = "kgen::softmax::supports"
PROBLEM_HEADER = "softmax/problem.hpp"
# where the templates find the kernels and launchers of this direction
DEVICE_HEADER = "kgen/device/softmax.cuh"
BACKWARD = False  # which kernels the strided templates name
DEVICE_NS = "kgen::device::softmax"


def packs(d):
    return [p for p in (1, 2, 4, 8) if p <= max_pack(d)]


def max_cols_per_thread(d):
    # register budget: 32 compute values per row per lane (16 for float64)
    return 16 if d.short == "f64" else 32


# cols_per_thread / pack_size multipliers; non powers of two fit rows such as
# 96 or 384 with no padding waste.
COL_MULTIPLIERS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32)
POW2 = (1, 2, 4, 8, 16, 32)
BLOCKS = (128, 256, 512, 1024)


def warp_max_cols(d):
    """The forward's warp tier also holds rows of up to 2048 (64 values a
    lane, float32 and half types, full warps, one row an access): float16
    rows of 2048 ran at 52-60% of copy masked and 70-75% plain in the smem
    tier, whose block reductions and shared-memory round trips cost more
    than a warp's shuffles (H100, bench/NOTES.md v4)."""
    return 32 if d.short == "f64" else 64


def warp_valid(d, p, arches):
    c, pk, g, r = p["cols_per_thread"], p["pack_size"], p["group_width"], p["rows_per_access"]
    if c % pk or c // pk not in COL_MULTIPLIERS or c > warp_max_cols(d):
        return False
    if c > max_cols_per_thread(d) and (g != 32 or r != 1):  # long rows: full warps only
        return False
    if g < 32 and c != pk:          # narrow groups hold one pack per lane
        return False
    if r == 2 and c * 2 > max_cols_per_thread(d):
        return False
    return True


def warp_valid_backward(d, p, arches):
    """The backward holds y and dy: the register budget of one row."""
    return warp_valid(d, p, arches) and p["cols_per_thread"] <= max_cols_per_thread(d)


def warp_rows_per_access(group_width, packs, backward):
    """Two rows an access for narrow groups; for full warps too in the
    forward when a lane holds one or two packs a row: its loads are all
    issued before the first use (softmax.cuh), so a second row doubles the
    bytes in flight.  The backward's full warps take one row (and at pack 1
    two as well: warp_default_backward)."""
    return 2 if group_width < 32 or (not backward and packs <= 2) else 1


def _warp_default(d, p, backward):
    pk, c, g, r = p["pack_size"], p["cols_per_thread"], p["group_width"], p["rows_per_access"]
    if d.size == 2 and pk == max_pack(d) // 2:
        # half-type rows that are a multiple of 4 but not 8 (e.g. 500): full
        # warps of 8-byte packs; without them such rows went to the smem tier
        # at 40% of copy (H100, bench/NOTES.md v4); at 64 values a lane the
        # pick for rows of 1025-2048 (98% of copy where 16-byte packs reach
        # 85%, bench/NOTES.md split v1)
        return g == 32 and r == 1 and c in (16, 32, 64) and p["padding"]
    if pk not in (1, max_pack(d)) or c // pk not in POW2 or not p["padding"]:
        return False
    # pack 1 too: rows whose length or pointers no wider pack divides (odd
    # columns, a tensor one element into its storage) went to the smem tier,
    # a block a row: 2.8M rows of 26 float32 at 0.13x torch (H100, random
    # sweep, bench/NOTES.md sweep v1)
    return r == warp_rows_per_access(g, c // pk, backward)


def warp_default(d, p):
    """Pruned set: the widest pack, powers of two, and the shapes the
    heuristic prefers (rows an access: warp_rows_per_access; padding on so
    every variant covers a range of cols)."""
    return _warp_default(d, p, backward=False)


def warp_default_backward(d, p):
    """As the forward's, full warps one row an access; at pack 1 with one
    or two values a lane two rows as well, the pick for rows that fill a
    wave (runtime/src/softmax/rules.cpp, the warp tier; bench/NOTES.md
    warp v5)."""
    if p["group_width"] == 32 and p["rows_per_access"] == 2:
        return p["pack_size"] == 1 and p["cols_per_thread"] <= 2 and bool(p["padding"])
    return _warp_default(d, p, backward=True)


def smem_pack(d):
    """The smem tier's preferred pack: 4 bytes (see runtime/src/softmax/rules.cpp)."""
    return max(1, 4 // d.size)


def smem_default(d, p):
    return p["pack_size"] in (smem_pack(d), 1)


def uncached_default(d, p):
    # pack 1 for long rows of odd length (the generic kernel's block is smaller)
    return (p["pack_size"], p["block_size"]) in ((max_pack(d), 1024), (1, 1024))


LANES = (1, 2, 4, 8, 16, 32)


def strided_valid(d, p, arches):
    return p["axis_per_thread"] * p["pack_size"] <= max_cols_per_thread(d)


# The register tiles of the default level, (pack_size, col_lanes,
# axis_per_thread) per dtype: the winners of the full sweep over
# (64,1024,4096), (256,64,3136), (128,512,784), (16,19,262144) and the
# pack-1 tile for an odd inner (H100, kgen-bench softmax_dim --variants,
# bench/NOTES.md v4), and the 32-lane pack-1 tile for a short axis over an
# odd or misaligned inner (H100 random sweep: float32 8192x3x281 over dim 1
# in 46 us against 137 us generic; bench/NOTES.md sweep v1).  The forward's
# best tiles are 8-16 bytes a pack with 16-32 values a thread; the backward
# (y and dy) prefers fewer values a thread (registers), so it has its own set,
# with a 32-lane pack-1 tile of 16 values that covers an axis of 256 in its
# 16 warps (the 8-value one covers 128; H200 random sweep: bfloat16
# (256, 25495x10) over dim 0 ran 8 lanes x 32 values at 0.51x torch, where
# the forward's 32 lanes took 171 us against 8 lanes' 280).
STRIDED_FORWARD = {
    "f32": ((4, 8, 8), (4, 4, 4), (4, 32, 4), (1, 8, 32), (1, 32, 8)),
    "f16": ((4, 4, 8), (4, 16, 8), (4, 32, 4), (1, 8, 32), (1, 32, 8)),
    "f64": ((2, 4, 8), (2, 32, 8), (1, 8, 16)),
}
STRIDED_FORWARD["bf16"] = STRIDED_FORWARD["f16"]
STRIDED_BACKWARD = {
    "f32": ((2, 8, 16), (4, 4, 4), (2, 32, 4), (4, 16, 4), (1, 8, 32), (1, 32, 8), (1, 32, 16)),
    "f16": ((8, 2, 4), (8, 8, 1), (8, 2, 2), (1, 8, 32), (1, 32, 8), (1, 32, 16)),
    "f64": ((2, 4, 8), (2, 32, 8), (1, 8, 16)),
}
STRIDED_BACKWARD["bf16"] = STRIDED_BACKWARD["f16"]


def strided_default_in(table):
    def in_default(d, p):
        return (p["pack_size"], p["col_lanes"], p["axis_per_thread"]) in table[d.short]
    return in_default


def strided_uncached_default(d, p):
    """Two lanes a column pack (the most threads along the axis: few columns,
    long axes such as (8, 8192, 64)) in 8-byte packs."""
    return p["pack_size"] == max(1, max_pack(d) // 2) and p["col_lanes"] == 2


# The column tier: the axis positions a variant holds (A) and the columns a
# thread owns (C, C / P packs); A x C values a thread in registers, at most
# 32 forward and 16 backward (y and dy), half that for float64.  The default
# level: packs of 1 (odd or misaligned inner) up to 16 bytes, one pack a
# thread (small tensors: a thread's exps and stores one after another are
# the kernel's time, H200 softmax sweeps: tensors of a few KB 3.5-3.8 us in
# the register tile, 4.3-4.9 at 8 packs a thread) and the packs that reach
# the value budget.
COLUMN_AXES = (2, 4, 8, 16)
COLUMN_COLS = (1, 2, 4, 8, 16, 32)


def column_budget(d, backward):
    return (16 if backward else 32) // (2 if d.short == "f64" else 1)


def column_valid(backward):
    def valid(d, p, arches):
        c, pk = p["cols_per_thread"], p["pack_size"]
        return c % pk == 0 and c * p["axis_per_thread"] <= column_budget(d, backward)
    return valid


def column_default(backward):
    def in_default(d, p):
        a, c, pk = p["axis_per_thread"], p["cols_per_thread"], p["pack_size"]
        return (d.short != "f64" and a in (4, 8, 16) and
                c in (pk, max(pk, column_budget(d, backward) // a)))
    return in_default


def column_tier(backward):
    return Tier(name="column", template="softmax_column.cu.j2",
                params=(Param("pack_size", "p", packs),
                        Param("cols_per_thread", "c", lambda d: COLUMN_COLS),
                        Param("axis_per_thread", "a", lambda d: COLUMN_AXES)),
                valid=column_valid(backward), in_default=column_default(backward))


# ---------------------------------------------------------- block and cluster
# A 16-byte pack a load; 1-8 packs a thread (registers hold x as stored:
# 4-32 registers, half types two values a register).  The backward holds y
# and dy.  Register limits from ptxas (sm_90): float16 forward at 8 packs
# and 1024 threads spilled 92 bytes in the log mode (64-register cap); the
# float16 backward took 80-118 registers at 4 packs and spilled at 1024
# threads, float32 at 4 packs 57-60.
SLICE_PACKS = (1, 2, 4, 8)
# Clusters of any size up to 16 for the forward's 16 packs a thread (below),
# so that one holds a row of 100277-200019 values (LLM vocabularies) at 7/8
# full or more; the register-only slices keep powers of two (8 packs a
# thread in blocks of 256, H200, 256 MiB: float16 rows of 152064 ran at 81%
# of copy in a cluster of 10, 64% in one of 16; of 200019 77% in one of 14;
# bench/NOTES.md slice v9).
CLUSTERS = (2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16)
POW2_CLUSTERS = (2, 4, 8, 16)
# Forward blocks and clusters also hold 16 packs a thread: 8 in registers,
# 8 in shared memory (rows::Held, 16 bytes x block_size x 8: 64 KB at 512
# threads, 128 KB at 1024), so that a cluster of 16 holds a row of 1M
# values (524288 without them) and one block a float32 row of 65536.  Not
# for the half types at 1024 threads (their 8 register packs spill there),
# under 256 threads (a cluster of 16 x 128 x 16 packs holds less than one
# of 16 x 1024 x 8 in registers) nor in the backward.
HELD_PACKS = 16


def slice_packs_max(d, block, backward):
    if backward:
        return 2 if d.size == 2 else 4
    return 4 if d.size == 2 and block == 1024 else 8


def slice_valid(backward, cluster):
    def valid(d, p, arches):
        v = p["cols_per_thread"] // p["pack_size"]
        if p["cols_per_thread"] % p["pack_size"] != 0:
            return False
        if v == HELD_PACKS:
            return not backward and p["block_size"] >= 256 and not (d.size == 2 and p["block_size"] == 1024)
        if cluster and p["cluster_size"] not in POW2_CLUSTERS:
            return False
        return v <= slice_packs_max(d, p["block_size"], backward)
    return valid


def slice_cols(d, held=False):
    return [max_pack(d) * v for v in SLICE_PACKS + ((HELD_PACKS,) if held else ())]


# The default level: what the heuristic picks (runtime/src/softmax/rules.cpp:
# values a thread near 32 in a block, 16 bytes x 8 in a cluster, 16 in the
# backward; blocks of 128-512 threads, and of 1024 for one forward row of
# 16384-65536 (below); 1024 in clusters only of 16, the longest rows), with
# the neighbours that fit rows between them.  float64 keeps to blocks.
SLICE_BLOCKS = (128, 256, 512)


def slice_default(backward, cluster):
    def in_default(d, p):
        c, b = p["cols_per_thread"], p["block_size"]
        if not cluster:
            regs = SLICE_PACKS[-1] * max_pack(d)  # values a thread in registers at most
            if b in SLICE_BLOCKS and c in ((8, 16) if backward else (16, 32)) and c <= regs:
                return True
            if backward:  # the half types' rows of 16384 in 1024 x 16 values
                return d.size == 2 and c == 16 and b == 1024
            # forward rows of 16384-65536 in one block: 8 packs a thread in
            # registers (float32 in 1024 threads, the half types in 512),
            # the half types' 16 with shared memory in 512 (rows of 65536);
            # the half types' 8 packs in 128 and 256 threads too, for rows
            # that would fill a block of 32 values a thread under 5/8
            # (runtime/src/softmax/rules.cpp slice_heuristic)
            return not backward and d.short != "f64" and (
                (c == regs and (b == 1024 if d.size == 4 else b in SLICE_BLOCKS)) or
                (d.size == 2 and c == HELD_PACKS * max_pack(d) and b == 512))
        if d.short == "f64":
            return False
        want = 16 if backward else 128 // d.size
        if not backward and c == HELD_PACKS * max_pack(d):
            # rows of 1M: clusters of 16 (float32 524288: of 512 threads);
            # rows no 8-pack cluster fills 7/8 of: 256 threads, any size
            return (p["cluster_size"] == 16 and b in (512, 1024 if d.size == 4 else 512)) or b == 256
        return c == want and (b in SLICE_BLOCKS or (b == 1024 and p["cluster_size"] == 16))
    return in_default


# Blocks of one and two warps hold odd rows of 333-2048 values at full
# vector width (a block of 128 holding a bfloat16 row of 673 left two thirds
# of its threads idle: 54% of copy; pack-1 warp variants 44-64%).  Selection
# takes them for odd forward rows of 513-2048 (runtime/src/softmax/rules.cpp);
# the backward's are compiled but not measured.
SMALL_BLOCKS = (32, 64)


def small_block_default(backward):
    inner = slice_default(backward, False)

    def in_default(d, p):
        if p["block_size"] in SMALL_BLOCKS:  # (float64 spilled 32 bytes under their 64 registers)
            return d.short != "f64" and p["cols_per_thread"] in ((8, 16) if backward else (16, 32))
        return inner(d, p)
    return in_default


def slice_tiers(backward):
    pack = Param("pack_size", "p", lambda d: [max_pack(d)])
    cols = Param("cols_per_thread", "c", lambda d: slice_cols(d, held=not backward))
    block_params = (pack, cols, Param("block_size", "b", lambda d: SMALL_BLOCKS + BLOCKS))
    cluster_params = (pack, cols, Param("block_size", "b", lambda d: BLOCKS),
                      Param("cluster_size", "k", lambda d: CLUSTERS))
    return (
        Tier(name="block", template="softmax_slice.cu.j2", params=block_params, valid=slice_valid(backward, False),
             in_default=small_block_default(backward), fixed=(("cluster_size", 1),)),
        Tier(name="cluster", template="softmax_slice.cu.j2", params=cluster_params,
             valid=slice_valid(backward, True), in_default=slice_default(backward, True), min_arch=90),
    )


# The split tier: any block size; the runtime sizes the chunks.
def split_tier():
    return Tier(name="split", template="softmax_split.cu.j2",
                params=(Param("pack_size", "p", lambda d: [max_pack(d)]), Param("block_size", "b", lambda d: BLOCKS)))


# The grid tier: a few rows over every SM in one cooperative launch, each
# CTA's slice of a row in registers (2-8 16-byte packs a thread), the row's
# (max, sum) partials exchanged through the workspace across a grid-wide
# barrier; forward only, not float64.
# 16 and 32 packs: 8 in registers, the rest in shared memory (rows::Held),
# so that 1-8 rows of up to 8M float32 values fit the GPU at once.
GRID_PACKS = (2, 4, 8, 16, 32)
GRID_BLOCKS = (256, 512)


def grid_tier():
    return Tier(name="grid", template="softmax_grid.cu.j2",
                params=(Param("pack_size", "p", lambda d: [max_pack(d)]),
                        Param("cols_per_thread", "c", lambda d: [max_pack(d) * k for k in GRID_PACKS]),
                        Param("block_size", "b", lambda d: GRID_BLOCKS)),
                valid=lambda d, p, a: d.short != "f64")


# The tile tier: whole short rows or (axis x inner) slabs staged through
# shared memory, block_size x cols_per_thread elements a tile (1-8 16-byte
# packs a thread, at most 32 KB a tile and input).
TILE_PACKS = (1, 2, 4, 8)
TILE_BLOCKS = (32, 64, 128, 256)
TILE_MAX_BYTES = 32 * 1024


def tile_valid(d, p, arches):
    return p["block_size"] * p["cols_per_thread"] * d.size <= TILE_MAX_BYTES


def tile_default(d, p):
    return p["cols_per_thread"] == 4 * max_pack(d) and p["block_size"] in (64, 128)


def tile_tier():
    return Tier(name="tile", template="softmax_tile.cu.j2",
                params=(Param("pack_size", "p", lambda d: [max_pack(d)]),
                        Param("cols_per_thread", "c", lambda d: [max_pack(d) * k for k in TILE_PACKS]),
                        Param("block_size", "b", lambda d: TILE_BLOCKS)),
                valid=tile_valid, in_default=tile_default)


# The span tier: the warp tier's rows that no 16-byte pack divides, a lane
# group's packs from the row's first 16-byte boundary (softmax.cuh
# span_kernel): cols_per_thread / pack_size packs a lane (K), groups of
# group_width lanes, rows_per_access rows a group.  No fused mask; not for
# float64 (the tile and the warp tier's 8-byte packs).
SPAN_PACKS = (1, 2, 3, 4)
SPAN_GROUPS = (4, 8, 16, 32)


def span_valid(d, p, arches):
    return d.short != "f64" and p["cols_per_thread"] * p["rows_per_access"] <= max_cols_per_thread(d)


def span_valid_backward(d, p, arches):
    """The backward holds y and dy: the forward's budget for the two (as
    the warp tier's warp_valid_backward)."""
    return span_valid(d, p, arches)


def span_default(d, p):
    """What the heuristic picks (runtime/src/softmax/rules.cpp
    span_heuristic): for each count of packs a group holds, the fewest
    lanes (4 packs a lane, one row a group), and under 16 packs the groups
    of 4 lanes: 1 pack a lane (two rows) and 2; for the half types, 3 packs
    a lane in groups of 8 or more lanes fill the counts between (24-96
    packs a group)."""
    k, g, r = p["cols_per_thread"] // p["pack_size"], p["group_width"], p["rows_per_access"]
    if k == 3:
        return d.size == 2 and g >= 8 and r == 1
    return (k == 4 and r == 1) or (g == 4 and (k, r) in ((1, 2), (2, 1)))


def span_default_backward(d, p):
    """The backward's spans serve the half types only (float32 rows ran at
    copy speed in the warp tier), not in 4 lanes x 4 packs (span_heuristic)."""
    k, g = p["cols_per_thread"] // p["pack_size"], p["group_width"]
    return d.size == 2 and not (k == 4 and g == 4) and span_default(d, p)


def span_tier():
    return Tier(name="span", template="softmax_span.cu.j2",
                params=(Param("pack_size", "p", lambda d: [max_pack(d)]),
                        Param("cols_per_thread", "c", lambda d: [max_pack(d) * k for k in SPAN_PACKS]),
                        Param("group_width", "g", lambda d: SPAN_GROUPS),
                        Param("rows_per_access", "r", lambda d: (1, 2))),
                valid=span_valid, in_default=span_default)


# The backward family (softmax_backward.py) renders the same templates with
# its own kernels (DEVICE_NS).
TIERS = (
    Tier(
        name="warp",
        template="softmax_warp.cu.j2",
        params=(
            Param("pack_size", "p", packs),
            Param("cols_per_thread", "c", lambda d: range(1, warp_max_cols(d) + 1)),
            Param("group_width", "g", lambda d: (1, 2, 4, 8, 16, 32)),
            Param("rows_per_access", "r", lambda d: (1, 2)),
            Param("padding", "pad", lambda d: (0, 1), words=("nopad", "pad")),
        ),
        valid=warp_valid,
        in_default=warp_default,
    ),
    Tier(
        name="smem",
        template="softmax_smem.cu.j2",
        params=(Param("pack_size", "p", packs), Param("block_size", "b", lambda d: BLOCKS)),
        in_default=smem_default,
    ),
    Tier(
        name="uncached",
        template="softmax_uncached.cu.j2",
        params=(Param("pack_size", "p", packs), Param("block_size", "b", lambda d: BLOCKS)),
        in_default=uncached_default,
    ),
    *slice_tiers(backward=False),
    split_tier(),
    tile_tier(),
    Tier(
        name="strided",
        template="softmax_strided.cu.j2",
        params=(
            Param("pack_size", "p", packs),
            Param("col_lanes", "l", lambda d: LANES),
            Param("axis_per_thread", "a", lambda d: POW2),
        ),
        valid=strided_valid,
        in_default=strided_default_in(STRIDED_FORWARD),
    ),
    Tier(
        name="strided_uncached",
        template="softmax_strided_uncached.cu.j2",
        params=(Param("pack_size", "p", packs), Param("col_lanes", "l", lambda d: LANES)),
        in_default=strided_uncached_default,
    ),
    column_tier(backward=False),
    Tier(
        name="generic",
        template="softmax_generic.cu.j2",
        params=(),
        generic=True,
        fixed=(("pack_size", 1), ("block_size", 256), ("col_lanes", 32)),
    ),
    span_tier(),
    grid_tier(),
)
