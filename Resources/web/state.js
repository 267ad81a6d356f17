// The list's state and how each event changes it (PROTOCOL.md §14): which view (or saved view)
// is shown with what search, its rows, the selected one, whether more can be loaded. Pure: each
// function takes a state and answers the next one; inbox.js holds the current one and draws it.
// Tests/browser/model_test.js checks them in Chromium.

import { PAGE, withPending } from "./model.js";

export const initial = { view: "unread", savedName: null, filter: "", rows: [], selected: 0, more: false };

// What the list asks the service for: the saved view's search and the search box's.
export function query(state, saved) {
  const own = saved.find((view) => view.name === state.savedName)?.query ?? "";
  return [own, state.filter].filter(Boolean).join(" ");
}

// How many rows a refresh asks for: what is loaded, at least a page.
export function windowSize(state) {
  return Math.max(PAGE, state.rows.length);
}

// A view's tab, a saved view's tab (All with its search), a search typed: the list starts again.
export function switched(state, view) {
  return { ...state, view, savedName: null, rows: [], selected: 0, more: false };
}

export function switchedToSaved(state, name) {
  return { ...state, view: "all", savedName: name, rows: [], selected: 0, more: false };
}

export function searched(state, filter) {
  return filter === state.filter ? state : { ...state, filter, rows: [], selected: 0, more: false };
}

// j/k (or a tap): the selection moves within the rows.
export function moved(state, by) {
  return { ...state, selected: Math.max(0, Math.min(state.selected + by, state.rows.length - 1)) };
}

export function selected(state, id) {
  const index = state.rows.findIndex((n) => n.id === id);
  return index < 0 ? state : { ...state, selected: index };
}

// A window came (`size` asked for): the changes still waiting in the outbox are made on it, and
// the selection stays on the same notification when it is still there.
export function listed(state, rows, size, pending, now) {
  const selectedId = state.rows[state.selected]?.id;
  const shown = withPending(rows, pending, state.view, now);
  const index = shown.findIndex((n) => n.id === selectedId);
  return {
    ...state, rows: shown, more: rows.length >= size,
    selected: index >= 0 ? index : Math.min(state.selected, Math.max(0, shown.length - 1)),
  };
}

// "Load more": the next page after the rows loaded.
export function appended(state, rows) {
  return { ...state, rows: state.rows.concat(rows), more: rows.length >= PAGE };
}

// A change made here (`changed`: the notification as the service answered, or as made): a row it
// moves out of the view leaves at once.
export function changed(state, id, notification, fields, now) {
  const index = state.rows.findIndex((n) => n.id === id);
  if (index < 0) return state;
  const rows = withPending(state.rows.with(index, notification), [{ id, fields }], state.view, now);
  return { ...state, rows, selected: Math.min(state.selected, Math.max(0, rows.length - 1)) };
}

export function removed(state, id) {
  const rows = state.rows.filter((n) => n.id !== id);
  return { ...state, rows, selected: Math.min(state.selected, Math.max(0, rows.length - 1)) };
}
