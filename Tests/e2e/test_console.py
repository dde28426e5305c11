"""The data console in a real browser: headless Chromium, driven over the
DevTools protocol (cdp.py), against a real server on a free loopback port
(HEARTH_SERVE: a program that serves `PORT DATA_DIR off` and prints
"listening on http://127.0.0.1:PORT"; `make test-console` builds
examples/serve.c for it).

Each step is what a user does: open a deep link, see the seeded data, see
another client's REST write appear live and highlighted (keys named like
object properties too), edit a value with
the keyboard and read it back over REST, page through children, import and
export, publish rules (and see the server's line/column error), ask the
playground, look at usage, see the rules' coverage and a denial traced
in the Inspect tab; no request carries the admin credential in its URL
(the stream opens with a ticket). No uncaught exception and no console error
(CSP violations are logged as errors) may happen on the way. Screenshots
go to build/console-screens/.

Run: HEARTH_SERVE=build/console-serve python3 Tests/e2e/test_console.py
"""

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(__file__))
from cdp import Browser  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHOTS = os.path.join(ROOT, "build", "console-screens")
NS = "shop"
OWNER = {"Authorization": "Bearer owner"}

SEED = {
    "users": {
        "ada": {"name": "Ada", "age": 36, "langs": {"analytical": True}},
        "bob": {"name": "Bob", "age": 41},
    },
    "items": {"item%03d" % i: {"n": i} for i in range(60)},
    "wide": {"k%03d" % i: {"v": i} for i in range(120)},
}
LIVE_MAX = 100  # children above which a node is shown read-only

RULES = {"rules": {
    ".read": False,
    "users": {"$uid": {".read": "auth != null && auth.uid == $uid",
                       ".write": "auth != null && auth.uid == $uid"}},
}}


class Server:
    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="hearth-console-")
        serve = os.environ.get("HEARTH_SERVE", os.path.join(ROOT, "build", "console-serve"))
        self.proc = subprocess.Popen([serve, "0", self.dir, "off"],
                                     stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        m = re.search(r"http://127\.0\.0\.1:(\d+)", line)
        if not m:
            self.stop()
            raise RuntimeError("the server did not start: %r" % line)
        self.port = int(m.group(1))
        self.base = f"http://127.0.0.1:{self.port}"

    def rest(self, method, path, value=None, params=""):
        body = None if value is None else json.dumps(value).encode()
        req = urllib.request.Request(f"{self.base}{path or '/'}.json?ns={NS}{params}",
                                     data=body, method=method, headers=OWNER)
        with urllib.request.urlopen(req, timeout=10) as r:
            return json.loads(r.read() or b"null")

    def stop(self):
        self.proc.terminate()
        self.proc.wait(20)
        shutil.rmtree(self.dir, ignore_errors=True)


class ConsoleTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        os.makedirs(SHOTS, exist_ok=True)
        cls.server = Server()
        cls.addClassCleanup(cls.server.stop)
        cls.server.rest("PUT", "", SEED)
        cls.browser = Browser().__enter__()
        cls.addClassCleanup(cls.browser.__exit__, None, None, None)
        cls.page = cls.browser.page()
        cls.addClassCleanup(cls.page.close)
        for domain in ("Runtime", "Page", "Log", "Network"):
            cls.page.call(domain + ".enable")
        # Deep link with the credential; the console keeps it and drops it
        # from the address bar.
        cls.page.call("Page.navigate",
                      url=f"{cls.server.base}/.console/?auth=owner&live_max={LIVE_MAX}"
                          f"#/{NS}/users/ada")

    # ---- helpers ----

    def q(self, path):
        return f"document.querySelector('[data-path=\"{path}\"]')"

    def text_of(self, path):
        return self.page.evaluate(f"{self.q(path)} && {self.q(path)}.textContent")

    def go(self, hash_path, ready_path):
        self.page.evaluate(f"location.hash = '#/{NS}{hash_path}'")
        self.page.wait_for(f"Hearth.view.tree && Hearth.view.tree.rootEl && {self.q(ready_path)}",
                           what=f"{ready_path} shown")

    def click(self, selector):
        self.page.evaluate(f"document.querySelector({json.dumps(selector)}).click()")

    def set_field(self, selector, value):
        self.page.evaluate(f"document.querySelector({json.dumps(selector)}).value = {json.dumps(value)}")

    def shot(self, name):
        self.page.screenshot(os.path.join(SHOTS, name + ".png"))

    def ask_playground(self, op, path, uid, verdict, data=""):
        """Fills the playground's form and runs it; the answer's text once
        it is `verdict` ("allowed" or "denied")."""
        self.set_field("#play-op", op)
        self.set_field("#play-path", path)
        self.set_field("#play-auth", "uid" if uid else "none")
        self.page.evaluate("document.getElementById('play-auth').dispatchEvent(new Event('change'))")
        self.set_field("#play-uid", uid or "")
        self.set_field("#play-data", data)
        self.click("#play-form button[type=submit]")
        return self.page.wait_for(f"document.querySelector('#play-result.{verdict}') && "
                                  "document.getElementById('play-result').textContent")

    def enter(self):
        self.page.key("Enter", vk=13, text="\r")

    # ---- the steps, in order (unittest runs them by name) ----

    def test_1_deep_link_shows_seeded_data(self):
        p = self.page
        p.wait_for(self.q("/users/ada/name"), timeout=10, what="the deep link's data")
        self.assertEqual(self.text_of("/users/ada/name"), '"Ada"')
        self.assertEqual(self.text_of("/users/ada/age"), "36")
        self.assertTrue(p.evaluate(f"{self.q('/users/ada/langs')}.classList.contains('branch')"))
        self.assertEqual(p.evaluate("document.getElementById('path-input').value"), "/users/ada")
        self.assertNotIn("auth=", p.evaluate("location.href"))
        self.assertEqual(p.evaluate("sessionStorage.getItem('hearth.auth')"), "owner")
        # The namespace picker lists the namespaces, this one chosen.
        self.assertEqual(p.wait_for("document.getElementById('ns-picker').value"), NS)
        self.assertIn(NS, p.evaluate("Array.from(document.querySelectorAll('#ns-picker option'), o => o.value)"))
        # A branch expands on demand.
        self.click('[data-path="/users/ada/langs"] .toggle')
        p.wait_for(self.q("/users/ada/langs/analytical"))
        self.assertEqual(self.text_of("/users/ada/langs/analytical"), "true")
        self.shot("1-deep-link")

    def test_2_rest_writes_appear_live(self):
        p = self.page
        p.wait_for(self.q("/users/ada/name"))
        # Each within 2 s of its write (wait_for's time limit).
        self.server.rest("PUT", "/users/ada/city", "London")
        p.wait_for(f"{self.q('/users/ada/city')} && {self.q('/users/ada/city')}.classList.contains('added')",
                   timeout=2, what="the added child highlighted")
        self.server.rest("PUT", "/users/ada/age", 37)
        p.wait_for(f"{self.q('/users/ada/age')}.textContent === '37' && "
                   f"{self.q('/users/ada/age')}.classList.contains('changed')",
                   timeout=2, what="the changed leaf highlighted")
        self.assertEqual(self.text_of("/users/ada/city"), '"London"')
        self.shot("2-live-write")
        self.server.rest("DELETE", "/users/ada/city")
        p.wait_for("document.querySelector('[data-removed-path=\"/users/ada/city\"].removed')",
                   timeout=2, what="the removed child struck out")
        p.wait_for(f"!{self.q('/users/ada/city')} && "
                   "!document.querySelector('[data-removed-path=\"/users/ada/city\"]')",
                   timeout=4, what="the removed child gone")

    def test_2b_keys_named_like_object_properties_are_shown(self):
        """A key is data whatever its name: "constructor" (which `k in {}`
        finds on every object) is shown as added, and "__proto__" (which
        an assignment takes as the prototype) is shown at all, so no user
        can hide a key from the admin's view by its name."""
        p = self.page
        self.server.rest("PUT", "/odd", {"plain": 1})
        self.go("/odd", "/odd/plain")
        p.wait_for("Hearth.view.tree.value && Hearth.view.tree.value.plain === 1",
                   what="the live node's first value")
        self.server.rest("PUT", "/odd/constructor", "c")
        p.wait_for(f"{self.q('/odd/constructor')} && "
                   f"{self.q('/odd/constructor')}.classList.contains('added')",
                   timeout=2, what="constructor shown as added")
        self.server.rest("PUT", "/odd/__proto__", {"x": 1})
        p.wait_for(self.q("/odd/__proto__"), timeout=2, what="__proto__ shown")
        self.server.rest("PUT", "/odd/toString", "t")
        p.wait_for(self.q("/odd/toString"), timeout=2, what="toString shown")
        # Each later change kept the others: nothing struck out.
        for key in ("plain", "constructor", "__proto__"):
            self.assertTrue(p.evaluate(f"!!{self.q('/odd/' + key)}"), key)
        self.assertEqual(p.evaluate("document.querySelectorAll('[data-removed-path]').length"), 0)
        self.assertEqual(p.evaluate("JSON.stringify(Hearth.view.tree.value)"),
                         json.dumps({"plain": 1, "constructor": "c", "__proto__": {"x": 1},
                                     "toString": "t"}, separators=(",", ":")))
        self.shot("2b-odd-keys")
        self.go("/users/ada", "/users/ada/name")  # where the next steps start
        self.server.rest("DELETE", "/odd")

    def test_3_keyboard_edit_saves_and_escape_cancels(self):
        p = self.page
        p.evaluate(f"{self.q('/users/ada/name')}.focus()")
        self.enter()
        p.wait_for("document.activeElement.classList.contains('editor')", what="the editor open")
        self.assertEqual(p.evaluate("document.activeElement.value"), '"Ada"')
        p.evaluate("document.activeElement.select()")
        p.type('"Ada Lovelace"')
        self.enter()
        deadline = time.monotonic() + 3
        while self.server.rest("GET", "/users/ada/name") != "Ada Lovelace":
            self.assertLess(time.monotonic(), deadline, "the edit did not reach the server")
            time.sleep(0.05)
        p.wait_for(f"{self.q('/users/ada/name')}.textContent === '\"Ada Lovelace\"' && "
                   f"document.activeElement === {self.q('/users/ada/name')}",
                   what="the leaf shows the saved value and has the focus")
        # Escape: nothing is written.
        self.enter()
        p.wait_for("document.activeElement.classList.contains('editor')")
        p.evaluate("document.activeElement.select()")
        p.type('"Nobody"')
        p.key("Escape", vk=27)
        p.wait_for(f"{self.q('/users/ada/name')}.textContent === '\"Ada Lovelace\"'")
        # Double click opens the editor too; invalid JSON is refused.
        dblclick = f"{self.q('/users/ada/age')}.dispatchEvent(new MouseEvent('dblclick', {{bubbles: true}}))"
        p.evaluate(dblclick)
        p.wait_for("document.activeElement.classList.contains('editor')")
        p.evaluate("document.activeElement.select()")
        p.type("not json")
        self.enter()
        p.wait_for("document.activeElement.classList.contains('invalid')")
        self.shot("3-invalid-edit")
        p.key("Escape", vk=27)
        # A barrier: a later edit from the page, once the server has it,
        # comes after anything the cancelled edits could have sent.
        p.evaluate(dblclick)
        p.wait_for("document.activeElement.classList.contains('editor')")
        p.evaluate("document.activeElement.select()")
        p.type("38")
        self.enter()
        deadline = time.monotonic() + 3
        while self.server.rest("GET", "/users/ada/age") != 38:
            self.assertLess(time.monotonic(), deadline, "the barrier edit did not arrive")
            time.sleep(0.05)
        self.assertEqual(self.server.rest("GET", "/users/ada/name"), "Ada Lovelace")

    def test_4_children_come_in_pages_of_50(self):
        p = self.page
        self.go("/items", "/items/item000")
        count = "document.querySelectorAll('[data-path^=\"/items/item\"]').length"
        self.assertEqual(p.evaluate(count), 50)
        self.assertIn("10 more", p.evaluate("document.querySelector('.more').textContent"))
        self.click(".more")
        p.wait_for(f"{count} === 60")
        self.assertIsNone(p.evaluate("document.querySelector('.more')"))
        # Ordered by key, the last 3: the query goes to the server.
        self.set_field("#q-order", "$key")
        self.set_field("#q-limit-side", "limitToLast")
        self.set_field("#q-limit", "3")
        self.click("#query-form button[type=submit]")
        p.wait_for(f"{count} === 3 && {self.q('/items/item059')}")
        self.click("#q-clear")
        p.wait_for(f"{count} === 50")
        # Ordered by a child, from a bound: child orders need .indexOn.
        self.server.rest("PUT", "/.settings/rules",
                         {"rules": {".read": True, ".write": True, "items": {".indexOn": ["n"]}}})
        self.set_field("#q-order", "child")
        self.set_field("#q-child", "n")
        self.set_field("#q-start", "55")
        self.click("#query-form button[type=submit]")
        p.wait_for(f"{count} === 5 && {self.q('/items/item055')}")
        self.assertEqual(p.evaluate("Array.from(document.querySelectorAll('[data-path^=\"/items/item\"]'), "
                                    "e => e.dataset.path)"),
                         ["/items/item%03d" % i for i in range(55, 60)])
        self.click("#q-clear")
        p.wait_for(f"{count} === 50")

    def test_4b_a_large_node_is_read_only_and_not_live(self):
        p = self.page
        self.go("/wide", "/wide/k000")
        mode = p.evaluate("document.getElementById('mode').textContent")
        self.assertIn("120 children", mode)
        self.assertIn("read-only", mode)
        self.assertIsNone(p.evaluate("Hearth.view.stream"))
        count = "document.querySelectorAll('[data-path^=\"/wide/k\"]').length"
        self.assertEqual(p.evaluate(count), 50)
        # Each child shown is read with shallow=true (a leaf or a branch?),
        # expanding too.
        p.wait_for("document.querySelector('[data-path=\"/wide/k049\"] .summary').textContent === '{1}'")
        self.click('[data-path="/wide/k007"] .toggle')
        p.wait_for(f"{self.q('/wide/k007/v')} && {self.q('/wide/k007/v')}.textContent === '7'")
        self.click(".more")
        p.wait_for(f"{count} === 101")
        self.shot("4-read-only")
        # Not editable there.
        p.evaluate(f"{self.q('/wide/k007/v')}.focus()")
        self.enter()
        self.assertIn("Read-only", p.evaluate("document.getElementById('status').textContent"))
        self.assertFalse(p.evaluate("!!document.querySelector('.editor')"))

    def test_5_import_and_export(self):
        p = self.page
        self.go("/imported", "/imported")
        data = {"a": 1, "b": {"c": True, "d": "text"}}
        self.set_field("#import-text", json.dumps(data))
        self.click("#import-form button[type=submit]")
        deadline = time.monotonic() + 3
        while self.server.rest("GET", "/imported") != data:
            self.assertLess(time.monotonic(), deadline, "the import did not arrive")
            time.sleep(0.05)
        p.wait_for(f"{self.q('/imported/a')}", what="the import shown live")
        self.server.rest("PUT", "/imported/p", {".value": 5, ".priority": 2})
        p.wait_for(f"{self.q('/imported/p')}")
        self.click("#export-button")
        exported = p.wait_for("document.getElementById('export-text').value")
        self.assertEqual(json.loads(exported),
                         self.server.rest("GET", "/imported", params="&format=export"))
        self.assertEqual(json.loads(exported)["p"], {".value": 5, ".priority": 2})
        self.assertTrue(p.evaluate("!document.getElementById('export-link').hidden"))
        self.shot("5-import-export")

    def test_6_rules_editor_and_playground(self):
        p = self.page
        self.click('#tabs button[data-tab="rules"]')
        p.wait_for("document.getElementById('rules-text').value.includes('rules')")
        # A syntax error: the server's line and column are shown.
        self.set_field("#rules-text", '{\n  "rules": {\n    ".read": tru\n  }\n}')
        self.click("#rules-save")
        status = p.wait_for("document.getElementById('rules-status').textContent")
        self.assertIn("line 3", status)
        self.set_field("#rules-text", json.dumps(RULES, indent=2))
        self.click("#rules-save")
        p.wait_for("document.getElementById('rules-status').textContent === 'Published'")
        self.assertEqual(self.server.rest("GET", "/.settings/rules"), RULES)
        # The playground: ada may read her node, nobody else may.
        verdict = self.ask_playground("read", "/users/ada", "ada", "allowed")
        self.assertIn("Allowed by .read at /users/$uid", verdict)
        self.shot("6-playground-allowed")
        self.assertIn("Denied", self.ask_playground("read", "/users/ada", None, "denied"))
        # A write by bob into ada's node is denied by her .write rule.
        verdict = self.ask_playground("set", "/users/ada", "bob", "denied", data='"x"')
        self.assertIn(".write at /users/$uid", verdict)
        self.shot("6-playground-denied")
        # Nothing was written by the playground.
        self.assertEqual(self.server.rest("GET", "/users/ada/name"), "Ada Lovelace")

    def test_7_usage(self):
        p = self.page
        self.click('#tabs button[data-tab="usage"]')
        row = p.wait_for(f"(() => {{ const r = document.querySelector('tr[data-namespace=\"{NS}\"]');"
                         " return r && Array.from(r.cells).map(c => c.textContent); })()")
        self.assertEqual(row[0], NS)
        self.assertGreaterEqual(int(row[1]), 1)  # the console's own stream
        self.assertGreater(int(row[2]), 0)  # reads
        self.assertGreaterEqual(int(row[3]), 1)  # listens: the console's stream
        self.assertGreater(int(row[4]), 0)  # writes
        self.shot("7-usage")
        self.click('#tabs button[data-tab="data"]')

    def test_7b_no_credential_in_any_url(self):
        """The console never puts the admin's credential in a URL (reverse
        proxies log URLs): its stream opens with a stream ticket. Only the
        deep link the user typed holds it, and the console drops it from
        the address bar."""
        self.page.evaluate("1")  # collects the events sent so far
        urls = [e["params"]["request"]["url"] for e in self.page.events
                if e["method"] == "Network.requestWillBeSent"]
        typed = [u for u in urls if u.startswith(f"{self.server.base}/.console/?auth=owner")]
        self.assertEqual(len(typed), 1)
        asked = [u for u in urls if u not in typed]
        self.assertTrue(any("ticket=" in u for u in asked), "no stream opened with a ticket")
        for u in asked:
            self.assertNotIn("auth=", u)
            self.assertNotIn("owner", u)

    def test_7c_triggers(self):
        # A trigger whose endpoint is down: its one attempt fails, the
        # event becomes a dead letter, shown with a Retry button.
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            closed = s.getsockname()[1]
        self.server.rest("PUT", "/.settings/triggers/orders", {
            "ref": "/orders/{id}", "max_attempts": 1,
            "url": f"http://127.0.0.1:{closed}/"})
        self.server.rest("PUT", "/orders/o1", {"total": 5})
        p = self.page
        self.click('#tabs button[data-tab="triggers"]')
        row = p.wait_for("(() => { const r = document.querySelector('tr[data-trigger=\"orders\"]');"
                         " return r && r.cells[8].textContent === '1' && Array.from(r.cells).map(c => c.textContent); })()")
        self.assertEqual(row[:5], ["orders", "written", "/orders/{id}", "*", f"http://127.0.0.1:{closed}/"])
        self.assertIn("cannot connect", row[9])
        self.shot("7b-triggers")
        self.click('tr[data-trigger="orders"] button.retry')
        status = p.wait_for("document.getElementById('triggers-status').textContent")
        self.assertIn("1 dead letter(s) of orders queued again", status)

    def test_7d_inspect_coverage_and_denial_trace(self):
        p = self.page
        # An anonymous read the rules refuse: the root's .read is false,
        # and so is the $uid .read (auth is null).
        def anonymous_read():
            req = urllib.request.Request(f"{self.server.base}/users/ada.json?ns={NS}")
            with self.assertRaises(urllib.error.HTTPError) as denied:
                urllib.request.urlopen(req, timeout=10)
            self.assertEqual(denied.exception.code, 401)
            self.assertEqual(json.loads(denied.exception.read()), {"error": "Permission denied"})
        anonymous_read()
        self.click('#tabs button[data-tab="inspect"]')
        p.wait_for("document.querySelectorAll('#coverage .cov-line').length > 3")
        covered = p.evaluate("Array.from(document.querySelectorAll('#coverage .cov-line.covered'))"
                             ".map(l => l.textContent)")
        never = p.evaluate("Array.from(document.querySelectorAll('#coverage .cov-line.never'))"
                           ".map(l => l.textContent)")
        self.assertTrue(any('".read": "auth != null' in l and "false 1" in l for l in covered),
                        covered)
        self.assertTrue(any('".write"' in l and "never evaluated" in l for l in never), never)
        # Tracing on, from the console; the next refusal is traced.
        self.click("#trace-on")
        p.wait_for("document.getElementById('trace-on').checked && "
                   "!document.getElementById('denials-none').hidden")
        anonymous_read()
        self.click("#inspect-refresh")
        head = p.wait_for("document.querySelector('#denials .denial-head') && "
                          "document.querySelector('#denials .denial-head').textContent")
        self.assertIn("rest read /users/ada as nobody", head)
        trace = p.evaluate("document.getElementById('denials').textContent")
        self.assertIn(".read at /users/$uid", trace)
        self.assertIn("auth != null = false", trace)
        self.shot("7b-inspect-coverage-and-denial")
        self.click('#trace-on')  # off again: what was kept goes
        p.wait_for("!document.getElementById('trace-on').checked && "
                   "!document.querySelector('#denials .denial')")
        self.click('#tabs button[data-tab="data"]')

    def test_8_no_uncaught_exceptions_or_console_errors(self):
        self.page.evaluate("1")  # collects the events sent so far
        problems = [e for e in self.page.events
                    if e["method"] == "Runtime.exceptionThrown"
                    or (e["method"] == "Log.entryAdded" and e["params"]["entry"]["level"] == "error"
                        and "/.settings/" not in e["params"]["entry"].get("url", ""))
                    or (e["method"] == "Runtime.consoleAPICalled" and e["params"]["type"] == "error")]
        self.assertEqual(problems, [])


if __name__ == "__main__":
    unittest.main(verbosity=2)
