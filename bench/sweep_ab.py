"""Two runs of bench/sweep.py with one seed, side by side: the tree before a
change (BASE) and after it (NEW), run on the same GPU.  Per family: how
many problems changed variant, the time geomean new/base over them and
over the problems that kept theirs (the drift between the two runs, which
is the noise this pair has to beat), and the changed problems, the most
slowed first.  A change of selection or of a database shows up as the
changed rows; a kernel change as the unchanged rows' geomean.

    python3 bench/sweep_ab.py BASE/<gpu>_sweep.json NEW/<gpu>_sweep.json [--all] [--family F]

Exits 1 when the two runs do not share a seed, a GPU or any problem.
"""
import argparse
import json
import math
import sys
from pathlib import Path


def load(path: Path) -> dict:
    return json.loads(Path(path).read_text())


def timed(rows) -> dict:
    """(family, problem text) -> row, for the rows kgen ran and timed."""
    return {(r["family"], r["text"]): r for r in rows if r.get("ok") and r.get("kgen_us", 0) > 0}


def geomean(values) -> float:
    values = list(values)
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def compare(base: dict, new: dict) -> dict:
    """Per family: the changed and kept problems as (new/base time, key, base
    row, new row), the changed ones sorted the most slowed first."""
    b, n = timed(base["rows"]), timed(new["rows"])
    out = {}
    for key in sorted(b.keys() & n.keys()):
        fam = out.setdefault(key[0], dict(changed=[], kept=[]))
        entry = (n[key]["kgen_us"] / b[key]["kgen_us"], key, b[key], n[key])
        fam["changed" if b[key].get("selected") != n[key].get("selected") else "kept"].append(entry)
    for fam in out.values():
        fam["changed"].sort(key=lambda e: -e[0])
    return out


def report(base: dict, new: dict, families=None, show_all=False) -> str:
    lines = [f"base: {base['meta'].get('commit', '?')}  new: {new['meta'].get('commit', '?')}  "
             f"({new['meta'].get('gpu', '?')}, seed {new['meta'].get('seed', '?')})"]
    for fam, v in compare(base, new).items():
        if families and fam not in families:
            continue
        changed, kept = v["changed"], v["kept"]
        lines.append(f"{fam}: {len(changed)} of {len(changed) + len(kept)} changed variant, new/base geomean "
                     f"{geomean(e[0] for e in changed):.3f} on them, {geomean(e[0] for e in kept):.3f} on the rest")
        shown = changed if show_all else [e for e in changed if e[0] > 1.05 or e[0] < 0.95]
        for ratio, key, b, n in shown:
            lines.append(f"  {ratio:5.2f}  {key[1]:48} {b['kgen_us']:8.1f} -> {n['kgen_us']:8.1f} us  "
                         f"(torch {n.get('torch_us', float('nan')):.1f})  {b.get('selected')} -> {n.get('selected')}")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("base", type=Path)
    ap.add_argument("new", type=Path)
    ap.add_argument("--all", action="store_true", help="every changed problem (default: those outside 0.95-1.05x)")
    ap.add_argument("--family", action="append", help="only this family (repeatable)")
    args = ap.parse_args(argv)
    base, new = load(args.base), load(args.new)
    for fact in ("seed", "gpu"):
        if base["meta"].get(fact) != new["meta"].get(fact):
            print(f"the runs differ in {fact}: {base['meta'].get(fact)} and {new['meta'].get(fact)}", file=sys.stderr)
            return 1
    if not timed(base["rows"]).keys() & timed(new["rows"]).keys():
        print("the runs share no timed problem", file=sys.stderr)
        return 1
    sys.stdout.write(report(base, new, args.family, args.all))
    return 0


if __name__ == "__main__":
    sys.exit(main())
