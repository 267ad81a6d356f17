// The center's keys in the browser (README, "Keys in the notification center"): which command a
// key press is. Pure: Tests/browser/model_test.js checks it in Chromium.

import { VIEWS } from "./model.js";

export const HELP =
  "j/k move · Enter open · Esc back · d dismiss · r read/unread · a open link · s snooze 1h · x delete · u undo · / search (words, \"a phrase\", -not, app: group: is: priority: …) · 1–6 views · 7–9 saved views";

// `press`: {key, ctrlKey, metaKey, altKey, typing (in a text field), onButton (a focused button),
// open (a notification is open)}; `saved`: how many saved views there are. Answers a command
// ({view}, {saved}, {search}, {help}, {close}, {key} for what acts on the selected row) or null
// (the key is the browser's).
export function command(press, saved) {
  if (press.typing) return press.key === "Escape" ? { leaveSearch: true } : null;
  if (press.key === "Escape" && press.open) return { close: true };
  // A focused button takes Enter and Space itself.
  if (press.onButton && (press.key === "Enter" || press.key === " ")) return null;
  if (press.ctrlKey || press.metaKey || press.altKey) return null;
  const digit = Number(press.key);
  if (digit >= 1 && digit <= 6) return { view: VIEWS[digit - 1] };
  if (digit >= 7 && digit <= 9) return digit - 7 < saved ? { saved: digit - 7 } : null;
  if (press.key === "/") return { search: true };
  if (press.key === "?") return { help: true };
  const moves = { ArrowDown: "j", ArrowUp: "k" };
  if (["j", "k", "Enter", "d", "r", "a", "s", "x", "u"].includes(press.key) || moves[press.key]) return { key: moves[press.key] ?? press.key };
  return null;
}
