// The inbox: the six views with their counts, a window of the list (newest first, 100 at a
// time), a notification's detail, the center's keys, buttons for touch. Everything from the
// network is put on the page as text (textContent), never as markup.

import { api } from "./api.js";
import { follow } from "./live.js";
import * as push from "./push.js";

const VIEWS = ["unread", "read", "activated", "dismissed", "snoozed", "all"];
const PAGE = 100;

function element(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes)) {
    if (key === "text") node.textContent = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value);
  }
  for (const child of children) if (child) node.append(child);
  return node;
}

function title(n) {
  return n.payload?.visualContent?.title ?? n.payload?.rawContent ?? "(no text)";
}

function body(n) {
  const visual = n.payload?.visualContent;
  return visual ? visual.body ?? "" : "";
}

function ago(iso) {
  const seconds = Math.max(0, (Date.now() - Date.parse(iso)) / 1000);
  if (seconds < 60) return "now";
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m`;
  if (seconds < 86400) return `${Math.floor(seconds / 3600)}h`;
  return `${Math.floor(seconds / 86400)}d`;
}

function stateWords(n) {
  const read = n.readState === "Read" ? "Read" : "Unread";
  if (n.snoozedUntil && Date.parse(n.snoozedUntil) > Date.now()) return `${read} · snoozed`;
  if (n.userActionState === "Dismissed") return `${read} · dismissed`;
  if (n.userActionState === "Activated") return `${read} · opened`;
  return read;
}

function safeLink(url) {
  try {
    const parsed = new URL(url);
    return parsed.protocol === "https:" || parsed.protocol === "http:" ? parsed.href : null;
  } catch {
    return null;
  }
}

export class Inbox {
  constructor(root, me) {
    this.root = root;
    this.me = me;
    this.view = "unread";
    this.rows = [];
    this.counts = {};
    this.selected = 0;
    this.more = false;
    this.filter = "";
    // Saved views (PROTOCOL.md §17): tabs after All, each All with its search.
    this.saved = [];
    this.savedName = null;
    this.undo = [];
    this.connection = "connecting";
    this.detail = null;
    this.build();
    document.addEventListener("keydown", (event) => this.key(event));
    this.waiting = 0;
    api.setOwner(me.id);
    this.stop = follow(() => this.refresh(), (state) => this.setConnection(state));
    // What waits in the outbox is tried again now and then, also while the doorbell is up.
    this.retry = setInterval(() => { if (this.waiting) this.flushOutbox(); }, 15_000);
    const wanted = decodeURIComponent(location.hash.slice(1));
    if (wanted) this.open(wanted);
  }

  build() {
    this.tabs = element("nav", { class: "tabs", "aria-label": "Views" });
    this.tabButtons = VIEWS.map((view, index) => {
      const button = element("button", { type: "button", class: "tab", "data-view": view, onclick: () => this.switchTo(view) });
      button.title = `${view} (${index + 1})`;
      this.tabs.append(button);
      return button;
    });
    this.savedTabs = element("span", { class: "saved-tabs" });
    this.tabs.append(this.savedTabs);
    this.search = element("input", { type: "search", class: "search", placeholder: "Search (/)", "aria-label": "Search" });
    // The service searches the whole view (title, body, app, group), not only the rows loaded
    // here: a pause in typing asks it again, from the first page.
    this.search.addEventListener("input", () => {
      clearTimeout(this.searchTimer);
      this.searchTimer = setTimeout(() => {
        const text = this.search.value.trim();
        if (text === this.filter) return;
        this.filter = text;
        this.rows = [];
        this.selected = 0;
        this.refresh();
      }, 150);
    });
    this.list = element("ul", { class: "list", role: "listbox", "aria-label": "Notifications" });
    this.moreButton = element("button", { type: "button", class: "more", text: "Load more", onclick: () => this.loadMore() });
    this.pane = element("section", { class: "detail", "aria-label": "Notification" });
    this.status = element("p", { class: "status", role: "status" });
    this.pushButton = element("button", { type: "button", class: "push", text: "Turn on notifications", onclick: () => this.enablePush() });
    const signOut = element("button", { type: "button", class: "signout", text: "Sign out", onclick: () => this.signOut() });
    const bar = element("header", { class: "bar" }, element("strong", { text: "notty" }), this.search, this.pushButton, signOut);
    const actions = element(
      "div",
      { class: "actions", "aria-label": "Act on the selected notification" },
      ...[
        ["Read", "r"], ["Dismiss", "d"], ["Open", "a"], ["Snooze 1h", "s"], ["Delete", "x"], ["Undo", "u"],
      ].map(([label, key]) => element("button", { type: "button", "data-key": key, text: label, "aria-label": `${label} (${key})`, onclick: () => this.command(key) })),
    );
    this.root.replaceChildren(bar, this.tabs, actions, element("div", { class: "panes" }, element("div", { class: "column" }, this.list, this.moreButton), this.pane), this.status);
    push.isEnabled().then((on) => { this.pushButton.hidden = on || !push.supported(); });
    this.refresh();
  }

  setConnection(state) {
    this.connection = state;
    this.renderStatus();
    // Back in touch: what waits in the outbox goes first, then the lists are fetched again.
    if (state === "live") this.flushOutbox();
  }

  async flushOutbox() {
    try {
      this.waiting = await api.flush();
    } catch (error) {
      this.message = error.message;
    }
    this.renderStatus();
  }

  // How many changes made here wait for the network, in the status line.
  async noteWaiting() {
    this.waiting = await api.waiting();
    this.renderStatus();
  }

  // The list and the counts are fetched again each on its own: one fetch of each at a time, a
  // ring meanwhile asking for one more after it. The list (a window of the view: 100 rows) is
  // drawn as soon as it comes; the counts, which cost the service more at 100,000, fill the
  // tabs when they come, and a slow one never holds the list back.
  refresh() {
    return Promise.all([this.refreshList(), this.refreshCounts()]);
  }

  refreshList() {
    return this.single("list", async () => {
      const size = Math.max(PAGE, this.rows.length);
      const page = await api.list(this.view, size, 0, this.query());
      const selectedId = this.rows[this.selected]?.id;
      this.rows = page.value;
      this.more = page.value.length >= size;
      const index = this.rows.findIndex((n) => n.id === selectedId);
      this.selected = index >= 0 ? index : Math.min(this.selected, Math.max(0, this.rows.length - 1));
      this.render();
    });
  }

  refreshCounts() {
    return this.single("counts", async () => {
      this.counts = await api.counts();
      // The saved views come with the preferences; each one's count is its search's All.
      const preferences = (await api.preferences()).preferences ?? [];
      const saved = preferences
        .filter((entry) => entry.key.startsWith("view.") && typeof entry.value?.query === "string")
        .map((entry) => ({ name: entry.key.slice(5), query: entry.value.query, count: null }))
        .sort((a, b) => a.name.localeCompare(b.name));
      for (const view of saved) {
        try {
          view.count = (await api.counts(view.query)).all;
        } catch {
          view.count = null;
        }
      }
      this.saved = saved;
      // A saved view removed elsewhere leaves its tab for All.
      if (this.savedName && !saved.some((view) => view.name === this.savedName)) {
        this.savedName = null;
        this.rows = [];
        this.refreshList();
      }
      this.renderTabs();
    });
  }

  // What the list asks the service for: the saved view's search and the search box's.
  query() {
    const saved = this.saved.find((view) => view.name === this.savedName)?.query ?? "";
    return [saved, this.filter].filter(Boolean).join(" ");
  }

  // Runs `fetch` now, or once more after the one under way; an error shows in the status line.
  single(name, fetch) {
    const state = (this.fetching ??= {})[name] ??= { running: null, again: false };
    if (state.running) {
      state.again = true;
      return state.running;
    }
    state.running = (async () => {
      do {
        state.again = false;
        // Each fetch clears only its own error: a search refused (the list's) stays shown while
        // the counts come in fine.
        try {
          await fetch();
          if (this.messageFrom === name) this.message = null;
        } catch (error) {
          this.message = error.message;
          this.messageFrom = name;
        }
        this.renderStatus();
      } while (state.again);
      state.running = null;
    })();
    return state.running;
  }

  async loadMore() {
    const page = await api.list(this.view, PAGE, this.rows.length, this.query());
    this.rows = this.rows.concat(page.value);
    this.more = page.value.length >= PAGE;
    this.render();
  }

  switchTo(view) {
    this.view = view;
    this.savedName = null;
    this.rows = [];
    this.selected = 0;
    this.refresh();
  }

  // A saved view's tab: All with its search.
  switchToSaved(name) {
    this.view = "all";
    this.savedName = name;
    this.rows = [];
    this.selected = 0;
    this.refreshList();
    this.renderTabs();
  }

  renderTabs() {
    VIEWS.forEach((view, index) => {
      const button = this.tabButtons[index];
      button.textContent = `${view[0].toUpperCase()}${view.slice(1)} ${this.counts[view] ?? "…"}`;
      button.setAttribute("aria-pressed", String(view === this.view && !this.savedName));
    });
    this.savedTabs.replaceChildren(
      ...this.saved.map((view, index) => {
        const button = element("button", {
          type: "button", class: "tab saved", "data-saved": view.name, text: `${view.name} ${view.count ?? "…"}`,
          onclick: () => this.switchToSaved(view.name),
        });
        button.title = `${view.query}${index < 3 ? ` (${index + 7})` : ""}`;
        button.setAttribute("aria-pressed", String(view.name === this.savedName));
        return button;
      }),
    );
  }

  render() {
    this.renderTabs();
    const rows = this.rows;
    this.list.replaceChildren(
      ...rows.map((n, index) => {
        const item = element(
          "li",
          { role: "option", class: `row${n.readState === "Unread" ? " unread" : ""}`, "data-id": n.id, "aria-selected": String(index === this.selected) },
          element("span", { class: "mark", text: n.readState === "Unread" ? "●" : " " }),
          element("span", { class: "priority", text: n.priority === "High" ? "!" : " " }),
          element("span", { class: "age", text: ago(n.createdDateTime) }),
          element("span", { class: "app", text: (n.team ? `[${n.team}] ` : "") + n.targetHostName }),
          element("span", { class: "title", text: title(n) }),
        );
        item.addEventListener("click", () => {
          this.selected = index;
          this.open(n.id);
        });
        return item;
      }),
    );
    if (rows.length === 0) {
      const place = this.savedName ?? this.view;
      const text = this.filter ? `Nothing in ${place} matches “${this.filter}”` : `Nothing in ${place}`;
      this.list.append(element("li", { class: "empty", text }));
    }
    this.moreButton.hidden = !this.more;
    this.list.querySelector('[aria-selected="true"]')?.scrollIntoView({ block: "nearest" });
    this.renderDetail();
    this.renderStatus();
  }

  renderStatus() {
    const parts = [`${this.me.userName}`, this.connection];
    if (this.waiting) parts.push(`${this.waiting} change${this.waiting === 1 ? "" : "s"} waiting for the network`);
    if (this.message) parts.push(this.message);
    this.status.textContent = parts.join(" · ");
  }

  async open(id) {
    try {
      this.detail = await api.one(id);
      if (this.detail.readState === "Unread") {
        this.detail = (await api.change(id, { readState: "Read" })) ?? { ...this.detail, readState: "Read" };
        this.undo.push({ id, fields: { readState: "Unread" } });
        this.noteWaiting();
      }
    } catch (error) {
      this.message = error.message;
    }
    this.render();
  }

  renderDetail() {
    const n = this.detail;
    if (!n) {
      this.pane.replaceChildren(element("p", { class: "hint", text: "Enter opens the selected notification · ? for keys" }));
      return;
    }
    const lines = [
      element("h2", { text: title(n) }),
      body(n) ? element("p", { class: "body", text: body(n) }) : null,
      element("dl", {},
        ...(n.team ? [element("dt", { text: "Team" }), element("dd", { text: n.team })] : []),
        element("dt", { text: "App" }), element("dd", { text: n.targetHostName + (n.groupName ? ` · ${n.groupName}` : "") }),
        element("dt", { text: "When" }), element("dd", { text: new Date(n.createdDateTime).toLocaleString() }),
        element("dt", { text: "State" }), element("dd", { text: stateWords(n) }),
        ...(n.changedBy ? [element("dt", { text: "Handled" }), element("dd", { text: `by ${n.changedBy.user}${n.changedBy.device ? ` on ${n.changedBy.device}` : ""}, ${ago(n.changedBy.at)} ago` })] : []),
      ),
    ];
    const link = n.launchUrl && safeLink(n.launchUrl);
    if (link) lines.push(element("p", {}, element("a", { href: link, rel: "noopener noreferrer", target: "_blank", text: link })));
    (n.actions ?? []).forEach((action, index) => {
      lines.push(element("button", { type: "button", class: "action", text: action.label, onclick: () => this.runAction(n.id, index + 1) }));
    });
    for (const result of n.actionResults ?? []) {
      lines.push(element("p", { class: "outcome", text: `${result.label ?? "action"}: ${result.outcome ?? result.status ?? ""} ${result.device ? `by ${result.device}` : ""}` }));
    }
    for (const record of n.escalations ?? []) {
      lines.push(element("p", { class: "escalation", text: `Escalated: ${record.user ? `paged ${record.user} at ` : ""}${record.target} (${record.outcome})` }));
    }
    this.pane.replaceChildren(...lines.filter(Boolean));
  }

  async runAction(id, n) {
    try {
      await api.act(id, n);
      this.detail = await api.one(id);
    } catch (error) {
      this.message = error.message;
    }
    this.render();
  }

  current() {
    return this.rows[this.selected];
  }

  // The center's keys (README, "Keys in the notification center").
  key(event) {
    if (event.target instanceof HTMLInputElement) {
      if (event.key === "Escape") event.target.blur();
      return;
    }
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    const digit = Number(event.key);
    if (digit >= 1 && digit <= 6) return this.switchTo(VIEWS[digit - 1]);
    if (digit >= 7 && digit <= 9 && this.saved[digit - 7]) return this.switchToSaved(this.saved[digit - 7].name);
    if (event.key === "/") {
      event.preventDefault();
      return this.search.focus();
    }
    if (event.key === "?") return alert("j/k move · Enter open · d dismiss · r read/unread · a open link · s snooze 1h · x delete · u undo · / search (words, \"a phrase\", -not, app: group: is: priority: …) · 1–6 views · 7–9 saved views");
    if (["j", "k", "Enter", "ArrowDown", "ArrowUp", "d", "r", "a", "s", "x", "u"].includes(event.key)) {
      event.preventDefault();
      this.command(event.key);
    }
  }

  async command(key) {
    const rows = this.rows;
    if (key === "j" || key === "ArrowDown") this.selected = Math.min(this.selected + 1, rows.length - 1);
    else if (key === "k" || key === "ArrowUp") this.selected = Math.max(this.selected - 1, 0);
    else if (key === "u") return this.undoLast();
    const n = this.current();
    if (key === "Enter" && n) return this.open(n.id);
    if (n) {
      try {
        if (key === "d") await this.change(n, { userActionState: "Dismissed" }, { userActionState: n.userActionState });
        if (key === "r") await this.change(n, { readState: n.readState === "Read" ? "Unread" : "Read" }, { readState: n.readState });
        if (key === "a") {
          await this.change(n, { userActionState: "Activated", readState: "Read" }, { userActionState: n.userActionState, readState: n.readState });
          const link = n.launchUrl && safeLink(n.launchUrl);
          if (link) window.open(link, "_blank", "noopener,noreferrer");
        }
        if (key === "s") {
          const until = new Date(Date.now() + 3600_000).toISOString();
          await this.change(n, { userActionState: "Snoozed", snoozedUntil: until }, { userActionState: n.userActionState });
        }
        if (key === "x" && confirm(`Delete "${title(n)}" on every device?`)) {
          await api.remove(n.id);
          this.undo = this.undo.filter((entry) => entry.id !== n.id);
        }
      } catch (error) {
        this.message = error.message;
      }
    }
    this.render();
    if (["d", "r", "a", "s", "x"].includes(key)) this.refresh();
  }

  async change(n, fields, inverse) {
    // Null: kept in the outbox until the service can be reached; shown as made meanwhile.
    const changed = (await api.change(n.id, fields)) ?? { ...n, ...fields };
    this.undo.push({ id: n.id, fields: inverse });
    this.noteWaiting();
    if (this.detail?.id === n.id) this.detail = changed;
    // Gone from this view at once; the refresh that follows has the service's word.
    const index = this.rows.findIndex((row) => row.id === n.id);
    if (index >= 0) this.rows[index] = changed;
  }

  async undoLast() {
    const last = this.undo.pop();
    if (!last) return;
    try {
      await api.change(last.id, last.fields);
      this.noteWaiting();
    } catch (error) {
      this.message = error.message;
    }
    this.refresh();
  }

  async enablePush() {
    try {
      await push.enable();
      this.pushButton.hidden = true;
      this.message = "notifications on for this browser";
    } catch (error) {
      this.message = error.message;
    }
    this.renderStatus();
  }

  async signOut() {
    this.stop();
    try { await api.signOut(); } catch { /* signed out either way */ }
    location.reload();
  }
}
