// The service's /v1/me API with the session cookie (PROTOCOL.md §2.3, §14).

import { Outbox } from "./outbox.js";

// Where the service worker keeps the user's last answers for opening offline (sw.js).
const OFFLINE_CACHE = "notty-data";

export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

async function request(method, path, body) {
  const init = { method, credentials: "same-origin", headers: { Accept: "application/json" } };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let answer;
  try {
    answer = await fetch(path, init);
  } catch {
    // No status: the outbox keeps a change for later; the page says it is offline.
    throw new Error("cannot reach the service");
  }
  if (answer.status === 204) return null;
  const text = await answer.text();
  let value = null;
  try { value = text ? JSON.parse(text) : null; } catch { value = null; }
  if (!answer.ok) {
    // The envelope of §2, or OAuth's for a sign-in (error_description).
    const message = value?.error?.message ?? value?.error_description ?? `the service answered ${answer.status}`;
    throw new ApiError(answer.status, message);
  }
  return value;
}

const outbox = new Outbox((entry) =>
  request("PATCH", `/v1/me/notifications/${encodeURIComponent(entry.id)}`, {
    ...entry.fields, changedAt: entry.changedAt, mutationId: entry.mutationId,
  }),
);

export const api = {
  signIn: (username, password, deviceName) => request("POST", "/v1/web/session", { username, password, deviceName }),
  signInWithLink: (token, deviceName) => request("POST", "/v1/web/session/link", { token, deviceName }),
  signOut: () => request("DELETE", "/v1/web/session"),
  me: () => request("GET", "/v1/me"),
  // Every view's count; with a search (PROTOCOL.md §17), of the notifications it finds.
  counts: (search = "") => request("GET", `/v1/me/notifications/counts${search ? `?search=${encodeURIComponent(search)}` : ""}`),
  preferences: () => request("GET", "/v1/me/preferences"),
  list: (view, top, skip, search = "") =>
    request("GET", `/v1/me/notifications?view=${view}&top=${top}&skip=${skip}${search ? `&search=${encodeURIComponent(search)}` : ""}`),
  one: (id) => request("GET", `/v1/me/notifications/${encodeURIComponent(id)}`),
  remove: (id) => request("DELETE", `/v1/me/notifications/${encodeURIComponent(id)}`),
  act: (id, n) => request("POST", `/v1/me/notifications/${encodeURIComponent(id)}/actions/${n}`),
  pushKey: () => request("GET", "/v1/webpush/key"),
  subscribePush: (subscription) => request("POST", "/v1/me/webpush", subscription),
  unsubscribePush: (id) => request("DELETE", `/v1/me/webpush/${encodeURIComponent(id)}`),

  // A change of state, kept in the browser's outbox until the service has it and sent with its
  // mutation id, so the service applies it once (PROTOCOL.md §1, §14): the notification as the
  // service has it, or null while the change waits for the network.
  change: (id, fields) => outbox.change(id, fields),
  // Sends what waits in the outbox (after a reconnect); how many changes still wait.
  async flush() {
    await outbox.flush();
    return outbox.waiting();
  },
  waiting: () => outbox.waiting(),
  // The changes that wait ({id, fields, …}, oldest first), to show them made meanwhile.
  pending: () => outbox.pending(),
  // Forgets what the service worker kept of this user's inbox for opening offline (sw.js).
  forgetOffline: () => ("caches" in window ? caches.delete(OFFLINE_CACHE) : Promise.resolve(false)),
  // The signed-in user, whose changes the outbox sends.
  setOwner: (userId) => { outbox.owner = userId; },
};
