#!/usr/bin/env python3
"""Per-request profile from two callgrind files of bench/callgrind: (function Ir after W+N - after W) / N.

    per-request.py WARM.callgrind FULL.callgrind N [TOP]
"""
import re
import subprocess
import sys


def functions(path):
    text = subprocess.run(["callgrind_annotate", "--threshold=100", "--inclusive=no", "--auto=no", path],
                          capture_output=True, text=True, check=True).stdout
    costs = {}
    for line in text.splitlines():
        m = re.match(r"^\s*([\d,]+)\s+\([^)]*\)\s+(\S.*)$", line)
        if m and "PROGRAM TOTALS" not in line:
            name = re.sub(r" \[[^\]]*\]$", "", m.group(2))
            costs[name] = costs.get(name, 0) + int(m.group(1).replace(",", ""))
    return costs


warm, full, n = functions(sys.argv[1]), functions(sys.argv[2]), int(sys.argv[3])
top = int(sys.argv[4]) if len(sys.argv) > 4 else 40
diff = {k: (full.get(k, 0) - warm.get(k, 0)) / n for k in set(full) | set(warm)}
total = sum(diff.values())
print(f"{total:10.0f} instructions/request (sum over functions)")
for name, cost in sorted(diff.items(), key=lambda kv: -kv[1])[:top]:
    print(f"{cost:10.0f} {100 * cost / total:5.1f}%  {name[:170]}")
