/* panels.js - the tools beside the tree (filter and order, add a child,
 * import and export) and the other tabs: the rules editor with its
 * playground, usage, and the database triggers. */
"use strict";

(function () {
  const $ = (id) => document.getElementById(id);
  const view = () => Hearth.view;
  let addTarget = null; /* null: the node in view */
  let usageTimer = null;

  /* ---- tabs ---- */

  function showTab(name) {
    for (const b of document.querySelectorAll("#tabs button")) b.classList.toggle("active", b.dataset.tab === name);
    for (const t of document.querySelectorAll("main.tab")) t.hidden = t.id !== "tab-" + name;
    clearInterval(usageTimer);
    usageTimer = null;
    if (name === "rules") loadRules();
    if (name === "usage") {
      loadUsage();
      usageTimer = setInterval(loadUsage, 2000);
    }
    if (name === "triggers") {
      loadTriggers();
      usageTimer = setInterval(loadTriggers, 2000);
    }
  }

  /* ---- filter and order ---- */

  /* A typed bound: JSON, else the text as a string (keys are strings). */
  function bound(text) {
    const t = text.trim();
    if (!t) return undefined;
    try {
      JSON.parse(t);
      return t;
    } catch (e) {
      return JSON.stringify(t);
    }
  }

  function applyQuery(e) {
    e.preventDefault();
    const order = $("q-order").value;
    const child = $("q-child").value.trim();
    if (!order) {
      view().query = null;
    } else {
      const q = { orderBy: order === "child" ? child || "$key" : order };
      q.equalTo = bound($("q-equal").value);
      q.startAt = bound($("q-start").value);
      q.endAt = bound($("q-end").value);
      const limit = $("q-limit").value;
      if (limit) q[$("q-limit-side").value] = limit;
      view().query = q;
    }
    Hearth.refreshView();
  }

  Hearth.resetQuery = function () {
    $("query-form").reset();
    $("q-child").hidden = true;
    view().query = null;
  };

  function clearQuery() {
    Hearth.resetQuery();
    Hearth.refreshView();
  }

  /* ---- add a child ---- */

  Hearth.openAdd = function (path) {
    addTarget = path;
    const form = $("add-form");
    form.closest("details").open = true;
    form.querySelector("button").textContent = "Add under " + path;
    $("add-value").focus();
  };

  async function addChild(e) {
    e.preventDefault();
    const at = addTarget || view().path;
    let value;
    try {
      value = JSON.parse($("add-value").value);
    } catch (err) {
      Hearth.status("The value is not JSON: " + err.message, true);
      return;
    }
    const key = $("add-key").value.trim();
    try {
      if (key) await Hearth.put(view().ns, Hearth.join(at, key), value);
      else {
        const made = await Hearth.post(view().ns, at, value);
        Hearth.status("Added " + Hearth.join(at, made.name));
      }
      $("add-form").reset();
    } catch (err) {
      Hearth.status(err.message, true);
    }
  }

  /* ---- import and export ---- */

  function readImportFile() {
    const f = $("import-file").files[0];
    if (!f) return;
    f.text().then((t) => ($("import-text").value = t));
  }

  async function importHere(e) {
    e.preventDefault();
    let value;
    try {
      value = JSON.parse($("import-text").value);
    } catch (err) {
      Hearth.status("The import is not JSON: " + err.message, true);
      return;
    }
    const { ns, path } = view();
    try {
      if ($("import-merge").checked) await Hearth.patch(ns, path, value);
      else await Hearth.put(ns, path, value);
      Hearth.status("Imported at " + path);
    } catch (err) {
      Hearth.status("Import refused: " + err.message, true);
    }
  }

  let exportUrl = null;
  async function exportHere() {
    const { ns, path } = view();
    try {
      const value = await Hearth.get(ns, path, { format: "export" });
      const text = JSON.stringify(value, null, 2);
      $("export-text").value = text;
      if (exportUrl) URL.revokeObjectURL(exportUrl);
      exportUrl = URL.createObjectURL(new Blob([text], { type: "application/json" }));
      const link = $("export-link");
      link.href = exportUrl;
      link.download = ns + (path === "/" ? "" : path.replace(/\//g, "-")) + ".json";
      link.hidden = false;
      Hearth.status("Exported " + path);
    } catch (err) {
      Hearth.status(err.message, true);
    }
  }

  /* ---- rules ---- */

  async function loadRules() {
    try {
      const rules = await Hearth.settings("rules", view().ns);
      $("rules-text").value = JSON.stringify(rules, null, 2);
      rulesStatus("", false);
    } catch (err) {
      rulesStatus(err.message, true);
    }
  }

  function rulesStatus(text, isError) {
    const s = $("rules-status");
    s.textContent = text;
    s.classList.toggle("error", isError);
  }

  /* Puts the cursor where the server says the error is. */
  function showAt(area, line, column) {
    const lines = area.value.split("\n");
    let offset = 0;
    for (let i = 0; i < line - 1 && i < lines.length; i++) offset += lines[i].length + 1;
    offset += Math.max(0, column - 1);
    area.focus();
    area.setSelectionRange(offset, offset + 1);
  }

  async function saveRules() {
    const area = $("rules-text");
    try {
      await Hearth.settings("rules", view().ns, "PUT", area.value, true);
      rulesStatus("Published", false);
    } catch (err) {
      const b = err.body || {};
      const where = b.line ? " (line " + b.line + ", column " + b.column + ")" : "";
      rulesStatus(err.message + where, true);
      if (b.line) showAt(area, b.line, b.column);
    }
  }

  /* ---- playground ---- */

  function playAuth() {
    if ($("play-auth").value === "none") return null;
    const uid = $("play-uid").value.trim();
    const claimsText = $("play-claims").value.trim();
    const claims = claimsText ? JSON.parse(claimsText) : {};
    if (!Hearth.isObject(claims)) throw new Error("the claims must be a JSON object");
    return { uid, provider: "custom", token: Object.assign(Hearth.object(), { sub: uid }, claims) };
  }

  function toggleAuthFields() {
    const none = $("play-auth").value === "none";
    $("play-uid").hidden = none;
    $("play-claims").hidden = none;
  }

  async function runPlayground(e) {
    e.preventDefault();
    const out = $("play-result");
    out.className = "";
    const question = { op: $("play-op").value, path: $("play-path").value.trim() || "/" };
    try {
      question.auth = playAuth();
      if (question.op !== "read") question.data = JSON.parse($("play-data").value);
    } catch (err) {
      out.textContent = "Not asked: " + err.message;
      out.className = "error";
      return;
    }
    try {
      const a = await Hearth.settings("playground", view().ns, "POST", question);
      out.className = a.allowed ? "allowed" : "denied";
      out.textContent =
        (a.allowed ? "Allowed" : "Denied") +
        (a.rule ? " by " + a.rule.kind + " at " + a.rule.path + ": " + a.rule.expression : ": no rule grants it");
    } catch (err) {
      out.className = "error";
      out.textContent = err.message;
    }
  }

  /* ---- usage ---- */

  async function loadUsage() {
    let usage;
    try {
      usage = await Hearth.settings("usage");
    } catch (err) {
      Hearth.status(err.message, true);
      return;
    }
    const body = $("usage-table").querySelector("tbody");
    body.textContent = "";
    for (const name of Object.keys(usage).sort()) {
      const u = usage[name];
      const tr = document.createElement("tr");
      tr.dataset.namespace = name;
      for (const v of [name, u.connections, u.reads, u.listens, u.writes, u.bytes_in, u.bytes_out]) {
        const td = document.createElement("td");
        td.textContent = String(v);
        tr.appendChild(td);
      }
      body.appendChild(tr);
    }
  }

  /* ---- triggers ---- */

  async function retryDead(name) {
    try {
      const r = await Hearth.settings("triggers/" + encodeURIComponent(name) + "/retry", null, "POST", "");
      $("triggers-status").textContent = r.requeued + " dead letter(s) of " + name + " queued again";
    } catch (err) {
      $("triggers-status").textContent = err.message;
    }
    loadTriggers();
  }

  async function loadTriggers() {
    let list;
    try {
      list = (await Hearth.settings("triggers")).triggers;
    } catch (err) {
      Hearth.status(err.message, true);
      return;
    }
    const body = $("triggers-table").querySelector("tbody");
    body.textContent = "";
    for (const t of list) {
      const s = t.stats;
      const tr = document.createElement("tr");
      tr.dataset.trigger = t.name;
      for (const v of [t.name, t.event || "written", t.ref || t.path, t.instance || t.namespace || "*", t.url,
                       s.delivered, s.lag, s.failed, s.dead_letters, s.last_error || ""]) {
        const td = document.createElement("td");
        td.textContent = String(v);
        tr.appendChild(td);
      }
      const td = document.createElement("td");
      if (s.dead_letters > 0) {
        const b = document.createElement("button");
        b.type = "button";
        b.className = "retry";
        b.textContent = "Retry";
        b.addEventListener("click", () => retryDead(t.name));
        td.appendChild(b);
      }
      tr.appendChild(td);
      body.appendChild(tr);
    }
  }

  Hearth.panelsNsChanged = function () {
    addTarget = null;
    $("add-form").querySelector("button").textContent = "Add under this node";
    if (!$("tab-rules").hidden) loadRules();
  };

  Hearth.initPanels = function () {
    for (const b of document.querySelectorAll("#tabs button")) b.addEventListener("click", () => showTab(b.dataset.tab));
    $("query-form").addEventListener("submit", applyQuery);
    $("q-clear").addEventListener("click", clearQuery);
    $("q-order").addEventListener("change", (e) => ($("q-child").hidden = e.target.value !== "child"));
    $("add-form").addEventListener("submit", addChild);
    $("import-file").addEventListener("change", readImportFile);
    $("import-form").addEventListener("submit", importHere);
    $("export-button").addEventListener("click", exportHere);
    $("rules-save").addEventListener("click", saveRules);
    $("rules-reload").addEventListener("click", loadRules);
    $("play-auth").addEventListener("change", toggleAuthFields);
    $("play-form").addEventListener("submit", runPlayground);
  };
})();
