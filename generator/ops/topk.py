"""Top-k: the k largest (or smallest) values of each row and their int64
indices, sorted or not.  A row of n elements is seen through its keys
(templates/include/kgen/device/topk_keys.cuh): the value's order bits above
the inverted index, so keys are distinct and selection is "the k largest".

Strategies (templates/include/kgen/device/topk.cuh):
  tourney  one warp per row of up to 32 x items elements, the row in
           registers: k <= 32, k rounds of a warp maximum over the lanes'
           sorted keys; else the row sorted whole by the warp
  queue    one warp per row: for k <= 16 a bound from the lanes' maxima, one
           gather and a warp sort; else the best 32*capacity keys in
           registers, merged by warp bitonic networks; k <= 32*capacity
  block    one block per row, the row in registers (block_size x items),
           the k-th bounded by the threads' maxima, else radix select with
           `radix`-bit digits (2 and 4 count by warp ballots, 8 and 11 by
           shared-memory atomics)
  cluster  one row over the CTAs of a cluster (up to 8), in their
           registers: one radix select over the order bits, each level's
           counts summed through distributed shared memory; k <= 128
  stream   one block per row of any length, read once in chunks: keys above
           a running bound into a shared buffer cut to the k best when
           half full; k <= 128 with a buffer of 4096 keys, up to 1024 with
           16384 (batches of at least half the SMs; fewer rows past a
           cluster's reach in slices, merged by a second kernel)
  multi    several blocks per row: warps offer their maxima, the k-th offer
           bounds the k-th, one gather, one block's sort; rows it cannot
           settle go through multi-block digit passes (the bucket chosen on
           the device, candidates compacted into lists)
  generic  multi at pack 1: every valid problem, any alignment
The selected k are sorted in shared memory when they fit (4096 keys, 2048
for float64); past that they are written in index order (the multi tier
finds the k-th's value by digit passes over the order bits) and a sorted
output orders them by a radix sort over the whole GPU.
"""
from ..core import Param, Tier
from ..dtypes import max_pack

OP = "topk"
DTYPES = ("f32", "f16", "bf16", "f64", "i32")
SUPPORTS = "kgen::topk::supports"
PROBLEM_HEADER = "topk/problem.hpp"


def packs(d):
    return sorted({1, max_pack(d)})


def widest(d, p):
    return p["pack_size"] == max_pack(d)


PACK = Param("pack_size", "p", packs)
RADIX = Param("radix", "r", lambda d: (2, 4, 8, 11))

# (block_size, items) of the default level: a rung per row capacity, 1024
# to 32768 elements, and 8 items at 2048 and 4096 for unsorted output,
# whose block scans cost a round of packs each (H100, 1095 x 3606 int32
# k 3606 unsorted: 512 x 8 46.8 us, 256 x 16 97.0; sorted 306.6 / 305.7)
BLOCK_LADDER = ((128, 8), (256, 8), (256, 16), (512, 8), (512, 16), (1024, 16), (1024, 32))


def block_valid(d, p, arches):
    if p["items"] % p["pack_size"]:
        return False
    if p["radix"] < 11 and not widest(d, p):  # narrower digits: for comparison
        return False
    # the row lives in registers: 32 keys a thread at most (16 of float64)
    return p["items"] <= (16 if d.size == 8 else 32)


# Pack-1 blocks of every rung: rows a block holds, of any length or
# alignment, go to a block however few they are (a 4 x 11 float32 problem
# took 18-21 us in the multi-block select's 8 launches, torch 6.7-6.9;
# sweeps at c74ef51, H100 and H200)
PACK1_RUNGS = BLOCK_LADDER


def block_default(d, p):
    rung = (p["block_size"], p["items"])
    return p["radix"] == 11 and ((widest(d, p) and rung in BLOCK_LADDER) or
                                 (p["pack_size"] == 1 and rung in PACK1_RUNGS))


def stream_valid(d, p, arches):
    if d.size == 8 or p["items"] % p["pack_size"]:
        return False
    # the buffer of 16384 keys (128 KB of shared memory a block): 1024
    # threads, k up to buffer / (2 x items)
    return p["buffer"] == 4096 or p["block_size"] == 1024


def stream_default(d, p):
    rung = (p["block_size"], p["items"])
    if p["buffer"] == 16384:  # k up to 1024 at items 8; the half types' items 16 for k up to 512
        return widest(d, p) and (rung == (1024, 8) or (d.size == 2 and rung == (1024, 16)))
    return widest(d, p) and rung == (1024, 16 if d.size == 2 else 8)


# Tier.cost: compile cost of a variant relative to a softmax one, from the
# bundles of 16 on a 2-core machine (nvcc past a bundle's fixed cost: queue
# about 1.9 s a variant, block 1.6 s, multi 2.9 s, against 0.56 s)
TIERS = (
    Tier(
        name="queue",
        template="topk.cu.j2",
        params=(Param("capacity", "c", lambda d: (1, 2, 4, 8)), PACK),
        # the heuristic takes the queue for k <= 16 only (its fast path);
        # pack 1 for many rows of any length or alignment (H200 sweep:
        # 106051 x 2 float32 took a block of 128 threads a row, 378 us
        # against torch's 100)
        in_default=lambda d, p: p["capacity"] == 1,
        fixed=(("block_size", 128),),
        cost=3.4,
    ),
    Tier(
        name="tourney",
        template="topk.cu.j2",
        # one warp a row of up to 32 x items elements; k <= 32: k rounds of a
        # warp maximum over the lanes' sorted keys; else a warp sort of the row
        params=(Param("items", "i", lambda d: (8, 16, 32)), PACK),
        valid=lambda d, p, arches: d.size != 8 and p["items"] % p["pack_size"] == 0,
        # items 32 for the half types' rows of 513-1024, whose 32-bit keys
        # sort there without spilling (H200, topk v42: bfloat16 27584 x 529
        # k 193 313.1 us against a block's 600.6, 65536 x 1024 k 8 142.6
        # against the queue's 193.2)
        in_default=lambda d, p: p["items"] in (8, 16) or (d.size == 2 and p["items"] == 32),
        fixed=(("block_size", 128),),
        cost=2.0,
    ),
    Tier(
        name="block",
        template="topk.cu.j2",
        params=(Param("block_size", "b", lambda d: (128, 256, 512, 1024)),
                Param("items", "i", lambda d: (8, 16, 32)), RADIX, PACK),
        valid=block_valid,
        in_default=block_default,
        cost=2.9,
    ),
    Tier(
        name="cluster",
        template="topk.cu.j2",
        # one row over a cluster of up to 8 CTAs (block_size x items
        # elements each), a bound from the warps' offers or else one radix
        # select through distributed shared memory, k <= 128: the rows of
        # sampling in one launch
        params=(Param("block_size", "b", lambda d: (256, 512, 1024)),
                Param("items", "i", lambda d: (8, 16, 32)), PACK),
        valid=lambda d, p, arches: d.size != 8 and p["items"] % p["pack_size"] == 0,
        # pack 1 (a lane's elements loaded one by one) lost to the multi
        # tier where measured (H200, 8 x 50257 float32 k 50: 42.2 us
        # against 31.6): widest packs only
        in_default=lambda d, p: widest(d, p) and (p["block_size"], p["items"]) in ((512, 16), (1024, 16), (1024, 32)),
        min_arch=90,
        cost=2.9,
    ),
    Tier(
        name="stream",
        template="topk.cu.j2",
        # one block a row of any length, read once in chunks of block_size
        # x items: the keys above a running bound into a shared buffer, cut
        # to the k best when short of room; k <= 128 in a buffer of 4096
        # keys, up to 1024 in one of 16384 (dynamic shared memory)
        params=(Param("block_size", "b", lambda d: (256, 512, 1024)),
                Param("items", "i", lambda d: (8, 16)),
                Param("buffer", "c", lambda d: (4096, 16384)), PACK),
        valid=stream_valid,
        # the default set: one a type and buffer, the one the heuristic
        # ranks first wherever any runs (capability does not turn on the
        # block size, and items 16 holds every k <= kStreamK in 4096 keys;
        # items 8 every k <= 1024 in 16384, and the half types' items 16
        # every k <= 512 there, topk v52); the others stay in the full
        # level for measurement.  Items 16 for the half types, whose chunk
        # of 8 keeps 16 KB an SM in flight (H200, topk v44: bfloat16 128 x
        # 128256 k 50 41.4 us against 48.4, 128 x 262144 69.4 against 83.0,
        # 1 x 2^24 k 64 61.6 against 69.3); items 8 for the 4-byte types
        # (float32 128 x 128256 41.9 against 61.3)
        in_default=stream_default,
        cost=2.9,
    ),
    Tier(
        name="multi",
        template="topk.cu.j2",
        params=(Param("block_size", "b", lambda d: (256, 512, 1024)),
                Param("radix", "r", lambda d: (8, 11)), PACK),
        in_default=lambda d, p: widest(d, p) and p["block_size"] == 512 and p["radix"] == 11,
        cost=5.2,
    ),
    Tier(
        name="generic",
        template="topk.cu.j2",
        params=(),
        generic=True,
        fixed=(("block_size", 256), ("radix", 11), ("pack_size", 1)),
        cost=3.0,
    ),
)
