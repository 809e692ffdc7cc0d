"""The generator: deterministic enumeration, canonical names, levels,
filters, and writing only what changed."""
import re
import subprocess
import sys
from pathlib import Path

import pytest

from generator.core import ARCHES, Param, Tier, enumerate_op, gencode_flags, parse_arches
from generator.dtypes import DTYPES
from generator.emit import bundles, output_names, render_all
from generator.ops import load_ops
from generator.ops import expand, permute, reduce, softmax, softmax_backward, where
from generator import core, tuning

ALL = softmax.DTYPES
ROOT = Path(__file__).resolve().parents[2]


def names(level="default", arch="sm_90", kernels=None, dtypes=ALL):
    return [v.name for v in enumerate_op(softmax, arch, level, dtypes, kernels)]


def test_ops_are_discovered():
    assert [m.OP for m in load_ops()] == ["expand", "permute", "reduce", "softmax", "softmax_backward",
                                          "topk", "where"]


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
    backward = {v.name for v in enumerate_op(softmax_backward, "sm_90", "default", ALL)}
    assert backward < {v.name for v in enumerate_op(softmax_backward, "sm_90", "full", ALL)}
    for d in ALL:
        assert f"softmax_backward_generic_{d}" in backward


@pytest.mark.parametrize("op", [softmax, softmax_backward])
def test_names_encode_params_canonically(op):
    # op and tier names may hold underscores ("softmax_backward",
    # "strided_uncached"): the name is the prefix op_tier_dtype, then one
    # part per parameter of the tier
    for v in enumerate_op(op, "sm_90", "full", ALL):
        prefix = f"{op.OP}_{v.tier.name}_{v.dtype.short}"
        assert v.name == prefix or v.name.startswith(prefix + "_")
        assert re.fullmatch(r"[a-z0-9_]+", v.name)
        parts = v.name[len(prefix) + 1:].split("_") if v.name != prefix else []
        assert len(parts) == len(v.tier.params)
        p = v.param_dict
        if v.tier.name == "warp":
            assert parts == [f"p{p['pack_size']}", f"c{p['cols_per_thread']}",
                             f"g{p['group_width']}", f"r{p['rows_per_access']}",
                             "pad" if p["padding"] else "nopad"]
        if v.tier.name == "strided":
            assert parts == [f"p{p['pack_size']}", f"l{p['col_lanes']}", f"a{p['axis_per_thread']}"]
        if v.tier.name == "strided_uncached":
            assert parts == [f"p{p['pack_size']}", f"l{p['col_lanes']}"]
        if v.tier.name == "column":
            assert parts == [f"p{p['pack_size']}", f"c{p['cols_per_thread']}", f"a{p['axis_per_thread']}"]
        if v.generic:
            assert parts == []


def test_tier_names_do_not_shadow_each_other():
    # "strided" is a prefix of "strided_uncached": a name must still tell
    # its tier, which the runtime and the benchmark read from the prefix
    for op in (softmax, softmax_backward):
        variants = enumerate_op(op, "sm_90", "full", ALL)
        for v in variants:
            owners = [t.name for t in op.TIERS
                      if any(v.name == f"{op.OP}_{t.name}_{d}" or v.name.startswith(f"{op.OP}_{t.name}_{d}_")
                             for d in ALL)]
            assert owners == [v.tier.name], v.name


def test_backward_warp_rows_keep_the_register_budget():
    for v in enumerate_op(softmax_backward, "sm_90", "full", ALL):
        if v.tier.name == "warp":
            assert v.param_dict["cols_per_thread"] <= (16 if v.dtype.short == "f64" else 32)


def test_constraints_hold_for_every_variant():
    for v in enumerate_op(softmax, "sm_90", "full", ALL):
        p = v.param_dict
        assert p["pack_size"] * v.dtype.size <= 16
        if v.tier.name == "warp":
            assert p["cols_per_thread"] % p["pack_size"] == 0
            assert p["cols_per_thread"] * p["rows_per_access"] <= 32 or (
                # long rows (up to 64 values a lane): full warps, one row an access
                p["cols_per_thread"] <= 64 and v.dtype.short != "f64"
                and p["group_width"] == 32 and p["rows_per_access"] == 1)
            assert 32 % p["group_width"] == 0
            if p["group_width"] < 32:
                assert p["cols_per_thread"] == p["pack_size"]
        if v.tier.name in ("smem", "uncached"):
            assert p["block_size"] in (128, 256, 512, 1024)
        if v.tier.name in ("strided", "strided_uncached"):
            assert 32 % p["col_lanes"] == 0
        if v.tier.name == "strided":
            assert p["axis_per_thread"] * p["pack_size"] <= softmax.max_cols_per_thread(v.dtype)
        if v.tier.name == "column":
            # whole packs a thread; the axis and its columns in the register budget
            assert p["cols_per_thread"] % p["pack_size"] == 0
            assert p["axis_per_thread"] * p["cols_per_thread"] <= (16 if v.dtype.short == "f64" else 32)


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
    assert set(ARCHES) >= {"sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_103", "sm_120"}
    with pytest.raises(ValueError, match="arch"):
        names(arch="sm_90,sm_70")
    with pytest.raises(ValueError, match="arch"):
        names(arch="")


def test_arch_lists_are_sorted_deduplicated_and_do_not_change_the_variants():
    assert parse_arches("sm_120,sm_90,sm_100,sm_90") == ("sm_90", "sm_100", "sm_120")
    assert parse_arches(["sm_86"]) == ("sm_86",)
    # SASS for each arch, PTX for the newest
    assert gencode_flags("sm_120,sm_90") == ["-gencode=arch=compute_90,code=sm_90",
                                             "-gencode=arch=compute_120,code=sm_120",
                                             "-gencode=arch=compute_120,code=compute_120"]
    out = subprocess.run([sys.executable, "-m", "generator", "--arch", "sm_100,sm_80", "--gencode"],
                         cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.split() == gencode_flags(["sm_80", "sm_100"])
    # the newest arch decides: sm_90 and later lists compile the same
    # variants; an sm_80 build leaves out the cluster tiers (sm_90) alone
    assert names(arch="sm_90,sm_100,sm_120") == names(arch="sm_90") == names(arch="sm_80,sm_90")
    assert names(arch="sm_80") == [n for n in names(arch="sm_90") if "_cluster_" not in n]


class _ClusterOp:
    """A family with a tier that needs sm_90 (as a thread-block cluster tier would)."""
    OP = "softmax"
    DTYPES = ("f32",)
    TIERS = (Tier(name="cluster", template="softmax_generic.cu.j2", params=(Param("cluster", "k", lambda d: (2, 4)),),
                  min_arch=90),
             Tier(name="generic", template="softmax_generic.cu.j2", params=(), generic=True))


def test_a_tier_that_needs_a_newer_arch_is_emitted_only_for_builds_that_list_one(tmp_path):
    of = lambda arch: [v.name for v in enumerate_op(_ClusterOp, arch, "full", ["f32"])]
    assert of("sm_80") == ["softmax_generic_f32"]
    assert of("sm_80,sm_86") == ["softmax_generic_f32"]
    assert of("sm_80,sm_90") == ["softmax_cluster_f32_k2", "softmax_cluster_f32_k4", "softmax_generic_f32"]
    assert of("sm_120") == of("sm_80,sm_90")
    # the record tells the runtime, which skips it on a device that runs older code
    variants = enumerate_op(_ClusterOp, "sm_80,sm_90", "full", ["f32"])
    render_all([softmax], {"softmax": variants}, tmp_path, "sm_80,sm_90", "full")
    assert "false, 90, &kgen::softmax::supports" in (tmp_path / "softmax_cluster_f32_k2.cu").read_text()
    assert "true, 0, &kgen::softmax::supports" in (tmp_path / "softmax_generic_f32.cu").read_text()
    with pytest.raises(ValueError, match="generic"):
        Tier(name="generic", template="t", params=(), generic=True, min_arch=90)


def test_the_registry_records_the_arch_list(tmp_path):
    ops = [softmax]
    by_op = {"softmax": enumerate_op(softmax, "sm_90", "tuned", ("f32",))}
    render_all(ops, by_op, tmp_path, "sm_120,sm_90,sm_100", "tuned")
    registry = (tmp_path / "registry.gen.cpp").read_text()
    assert 'kBuildArch = "sm_90,sm_100,sm_120";' in registry
    assert "kCodeArches[] = {90, 100, 120};" in registry
    assert "kCodeArchCount = 3;" in registry


def all_variants(level="default", arch="sm_90"):
    return [v for m in load_ops() for v in enumerate_op(m, arch, level, tuple(DTYPES))]


@pytest.mark.parametrize("size", [1, 4, 16, 64])
def test_bundles_hold_one_family_each_and_every_variant_once_in_order(size):
    variants = all_variants()
    made = bundles(variants, size)
    assert [v for _, members in made for v in members] == variants
    for name, members in made:
        op = members[0].op
        assert all(v.op == op for v in members)
        assert re.fullmatch(rf"bundle_{op}_\d{{2,}}\.cu", name)
        # filled up to the size in cost units; a variant costlier than the size stands alone
        assert len(members) == 1 or sum(v.tier.cost for v in members) <= size
    assert len({name for name, _ in made}) == len(made)
    # more units a bundle, fewer bundles
    assert len(made) >= len(bundles(variants, 2 * size))
    with pytest.raises(ValueError):
        bundles(variants, 0)


def test_bundles_are_what_the_build_compiles_and_include_their_variant_files(tmp_path):
    ops = load_ops()
    by_op = {m.OP: enumerate_op(m, "sm_90", "default", ("f32",)) for m in ops}
    variants = [v for m in ops for v in by_op[m.OP]]
    render_all(ops, by_op, tmp_path, "sm_90", "default", bundle_size=8)
    outputs = output_names(variants, 8)
    made = bundles(variants, 8)
    # what the build compiles first (bundles, then the registry), the params header last
    assert outputs[:len(made) + 1] == [n for n, _ in made] + ["registry.gen.cpp"]
    assert outputs[-1] == "kgen_params.gen.hpp"
    assert sorted(outputs) == sorted(p.name for p in tmp_path.iterdir())
    for name, members in made:
        text = (tmp_path / name).read_text()
        assert re.findall(r'#include "([a-z0-9_]+)\.cu"', text) == [v.name for v in members]


def test_a_change_to_one_family_rewrites_only_its_bundles(tmp_path):
    ops = load_ops()
    by_op = {m.OP: enumerate_op(m, "sm_90", "default", ("f32", "f16")) for m in ops}
    render_all(ops, by_op, tmp_path, "sm_90", "default")
    # softmax loses variants (as a changed space or filter would): only its
    # bundles, and the registry, change
    by_op["softmax"] = [v for v in by_op["softmax"] if "_f16" not in v.name]
    written = render_all(ops, by_op, tmp_path, "sm_90", "default")
    ours = lambda n: re.fullmatch(r"bundle_softmax_\d\d\.cu", n)  # not softmax_backward's
    assert written and all(ours(n) or n == "registry.gen.cpp" for n in written)
    assert any(ours(n) for n in written)


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
    text = (tmp_path / "softmax_warp_f32_p4_c4_g32_r2_pad.cu").read_text()
    assert "launch_warp<float, 4, 4, 32, 2, true>" in text
    assert '"softmax_warp_f32_p4_c4_g32_r2_pad"' in text
    registry = (tmp_path / "registry.gen.cpp").read_text()
    for v in by_op["softmax"]:
        assert f"&v_{v.name}," in registry


def test_cli_list_matches_enumeration():
    out = subprocess.run([sys.executable, "-m", "generator", "--arch", "sm_90", "--level",
                          "default", "--list"], cwd=ROOT, capture_output=True, text=True, check=True)
    picked = tuning.winners(tuning.load_databases("sm_90"))
    assert out.stdout.split() == [v.name for m in load_ops()
                                  for v in enumerate_op(m, "sm_90", "default", tuple(DTYPES), None, picked)]
    assert "variants" in out.stderr
    bad = subprocess.run([sys.executable, "-m", "generator", "--dtypes", "f8", "--list"],
                         cwd=ROOT, capture_output=True, text=True)
    assert bad.returncode == 2 and "--dtypes" in bad.stderr


def test_tuning_winners_join_the_default_level_and_make_up_the_tuned_one():
    full = names("full")
    default = set(names("default"))
    extra = next(n for n in full if n not in default)  # a variant only the full level has
    picked = {extra, "softmax_no_such_variant"}
    with_winner = [v.name for v in enumerate_op(softmax, "sm_90", "default", ALL, None, picked)]
    assert set(with_winner) == default | {extra}
    assert with_winner == [n for n in full if n in default or n == extra]  # generator order kept
    tuned = [v.name for v in enumerate_op(softmax, "sm_90", "tuned", ALL, None, picked)]
    assert tuned == [n for n in full if "_generic_" in n or n == extra]
    assert [v.name for v in enumerate_op(softmax, "sm_90", "tuned", ALL)] == \
        [f"softmax_generic_{d}" for d in ALL]
    # the kernel filter applies to winners too
    assert extra not in [v.name for v in enumerate_op(softmax, "sm_90", "default", ALL, r"^nothing$", picked)]


def test_winners_outside_the_default_set_are_not_ranked_by_the_heuristic():
    # a database's winner joins the default level unranked (taken through
    # its entry or by name); the default level's own variants are ranked at
    # the default and full levels, the rest of the full level is not; a
    # tuned-level build ranks all it holds
    full = enumerate_op(softmax, "sm_90", "full", ALL)
    default = {v.name for v in enumerate_op(softmax, "sm_90", "default", ALL)}
    extra = next(v.name for v in full if v.name not in default)
    with_winner = {v.name: v.ranked for v in enumerate_op(softmax, "sm_90", "default", ALL, None, {extra})}
    assert with_winner.pop(extra) is False
    assert all(with_winner.values())
    assert {v.name for v in full if v.ranked} == default
    tuned = enumerate_op(softmax, "sm_90", "tuned", ALL, None, {extra})
    assert [(v.name, v.ranked) for v in tuned if not v.generic] == [(extra, True)]


def test_the_default_keep_list_names_variants_of_the_full_level_the_predicates_leave_out():
    keep = core.default_keep()
    assert keep, "generator/default_keep.txt lists no variant"
    full, by_predicate = set(), set()
    for op in load_ops():
        for v in enumerate_op(op, "sm_90", "full", op.DTYPES):
            full.add(v.name)
            if v.tier.generic or v.tier.in_default(v.dtype, v.param_dict):
                by_predicate.add(v.name)
    assert sorted(keep - full) == []  # no stale or misspelt name
    assert sorted(keep & by_predicate) == []  # none the predicates keep anyway


def test_tuning_databases_are_read_filtered_and_embedded(tmp_path, monkeypatch, capsys):
    import json
    good = {"format": 1, "gpu": "G", "sm_count": 1, "arch": "sm_90", "generator_hash": "h",
            "library_version": "0", "entries": [
                {"family": "softmax", "bucket": "row_c10", "variant": "softmax_generic_f32"},
                {"family": "softmax", "bucket": "row_c11", "variant": "softmax_warp_f32_gone"}]}
    (tmp_path / "a_1.json").write_text(json.dumps(good))
    (tmp_path / "b_1.json").write_text(json.dumps(dict(good, arch="sm_80")))
    (tmp_path / "c_1.json").write_text("{ not json")
    monkeypatch.setattr(tuning, "DB_DIR", tmp_path)
    dbs = tuning.load_databases("sm_90")
    assert "skipping tuning database c_1.json" in capsys.readouterr().err
    assert [db["arch"] for db in dbs] == ["sm_90"]
    assert tuning.winners(dbs) == {"softmax_generic_f32", "softmax_warp_f32_gone"}
    [text] = tuning.embedded_texts(dbs, {"softmax_generic_f32"})
    assert [e["variant"] for e in json.loads(text)["entries"]] == ["softmax_generic_f32"]
    assert ")kgendb" not in text


def reduce_variants(level):
    return enumerate_op(reduce, "sm_90", level, tuple(DTYPES))


def test_reduce_levels_names_and_constraints():
    default = {v.name for v in reduce_variants("default")}
    full = reduce_variants("full")
    assert default < {v.name for v in full}
    for d in reduce.DTYPES:
        assert f"reduce_generic_{d}" in default
    assert "i32" in reduce.DTYPES and "i32" not in softmax.DTYPES
    for v in full:
        p = v.param_dict
        assert p["pack_size"] * v.dtype.size <= 16
        assert v.name.startswith(f"reduce_{v.tier.name}_{v.dtype.short}")
        parts = v.name.split("_")
        if v.tier.name == "block":
            assert parts[-1] == reduce.TREES[p["tree"]]
        if v.tier.name == "col":
            assert p["block_size"] % p["lanes"] == 0 and p["block_size"] // p["lanes"] >= 2
        if v.tier.name in ("thread", "warp"):
            assert p["block_size"] == 128 and 32 % p["group_width"] == 0
    # every tree of the block tier is compiled at the full level, for the comparison
    assert {v.param_dict["tree"] for v in full if v.tier.name == "block"} == {0, 1, 2}


def test_reduce_templates_instantiate_the_launchers(tmp_path):
    ops = [reduce]
    by_op = {"reduce": [v for v in reduce_variants("full")
                        if v.name in ("reduce_split_f32_b512_p4_u4", "reduce_col_f16_l8_b256_p8_u4",
                                      "reduce_block_i32_b256_p4_u4_unroll", "reduce_generic_bf16")]}
    assert len(by_op["reduce"]) == 4
    render_all(ops, by_op, tmp_path, "sm_90", "full")
    read = lambda n: (tmp_path / f"{n}.cu").read_text()
    assert "launch_block<float, 4, 4, 512, 0, true>" in read("reduce_split_f32_b512_p4_u4")
    assert "launch_col<__half, 8, 4, 8, 256>" in read("reduce_col_f16_l8_b256_p8_u4")
    assert "launch_block<int, 4, 4, 256, 2, false>" in read("reduce_block_i32_b256_p4_u4_unroll")
    assert "launch_generic<__nv_bfloat16>" in read("reduce_generic_bf16")


def test_permute_space_is_per_movement_size_and_ignores_the_dtype_filter():
    for level in ("default", "full"):
        vs = enumerate_op(permute, "sm_90", level, ["f32"])  # a dtype filter does not apply
        for m in ("b1", "b2", "b4", "b8", "b16"):
            assert f"permute_generic_{m}" in [v.name for v in vs]
        for v in vs:
            p = v.param_dict
            assert v.name.split("_")[:3] == ["permute", v.tier.name, v.dtype.short]
            if v.tier.name == "tile":
                assert p["pack"] * v.dtype.size <= 16
                assert p["ti"] % p["pack"] == 0 and p["tj"] % p["pack"] == 0
                assert p["ti"] * p["tj"] * v.dtype.size <= 32 * 1024  # static shared memory
                assert (p["ti"] // p["pack"]) * (p["tj"] // p["pack"]) >= permute.BLOCK
            if v.tier.name == "elem":
                assert 2 <= p["rank"] <= 8
    default = {v.name for v in enumerate_op(permute, "sm_90", "default", [])}
    full = {v.name for v in enumerate_op(permute, "sm_90", "full", [])}
    assert default < full


@pytest.mark.parametrize("op", [expand, where])
def test_broadcast_space_packs_ranks_and_index(op):
    units = {"expand": ("b1", "b2", "b4", "b8", "b16"), "where": ("b1", "b2", "b4", "b8")}[op.OP]
    for level in ("default", "full"):
        vs = enumerate_op(op, "sm_90", level, ["f32"])  # a dtype filter does not apply
        assert sorted({v.dtype.short for v in vs}) == sorted(units)
        for m in units:
            assert f"{op.OP}_generic_{m}" in [v.name for v in vs]
        for v in vs:
            p = v.param_dict
            assert p["pack"] * v.dtype.size <= 16  # one vector access per operand
            if v.tier.name == "elem":
                assert 2 <= p["rank"] <= 8 and p["index"] in (0, 1)
                assert v.name == f"{op.OP}_elem_{v.dtype.short}_r{p['rank']}_v{p['pack']}_{('i32', 'i64')[p['index']]}"
            if v.tier.name == "flat":
                assert p["rank"] == 1
            if v.generic:
                assert (p["rank"], p["pack"], p["index"]) == (0, 1, 1)
        if level == "default":  # 16-byte packs and pack 1 at every unit size, ranks 2-4
            for m in units:
                size = {"b1": 1, "b2": 2, "b4": 4, "b8": 8, "b16": 16}[m]
                for r in (2, 3, 4):
                    assert f"{op.OP}_elem_{m}_r{r}_v{16 // size}_i32" in [v.name for v in vs]
    default = {v.name for v in enumerate_op(op, "sm_90", "default", [])}
    full = {v.name for v in enumerate_op(op, "sm_90", "full", [])}
    assert default < full
    assert any(n.endswith("_i64") for n in full) and any("_r8_" in n for n in full)


def test_broadcast_template_instantiates_the_launcher(tmp_path):
    vs = [v for op in (expand, where) for v in enumerate_op(op, "sm_90", "default", [])]
    render_all([expand, where], {"expand": [v for v in vs if v.op == "expand"],
                                 "where": [v for v in vs if v.op == "where"]}, tmp_path, "sm_90", "default")
    text = (tmp_path / "where_elem_b4_r3_v4_i32.cu").read_text()
    assert "launch<kgen::device::broadcast::Op::where, uint32_t, 3, 4, false>" in text
    text = (tmp_path / "expand_generic_b16.cu").read_text()
    assert "launch<kgen::device::broadcast::Op::expand, uint4, 0, 1, true>" in text
