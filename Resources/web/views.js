// The inbox's pieces of page (PROTOCOL.md §14): a row, a notification's detail, the hint.
// Everything from the network is put on the page as text (textContent), never as markup.

import { ago, body, safeLink, stateWords, title, VIEWS } from "./model.js";

export function element(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes)) {
    if (key === "text") node.textContent = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (value !== null && value !== undefined && value !== false) node.setAttribute(key, value);
  }
  for (const child of children) if (child) node.append(child);
  return node;
}

// Whether this is a touch screen with no mouse (no key hints then).
export function touchOnly() {
  return matchMedia("(hover: none) and (pointer: coarse)").matches;
}

// The inbox's page: the bar (name, search, Web Push, sign out), the views' tabs, the buttons for
// the selected row, the list beside the detail, the status line. `on`: view(view), command(key),
// more(), push(), signOut(). Answers the page's children and the parts the inbox fills in.
export function frame(touch, on) {
  const tabs = element("nav", { class: "tabs", "aria-label": "Views" });
  const tabButtons = VIEWS.map((view, index) => {
    const button = element("button", { type: "button", class: "tab", "data-view": view, title: touch ? null : `${view} (${index + 1})`, onclick: () => on.view(view) });
    tabs.append(button);
    return button;
  });
  const savedTabs = element("span", { class: "saved-tabs" });
  tabs.append(savedTabs);
  const search = element("input", { type: "search", class: "search", placeholder: touch ? "Search" : "Search (/)", "aria-label": "Search" });
  const list = element("ul", { class: "list", "aria-label": "Notifications" });
  const moreButton = element("button", { type: "button", class: "more", text: "Load more", onclick: on.more });
  const pane = element("section", { class: "detail", "aria-label": "Notification" });
  const status = element("p", { class: "status", role: "status" });
  const pushButton = element("button", { type: "button", class: "push", text: "Turn on notifications", onclick: on.push });
  const signOut = element("button", { type: "button", class: "signout", text: "Sign out", onclick: on.signOut });
  const bar = element("header", { class: "bar" }, element("h1", { class: "brand", text: "notty" }), search, pushButton, signOut);
  const buttons = [["Read", "r"], ["Dismiss", "d"], ["Open", "a"], ["Snooze 1h", "s"], ["Delete", "x"], ["Undo", "u"]].map(([label, key]) =>
    element("button", { type: "button", "data-key": key, text: label, "aria-keyshortcuts": key, title: touch ? null : `${label} (${key})`, onclick: () => on.command(key) }),
  );
  const actions = element("div", { class: "actions", role: "group", "aria-label": "Act on the selected notification" }, ...buttons);
  const panes = element("main", { class: "panes" }, element("div", { class: "column" }, list, moreButton), pane);
  return { children: [bar, tabs, actions, panes, status], parts: { tabs, tabButtons, savedTabs, search, list, moreButton, pane, status, pushButton } };
}

// One row of the list: a button (a tap or Enter opens it) holding what the notification is.
export function row(n, { selected, now }) {
  const unread = n.readState === "Unread";
  const app = (n.team ? `[${n.team}] ` : "") + n.targetHostName;
  const when = ago(n.createdDateTime, now);
  const words = [title(n), app, when === "now" ? "just now" : `${when} ago`];
  if (unread) words.push("unread");
  if (n.priority === "High") words.push("high priority");
  const open = element(
    "button",
    { type: "button", class: "open", "aria-label": words.join(", ") },
    element("span", { class: "mark", "aria-hidden": "true", text: unread ? "●" : " " }),
    element("span", { class: "priority", "aria-hidden": "true", text: n.priority === "High" ? "!" : " " }),
    element("span", { class: "age", text: when }),
    element("span", { class: "app", text: app }),
    element("span", { class: "title", text: title(n) }),
    body(n) ? element("span", { class: "snippet", text: body(n) }) : null,
  );
  return element(
    "li",
    { class: `row${unread ? " unread" : ""}${n.priority === "High" ? " high" : ""}${selected ? " selected" : ""}`, "data-id": n.id, "aria-current": selected ? "true" : null },
    open,
  );
}

// A notification's detail: what it says, its state, its link, and buttons for what can be
// done to it (`on.change(fields)`, `on.remove()`, `on.action(n)`, `on.back()`).
export function detail(n, on, now) {
  const read = n.readState === "Read";
  const lines = [
    element("button", { type: "button", class: "back", text: "Back to the list", onclick: on.back }),
    element("h2", { text: title(n) }),
    body(n) ? element("p", { class: "body", text: body(n) }) : null,
    element(
      "dl",
      {},
      ...(n.team ? [element("dt", { text: "Team" }), element("dd", { text: n.team })] : []),
      element("dt", { text: "App" }),
      element("dd", { text: n.targetHostName + (n.groupName ? ` · ${n.groupName}` : "") }),
      element("dt", { text: "When" }),
      element("dd", { text: new Date(n.createdDateTime).toLocaleString() }),
      element("dt", { text: "State" }),
      element("dd", { text: stateWords(n, now) }),
      ...(n.changedBy
        ? [
            element("dt", { text: "Handled" }),
            element("dd", { text: `by ${n.changedBy.user}${n.changedBy.device ? ` on ${n.changedBy.device}` : ""}, ${ago(n.changedBy.at, now)} ago` }),
          ]
        : []),
    ),
  ];
  const link = n.launchUrl && safeLink(n.launchUrl);
  if (link) lines.push(element("p", {}, element("a", { href: link, rel: "noopener noreferrer", target: "_blank", text: link })));
  lines.push(
    element(
      "div",
      { class: "buttons", role: "group", "aria-label": "Act on this notification" },
      element("button", { type: "button", "data-do": "read", text: read ? "Mark unread" : "Mark read", onclick: () => on.change({ readState: read ? "Unread" : "Read" }) }),
      n.userActionState === "Dismissed"
        ? null
        : element("button", { type: "button", "data-do": "dismiss", text: "Dismiss", onclick: () => on.change({ userActionState: "Dismissed" }) }),
      element("button", {
        type: "button", "data-do": "snooze", text: "Snooze 1 h",
        onclick: () => on.change({ userActionState: "Snoozed", snoozedUntil: new Date(now + 3600_000).toISOString() }),
      }),
      element("button", { type: "button", "data-do": "delete", text: "Delete", onclick: () => on.remove() }),
    ),
  );
  const actions = (n.actions ?? []).map((action, index) =>
    element("button", { type: "button", class: "action", text: action.label, onclick: () => on.action(index + 1) }),
  );
  if (actions.length) lines.push(element("div", { class: "buttons", role: "group", "aria-label": "The app's actions" }, ...actions));
  for (const result of n.actionResults ?? []) {
    lines.push(element("p", { class: "outcome", text: `${result.label ?? "action"}: ${result.outcome ?? result.status ?? ""} ${result.device ? `by ${result.device}` : ""}` }));
  }
  for (const record of n.escalations ?? []) {
    lines.push(element("p", { class: "escalation", text: `Escalated: ${record.user ? `paged ${record.user} at ` : ""}${record.target} (${record.outcome})` }));
  }
  return lines.filter(Boolean);
}

// A view's tab: its name and count ("…" until the count comes).
export function tabLabel(view, count) {
  return `${view[0].toUpperCase()}${view.slice(1)} ${count ?? "…"}`;
}

// A saved view's tab (PROTOCOL.md §17): its name and count; its query (and key, 7–9) as a tooltip.
export function savedTab(view, { index, pressed, touch, onclick }) {
  return element("button", {
    type: "button", class: "tab saved", "data-saved": view.name, text: `${view.name} ${view.count ?? "…"}`, "aria-pressed": String(pressed),
    title: `${view.query}${index < 3 && !touch ? ` (${index + 7})` : ""}`, onclick,
  });
}

// What the detail's place says when nothing is open.
export function hint(touch) {
  return element("p", { class: "hint", text: touch ? "Tap a notification to open it." : "Enter opens the selected notification · ? for keys" });
}
