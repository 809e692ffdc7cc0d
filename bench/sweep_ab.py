"""Two runs of bench/sweep.py with one seed, side by side: the tree before a
change (BASE) and after it (NEW), run on the same GPU.  Per family: how
many problems changed variant, the time geomean new/base over them and
over the problems that kept theirs (the drift between the two runs, which
is the noise this pair has to beat), and the changed problems, the most
slowed first; each side's geomean against torch.  A change of selection
or of a database shows up as the changed rows; a kernel change as the
unchanged rows' geomean and (--kept N) the kept problems that moved most;
--below lists the new run's problems below 0.95x torch, the worst first
(what a change has left to do).

    python3 bench/sweep_ab.py BASE/<gpu>_sweep.json NEW/<gpu>_sweep.json [--all] [--family F] [--kept N] [--below]

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


def against_torch(entries, side: int) -> str:
    """Geomean of torch/kgen over the entries on one side (2: base, 3: new),
    and how many fall below 0.95x torch."""
    v = [e[side]["torch_us"] / e[side]["kgen_us"] for e in entries if e[side].get("torch_us", 0) > 0]
    return f"{geomean(v):.3f}x torch, {sum(x < 0.95 for x in v)} below 0.95x" if v else "no torch times"


def report(base: dict, new: dict, families=None, show_all=False, extremes=0, below=False) -> str:
    lines = [f"base: {base['meta'].get('commit', '?')}  new: {new['meta'].get('commit', '?')}  "
             f"({new['meta'].get('gpu', '?')}, seed {new['meta'].get('seed', '?')})"]
    for fam, v in compare(base, new).items():
        if families and fam not in families:
            continue
        changed, kept = v["changed"], v["kept"]
        lines.append(f"{fam}: {len(changed)} of {len(changed) + len(kept)} changed variant, new/base geomean "
                     f"{geomean(e[0] for e in changed):.3f} on them, {geomean(e[0] for e in kept):.3f} on the rest")
        shown = changed if show_all else [e for e in changed if e[0] > 1.05 or e[0] < 0.95]
        everything = changed + kept
        lines.append(f"  base {against_torch(everything, 2)}; new {against_torch(everything, 3)}")
        def line(ratio, key, b, n):
            lines.append(f"  {ratio:5.2f}  {key[1]:48} {b['kgen_us']:8.1f} -> {n['kgen_us']:8.1f} us  "
                         f"(torch {n.get('torch_us', float('nan')):.1f})  {b.get('selected')} -> {n.get('selected')}")
        for e in shown:
            line(*e)
        if extremes and kept:
            # a kernel change moves the problems that kept their variant: the
            # most sped up and the most slowed of them
            by = sorted(kept, key=lambda e: e[0])
            lines.append(f"  kept, the {min(extremes, len(by))} most sped up and most slowed:")
            for e in by[:extremes] + [e for e in by[-extremes:] if e not in by[:extremes]]:
                line(*e)
        if below:
            slow = sorted(((e[3]["torch_us"] / e[3]["kgen_us"], e[1][1], e[3]) for e in everything
                           if e[3].get("torch_us", 0) > 0 and e[3]["torch_us"] < 0.95 * e[3]["kgen_us"]),
                          key=lambda s: s[:2])
            lines.append(f"  new, below 0.95x torch: {len(slow)}")
            for ratio, text, n in slow:
                lines.append(f"  {ratio:5.2f}x {text:48} {n['kgen_us']:8.1f} us  (torch {n['torch_us']:.1f})  "
                             f"{n.get('selected')}")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("base", type=Path)
    ap.add_argument("new", type=Path)
    ap.add_argument("--all", action="store_true", help="every changed problem (default: those outside 0.95-1.05x)")
    ap.add_argument("--family", action="append", help="only this family (repeatable)")
    ap.add_argument("--kept", type=int, default=0, metavar="N",
                    help="also the N most sped up and N most slowed problems that kept their variant")
    ap.add_argument("--below", action="store_true", help="the new run's problems below 0.95x torch, the worst first")
    args = ap.parse_args(argv)
    base, new = load(args.base), load(args.new)
    for fact in ("seed", "gpu"):
        if base["meta"].get(fact) != new["meta"].get(fact):
            print(f"the runs differ in {fact}: {base['meta'].get(fact)} and {new['meta'].get(fact)}", file=sys.stderr)
            return 1
    if not timed(base["rows"]).keys() & timed(new["rows"]).keys():
        print("the runs share no timed problem", file=sys.stderr)
        return 1
    sys.stdout.write(report(base, new, args.family, args.all, args.kept, args.below))
    return 0


if __name__ == "__main__":
    sys.exit(main())
