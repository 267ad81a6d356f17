// The inbox: the six views with their counts, a window of the list (newest first, 100 at a
// time), a notification's detail, the center's keys, buttons and swipes for touch. The state
// and what the network says live here; what a notification says, which view holds it and what
// a gesture means are model.js's, the page's pieces views.js's.

import { api } from "./api.js";
import * as gestures from "./gestures.js";
import { command, HELP } from "./keys.js";
import { follow } from "./live.js";
import { inverse, fromHash, PAGE, statusLine, title, VIEWS, safeLink } from "./model.js";
import * as push from "./push.js";
import * as list from "./state.js";
import { detail, element, frame, hint, row, savedTab, tabLabel, touchOnly } from "./views.js";

export class Inbox {
  // `first`: Unread's first window, asked for beside `me` (a promise), or null.
  constructor(root, me, first = null) {
    this.root = root;
    this.first = first;
    this.me = me;
    // The list's state (state.js): its view, search, rows, selection.
    this.state = list.initial;
    this.counts = {};
    // Saved views (PROTOCOL.md §17): tabs after All, each All with its search.
    this.saved = [];
    this.undo = [];
    this.connection = "connecting";
    this.detail = null;
    // A touch screen with no mouse: no key hints, and the rows swipe.
    this.touch = touchOnly();
    document.documentElement.classList.toggle("touch", this.touch);
    this.build();
    document.addEventListener("keydown", (event) => this.key(event));
    this.waiting = 0;
    api.setOwner(me.id);
    this.stop = follow(() => this.refresh(), (state) => this.setConnection(state));
    // What waits in the outbox is tried again now and then, also while the doorbell is up.
    this.retry = setInterval(() => { if (this.waiting) this.flushOutbox(); }, 15_000);
    // What an earlier page left waiting (made offline, then closed) is counted at once.
    this.noteWaiting();
    const wanted = fromHash(location.hash).open;
    if (wanted) this.open(wanted);
  }

  build() {
    const page = frame(this.touch, {
      view: (view) => this.switchTo(view),
      command: (key) => this.command(key),
      more: () => this.loadMore(),
      push: () => this.enablePush(),
      signOut: () => this.signOut(),
    });
    Object.assign(this, page.parts);
    // The service searches the whole view (title, body, app, group), not only the rows loaded
    // here: a pause in typing asks it again, from the first page.
    this.search.addEventListener("input", () => {
      clearTimeout(this.searchTimer);
      this.searchTimer = setTimeout(() => {
        const next = list.searched(this.state, this.search.value.trim());
        if (next === this.state) return;
        this.state = next;
        this.refresh();
      }, 150);
    });
    gestures.follow(this.list, {
      open: (id) => {
        this.state = list.selected(this.state, id);
        this.open(id);
      },
      swiped: (id, outcome) => {
        const n = this.state.rows.find((candidate) => candidate.id === id);
        if (!n) return;
        this.act(() => this.change(n, outcome === "dismiss" ? { userActionState: "Dismissed" } : { readState: n.readState === "Read" ? "Unread" : "Read" }));
      },
    });
    this.root.replaceChildren(...page.children);
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
      const asked = this.state;
      const size = list.windowSize(asked);
      const search = list.query(asked, this.saved);
      // The first time, the window app.js asked for with `me` (when it is still the one wanted).
      const early = this.first && asked.view === "unread" && !search && size === PAGE ? this.first : null;
      this.first = null;
      const page = (await early?.catch(() => null)) ?? (await api.list(asked.view, size, 0, search));
      const pending = await api.pending();
      // Another view or search was chosen meanwhile: its own fetch follows.
      if (this.state.view !== asked.view || this.state.savedName !== asked.savedName || this.state.filter !== asked.filter) return;
      this.state = list.listed(this.state, page.value, size, pending, Date.now());
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
      if (this.state.savedName && !saved.some((view) => view.name === this.state.savedName)) {
        this.state = list.switched(this.state, "all");
        this.refreshList();
      }
      this.renderTabs();
    });
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
    const page = await api.list(this.state.view, PAGE, this.state.rows.length, list.query(this.state, this.saved));
    this.state = list.appended(this.state, page.value);
    this.render();
  }

  switchTo(view) {
    this.state = list.switched(this.state, view);
    this.refresh();
  }

  // A saved view's tab: All with its search.
  switchToSaved(name) {
    this.state = list.switchedToSaved(this.state, name);
    this.refreshList();
    this.renderTabs();
  }

  renderTabs() {
    VIEWS.forEach((view, index) => {
      this.tabButtons[index].textContent = tabLabel(view, this.counts[view]);
      this.tabButtons[index].setAttribute("aria-pressed", String(view === this.state.view && !this.state.savedName));
    });
    this.savedTabs.replaceChildren(
      ...this.saved.map((view, index) =>
        savedTab(view, { index, pressed: view.name === this.state.savedName, touch: this.touch, onclick: () => this.switchToSaved(view.name) }),
      ),
    );
  }

  render() {
    this.renderTabs();
    const { rows, selected, savedName, view, filter, more } = this.state;
    const now = Date.now();
    // A row focused (by Tab, or a screen reader) keeps the focus when the list is drawn again.
    const focused = this.list.contains(document.activeElement) ? document.activeElement.closest(".row")?.dataset.id : null;
    this.list.replaceChildren(...rows.map((n, index) => row(n, { selected: index === selected, now })));
    if (focused) this.list.querySelector(`.row[data-id="${CSS.escape(focused)}"] button`)?.focus({ preventScroll: true });
    if (rows.length === 0) {
      const place = savedName ?? view;
      this.list.append(element("li", { class: "empty", text: filter ? `Nothing in ${place} matches “${filter}”` : `Nothing in ${place}` }));
    }
    this.moreButton.hidden = !more;
    this.list.querySelector('[aria-current="true"]')?.scrollIntoView({ block: "nearest" });
    this.renderDetail();
    this.renderStatus();
  }

  renderStatus() {
    this.status.textContent = statusLine({ user: this.me.userName, connection: this.connection, waiting: this.waiting, message: this.message });
  }

  // Opens a notification (read, as opening one in the center does). Offline, the row's copy.
  async open(id) {
    this.reading = true;
    try {
      this.detail = await api.one(id);
    } catch (error) {
      this.detail = this.state.rows.find((n) => n.id === id) ?? null;
      if (!this.detail) this.message = error.message;
    }
    try {
      if (this.detail?.readState === "Unread") await this.change(this.detail, { readState: "Read" });
    } catch (error) {
      this.message = error.message;
    }
    this.render();
    this.pane.querySelector("h2")?.focus();
  }

  // Back from a notification to the list (on a phone the detail is the whole screen).
  closeDetail() {
    const id = this.detail?.id;
    this.detail = null;
    this.reading = false;
    this.render();
    this.list.querySelector(`[data-id="${CSS.escape(id ?? "")}"] button`)?.focus();
  }

  renderDetail() {
    this.root.classList.toggle("reading", Boolean(this.reading && this.detail));
    const n = this.detail;
    if (!n) {
      this.pane.replaceChildren(hint(this.touch));
      return;
    }
    this.pane.replaceChildren(
      ...detail(
        n,
        {
          change: (fields) => this.act(() => this.change(n, fields)),
          remove: () => this.act(() => this.remove(n)),
          action: (index) => this.runAction(n.id, index),
          back: () => this.closeDetail(),
        },
        Date.now(),
      ),
    );
    this.pane.querySelector("h2").tabIndex = -1;
  }

  // A change from a button or a swipe: shown at once, then the service's word.
  async act(work) {
    try {
      await work();
    } catch (error) {
      this.message = error.message;
    }
    this.render();
    this.refresh();
  }

  async remove(n) {
    if (!confirm(`Delete "${title(n)}" on every device?`)) return;
    await api.remove(n.id);
    this.undo = this.undo.filter((entry) => entry.id !== n.id);
    this.state = list.removed(this.state, n.id);
    if (this.detail?.id === n.id) {
      this.detail = null;
      this.reading = false;
    }
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
    return this.state.rows[this.state.selected];
  }

  // The center's keys (README, "Keys in the notification center"; keys.js says which is which).
  key(event) {
    const typing = event.target instanceof HTMLInputElement;
    const wanted = command(
      { key: event.key, ctrlKey: event.ctrlKey, metaKey: event.metaKey, altKey: event.altKey, typing, onButton: event.target instanceof HTMLButtonElement, open: Boolean(this.detail) },
      Math.min(3, this.saved.length),
    );
    if (!wanted) return;
    if (wanted.leaveSearch) return event.target.blur();
    if (wanted.close) return this.closeDetail();
    if (wanted.view) return this.switchTo(wanted.view);
    if (wanted.saved !== undefined) return this.switchToSaved(this.saved[wanted.saved].name);
    event.preventDefault();
    if (wanted.search) return this.search.focus();
    if (wanted.help) return alert(HELP);
    this.command(wanted.key);
  }

  async command(key) {
    if (key === "j") this.state = list.moved(this.state, 1);
    else if (key === "k") this.state = list.moved(this.state, -1);
    else if (key === "u") return this.undoLast();
    const n = this.current();
    if (key === "Enter" && n) return this.open(n.id);
    if (!["d", "r", "a", "s", "x"].includes(key)) return this.render();
    return this.act(async () => {
      if (!n) return;
      if (key === "d") await this.change(n, { userActionState: "Dismissed" });
      if (key === "r") await this.change(n, { readState: n.readState === "Read" ? "Unread" : "Read" });
      if (key === "a") {
        await this.change(n, { userActionState: "Activated", readState: "Read" });
        const link = n.launchUrl && safeLink(n.launchUrl);
        if (link) window.open(link, "_blank", "noopener,noreferrer");
      }
      if (key === "s") await this.change(n, { userActionState: "Snoozed", snoozedUntil: new Date(Date.now() + 3600_000).toISOString() });
      if (key === "x") await this.remove(n);
    });
  }

  // A change of state, undoable with u: kept in the outbox until the service has it, shown as
  // made meanwhile; a row it moves out of the view leaves the list at once.
  async change(n, fields) {
    const changed = (await api.change(n.id, fields)) ?? { ...n, ...fields };
    this.undo.push({ id: n.id, fields: inverse(n, fields) });
    this.noteWaiting();
    if (this.detail?.id === n.id) this.detail = changed;
    this.state = list.changed(this.state, n.id, changed, fields, Date.now());
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
    // What was kept for opening offline is this user's: not the next one's.
    await api.forgetOffline();
    location.reload();
  }
}
