"""Counts test cases across a meson test log: Catch2 and pytest report
their own cases; any other test counts as one.  Prints
'N passed, N failed, N skipped' alone on the last line; exits 1 on failures."""
import argparse
import json
import re

ap = argparse.ArgumentParser()
ap.add_argument("log")
ap.add_argument("--extra-passed", type=int, default=0)
ap.add_argument("--extra-failed", type=int, default=0)
args = ap.parse_args()

passed, failed, skipped = args.extra_passed, args.extra_failed, 0
with open(args.log) as f:
    for line in f:
        t = json.loads(line)
        out = t.get("stdout", "") or ""
        result = t["result"]
        if result == "SKIP":
            skipped += 1
            continue
        m = re.search(r"All tests passed \(\d+ assertions? in (\d+) test cases?\)", out)
        c = re.search(r"test cases:\s*(\d+)\s*\|\s*(\d+) passed\s*\|\s*(\d+) failed", out)
        p = re.search(r"(?:(\d+) failed, )?(\d+) passed(?:, (\d+) skipped)?", out) if "pytest" in " ".join(t.get("command", [])) else None
        if m and result == "OK":
            passed += int(m.group(1))
        elif c:
            passed += int(c.group(2))
            failed += int(c.group(3))
        elif p:
            passed += int(p.group(2))
            failed += int(p.group(1) or 0)
            skipped += int(p.group(3) or 0)
        elif result == "OK":
            passed += 1
        else:
            failed += 1
        if result not in ("OK", "SKIP") and not (c and int(c.group(3))) and not (p and p.group(1)):
            failed += 1  # crashed or timed out outside any counted case
print(f"{passed} passed, {failed} failed, {skipped} skipped")
raise SystemExit(1 if failed else 0)
