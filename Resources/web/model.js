// The inbox's pure parts (PROTOCOL.md §14): what a notification says, which view holds it, what
// a change waiting in the outbox does to a list, what a swipe means, what the status line says.
// No DOM, no network, no clock of its own (`now` is passed in): Tests/browser/model_test.js
// checks them in Chromium.

export const VIEWS = ["unread", "read", "activated", "dismissed", "snoozed", "all"];
export const PAGE = 100;

export function title(n) {
  return n.payload?.visualContent?.title ?? n.payload?.rawContent ?? "(no text)";
}

export function body(n) {
  const visual = n.payload?.visualContent;
  return visual ? visual.body ?? "" : "";
}

// How long ago, as the center says it: now, 5m, 3h, 2d.
export function ago(iso, now) {
  const seconds = Math.max(0, (now - Date.parse(iso)) / 1000);
  if (seconds < 60) return "now";
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m`;
  if (seconds < 86400) return `${Math.floor(seconds / 3600)}h`;
  return `${Math.floor(seconds / 86400)}d`;
}

function snoozed(n, now) {
  return n.userActionState === "Snoozed" && Boolean(n.snoozedUntil) && Date.parse(n.snoozedUntil) > now;
}

export function stateWords(n, now) {
  const read = n.readState === "Read" ? "Read" : "Unread";
  if (snoozed(n, now)) return `${read} · snoozed`;
  if (n.userActionState === "Dismissed") return `${read} · dismissed`;
  if (n.userActionState === "Activated") return `${read} · opened`;
  return read;
}

// Whether a view holds the notification (PROTOCOL.md §1's views): Unread and Read hold those
// not acted on (or whose snooze has ended), Activated and Dismissed their own, Snoozed a snooze
// still ahead, All everything.
export function inView(n, view, now) {
  const action = n.userActionState ?? "NoInteraction";
  const resting = action === "NoInteraction" || (action === "Snoozed" && !snoozed(n, now));
  switch (view) {
    case "unread": return n.readState !== "Read" && resting;
    case "read": return n.readState === "Read" && resting;
    case "activated": return action === "Activated";
    case "dismissed": return action === "Dismissed";
    case "snoozed": return snoozed(n, now);
    default: return true;
  }
}

// A list as it is with the changes still waiting in the outbox (oldest first) made on it: a row
// they move out of the view leaves it. What the service answers later has the last word.
export function withPending(rows, pending, view, now) {
  if (pending.length === 0) return rows;
  const changes = new Map();
  for (const entry of pending) changes.set(entry.id, { ...changes.get(entry.id), ...entry.fields });
  return rows
    .map((n) => (changes.has(n.id) ? { ...n, ...changes.get(n.id) } : n))
    .filter((n) => !changes.has(n.id) || inView(n, view, now));
}

// A link opened only when it is http(s).
export function safeLink(url) {
  try {
    const parsed = new URL(url);
    return parsed.protocol === "https:" || parsed.protocol === "http:" ? parsed.href : null;
  } catch {
    return null;
  }
}

// What a finger's sideways move on a row does: far enough (a third of the row, at least 64 px)
// and more sideways than up or down, left dismisses, right reads (or unreads); else nothing.
export function swipe(dx, dy, width) {
  const far = Math.max(64, width / 3);
  if (Math.abs(dx) < far || Math.abs(dx) < 2 * Math.abs(dy)) return null;
  return dx < 0 ? "dismiss" : "read";
}

// What the page's address asks for: a one-time sign-in (`#signin=TOKEN`), a notification
// (`#ID`), or nothing.
export function fromHash(hash) {
  const text = hash.startsWith("#") ? hash.slice(1) : hash;
  if (text.startsWith("signin=")) return { signin: text.slice(7) };
  if (!text) return {};
  try {
    return { open: decodeURIComponent(text) };
  } catch {
    return {};
  }
}

// The status line: who, the connection, what waits for the network, the last problem.
export function statusLine({ user, connection, waiting, message }) {
  const parts = [user, connection === "offline" ? "offline: showing what was last loaded" : connection];
  if (waiting) parts.push(`${waiting} change${waiting === 1 ? "" : "s"} waiting for the network`);
  if (message) parts.push(message);
  return parts.join(" · ");
}

// The state one change goes back to (the undo of it).
export function inverse(n, fields) {
  const back = {};
  for (const key of Object.keys(fields)) back[key] = n[key] ?? (key === "snoozedUntil" ? null : undefined);
  if ("userActionState" in fields && back.userActionState === undefined) back.userActionState = "NoInteraction";
  return Object.fromEntries(Object.entries(back).filter(([, value]) => value !== undefined));
}
