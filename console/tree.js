/* tree.js - the tree of the node in view. Every node is an element whose
 * data-path is its absolute path; a leaf's text is its value as JSON (its
 * key is drawn by the stylesheet, outside the text), and it is focusable:
 * Enter or a double click opens an inline editor (Enter saves, Escape
 * cancels). Children appear 50 at a time ("load more").
 *
 * Live mode holds the node's whole value, kept current by the page's one
 * stream; each change is shown in place and highlighted for 2 s (added,
 * changed, removed). Read-only mode (a node too large to follow) holds
 * nothing: each expanded node is read with shallow=true. */
"use strict";

(function () {
  const PAGE = 50;
  const FLASH_MS = 2000;

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function flash(e, kind) {
    e.classList.add(kind);
    setTimeout(() => e.classList.remove(kind), FLASH_MS);
  }

  /* A branch's element holds its row, then its children, then "more". */
  const parts = (node) => ({
    row: node.querySelector(":scope > .row"),
    kids: node.querySelector(":scope > .children"),
    more: node.querySelector(":scope > .more"),
  });

  class Tree {
    /* ctx: {ns, path, query, readOnly, actions: {status, open, add,
     * remove, save}}. */
    constructor(container, ctx) {
      this.container = container;
      this.ctx = ctx;
      this.value = null;
      this.expanded = new Set([ctx.path]);
      this.shown = new Map(); /* path -> children shown */
      this.container.textContent = "";
    }

    /* ---- live mode ---- */

    setValue(value) {
      const old = this.value;
      this.value = value === undefined ? null : value;
      if (!this.rootEl) {
        this.rootEl = this.render(this.ctx.path, this.value);
        this.container.appendChild(this.rootEl);
      } else {
        this.refresh(this.rootEl, this.ctx.path, old, this.value);
      }
    }

    /* ---- read-only mode ---- */

    showShallow(shallow) {
      this.rootEl = this.render(this.ctx.path, shallow);
      this.container.appendChild(this.rootEl);
    }

    /* ---- elements ---- */

    isBranch(value) {
      /* Read with shallow=true, a branch child is `true` (a leaf true
       * too: expanding tells). */
      return Hearth.isObject(value) || (this.ctx.readOnly && value === true);
    }

    render(path, value) {
      return this.isBranch(value) || (path === this.ctx.path && value === null)
        ? this.renderBranch(path, value)
        : this.renderLeaf(path, value);
    }

    renderLeaf(path, value) {
      const wrap = el("div", "entry");
      const leaf = el("div", "node leaf", JSON.stringify(value));
      leaf.dataset.path = path;
      leaf.dataset.key = Hearth.lastKey(path);
      leaf.tabIndex = 0;
      leaf.setAttribute("role", "treeitem");
      leaf.addEventListener("keydown", (e) => {
        if (e.target !== leaf) return;
        if (e.key === "Enter") {
          e.preventDefault();
          this.edit(leaf);
        } else if (e.key === "Delete") {
          this.ctx.actions.remove(path);
        }
      });
      leaf.addEventListener("dblclick", (e) => {
        if (e.target === leaf) this.edit(leaf);
      });
      wrap.appendChild(leaf);
      if (!this.ctx.readOnly) wrap.appendChild(this.button("del", "×", "Delete", () => this.ctx.actions.remove(path)));
      return wrap;
    }

    button(cls, text, title, onClick) {
      const b = el("button", cls, text);
      b.type = "button";
      b.title = title;
      b.addEventListener("click", onClick);
      return b;
    }

    renderBranch(path, value) {
      const node = el("div", "node branch");
      node.dataset.path = path;
      node.setAttribute("role", "treeitem");
      const row = el("div", "row");
      const toggle = this.button("toggle", "", "Expand or collapse", () => this.toggle(node, path));
      row.appendChild(toggle);
      row.appendChild(el("span", "key", Hearth.lastKey(path)));
      row.appendChild(el("span", "summary"));
      const actions = el("span", "actions");
      if (path !== this.ctx.path) actions.appendChild(this.button("open", "↗", "Open this node", () => this.ctx.actions.open(path)));
      if (!this.ctx.readOnly) {
        actions.appendChild(this.button("add", "+", "Add a child", () => this.ctx.actions.add(path)));
        actions.appendChild(this.button("del", "×", "Delete", () => this.ctx.actions.remove(path)));
      }
      row.appendChild(actions);
      node.appendChild(row);
      node.appendChild(el("div", "children"));
      this.summarize(node, value);
      /* Read-only, an expanded node's children are read again. */
      if (this.expanded.has(path) && this.ctx.readOnly && !Hearth.isObject(value)) this.fillShallow(node, path);
      else if (this.expanded.has(path)) this.fill(node, path, value);
      this.markExpanded(node, path);
      return node;
    }

    markExpanded(node, path) {
      const open = this.expanded.has(path);
      node.setAttribute("aria-expanded", String(open));
      parts(node).row.querySelector(".toggle").textContent = open ? "▾" : "▸";
    }

    summarize(node, value) {
      const n = Hearth.isObject(value) ? Object.keys(value).length : 0;
      parts(node).row.querySelector(".summary").textContent =
        value === null ? "(empty)" : Hearth.isObject(value) ? "{" + n + "}" : "";
    }

    async toggle(node, path) {
      if (this.expanded.has(path)) {
        this.expanded.delete(path);
        parts(node).kids.textContent = "";
        const more = parts(node).more;
        if (more) more.remove();
      } else {
        this.expanded.add(path);
        if (this.ctx.readOnly) await this.fillShallow(node, path);
        else this.fill(node, path, Hearth.at(this.value, this.rel(path)));
      }
      this.markExpanded(node, path);
    }

    /* A path relative to the node in view. */
    rel(path) {
      return path.slice(this.ctx.path === "/" ? 0 : this.ctx.path.length) || "/";
    }

    async fillShallow(node, path) {
      let shallow;
      try {
        shallow = await Hearth.get(this.ctx.ns, path, { shallow: "true" });
      } catch (e) {
        this.ctx.actions.status(e.message, true);
        return;
      }
      if (!Hearth.isObject(shallow)) { /* a leaf after all */
        node.replaceWith(this.renderLeaf(path, shallow));
        return;
      }
      this.summarize(node, shallow);
      this.fill(node, path, shallow);
    }

    /* Shows the first pages of value's children under node. */
    fill(node, path, value) {
      const { kids } = parts(node);
      kids.textContent = "";
      const keys = this.keysOf(path, value);
      const count = Math.min(keys.length, this.shown.get(path) || PAGE);
      const shown = keys.slice(0, count).map((k) => this.render(Hearth.join(path, k), value[k]));
      for (const child of shown) kids.appendChild(child);
      this.updateMore(node, path, value, keys.length - count);
      if (this.ctx.readOnly) this.resolve(shown.filter((c) => c.classList.contains("branch")));
    }

    /* Read with shallow=true every child is `true`: each shown one is read
     * the same way (a few at a time) to tell a leaf (its value) from a
     * branch (its count of children). */
    async resolve(branches) {
      const next = async () => {
        const node = branches.shift();
        if (!node) return;
        const path = node.dataset.path;
        try {
          const v = await Hearth.get(this.ctx.ns, path, { shallow: "true" });
          if (!node.isConnected) return next();
          if (Hearth.isObject(v)) this.summarize(node, v);
          else if (!this.expanded.has(path)) node.replaceWith(this.renderLeaf(path, v));
        } catch (e) {
          this.ctx.actions.status(e.message, true);
        }
        return next();
      };
      await Promise.all([next(), next(), next(), next()]);
    }

    keysOf(path, value) {
      if (!Hearth.isObject(value)) return [];
      return Hearth.orderedKeys(value, path === this.ctx.path ? this.ctx.query : null);
    }

    updateMore(node, path, value, left) {
      let { more } = parts(node);
      if (left <= 0) {
        if (more) more.remove();
        return;
      }
      if (!more) {
        more = this.button("more", "", "Show the next children", () => {
          this.shown.set(path, (this.shown.get(path) || PAGE) + PAGE);
          const v = this.ctx.readOnly ? null : Hearth.at(this.value, this.rel(path));
          if (this.ctx.readOnly) this.fillShallow(node, path);
          else this.fill(node, path, v);
        });
        node.appendChild(more);
      }
      more.textContent = "Load more (" + left + " more)";
    }

    /* ---- live changes ---- */

    /* Brings the element e (of path) from old to now, highlighting. */
    refresh(e, path, old, now) {
      if (Hearth.equal(old, now)) return e;
      const node = e.classList.contains("entry") ? e.firstChild : e;
      const wasBranch = node.classList.contains("branch");
      if (wasBranch !== (this.isBranch(now) || (path === this.ctx.path && now === null))) {
        const fresh = this.render(path, now);
        e.replaceWith(fresh);
        if (path === this.ctx.path) this.rootEl = fresh;
        flash(fresh.classList.contains("entry") ? fresh.firstChild : fresh, "changed");
        return fresh;
      }
      if (!wasBranch) {
        if (!node.querySelector(".editor")) node.textContent = JSON.stringify(now);
        flash(node, "changed");
        return e;
      }
      this.summarize(node, now);
      if (this.expanded.has(path)) this.refreshChildren(node, path, old, now);
      else flash(parts(node).row, "changed");
      return e;
    }

    refreshChildren(node, path, old, now) {
      const { kids } = parts(node);
      const byKey = new Map();
      for (const child of Array.from(kids.children)) {
        const p = (child.dataset.path ? child : child.firstChild).dataset.path;
        if (p) byKey.set(Hearth.lastKey(p), child);
      }
      const keys = this.keysOf(path, now);
      const count = Math.min(keys.length, this.shown.get(path) || PAGE);
      const wanted = keys.slice(0, count);
      const oldObj = Hearth.isObject(old) ? old : null;
      const next = [];
      for (const k of wanted) {
        const childPath = Hearth.join(path, k);
        let child = byKey.get(k);
        if (child) {
          child = this.refresh(child, childPath, Hearth.child(oldObj, k), now[k]);
          byKey.delete(k);
        } else {
          child = this.render(childPath, now[k]);
          if (!Hearth.has(oldObj, k)) flash(child.classList.contains("entry") ? child.firstChild : child, "added");
        }
        next.push(child);
      }
      /* What is gone stays a moment, struck out, without its data-path. */
      for (const [k, child] of byKey) {
        if (Hearth.isObject(now) && Hearth.has(now, k)) {
          child.remove(); /* paged out, not removed */
          continue;
        }
        for (const n of [child, ...child.querySelectorAll("[data-path]")]) {
          if (n.dataset.path) {
            n.dataset.removedPath = n.dataset.path;
            delete n.dataset.path;
            n.classList.add("removed");
          }
        }
        child.classList.add("removed");
        setTimeout(() => child.remove(), FLASH_MS);
      }
      /* In order, moving only what is out of place (a moved element
       * loses the focus). */
      let at = kids.firstChild;
      for (const child of next) {
        while (at && at.classList.contains("removed")) at = at.nextSibling;
        if (at !== child) kids.insertBefore(child, at);
        else at = at.nextSibling;
      }
      this.updateMore(node, path, now, keys.length - count);
    }

    /* ---- editing ---- */

    edit(leaf) {
      if (this.ctx.readOnly) {
        this.ctx.actions.status("Read-only: open a smaller node to edit", true);
        return;
      }
      if (leaf.querySelector(".editor")) return;
      const before = leaf.textContent;
      const input = el("input", "editor");
      input.value = before;
      input.spellcheck = false;
      input.setAttribute("aria-label", "JSON value of " + leaf.dataset.path);
      leaf.textContent = "";
      leaf.appendChild(input);
      input.focus();
      input.select();
      const close = (text) => {
        leaf.textContent = text;
        leaf.focus();
      };
      input.addEventListener("keydown", async (e) => {
        if (e.key === "Escape") {
          e.preventDefault();
          close(before);
        } else if (e.key === "Enter") {
          e.preventDefault();
          let value;
          try {
            value = JSON.parse(input.value);
          } catch (err) {
            input.classList.add("invalid");
            this.ctx.actions.status("Not JSON: " + err.message, true);
            return;
          }
          if (await this.ctx.actions.save(leaf.dataset.path, value)) close(JSON.stringify(value));
        }
      });
      input.addEventListener("blur", () => {
        if (input.isConnected) close(before);
      });
    }
  }

  Hearth.Tree = Tree;
})();
