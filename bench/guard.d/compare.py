#!/usr/bin/env python3
"""Compares bench/guard's counts with the committed baseline; exits 1 when one grew past its tolerance.

    compare.py BASELINE CURRENT            # prints the table; exit 0 = within tolerance, 1 = not
    compare.py BASELINE CURRENT --update   # writes CURRENT's values into BASELINE (tolerances kept)

CURRENT (bench/out/guard.json): {"metrics": {name: number, ...}, "measured": {...}}.
BASELINE (bench/baseline.json): {"metrics": {name: {"value", "tolerance", "unit", "about"}, ...}, "measured": {...}}.
A metric fails when now > value × (1 + tolerance). A metric of the baseline that was not measured, or a measured
metric the baseline lacks, fails too (the metric set changes only together with the baseline). Getting cheaper
never fails, but past the tolerance the table says so: update the baseline, or a later regression hides in the gap.
Python 3 standard library only.
"""
import json
import sys

DEFAULT_TOLERANCE = 0.10


def fmt(x) -> str:
    if x is None:
        return "—"
    if float(x).is_integer() and abs(x) >= 100:
        return f"{int(x):,}"
    return f"{x:,.2f}"


def main() -> int:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    update = "--update" in sys.argv[1:]
    if len(args) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    baseline_path, current_path = args
    with open(current_path) as f:
        current = json.load(f)
    now = current.get("metrics", {})
    try:
        with open(baseline_path) as f:
            baseline = json.load(f)
    except FileNotFoundError:
        if not update:
            print(f"guard: no baseline at {baseline_path}: run bench/guard --update and commit it", file=sys.stderr)
            return 1
        baseline = {"metrics": {}}
    base = baseline.get("metrics", {})

    then, counts = baseline.get("measured", {}).get("counts"), current.get("measured", {}).get("counts")
    if then and counts and then != counts:
        print(f"guard: note: request counts differ from the baseline's ({counts} vs {then})")
    names = list(base) + [n for n in now if n not in base]
    width = max([len(n) for n in names] + [6])
    print(f"{'metric':<{width}}  {'baseline':>12}  {'now':>12}  {'change':>8}  verdict")
    failed = []
    for name in names:
        entry = base.get(name)
        value = now.get(name)
        if entry is None:
            verdict, change = "NEW: not in the baseline (bench/guard --update)", None
            failed.append(name)
        elif value is None:
            verdict, change = "MISSING: not measured", None
            failed.append(name)
        else:
            b, tol = entry["value"], entry.get("tolerance", DEFAULT_TOLERANCE)
            change = (value - b) / b if b else (0.0 if value == 0 else float("inf"))
            if value > b * (1 + tol):
                verdict = f"FAIL: grew more than {tol:.0%}"
                failed.append(name)
            elif value < b * (1 - tol):
                verdict = f"ok, cheaper by more than {tol:.0%}: update the baseline"
            else:
                verdict = "ok"
        b_text = fmt(entry["value"]) if entry else "—"
        c_text = "—" if change is None else f"{change:+.1%}"
        print(f"{name:<{width}}  {b_text:>12}  {fmt(value):>12}  {c_text:>8}  {verdict}")
    if update:
        metrics = {}
        for name, value in now.items():
            if value is None:
                print(f"guard: {name} was not measured; baseline not written", file=sys.stderr)
                return 1
            old = base.get(name, {})
            metrics[name] = {
                "value": value,
                "tolerance": old.get("tolerance", DEFAULT_TOLERANCE),
                "unit": current.get("units", {}).get(name, old.get("unit", "")),
                "about": current.get("about", {}).get(name, old.get("about", "")),
            }
        for name in base:
            if name not in now:
                print(f"guard: dropping {name} from the baseline (no longer measured)")
        baseline = {
            "about": "bench/guard's counts of work per request; CI fails when one grows past its tolerance. "
                     "Update with `bench/guard --update` in the commit that changes the cost, and say why in "
                     "bench/README.md (Guard baseline log).",
            "measured": current.get("measured", {}),
            "metrics": metrics,
        }
        with open(baseline_path, "w") as f:
            json.dump(baseline, f, indent=2)
            f.write("\n")
        print(f"guard: wrote {baseline_path}")
        return 0
    if failed:
        print(f"guard: FAILED ({', '.join(failed)}). A deliberate change updates bench/baseline.json in the same "
              "commit (bench/guard --update) with a line in bench/README.md saying why.")
        return 1
    print("guard: every count within its tolerance of bench/baseline.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
