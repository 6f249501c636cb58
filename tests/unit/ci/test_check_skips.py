#!/usr/bin/python3
"""scripts/check-skips: an allowed skip passes, an unlisted one fails under CI
and is only listed outside it, and a missing JUnit file is an error."""
import os
import subprocess
import sys
import tempfile
import unittest

SCRIPT = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'scripts', 'check-skips')
JUNIT = '''<?xml version="1.0" encoding="UTF-8"?>
<testsuite tests="2" skipped="%d">
  <testcase name="unit.sim.kth_easy_exact" status="%s">%s<system-out>SKIP: ../shared is absent</system-out></testcase>
  <testcase name="integration.cli" status="run"><system-out></system-out></testcase>
</testsuite>
'''


def run(build, ci):
    env = dict(os.environ, CI='true' if ci else '')
    p = subprocess.run([SCRIPT, build], env=env, capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


class CheckSkips(unittest.TestCase):
    def build(self, skipped, log=''):
        d = tempfile.mkdtemp()
        with open(os.path.join(d, 'ctest-junit.xml'), 'w') as f:
            f.write(JUNIT % ((1, 'notrun', '<skipped message="SKIP_RETURN_CODE=77"/>') if skipped
                             else (0, 'run', '')))
        if log:
            with open(os.path.join(d, 'skips.log'), 'w') as f:
                f.write(log)
        return d

    def test_allowed_skip_passes_under_ci(self):
        rc, out = run(self.build(True, 'test_agent_isolation:test_freezer\tno v1 freezer here\n'), True)
        self.assertEqual(rc, 0, out)
        self.assertIn('allowed', out)

    def test_unlisted_function_skip_fails_under_ci(self):
        d = self.build(False, 'test_cli:test_history\tmuster-api does not serve GET /v1/history\n')
        rc, out = run(d, True)
        self.assertEqual(rc, 1, out)
        self.assertIn('NOT ALLOWED: test_cli:test_history', out)
        rc, out = run(d, False)
        self.assertEqual(rc, 0, out)
        self.assertIn('NOT ALLOWED', out)

    def test_allowed_reason_on_another_test_fails(self):
        rc, out = run(self.build(False, 'test_jobs:test_x\tno v1 freezer here\n'), True)
        self.assertEqual(rc, 1, out)

    def test_no_junit_is_an_error(self):
        rc, out = run(tempfile.mkdtemp(), False)
        self.assertNotEqual(rc, 0, out)
        self.assertIn('ctest-junit.xml is missing', out)


if __name__ == '__main__':
    sys.exit(0 if unittest.main(exit=False).result.wasSuccessful() else 1)
