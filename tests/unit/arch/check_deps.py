#!/usr/bin/python3
"""The dependency table of docs/architecture.md against the build.

Reads the table (part -> targets, may link), then every add_library /
add_executable / target_link_libraries of the CMake files outside tests/ and
bench/, and fails when
  - a project target is in no row of the table (a new part needs its row),
  - a target links a target of a part its row does not allow,
  - muster-api reaches the scheduler part, the core reaches any part, or the
    store reaches anything but common, directly or transitively,
  - a header one part owns (libpq-fe.h, h2o, grpc) is included elsewhere.
usage: check_deps.py SOURCE_DIR
"""
import os
import re
import sys

SKIP_DIRS = {"build", "tests", "bench", ".git", "node_modules", "docker"}


def cmake_files(root):
    for d, dirs, files in os.walk(root):
        dirs[:] = [x for x in dirs if x not in SKIP_DIRS and not x.startswith("build")]
        for f in files:
            if f == "CMakeLists.txt" or f.endswith(".cmake"):
                yield os.path.join(d, f)


def strip_comments(text):
    return "\n".join(line.split("#", 1)[0] for line in text.split("\n"))


def parse_cmake(root):
    targets, links = set(), {}
    for path in cmake_files(root):
        text = strip_comments(open(path).read())
        for m in re.finditer(r"\badd_(?:library|executable)\s*\(\s*([A-Za-z0-9_.-]+)", text):
            targets.add(m.group(1))
        for m in re.finditer(r"\btarget_link_libraries\s*\(([^)]*)\)", text, re.S):
            words = m.group(1).split()
            links.setdefault(words[0], set()).update(
                w for w in words[1:] if w not in ("PUBLIC", "PRIVATE", "INTERFACE"))
    return targets, links


def parse_table(root):
    text = open(os.path.join(root, "docs", "architecture.md")).read()
    sec = text.split("## Dependency table", 1)[1].split("\n## ", 1)[0]
    part_of, allowed = {}, {}
    for line in sec.split("\n"):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 4 or cells[0] in ("part", "") or set(cells[0]) <= set("-"):
            continue
        part = cells[0]
        for t in re.findall(r"`([^`]+)`", cells[1]):
            part_of[t] = part
        allowed[part] = {p.strip() for p in cells[3].split(",") if p.strip() not in ("", "—", "-")}
    return part_of, allowed


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.dirname(os.path.abspath(__file__)))))
    targets, links = parse_cmake(root)
    part_of, allowed = parse_table(root)
    errors = []
    if not part_of or "plan" not in allowed:
        errors.append("docs/architecture.md: no dependency table found")
    for t in sorted(targets):
        if t not in part_of:
            errors.append("target %s is in no row of docs/architecture.md's dependency table" % t)
    for p, ok in allowed.items():
        for q in ok:
            if q not in allowed:
                errors.append("row %s may link %s, which is no part of the table" % (p, q))
    edges = {a: {b for b in bs if b in targets} for a, bs in links.items() if a in targets}
    for a in sorted(edges):
        for b in sorted(edges[a]):
            pa, pb = part_of.get(a), part_of.get(b)
            if pa and pb and pa != pb and pb not in allowed.get(pa, ()):
                errors.append("%s (%s) links %s (%s): the table does not allow %s -> %s"
                              % (a, pa, b, pb, pa, pb))

    def reach(t):
        seen, todo = set(), [t]
        while todo:
            for b in edges.get(todo.pop(), ()):
                if b not in seen:
                    seen.add(b)
                    todo.append(b)
        return {part_of.get(x, x) for x in seen}

    rules = [("muster-api", lambda ps: "scheduler" not in ps, "reaches the scheduler part"),
             ("muster_sched", lambda ps: not ps, "reaches another part"),
             ("muster_store", lambda ps: ps <= {"common"}, "reaches more than common")]
    for t, ok, what in rules:
        if t not in targets:
            errors.append("%s: no such target (the rule cannot be checked)" % t)
        elif not ok(reach(t)):
            errors.append("%s %s: %s" % (t, what, sorted(reach(t))))

    owned = [(re.compile(r'#\s*include\s*[<"]libpq-fe\.h[>"]'), ("store/",), "libpq-fe.h"),
             (re.compile(r'#\s*include\s*[<"]h2o[./]'), ("api/",), "h2o"),
             (re.compile(r'#\s*include\s*[<"]grpc/'), ("api/", "agent/"), "grpc")]
    nfiles = 0
    for d, dirs, files in os.walk(root):
        dirs[:] = [x for x in dirs if x not in SKIP_DIRS and not x.startswith("build")]
        for f in files:
            if not f.endswith((".c", ".h")):
                continue
            path = os.path.join(d, f)
            rel = os.path.relpath(path, root)
            text = open(path, errors="replace").read()
            nfiles += 1
            for rx, homes, name in owned:
                if rx.search(text) and not rel.startswith(homes):
                    errors.append("%s includes %s (only %s may)" % (rel, name, ", ".join(homes)))
    for e in errors:
        print("FAIL:", e)
    print("%d targets, %d link lines, %d sources checked; %d problem(s)"
          % (len(targets), sum(len(v) for v in edges.values()), nfiles, len(errors)))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
