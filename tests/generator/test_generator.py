"""The generator: deterministic enumeration, canonical names, levels,
filters, and writing only what changed."""
import re
import subprocess
import sys
from pathlib import Path

import pytest

from generator.core import ARCHES, enumerate_op
from generator.dtypes import DTYPES
from generator.emit import output_names, render_all
from generator.ops import load_ops
from generator.ops import softmax

ALL = tuple(DTYPES)
ROOT = Path(__file__).resolve().parents[2]


def names(level="default", arch="sm_90", kernels=None, dtypes=ALL):
    return [v.name for v in enumerate_op(softmax, arch, level, dtypes, kernels)]


def test_ops_are_discovered():
    assert [m.OP for m in load_ops()] == ["softmax"]


def test_enumeration_is_deterministic_and_unique():
    for level in ("default", "full"):
        a, b = names(level), names(level)
        assert a == b
        assert len(a) == len(set(a))


def test_default_is_a_subset_of_full_with_every_generic():
    default, full = set(names("default")), set(names("full"))
    assert default < full
    for d in ALL:
        assert f"softmax_generic_{d}" in default


def test_names_encode_params_canonically():
    for v in enumerate_op(softmax, "sm_90", "full", ALL):
        parts = v.name.split("_")
        assert parts[:3] == ["softmax", v.tier.name, v.dtype.short]
        assert re.fullmatch(r"[a-z0-9_]+", v.name)
        p = v.param_dict
        if v.tier.name == "warp":
            assert parts[3:] == [f"p{p['pack_size']}", f"c{p['cols_per_thread']}",
                                 f"g{p['group_width']}", f"r{p['rows_per_access']}",
                                 "pad" if p["padding"] else "nopad"]


def test_constraints_hold_for_every_variant():
    for v in enumerate_op(softmax, "sm_90", "full", ALL):
        p = v.param_dict
        assert p["pack_size"] * v.dtype.size <= 16
        if v.tier.name == "warp":
            assert p["cols_per_thread"] % p["pack_size"] == 0
            assert p["cols_per_thread"] * p["rows_per_access"] <= 32
            assert 32 % p["group_width"] == 0
            if p["group_width"] < 32:
                assert p["cols_per_thread"] == p["pack_size"]
        if v.tier.name in ("smem", "uncached"):
            assert p["block_size"] in (128, 256, 512, 1024)


def test_kernel_filter_keeps_generic_variants():
    kept = names("full", kernels=r"_warp_f16_p8_c8_")
    assert kept and all(("_warp_f16_p8_c8_" in n) or "_generic_" in n for n in kept)
    assert sum("_generic_" in n for n in kept) == len(ALL)


def test_dtype_subset_and_bad_arguments():
    only = names(dtypes=("f16",))
    assert only and all("_f16" in n for n in only)
    with pytest.raises(ValueError, match="arch"):
        names(arch="sm_70")
    with pytest.raises(ValueError, match="level"):
        names(level="huge")
    assert set(ARCHES) >= {"sm_80", "sm_86", "sm_89", "sm_90"}


def test_render_writes_only_changed_files(tmp_path):
    ops = load_ops()
    by_op = {m.OP: enumerate_op(m, "sm_90", "default", ("f32",), r"_c4_g32_") for m in ops}
    written = render_all(ops, by_op, tmp_path, "sm_90", "default")
    expected = output_names([v for m in ops for v in by_op[m.OP]])
    assert sorted(written) == sorted(expected)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(expected)
    stamp = {p.name: p.stat().st_mtime_ns for p in tmp_path.iterdir()}
    assert render_all(ops, by_op, tmp_path, "sm_90", "default") == []
    assert stamp == {p.name: p.stat().st_mtime_ns for p in tmp_path.iterdir()}
    text = (tmp_path / "softmax_warp_f32_p4_c4_g32_r1_pad.cu").read_text()
    assert "launch_warp<float, 4, 4, 32, 1, true>" in text
    assert '"softmax_warp_f32_p4_c4_g32_r1_pad"' in text
    registry = (tmp_path / "registry.gen.cpp").read_text()
    for v in by_op["softmax"]:
        assert f"&v_{v.name}," in registry


def test_cli_list_matches_enumeration():
    out = subprocess.run([sys.executable, "-m", "generator", "--arch", "sm_90", "--level",
                          "default", "--list"], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.split() == names("default")
    assert "variants" in out.stderr
    bad = subprocess.run([sys.executable, "-m", "generator", "--dtypes", "f8", "--list"],
                         cwd=ROOT, capture_output=True, text=True)
    assert bad.returncode == 2 and "--dtypes" in bad.stderr
