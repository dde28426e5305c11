"""`hearth rules test CASES.json`, as CI runs it: each case's result and
the rule that decided, a JSON report with --format json, exit 1 on a
mismatch, 64 for cases that are not valid (naming the case and field).

Run: HEARTH_BIN=.build/debug/hearth python Tests/e2e/test_rules_cli.py
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from test_python_clients import HEARTH, run_tests  # noqa: E402

RULES = """// the app's rules
{"rules": {"users": {"$uid": {
  ".read": "auth != null && auth.uid == $uid",
  ".write": "auth != null && auth.uid == $uid",
  "name": {".validate": "newData.isString()"}}}}}
"""


class RulesTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="hearth-e2e-rules-")
        with open(os.path.join(self.dir, "database.rules.json"), "w") as f:
            f.write(RULES)

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def run_cases(self, cases, *args):
        path = os.path.join(self.dir, "cases.json")
        with open(path, "w") as f:
            json.dump({"rules": "database.rules.json",
                       "data": {"users": {"ada": {"name": "Ada"}}},
                       "cases": cases}, f)
        proc = subprocess.run([HEARTH, "rules", "test", *args, path],
                              capture_output=True, text=True, timeout=60)
        return proc.returncode, proc.stdout, proc.stderr

    def test_passing_cases(self):
        code, out, err = self.run_cases([
            {"op": "read", "path": "/users/ada", "auth": {"uid": "ada"},
             "expect": "allow"},
            {"op": "read", "path": "/users/ada", "auth": None,
             "expect": "deny"},
            {"op": "set", "path": "/users/ada/name", "auth": {"uid": "ada"},
             "data": 5, "expect": "deny"},
            {"op": "update", "path": "/users/ada", "auth": {"uid": "ada"},
             "data": {"name": "Ada L"}, "expect": "allow"},
        ])
        self.assertEqual(code, 0, err)
        lines = out.splitlines()
        self.assertEqual(lines[-1], "4 passed, 0 failed")
        self.assertIn("decided by .validate at /users/$uid/name: "
                      "newData.isString()", lines[2])

    def test_mismatch_exits_1_with_json_report(self):
        code, out, err = self.run_cases([
            {"op": "update", "path": "/users/bob", "auth": {"uid": "ada"},
             "data": {"name": "B"}, "expect": "allow"},
        ], "--format", "json")
        self.assertEqual(code, 1, err)
        report = json.loads(out)
        self.assertEqual((report["passed"], report["failed"]), (0, 1))
        case = report["cases"][0]
        self.assertEqual((case["result"], case["ok"]), ("deny", False))
        self.assertEqual(case["rule"], {
            "kind": ".write", "path": "/users/$uid",
            "expression": "auth != null && auth.uid == $uid"})

    def test_invalid_cases_exit_64(self):
        code, _, err = self.run_cases([
            {"op": "read", "path": "/a", "expect": "allow"},
            {"op": "read", "path": "/a", "expect": "perhaps"}])
        self.assertEqual(code, 64)
        self.assertIn('case 2: "expect" must be "allow" or "deny"', err)


if __name__ == "__main__":
    run_tests(__name__)
