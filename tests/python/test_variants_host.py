"""bench/variants.py's problem words (no GPU): the sweep's report lines of
every family parse back to sweep problems."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import variants  # noqa: E402


def test_softmax_and_reduce_lines_take_their_dim():
    p = variants.parse("softmax log_softmax 8192x3x281 dim=1 f16 +1")
    assert (p["family"], p["op"], p["shape"], p["dim"], p["dtype"], p["offset"]) == (
        "softmax", "log_softmax", [8192, 3, 281], 1, "f16", 1)
    assert variants.parse("softmax softmax 4x5 f32")["dim"] == 1
    assert variants.parse("reduce sum 4x5 bf16")["dim"] is None


def test_topk_lines_take_k_the_data_and_the_flags():
    p = variants.parse("topk topk 6x1577431 k=15 constant smallest unsorted f16 +1")
    assert (p["shape"], p["k"], p["data"], p["largest"], p["sorted"], p["dtype"], p["offset"]) == (
        [6, 1577431], 15, "constant", False, False, "f16", 1)
    q = variants.parse("topk topk 1x4096 k=8 bf16")
    assert (q["data"], q["largest"], q["sorted"], q["offset"]) == ("random", True, True, 0)


def test_short_lines_are_refused():
    with pytest.raises(ValueError):
        variants.parse("topk topk 1x4096")
