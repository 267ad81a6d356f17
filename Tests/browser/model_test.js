// The web inbox's pure modules (Resources/web/model.js, state.js, keys.js, views.js), tested in Chromium: a page of
// the service evaluates this (Tests/browser/web_phone.py), which imports them as the app does and
// answers the failures ([] when all held) and how many checks ran.
async () => {
  const model = await import("/web/model.js");
  const views = await import("/web/views.js");
  const keys = await import("/web/keys.js");
  const list = await import("/web/state.js");
  const failures = [];
  let checks = 0;
  const equal = (got, want, what) => {
    checks += 1;
    if (JSON.stringify(got) !== JSON.stringify(want)) failures.push(`${what}: got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
  };
  const now = Date.parse("2026-12-07T12:00:00Z");
  const later = new Date(now + 3600_000).toISOString();
  const earlier = new Date(now - 3600_000).toISOString();
  const n = (fields) => ({ id: "a", readState: "Unread", userActionState: "NoInteraction", createdDateTime: earlier, targetHostName: "ci.example.com", payload: { visualContent: { title: "Build failed", body: "main is red" } }, ...fields });

  // Which view holds what (PROTOCOL.md §1).
  const table = [
    [{}, ["unread", "all"]],
    [{ readState: "Read" }, ["read", "all"]],
    [{ userActionState: "Activated", readState: "Read" }, ["activated", "all"]],
    [{ userActionState: "Dismissed" }, ["dismissed", "all"]],
    [{ userActionState: "Snoozed", snoozedUntil: later }, ["snoozed", "all"]],
    [{ userActionState: "Snoozed", snoozedUntil: earlier }, ["unread", "all"]],
    [{ userActionState: "Snoozed", snoozedUntil: earlier, readState: "Read" }, ["read", "all"]],
  ];
  for (const [fields, want] of table) {
    equal(model.VIEWS.filter((view) => model.inView(n(fields), view, now)), want, `views of ${JSON.stringify(fields)}`);
  }

  // Changes waiting in the outbox made on a list: a dismissed row leaves Unread, a read one
  // stays in All as read, two changes of one row add up, other rows are untouched.
  const rows = [n({ id: "a" }), n({ id: "b" }), n({ id: "c" })];
  const pending = [{ id: "a", fields: { userActionState: "Dismissed" } }, { id: "b", fields: { readState: "Read" } }];
  equal(model.withPending(rows, pending, "unread", now).map((row) => row.id), ["c"], "unread with pending");
  equal(model.withPending(rows, pending, "all", now).map((row) => [row.id, row.readState, row.userActionState]),
    [["a", "Unread", "Dismissed"], ["b", "Read", "NoInteraction"], ["c", "Unread", "NoInteraction"]], "all with pending");
  equal(model.withPending(rows, [...pending, { id: "a", fields: { userActionState: "NoInteraction" } }], "unread", now).map((row) => row.id),
    ["a", "c"], "a dismiss undone while waiting");
  equal(model.withPending(rows, [], "unread", now) === rows, true, "nothing waiting: the same list");

  // The undo of a change: the fields as they were.
  equal(model.inverse(n({}), { userActionState: "Dismissed" }), { userActionState: "NoInteraction" }, "undo of a dismiss");
  equal(model.inverse(n({ readState: "Read" }), { readState: "Unread" }), { readState: "Read" }, "undo of unread");
  equal(model.inverse(n({}), { userActionState: "Snoozed", snoozedUntil: later }), { userActionState: "NoInteraction", snoozedUntil: null }, "undo of a snooze");

  // A swipe: far and sideways enough, left dismisses, right reads.
  equal(model.swipe(-150, 10, 390), "dismiss", "a long swipe left");
  equal(model.swipe(150, -20, 390), "read", "a long swipe right");
  equal(model.swipe(-100, 0, 390), null, "short of a third of the row");
  equal(model.swipe(-200, 150, 390), null, "more a scroll than a swipe");
  equal(model.swipe(-70, 0, 120), "dismiss", "a narrow row: at least 64 px");

  // The address: a one-time sign-in, a notification, nothing.
  equal(model.fromHash("#signin=abc-DEF_1"), { signin: "abc-DEF_1" }, "a sign-in link");
  equal(model.fromHash("#n%2F1"), { open: "n/1" }, "a notification");
  equal(model.fromHash(""), {}, "nothing");
  equal(model.fromHash("#%E0%A4%A"), {}, "a broken escape");

  // Words.
  equal(model.ago(new Date(now - 30_000).toISOString(), now), "now", "seconds");
  equal(model.ago(new Date(now - 5 * 60_000).toISOString(), now), "5m", "minutes");
  equal(model.ago(new Date(now - 3 * 3600_000).toISOString(), now), "3h", "hours");
  equal(model.ago(new Date(now - 2 * 86400_000).toISOString(), now), "2d", "days");
  equal(model.title({ payload: { rawContent: "raw" } }), "raw", "a raw notification's title");
  equal(model.title({ payload: {} }), "(no text)", "no text");
  equal(model.safeLink("javascript:alert(1)"), null, "a script link");
  equal(model.safeLink("https://ci.example.com/run/1"), "https://ci.example.com/run/1", "an https link");
  equal(model.stateWords(n({ readState: "Read", userActionState: "Dismissed" }), now), "Read · dismissed", "state words");
  equal(model.statusLine({ user: "alice", connection: "offline", waiting: 2, message: null }),
    "alice · offline: showing what was last loaded · 2 changes waiting for the network", "status offline");
  equal(model.statusLine({ user: "alice", connection: "live", waiting: 1, message: "x" }), "alice · live · 1 change waiting for the network · x", "status live");

  // The page's pieces: text stays text, a row says what it is, the detail has its buttons.
  const hostile = n({ payload: { visualContent: { title: "<img src=x onerror=alert(1)>", body: "<b>b</b>" } }, priority: "High" });
  const row = views.row(hostile, { selected: true, now });
  equal(row.querySelectorAll("img, b").length, 0, "markup in a title stays text");
  equal(row.querySelector(".title").textContent, "<img src=x onerror=alert(1)>", "the title's text");
  equal(row.getAttribute("aria-current"), "true", "the selected row");
  equal(row.querySelector("button").getAttribute("aria-label"), "<img src=x onerror=alert(1)>, ci.example.com, 1h ago, unread, high priority", "a row's name");
  equal(views.row(n({ readState: "Read" }), { selected: false, now }).hasAttribute("aria-current"), false, "an unselected row");
  const said = [];
  const on = { change: (fields) => said.push(fields), remove: () => said.push("remove"), action: (i) => said.push(`action ${i}`), back: () => said.push("back") };
  const pieces = views.detail(n({ actions: [{ label: "Re-run" }], launchUrl: "javascript:alert(1)" }), on, now);
  const holder = document.createElement("div");
  holder.append(...pieces);
  equal([...holder.querySelectorAll("button")].map((b) => b.textContent), ["Back to the list", "Mark read", "Dismiss", "Snooze 1 h", "Delete", "Re-run"], "the detail's buttons");
  equal(holder.querySelectorAll("a").length, 0, "a script link is not a link");
  holder.querySelectorAll("button").forEach((b) => b.click());
  equal(said.map((x) => (typeof x === "string" ? x : Object.keys(x).join("+"))), ["back", "readState", "userActionState", "userActionState+snoozedUntil", "remove", "action 1"], "what the buttons do");
  equal(views.hint(true).textContent.includes("?"), false, "no key hint on touch");
  equal(views.hint(false).textContent.includes("? for keys"), true, "the key hint with keys");
  // Keys: which command a press is.
  const press = (key, more = {}) => keys.command({ key, ctrlKey: false, metaKey: false, altKey: false, typing: false, onButton: false, open: false, ...more }, 1);
  equal(press("1"), { view: "unread" }, "1");
  equal(press("6"), { view: "all" }, "6");
  equal(press("7"), { saved: 0 }, "7 with one saved view");
  equal(press("8"), null, "8 with one saved view");
  equal(press("ArrowDown"), { key: "j" }, "the down arrow moves as j");
  equal(press("d"), { key: "d" }, "d");
  equal(press("d", { ctrlKey: true }), null, "ctrl-d is the browser's");
  equal(press("d", { typing: true }), null, "d typed in the search box");
  equal(press("Escape", { typing: true }), { leaveSearch: true }, "Escape in the search box");
  equal(press("Escape", { open: true }), { close: true }, "Escape with a notification open");
  equal(press("Enter", { onButton: true }), null, "Enter on a focused button is the button's");
  equal(press("/"), { search: true }, "/");
  equal(press("q"), null, "a key with no command");
  // The list's state: events and the state after each.
  let state = list.initial;
  const ids = (s) => s.rows.map((row) => row.id);
  state = list.listed(state, [n({ id: "a" }), n({ id: "b" }), n({ id: "c" })], 100, [], now);
  equal([ids(state), state.selected, state.more], [["a", "b", "c"], 0, false], "a first window");
  state = list.moved(list.moved(list.moved(state, 1), 1), 1);
  equal(state.selected, 2, "j stops at the last row");
  state = list.moved(state, -5);
  equal(state.selected, 0, "k stops at the first");
  state = list.selected(state, "b");
  state = list.listed(state, [n({ id: "z" }), n({ id: "a" }), n({ id: "b" })], 100, [{ id: "a", fields: { userActionState: "Dismissed" } }], now);
  equal([ids(state), state.rows[state.selected].id], [["z", "b"], "b"], "a window with one waiting dismissal keeps the selected row");
  state = list.changed(state, "b", n({ id: "b", readState: "Read" }), { readState: "Read" }, now);
  equal([ids(state), state.selected], [["z"], 0], "read in Unread: it leaves at once, the selection stays in the rows");
  equal(list.changed(state, "nope", n({}), { readState: "Read" }, now) === state, true, "a change of a row not shown");
  state = list.appended(state, Array.from({ length: 100 }, (_, i) => n({ id: `m${i}` })));
  equal([state.rows.length, state.more, list.windowSize(state)], [101, true, 101], "load more");
  const searched = list.searched(state, "disk");
  equal([searched.filter, searched.rows.length, list.searched(searched, "disk") === searched], ["disk", 0, true], "a search starts the list again, once");
  const saved = list.switchedToSaved(searched, "builds");
  equal([saved.view, saved.savedName, list.query(saved, [{ name: "builds", query: "app:ci" }])], ["all", "builds", "app:ci disk"], "a saved view's tab");
  equal([list.switched(saved, "read").savedName, list.switched(saved, "read").view], [null, "read"], "a view's tab leaves the saved view");
  equal(ids(list.removed(list.listed(list.initial, [n({ id: "a" })], 100, [], now), "a")), [], "deleted");
  return { checks, failures };
}
