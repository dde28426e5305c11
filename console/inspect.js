/* inspect.js - the Inspect tab: the rules' coverage (the rules text as
 * stored, each line with how often the rules written on it were
 * evaluated and with what results, never-evaluated rules marked) and the
 * denial traces (turned on and off here; each refusal with its door,
 * identity and every rule tried with its sub-expressions' values). Uses
 * /.inspect/coverage.json, /.inspect/rules.txt and /.inspect/denials.json. */
"use strict";

(function () {
  const $ = (id) => document.getElementById(id);
  const ns = () => Hearth.view.ns || "default";
  const inspectUrl = (name) => "/.inspect/" + name + "?ns=" + encodeURIComponent(ns());

  function el(tag, className, text) {
    const e = document.createElement(tag);
    if (className) e.className = className;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  /* ---- coverage ---- */

  /* The rules text as stored, byte for byte (Hearth.request would parse
   * a text that happens to be JSON, and lines would move). */
  async function rulesText() {
    const res = await fetch(inspectUrl("rules.txt"), {
      headers: { Authorization: "Bearer " + (Hearth.credential() || "") },
      cache: "no-store",
    });
    if (!res.ok) throw new Error(res.status + " " + res.statusText);
    return res.text();
  }

  async function loadCoverage() {
    let text, coverage;
    try {
      [text, coverage] = await Promise.all([rulesText(), Hearth.request("GET", inspectUrl("coverage.json"))]);
    } catch (err) {
      Hearth.status(err.message, true);
      return;
    }
    const byLine = new Map();
    for (const c of coverage) {
      if (!byLine.has(c.line)) byLine.set(c.line, []);
      byLine.get(c.line).push(c);
    }
    const out = $("coverage");
    out.textContent = "";
    text.split("\n").forEach((source, i) => {
      const rules = byLine.get(i + 1) || [];
      const row = el("div", "cov-line");
      row.dataset.line = String(i + 1);
      const counts = el("span", "cov-counts");
      if (rules.length) {
        const never = rules.some((c) => c.evaluations === 0);
        row.classList.add(never ? "never" : "covered");
        counts.textContent = rules
          .map((c) => c.evaluations === 0 ? "never evaluated"
            : `${c.evaluations}× (true ${c.results.true}, false ${c.results.false}, error ${c.results.error})`)
          .join("; ");
        counts.title = rules.map((c) => `${c.rule} at ${c.path}: ${c.expression}`).join("\n");
      }
      row.append(el("span", "cov-no", String(i + 1)), el("code", "cov-src", source), counts);
      out.appendChild(row);
    });
  }

  /* ---- denial traces ---- */

  function valueText(v) {
    if (v.error) return "error";
    const shown = JSON.stringify(v.value);
    return v.snapshot ? `${shown} (at ${v.snapshot})` : shown;
  }

  function showDenial(d) {
    const item = el("li", "denial");
    const who = d.identity ? (d.identity.uid ? "uid " + d.identity.uid : JSON.stringify(d.identity)) : "nobody";
    item.appendChild(el("div", "denial-head", `${d.time} ${d.door} ${d.op} ${d.paths.join(", ")} as ${who}`));
    if (d.identity) item.appendChild(el("code", "denial-who", JSON.stringify(d.identity)));
    const rules = el("ol", "denial-rules");
    for (const r of d.rules) {
      const li = el("li", "rule-" + r.result);
      li.appendChild(el("div", null, `${r.rule} at ${r.path} (line ${r.line}, column ${r.column}): ${r.expression} → ${r.result}`));
      const values = el("ul", "denial-values");
      for (const v of r.values) values.appendChild(el("li", null, `${v.text} = ${valueText(v)}`));
      li.appendChild(values);
      rules.appendChild(li);
    }
    item.appendChild(rules);
    return item;
  }

  async function loadDenials(method, body) {
    let answer;
    try {
      answer = await Hearth.request(method || "GET", inspectUrl("denials.json"), body);
    } catch (err) {
      Hearth.status(err.message, true);
      return;
    }
    $("trace-on").checked = answer.tracing;
    const list = $("denials");
    list.textContent = "";
    for (const d of answer.denials.slice().reverse()) list.appendChild(showDenial(d));
    $("denials-none").hidden = answer.denials.length > 0;
  }

  function refresh() {
    if ($("tab-inspect").hidden) return;
    loadCoverage();
    loadDenials();
  }

  Hearth.initInspect = function () {
    document.querySelector('#tabs button[data-tab="inspect"]').addEventListener("click", () => {
      /* panels.js shows the tab; this fills it. */
      setTimeout(refresh);
    });
    $("inspect-refresh").addEventListener("click", refresh);
    $("trace-on").addEventListener("change", (e) => loadDenials("PUT", { tracing: e.target.checked }));
    $("ns-picker").addEventListener("change", () => setTimeout(refresh));
  };

  document.addEventListener("DOMContentLoaded", () => Hearth.initInspect());
})();
