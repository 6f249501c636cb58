#!/usr/bin/python3
"""The lists of common/lists.h against every other place that spells them:
the SQL CHECKs of jobs.state and runs.state (the last definition in
store/migrations), the OpenAPI enums, patterns and descriptions
(openapi/muster.yaml), the proto comments (api/proto/muster/v1/jobs.proto)
and docs/api.md. Fails naming each place that disagrees.
usage: check_lists.py SOURCE_DIR
"""
import os
import re
import sys

errors = []


def fail(fmt, *a):
    errors.append(fmt % a)


def xmacro(text, name):
    m = re.search(r"#define\s+%s\(X\)((?:[^\n]*\\\n)*[^\n]*)" % name, text)
    if not m:
        fail("common/lists.h: no %s", name)
        return []
    return re.findall(r"X\(([^,)]+)", m.group(1))


def limits(text):
    m = re.search(r"#define\s+MU_LIMITS\(X\)((?:[^\n]*\\\n)*[^\n]*)", text)
    return {n: int(v) for n, v in re.findall(r"X\((\w+),\s*(\d+)", m.group(1))} if m else {}


def sql_state_check(root, table):
    """The state list of the last CHECK on <table>.state in the migrations, in order."""
    last = None
    d = os.path.join(root, "store", "migrations")
    for f in sorted(os.listdir(d)):
        if not f.endswith(".sql"):
            continue
        text = open(os.path.join(d, f)).read()
        for m in re.finditer(r"CREATE TABLE %s \((.*?)\n\);" % table, text, re.S):
            c = re.search(r"\bstate\s+text[^,]*?CHECK \(state IN\s*\(([^)]*)\)", m.group(1), re.S)
            if c:
                last = (f, c.group(1))
        for m in re.finditer(r"ALTER TABLE %s\b[^;]*?CHECK \(state IN\s*\(([^)]*)\)" % table, text, re.S):
            last = (f, m.group(1))
    if not last:
        fail("store/migrations: no CHECK on %s.state", table)
        return None, []
    return last[0], re.findall(r"'([^']*)'", last[1])


def same(what, got, want):
    if got != want:
        fail("%s: %s, but common/lists.h says %s", what, got, want)


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.dirname(os.path.abspath(__file__)))))
    h = open(os.path.join(root, "common", "lists.h")).read()
    jobs, runs = xmacro(h, "MU_JOB_STATES"), xmacro(h, "MU_RUN_STATES")
    deps, ends = xmacro(h, "MU_DEP_TYPES"), xmacro(h, "MU_END_REASONS")
    lim = limits(h)
    dep_max = lim.get("DEPENDENCIES_MAX")
    if dep_max is None:
        fail("common/lists.h: no DEPENDENCIES_MAX in MU_LIMITS")

    for table, want in (("jobs", jobs), ("runs", runs)):
        f, got = sql_state_check(root, table)
        if f:
            same("store/migrations/%s: CHECK on %s.state" % (f, table), got, want)

    y = open(os.path.join(root, "openapi", "muster.yaml")).read()
    m = re.search(r"\n    JobState:\n      type: string\n      enum: \[([^\]]*)\]", y)
    same("openapi/muster.yaml: JobState enum", [s.strip() for s in m.group(1).split(",")] if m else None, jobs)
    alt = "|".join(jobs)
    if "pattern: '^(%s)(,(%s))*$'" % (alt, alt) not in y:
        fail("openapi/muster.yaml: the jobs list's state pattern is not ^(%s)(,(%s))*$", alt, alt)
    run_enums = [e for e in re.findall(r"enum: \[([^\]]*STOPPING[^\]]*)\]", y)]
    if not run_enums:
        fail("openapi/muster.yaml: no run state enum (with STOPPING)")
    for e in run_enums:
        same("openapi/muster.yaml: run state enum", [s.strip() for s in e.split(",")], runs)
    m = re.search(r"\n    Dependency:\n(?:      [^\n]*\n|        [^\n]*\n|          [^\n]*\n)*?          enum: \[([^\]]*)\]", y)
    same("openapi/muster.yaml: Dependency type enum", [s.strip() for s in m.group(1).split(",")] if m else None,
         deps)
    m = re.search(r"\n        dependencies:\n          type: array\n          maxItems: (\d+)", y)
    if not m:
        fail("openapi/muster.yaml: no maxItems on the job's dependencies")
    elif dep_max is not None and int(m.group(1)) != dep_max:
        fail("openapi/muster.yaml: dependencies maxItems %s, but DEPENDENCIES_MAX is %d", m.group(1), dep_max)
    m = re.search(r"\n        end_reason:\n          type: string\n          description: >-\n((?:            [^\n]*\n)*)", y)
    desc = m.group(1) if m else ""
    if not m:
        fail("openapi/muster.yaml: no job end_reason description")
    for r in ends:
        if "`%s`" % r not in desc:
            fail("openapi/muster.yaml: the job's end_reason description does not name `%s`", r)

    p = open(os.path.join(root, "api", "proto", "muster", "v1", "jobs.proto")).read()
    for what, want in (("job state", jobs), ("run state", runs)):
        if "// " + "|".join(want) not in p:
            fail("jobs.proto: no %s comment // %s", what, "|".join(want))
    if "// " + " | ".join(deps) not in p:
        fail("jobs.proto: no dependency type comment // %s", " | ".join(deps))

    a = open(os.path.join(root, "docs", "api.md")).read()
    if "`%s`" % "|".join(jobs) not in a:
        fail("docs/api.md: the job object's states are not `%s`", "|".join(jobs))
    m = re.search(r"\| `dependencies` \|[^\n]*≤ (\d+)", a)
    if not m:
        fail("docs/api.md: the dependencies row names no cap (≤ N)")
    elif dep_max is not None and int(m.group(1)) != dep_max:
        fail("docs/api.md: dependencies ≤ %s, but DEPENDENCIES_MAX is %d", m.group(1), dep_max)

    for e in errors:
        print("FAIL:", e)
    print("%d job states, %d run states, %d dependency types, %d end reasons, %d limits; %d problem(s)"
          % (len(jobs), len(runs), len(deps), len(ends), len(lim), len(errors)))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
