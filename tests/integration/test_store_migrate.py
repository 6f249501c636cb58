"""Migrations (store/migrate.c via muster-devdb migrate): every embedded
migration is applied once and recorded with its checksum, a second run is a
no-op, concurrent migrators apply each migration exactly once, and a
database that a newer binary migrated (unknown version) or whose applied
migration was edited (checksum) is refused without changes."""
import glob
import hashlib
import os
import re
import subprocess
import threading

import harness
from harness import check, check_eq

MIGRATIONS = sorted(glob.glob(os.path.join(harness.SOURCE_DIR, "store", "migrations", "*.sql")))


def migrate(c, url=None):
    r = subprocess.run([c.devdb, "migrate", "--db", url or c.db_url], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=120)
    m = re.search(r"(\d+) migration\(s\) applied", r.stderr)
    return r.returncode, int(m.group(1)) if m else None, r.stderr


def expected():
    rows = []
    for p in MIGRATIONS:
        name = os.path.basename(p)[:-4]
        with open(p, "rb") as f:
            rows.append((str(int(name.split("_")[0])), name, hashlib.sha256(f.read()).hexdigest()))
    return sorted(rows, key=lambda r: int(r[0]))


def recorded(c, url=None):
    return c.sql("SELECT version, name, checksum FROM schema_migrations ORDER BY version",
                 db_url=url)


def test_apply_then_noop(c):
    check(len(MIGRATIONS) >= 1)
    rc, n, err = migrate(c)
    check_eq((rc, n), (0, len(MIGRATIONS)), err)
    check_eq(recorded(c), expected())
    check_eq(c.sql_value("SELECT name FROM tenants WHERE parent_id IS NULL"), "root")
    before = c.sql("SELECT version, applied_at FROM schema_migrations ORDER BY version")
    rc, n, err = migrate(c)
    check_eq((rc, n), (0, 0), "second run applies nothing", err)
    check_eq(c.sql("SELECT version, applied_at FROM schema_migrations ORDER BY version"), before)


def test_refuses_unknown_newer_version(c):
    c.sql("INSERT INTO schema_migrations (version, name, checksum) VALUES (999, '999_future', 'x')")
    try:
        rc, n, err = migrate(c)
        check_eq(rc, 1, err)
        check("999" in err and "newer muster" in err, err)
    finally:
        c.sql("DELETE FROM schema_migrations WHERE version = 999")
    check_eq(migrate(c)[:2], (0, 0))


def test_refuses_edited_migration(c):
    good = c.sql_value("SELECT checksum FROM schema_migrations WHERE version = 1")
    c.sql("UPDATE schema_migrations SET checksum = $1 WHERE version = 1", "0" * 64)
    try:
        rc, n, err = migrate(c)
        check_eq(rc, 1, err)
        check("changed after it was applied" in err, err)
    finally:
        c.sql("UPDATE schema_migrations SET checksum = $1 WHERE version = 1", good)
    check_eq(migrate(c)[:2], (0, 0))


def test_pending_lower_version_applied(c):
    """Areas number migrations in their own ranges, so a database may hold a
    higher number before a lower one lands: the lower one is still applied."""
    if len(MIGRATIONS) < 2:
        harness.skip("needs two migrations")
    url = c.new_database("lower")
    c.sql("CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL,"
          " checksum text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())", db_url=url)
    # record every migration but the first as applied: only the first runs
    for v, name, csum in expected()[1:]:
        c.sql("INSERT INTO schema_migrations (version, name, checksum) VALUES ($1, $2, $3)",
              v, name, csum, db_url=url)
    rc, n, err = migrate(c, url)
    check_eq((rc, n), (0, 1), err)
    check_eq(recorded(c, url), expected())
    check_eq(c.sql("SELECT count(*) FROM tenants", db_url=url), [("1",)])


def test_concurrent_migrators_apply_once(c):
    url = c.new_database("concurrent")
    results = []

    def run():
        results.append(migrate(c, url))

    threads = [threading.Thread(target=run) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    check_eq([r[0] for r in results], [0] * 4, [r[2] for r in results])
    check_eq(sum(r[1] for r in results), len(MIGRATIONS), "each applied exactly once",
             [r[2] for r in results])
    check_eq(recorded(c, url), expected())


def test_safe_params(c):
    """The harness binds parameters safely (tests rely on it)."""
    evil = "x'); DROP TABLE tenants; --\\ $2 \"\t\n"
    check_eq(c.sql("SELECT $1::text, $2::int, $3", evil, 7, None), [(evil, "7", None)])
    check_eq(c.sql_value("SELECT count(*) FROM tenants"), "1")


if __name__ == "__main__":
    harness.main(migrate=False)
