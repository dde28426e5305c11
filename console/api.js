/* api.js - the console's only door to the server: its REST API with the
 * admin credential, and one EventSource opened with a stream ticket. Also the helpers the other
 * files share (paths, JSON, the service's key order). */
"use strict";

const Hearth = (window.Hearth = {});

/* ---- the credential: ?auth=ADMIN once, then sessionStorage ---- */

Hearth.credential = function () {
  const params = new URLSearchParams(location.search);
  const given = params.get("auth");
  if (given) {
    sessionStorage.setItem("hearth.auth", given);
    /* Off the address bar (and out of history) once kept. */
    params.delete("auth");
    const rest = params.toString();
    history.replaceState(null, "", location.pathname + (rest ? "?" + rest : "") + location.hash);
  }
  return sessionStorage.getItem("hearth.auth");
};

Hearth.setCredential = function (secret) {
  sessionStorage.setItem("hearth.auth", secret);
};

/* ---- paths ---- */

/* "/a/b" -> ["a", "b"]; "/" -> []. */
Hearth.segments = (path) => path.split("/").filter((s) => s.length);
Hearth.join = (path, key) => (path === "/" ? "" : path) + "/" + key;
Hearth.parent = (path) => {
  const s = Hearth.segments(path);
  s.pop();
  return "/" + s.join("/");
};
Hearth.lastKey = (path) => Hearth.segments(path).pop() || "/";

/* The REST URL of path with parameters (values already strings). */
Hearth.url = function (ns, path, params) {
  const q = new URLSearchParams(params || {});
  q.set("ns", ns);
  const enc = Hearth.segments(path).map(encodeURIComponent).join("/");
  return "/" + enc + ".json?" + q.toString();
};

/* A request with the admin credential, its body a value sent as JSON (or
 * text sent as it is, when raw); resolves to the parsed JSON answer,
 * rejects with an Error holding the server's words (and .status, .body). */
Hearth.request = async function (method, url, body, raw) {
  const init = { method, headers: { Authorization: "Bearer " + (Hearth.credential() || "") }, cache: "no-store" };
  if (body !== undefined) {
    init.body = raw ? body : JSON.stringify(body);
    init.headers["Content-Type"] = "application/json";
  }
  const res = await fetch(url, init);
  const text = await res.text();
  let parsed = null;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch (e) {
    parsed = text;
  }
  if (!res.ok) {
    const err = new Error((parsed && parsed.error) || res.status + " " + res.statusText);
    err.status = res.status;
    err.body = parsed;
    throw err;
  }
  return parsed;
};

Hearth.get = (ns, path, params) => Hearth.request("GET", Hearth.url(ns, path, params));
Hearth.put = (ns, path, value) => Hearth.request("PUT", Hearth.url(ns, path), value);
Hearth.patch = (ns, path, value) => Hearth.request("PATCH", Hearth.url(ns, path), value);
Hearth.post = (ns, path, value) => Hearth.request("POST", Hearth.url(ns, path), value);
Hearth.remove = (ns, path) => Hearth.request("DELETE", Hearth.url(ns, path));
Hearth.settings = (name, ns, method, body, raw) =>
  Hearth.request(method || "GET", "/.settings/" + name + ".json" + (ns ? "?ns=" + encodeURIComponent(ns) : ""), body, raw);

/* The one stream of the node in view. EventSource cannot send headers,
 * and a credential in a URL lands in every proxy's access log, so each
 * connection opens with a stream ticket: minted for this namespace and
 * path with the credential in a header, spent by the stream's request,
 * worthless after 30 s. On an error the stream is closed and opened
 * again with a new ticket (EventSource would retry with the spent one).
 * onEvent(kind, path, data); onError(why), why null while it reconnects.
 * Returns {close()}. */
const RECONNECT_MS = 1000;
Hearth.stream = function (ns, path, params, onEvent, onError) {
  let es = null, timer = null, closed = false;
  const retry = () => {
    onError(null);
    timer = setTimeout(open, RECONNECT_MS);
  };
  async function open() {
    let ticket;
    try {
      ticket = (await Hearth.settings("stream-ticket", ns, "POST", { path })).ticket;
    } catch (e) {
      if (closed) return;
      if (e.status) onError(e.message); /* refused: the credential */
      else retry(); /* the server is not reachable now */
      return;
    }
    if (closed) return;
    const q = new URLSearchParams(params || {});
    q.set("ticket", ticket);
    es = new EventSource(Hearth.url(ns, path, q));
    for (const kind of ["put", "patch"]) {
      es.addEventListener(kind, (e) => {
        const msg = JSON.parse(e.data);
        onEvent(kind, msg.path, msg.data);
      });
    }
    for (const kind of ["cancel", "auth_revoked"]) {
      es.addEventListener(kind, () => {
        es.close();
        onError(kind === "cancel" ? "the server ended the stream (rules)" : "the credential was revoked");
      });
    }
    es.onerror = () => {
      es.close();
      if (!closed) retry();
    };
  }
  open();
  return {
    close() {
      closed = true;
      clearTimeout(timer);
      if (es) es.close();
    },
  };
};

/* ---- values ---- */

Hearth.isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);

/* Keys are data: "constructor" or "__proto__" is a child like any other,
 * never an inherited property or the prototype. So a key is looked up
 * among the own properties only, and objects built here have no
 * prototype (setting "__proto__" on one makes a property). */
Hearth.has = (v, k) => v !== null && typeof v === "object" && Object.prototype.hasOwnProperty.call(v, k);
Hearth.child = (v, k) => (Hearth.has(v, k) ? v[k] : undefined);
Hearth.object = () => Object.create(null);

/* The child at a relative path of v (undefined when absent). */
Hearth.at = function (v, path) {
  for (const k of Hearth.segments(path)) {
    if (!Hearth.has(v, k)) return undefined;
    v = v[k];
  }
  return v;
};

/* v with the value at relative path replaced (null deletes), as the
 * streams' put events say; empty objects disappear, as in the service. */
Hearth.setAt = function (v, path, value) {
  const s = Hearth.segments(path);
  if (!s.length) return value;
  const copy = Hearth.object();
  if (v !== null && typeof v === "object") for (const key of Object.keys(v)) copy[key] = v[key];
  const [k] = s;
  const rest = "/" + s.slice(1).join("/");
  const child = Hearth.setAt(Hearth.has(copy, k) ? copy[k] : null, rest, value);
  if (child === null || (Hearth.isObject(child) && !Object.keys(child).length)) delete copy[k];
  else copy[k] = child;
  return Object.keys(copy).length ? copy : null;
};

Hearth.equal = (a, b) => JSON.stringify(a) === JSON.stringify(b);

/* The service's key order: integer-like keys first, numerically, then the
 * others as strings. */
const INT_KEY = /^-?(0|[1-9][0-9]{0,9})$/;
Hearth.compareKeys = function (a, b) {
  const ia = INT_KEY.test(a) && Math.abs(Number(a)) <= 2147483647;
  const ib = INT_KEY.test(b) && Math.abs(Number(b)) <= 2147483647;
  if (ia && ib) return Number(a) - Number(b) || (a < b ? -1 : a > b ? 1 : 0);
  if (ia !== ib) return ia ? -1 : 1;
  return a < b ? -1 : a > b ? 1 : 0;
};

/* Values in the service's order: null, false, true, numbers, strings,
 * objects (equal ones then by key). */
function rank(v) {
  if (v === null || v === undefined) return 0;
  if (v === false) return 1;
  if (v === true) return 2;
  if (typeof v === "number") return 3;
  if (typeof v === "string") return 4;
  return 5;
}
Hearth.compareValues = function (a, b) {
  const ra = rank(a), rb = rank(b);
  if (ra !== rb) return ra - rb;
  if (ra === 3) return a - b;
  if (ra === 4) return a < b ? -1 : a > b ? 1 : 0;
  return 0;
};

/* The keys of an object value, in the order the query asks for. */
Hearth.orderedKeys = function (value, query) {
  const keys = Object.keys(value || {});
  const by = query && query.orderBy;
  const of = (k) => (by === "$value" ? value[k] : Hearth.at(value[k], by || "/"));
  if (!by || by === "$key") return keys.sort(Hearth.compareKeys);
  return keys.sort((a, b) => Hearth.compareValues(of(a), of(b)) || Hearth.compareKeys(a, b));
};
