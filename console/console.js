/* console.js - the page: the credential, the namespace picker, deep links
 * (#/NAMESPACE/path/to/node), the breadcrumbs, and the node in view with
 * its one stream (or read-only, when too large to follow). */
"use strict";

(function () {
  const $ = (id) => document.getElementById(id);
  const params = new URLSearchParams(location.search);
  /* Above either bound the node is shown read-only, without its stream:
   * children (counted with shallow=true), then bytes of its value. */
  const LIVE_MAX_CHILDREN = Number(params.get("live_max")) || 1000;
  const LIVE_MAX_BYTES = 2 * 1024 * 1024;

  const view = (Hearth.view = { ns: null, path: "/", query: null, tree: null, stream: null });

  /* ---- status line ---- */

  Hearth.status = function (text, isError) {
    const s = $("status");
    s.textContent = text || "";
    s.classList.toggle("error", !!isError);
  };

  /* ---- deep links ---- */

  function parseHash() {
    const segs = location.hash.replace(/^#\/?/, "").split("/").filter((s) => s.length).map(decodeURIComponent);
    return { ns: segs.shift() || null, path: "/" + segs.join("/") };
  }

  Hearth.linkTo = (ns, path) =>
    "#/" + encodeURIComponent(ns) + (path === "/" ? "/" : Hearth.segments(path).map(encodeURIComponent).map((s) => "/" + s).join(""));

  Hearth.go = function (ns, path) {
    const target = Hearth.linkTo(ns, path);
    if (location.hash === target) show();
    else location.hash = target;
  };

  /* ---- breadcrumbs: links, and a field to type a path into ---- */

  function drawCrumbs() {
    const nav = $("crumbs");
    nav.textContent = "";
    let path = "/";
    const crumb = (label, p) => {
      const a = document.createElement("a");
      a.href = Hearth.linkTo(view.ns, p);
      a.textContent = label;
      nav.appendChild(a);
    };
    crumb(view.ns, "/");
    for (const s of Hearth.segments(view.path)) {
      path = Hearth.join(path, s);
      nav.appendChild(document.createTextNode(" / "));
      crumb(s, path);
    }
    $("path-input").value = view.path;
  }

  /* ---- the node in view ---- */

  function closeStream() {
    if (view.stream) view.stream.close();
    view.stream = null;
  }

  function queryParams(q) {
    if (!q) return {};
    const p = { orderBy: JSON.stringify(q.orderBy) };
    for (const k of ["equalTo", "startAt", "endAt", "limitToFirst", "limitToLast"]) if (q[k] !== undefined) p[k] = q[k];
    return p;
  }

  function setMode(text) {
    const m = $("mode");
    m.hidden = !text;
    m.textContent = text || "";
  }

  function newTree(readOnly) {
    view.tree = new Hearth.Tree($("tree"), {
      ns: view.ns,
      path: view.path,
      query: view.query,
      readOnly,
      actions: Hearth.actions,
    });
    return view.tree;
  }

  function readOnly(shallow, why) {
    closeStream();
    setMode(why + " It is shown read-only and without live updates: open a child to edit it.");
    newTree(true).showShallow(shallow);
  }

  async function show() {
    const where = parseHash();
    if (!where.ns) {
      Hearth.go(view.ns || "default", "/");
      return;
    }
    closeStream();
    const nsChanged = where.ns !== view.ns;
    /* A filter belongs to the node it was set on. */
    if (nsChanged || where.path !== view.path) Hearth.resetQuery();
    view.ns = where.ns;
    view.path = where.path;
    if (nsChanged) Hearth.nsChanged();
    drawCrumbs();
    setMode(null);
    Hearth.status("Loading " + view.path + "…");
    $("tree").textContent = "";
    let shallow;
    try {
      shallow = view.query ? null : await Hearth.get(view.ns, view.path, { shallow: "true" });
    } catch (e) {
      failed(e);
      return;
    }
    const children = Hearth.isObject(shallow) ? Object.keys(shallow).length : 0;
    if (children > LIVE_MAX_CHILDREN) {
      readOnly(shallow, "This node has " + children + " children, more than " + LIVE_MAX_CHILDREN + ".");
      Hearth.status("");
      return;
    }
    follow();
  }

  /* Live: the stream's first put is the whole value, later events the
   * changes. */
  function follow() {
    const tree = newTree(false);
    let first = true;
    const at = view.path;
    view.stream = Hearth.stream(view.ns, view.path, queryParams(view.query), (kind, path, data) => {
      if (view.tree !== tree) return;
      if (first && kind === "put" && path === "/") {
        first = false;
        const size = JSON.stringify(data).length;
        if (size > LIVE_MAX_BYTES) {
          readOnly(shallowOf(data), "This node holds " + size + " bytes, more than " + LIVE_MAX_BYTES + ".");
          return;
        }
        Hearth.status("Live: " + at);
        tree.setValue(data);
        return;
      }
      let v = tree.value;
      if (kind === "put") v = Hearth.setAt(v, path, data);
      else for (const k of Object.keys(data || {})) v = Hearth.setAt(v, Hearth.join(path, k), data[k]);
      tree.setValue(v);
    }, (why) => {
      if (why) Hearth.status("Stream ended: " + why, true);
      else Hearth.status("Reconnecting…", true);
    });
  }

  function shallowOf(v) {
    if (!Hearth.isObject(v)) return v;
    const out = Hearth.object();
    for (const k of Object.keys(v)) out[k] = Hearth.isObject(v[k]) ? true : v[k];
    return out;
  }

  function failed(e) {
    if (e.status === 401) askCredential("The server refused the credential: " + e.message);
    else Hearth.status(e.message, true);
  }

  Hearth.refreshView = show;

  /* ---- what the tree's buttons and keys do ---- */

  Hearth.actions = {
    status: Hearth.status,
    open: (path) => Hearth.go(view.ns, path),
    add: (path) => Hearth.openAdd(path),
    async remove(path) {
      if (path === "/" && !confirm("Delete everything in namespace " + view.ns + "?")) return;
      try {
        await Hearth.remove(view.ns, path);
        Hearth.status("Deleted " + path);
      } catch (e) {
        failed(e);
      }
    },
    async save(path, value) {
      try {
        await Hearth.put(view.ns, path, value);
        Hearth.status("Saved " + path);
        return true;
      } catch (e) {
        failed(e);
        return false;
      }
    },
  };

  /* ---- namespaces ---- */

  async function loadNamespaces() {
    const picker = $("ns-picker");
    let names = [];
    try {
      names = await Hearth.settings("namespaces");
    } catch (e) {
      failed(e);
    }
    if (view.ns && !names.includes(view.ns)) names.push(view.ns);
    picker.textContent = "";
    for (const n of names) {
      const o = document.createElement("option");
      o.value = o.textContent = n;
      picker.appendChild(o);
    }
    picker.value = view.ns;
  }

  Hearth.nsChanged = function () {
    const picker = $("ns-picker");
    if (!Array.from(picker.options).some((o) => o.value === view.ns)) {
      const o = document.createElement("option");
      o.value = o.textContent = view.ns;
      picker.appendChild(o);
    }
    picker.value = view.ns;
    Hearth.panelsNsChanged();
  };

  /* ---- the credential ---- */

  function askCredential(why) {
    closeStream();
    $("login").hidden = false;
    Hearth.status(why || "Sign in with the admin credential", true);
    $("login-secret").focus();
  }

  function start() {
    if (!Hearth.credential()) {
      askCredential();
      return;
    }
    $("login").hidden = true;
    loadNamespaces().then(() => show());
  }

  document.addEventListener("DOMContentLoaded", () => {
    $("login").addEventListener("submit", (e) => {
      e.preventDefault();
      Hearth.setCredential($("login-secret").value);
      $("login-secret").value = "";
      start();
    });
    $("ns-picker").addEventListener("change", (e) => Hearth.go(e.target.value, "/"));
    $("path-input").addEventListener("keydown", (e) => {
      if (e.key !== "Enter") return;
      e.preventDefault();
      const typed = e.target.value.trim() || "/";
      Hearth.go(view.ns, typed.startsWith("/") ? typed : "/" + typed);
    });
    window.addEventListener("hashchange", show);
    Hearth.initPanels();
    start();
  });
})();
