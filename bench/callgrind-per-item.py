#!/usr/bin/env python3
"""Instructions per item from two callgrind runs of one in-process bench at two item counts (N2 > N1):
(I(N2) - I(N1)) / (N2 - N1), so start-up cancels out. Then, for each PART given as LABEL=REGEX, the inclusive
instructions per item of the largest function whose demangled name matches REGEX (a function is listed under several
names: its file, its binary, specializations); a part with no match is said to be inlined, not printed as 0.

    callgrind-per-item.py UNIT ANNOTATE1 N1 ANNOTATE2 N2 [LABEL=REGEX ...]

ANNOTATE files are `callgrind_annotate --inclusive=yes --auto=no --threshold=100 | swift demangle --simplified`."""
import re
import sys


def read(path):
    """The program total and each function's inclusive count (the largest entry of a name: a function listed
    under several files or recursion levels is counted once)."""
    total, functions = None, {}
    for line in open(path, errors="replace"):
        if "Auto-annotated source" in line:
            break  # per-line call counts follow, with the call count in the name
        m = re.match(r"\s*([\d,]+)\s+(?:\([^)]*\)\s+)?(.*)", line)
        if not m:
            continue
        value, name = int(m.group(1).replace(",", "")), m.group(2)
        if "PROGRAM TOTALS" in name:
            total = value
            continue
        name = re.sub(r"^[^:]*:", "", name.split(" [")[0], count=1)
        functions[name] = max(functions.get(name, 0), value)
    return total, functions


def main(argv):
    if len(argv) < 6:
        sys.exit(__doc__)
    unit = argv[1]
    t1, f1 = read(argv[2])
    n1 = int(argv[3])
    t2, f2 = read(argv[4])
    n2 = int(argv[5])
    print(f"  {(t2 - t1) / (n2 - n1):,.0f} instructions per {unit} (callgrind, ({t2:,} - {t1:,}) / ({n2} - {n1}))")
    for part in argv[6:]:
        label, _, pattern = part.partition("=")
        matches = [name for name in f2 if re.search(pattern, name)]
        if not matches:
            print(f"  (inlined or not called): {label}")
            continue
        per = max(f2[name] - f1.get(name, 0) for name in matches) / (n2 - n1)
        print(f"  {per:,.0f} per {unit}: {label}")


if __name__ == "__main__":
    main(sys.argv)
