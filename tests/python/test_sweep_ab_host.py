"""bench/sweep_ab.py on made-up sweeps (no GPU): changed and kept problems
apart, the most slowed first, and runs that cannot be compared refused."""
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import sweep_ab  # noqa: E402


def run(rows, seed=1, gpu="G", commit="c"):
    return dict(meta=dict(seed=seed, gpu=gpu, commit=commit), rows=rows)


def row(family, text, us, selected, ok=True):
    return dict(family=family, text=text, kgen_us=us, torch_us=2 * us, selected=selected, ok=ok)


BASE = run([row("reduce", "sum 100", 10.0, "a"), row("reduce", "sum 200", 10.0, "a"),
            row("reduce", "amax 300", 10.0, "b"), row("permute", "p 1", 4.0, "t"),
            row("reduce", "failed", 1.0, "a", ok=False)])
NEW = run([row("reduce", "sum 100", 20.0, "c"), row("reduce", "sum 200", 5.0, "d"),
           row("reduce", "amax 300", 11.0, "b"), row("permute", "p 1", 4.0, "t"),
           row("reduce", "failed", 1.0, "z")])


def test_changed_and_kept_problems_apart_the_most_slowed_first():
    c = sweep_ab.compare(BASE, NEW)
    assert [e[1][1] for e in c["reduce"]["changed"]] == ["sum 100", "sum 200"]
    assert [e[0] for e in c["reduce"]["changed"]] == [2.0, 0.5]
    assert [e[1][1] for e in c["reduce"]["kept"]] == ["amax 300"]
    assert c["permute"]["changed"] == []
    text = sweep_ab.report(BASE, NEW)
    assert "reduce: 2 of 3 changed variant, new/base geomean 1.000 on them, 1.100 on the rest" in text
    assert " 2.00  sum 100" in text and "a -> c" in text
    assert "failed" not in text


def test_runs_that_differ_in_seed_or_share_no_problem_are_refused(tmp_path, capsys):
    paths = []
    for name, data in (("b", BASE), ("n", run(NEW["rows"], seed=2)), ("e", run([row("x", "y", 1.0, "v")]))):
        paths.append(tmp_path / f"{name}.json")
        paths[-1].write_text(json.dumps(data))
    assert sweep_ab.main([str(paths[0]), str(paths[1])]) == 1
    assert "seed" in capsys.readouterr().err
    assert sweep_ab.main([str(paths[0]), str(paths[2])]) == 1
    assert "share no timed problem" in capsys.readouterr().err
    assert sweep_ab.main([str(paths[0]), str(paths[0]), "--family", "reduce"]) == 0
    assert "permute" not in capsys.readouterr().out


def test_kept_problems_that_moved_most_and_both_sides_against_torch():
    text = sweep_ab.report(BASE, NEW, extremes=1)
    assert "base 2.000x torch, 0 below 0.95x; new 2.000x torch, 0 below 0.95x" in text
    assert "kept, the 1 most sped up and most slowed:" in text
    assert " 1.10  amax 300" in text


def test_the_new_runs_problems_below_095x_torch_the_worst_first():
    slow = run([row("reduce", "sum 100", 20.0, "c"), row("reduce", "sum 200", 5.0, "d"),
                row("reduce", "amax 300", 11.0, "b"), row("permute", "p 1", 4.0, "t")])
    slow["rows"][0]["torch_us"] = 10.0  # 0.50x
    slow["rows"][2]["torch_us"] = 10.0  # 0.91x
    text = sweep_ab.report(BASE, slow, below=True)
    assert "new, below 0.95x torch: 2" in text
    assert text.index(" 0.50x sum 100") < text.index(" 0.91x amax 300")
    assert "sum 200" not in text.split("below 0.95x torch: 2")[1].split("permute")[0]
    assert "new, below 0.95x torch: 0" in text  # permute
    assert "new, below" not in sweep_ab.report(BASE, slow)  # only when asked
