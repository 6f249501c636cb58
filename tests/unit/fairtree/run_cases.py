#!/usr/bin/python3
"""Golden cases for the fair-share calculator (`muster-sim --fairshare`).

usage: run_cases.py CALCULATOR CASES_DIR [ARG...]

CALCULATOR is run as `CALCULATOR [ARG...] TREE.json` (the test driver, or
muster-sim with ARG = --fairshare).

CASES_DIR/NAME.json           an input tree
CASES_DIR/NAME.expected.json  its expected output: same associations in the
                              same order, same keys; numbers within 1e-12
                              (relative), "inf" and names exact
CASES_DIR/NAME.txt            the hand derivation of the expected values
CASES_DIR/bad/NAME.json       an input that must be refused: exit status 1,
                              nothing on stdout, one stderr line starting
                              "muster-sim: " and containing the text of
CASES_DIR/bad/NAME.err        (its first line)
"""
import json
import math
import os
import subprocess
import sys


def same(a, b, path):
    if isinstance(a, bool) or isinstance(b, bool):
        if a is not b:
            return f"{path}: {a!r} != {b!r}"
        return None
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        if not math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-15):
            return f"{path}: {a!r} != expected {b!r}"
        return None
    if type(a) is not type(b):
        return f"{path}: type {type(a).__name__} != expected {type(b).__name__}"
    if isinstance(a, dict):
        if list(a.keys()) != list(b.keys()):
            return f"{path}: keys {list(a.keys())} != expected {list(b.keys())}"
        for k in a:
            err = same(a[k], b[k], f"{path}.{k}")
            if err:
                return err
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return f"{path}: {len(a)} entries != expected {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            err = same(x, y, f"{path}[{i}]")
            if err:
                return err
        return None
    if a != b:
        return f"{path}: {a!r} != expected {b!r}"
    return None


def run(cmd, stdin=None):
    return subprocess.run(cmd, input=stdin, capture_output=True, timeout=60)


def main():
    calc, cases = sys.argv[1], sys.argv[2]
    extra = sys.argv[3:]
    failures = 0
    good = sorted(f for f in os.listdir(cases)
                  if f.endswith(".json") and not f.endswith(".expected.json"))
    bad = sorted(f for f in os.listdir(os.path.join(cases, "bad")) if f.endswith(".json"))
    if not good or not bad:
        print("no cases found", file=sys.stderr)
        return 1

    for name in good:
        path = os.path.join(cases, name)
        expected_path = path[:-5] + ".expected.json"
        if not os.path.exists(path[:-5] + ".txt"):
            print(f"FAIL {name}: no derivation {name[:-5]}.txt")
            failures += 1
            continue
        with open(expected_path) as f:
            expected = json.load(f)
        p = run([calc, *extra, path])
        err = None
        if p.returncode != 0 or p.stderr:
            err = f"exit {p.returncode}, stderr {p.stderr.decode(errors='replace')!r}"
        elif not p.stdout.endswith(b"\n"):
            err = "output does not end with a newline"
        else:
            try:
                err = same(json.loads(p.stdout), expected, "$")
            except json.JSONDecodeError as e:
                err = f"output is not JSON: {e}"
        if err is None:
            # The same tree through standard input gives the same bytes.
            with open(path, "rb") as f:
                q = run([calc, *extra, "-"], stdin=f.read())
            if q.returncode != 0 or q.stdout != p.stdout:
                err = "reading from stdin ('-') gave a different result"
        print(("FAIL " if err else "ok   ") + name + (f": {err}" if err else ""))
        failures += err is not None

    for name in bad:
        path = os.path.join(cases, "bad", name)
        with open(path[:-5] + ".err") as f:
            want = f.readline().rstrip("\n")
        p = run([calc, *extra, path])
        out = p.stderr.decode(errors="replace")
        err = None
        if p.returncode != 1:
            err = f"exit {p.returncode} (want 1; negative = killed by a signal)"
        elif p.stdout:
            err = f"wrote to stdout: {p.stdout[:200]!r}"
        elif not out.startswith("muster-sim: ") or out.count("\n") != 1:
            err = f"stderr is not one 'muster-sim: ' line: {out!r}"
        elif want not in out:
            err = f"stderr {out!r} does not contain {want!r}"
        print(("FAIL " if err else "ok   ") + "bad/" + name + (f": {err}" if err else ""))
        failures += err is not None

    p = run([calc, *extra, os.path.join(cases, "does-not-exist.json")])
    if p.returncode != 1 or b"cannot open" not in p.stderr:
        print(f"FAIL missing file: exit {p.returncode}, stderr {p.stderr!r}")
        failures += 1
    else:
        print("ok   missing file")

    print(f"{failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
