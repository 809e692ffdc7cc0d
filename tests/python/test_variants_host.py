"""bench/variants.py's problem words (no GPU): the sweep's report lines of
every family parse back to sweep problems."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import sweep  # noqa: E402
import variants  # noqa: E402


def test_softmax_and_reduce_lines_take_their_dim():
    p = variants.parse("softmax log_softmax 8192x3x281 dim=1 f16 +1")
    assert (p["family"], p["op"], p["shape"], p["dim"], p["dtype"], p["offset"]) == (
        "softmax", "log_softmax", (8192, 3, 281), 1, "f16", 1)
    assert variants.parse("softmax softmax 4x5 f32")["dim"] == 1
    assert variants.parse("reduce sum 4x5 bf16")["dim"] is None


def test_topk_lines_take_k_the_data_and_the_flags():
    p = variants.parse("topk topk 6x1577431 k=15 constant smallest unsorted f16 +1")
    assert (p["shape"], p["k"], p["data"], p["largest"], p["sorted"], p["dtype"], p["offset"]) == (
        (6, 1577431), 15, "constant", False, False, "f16", 1)
    q = variants.parse("topk topk 1x4096 k=8 bf16")
    assert (q["data"], q["largest"], q["sorted"], q["offset"]) == ("random", True, True, 0)


def test_softmax_backward_lines_read_as_the_forward():
    p = variants.parse("softmax_backward log_softmax_backward 4096x50257 bf16 +1")
    assert (p["family"], p["op"], p["shape"], p["dim"], p["dtype"], p["offset"]) == (
        "softmax_backward", "log_softmax_backward", (4096, 50257), 1, "bf16", 1)
    assert variants.parse("softmax_backward softmax_backward 7x9x5 dim=0 f32")["dim"] == 0


def test_short_lines_are_refused():
    with pytest.raises(ValueError):
        variants.parse("topk topk 1x4096")


def test_permute_expand_and_where_lines():
    p = variants.parse("permute permute 339x256x9 perm=0,2,1 f64")
    assert (p["shape"], p["perm"], p["dtype"], p["offset"]) == ((339, 256, 9), (0, 2, 1), "f64", 0)
    e = variants.parse("expand expand 1x3->131072x3 f32 +1")
    assert (e["src"], e["shape"], e["offset"]) == ((1, 3), (131072, 3), 1)
    w = variants.parse("where where 47137x3,1,() i32")
    assert (w["cond"], w["x"], w["y"], w["shape"]) == ((47137, 3), (1,), (), (47137, 3))
    assert variants.parse("reduce amax 5x7 dim=None f32")["dim"] is None


@pytest.mark.parametrize("family", sweep.FAMILIES)
def test_every_drawn_problem_reads_back(family):
    for p in sweep.draw(family, 7, 60, 1 << 22):
        q = variants.parse(f"{family} {sweep.describe(p)}")
        for key in sweep.PROBLEM_KEYS:
            if key in p:
                want = tuple(p[key]) if isinstance(p[key], (list, tuple)) else p[key]
                assert q.get(key) == want, (sweep.describe(p), key)
