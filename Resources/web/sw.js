// notty's service worker (PROTOCOL.md §14), registered at the app's first load: keeps the app's
// files and the user's last answers so that the app opens with no network; shows what the
// service pushes and closes what was handled on another device; a click opens the inbox at the
// notification and activates it.

// The app's files: asked of the network first (a new build's are taken at once), kept for
// when it cannot be reached.
const SHELL_CACHE = "notty-shell";
const SHELL = [
  "/", "/web/app.js", "/web/api.js", "/web/inbox.js", "/web/model.js", "/web/state.js", "/web/views.js", "/web/keys.js", "/web/gestures.js",
  "/web/live.js", "/web/outbox.js", "/web/push.js", "/web/style.css", "/web/manifest.webmanifest", "/web/icon-192.png",
];
// The signed-in user's last answers (who they are, the first window of each view, the counts,
// the preferences): asked of the network first, kept for opening offline; emptied by a 401 and
// by signing out (api.js).
const DATA_CACHE = "notty-data";

self.addEventListener("install", (event) => {
  event.waitUntil(caches.open(SHELL_CACHE).then((cache) => cache.addAll(SHELL)).then(() => self.skipWaiting()));
});
self.addEventListener("activate", (event) => event.waitUntil(self.clients.claim()));

// What is kept of a request, under which key (null: not kept). A list is kept by its view
// alone (its first window, whatever its size); a search's answers are not kept.
function keptAs(url) {
  if (url.origin !== self.location.origin) return null;
  const path = url.pathname;
  if (path === "/" || (path.startsWith("/web/") && !path.includes("..", 5))) return { cache: SHELL_CACHE, key: path };
  if (url.searchParams.has("search") || url.searchParams.has("$search")) return null;
  if (path === "/v1/me" || path === "/v1/me/preferences" || path === "/v1/me/notifications/counts") return { cache: DATA_CACHE, key: path };
  if (path === "/v1/me/notifications" && (url.searchParams.get("skip") ?? "0") === "0") {
    return { cache: DATA_CACHE, key: `${path}?view=${url.searchParams.get("view") ?? "all"}` };
  }
  return null;
}

self.addEventListener("fetch", (event) => {
  const request = event.request;
  if (request.method !== "GET") return;
  const kept = keptAs(new URL(request.url));
  if (!kept) return;
  event.respondWith(networkFirst(request, kept));
});

async function fromCache(kept) {
  return (await caches.open(kept.cache)).match(kept.key);
}

async function networkFirst(request, kept) {
  // The browser knows it has no network: what was kept, without waiting for a fetch to fail.
  if (self.navigator.onLine === false) {
    const cached = await fromCache(kept);
    if (cached) return cached;
  }
  try {
    const answer = await fetch(request);
    if (answer.status === 200) {
      const copy = answer.clone();
      caches.open(kept.cache).then((cache) => cache.put(kept.key, copy));
    } else if (answer.status === 401 && kept.cache === DATA_CACHE) {
      await caches.delete(DATA_CACHE);
    }
    return answer;
  } catch (failure) {
    const cached = await fromCache(kept);
    if (cached) return cached;
    throw failure;
  }
}

function title(n) {
  return n.payload?.visualContent?.title ?? n.payload?.rawContent ?? "notty";
}

function body(n) {
  const visual = n.payload?.visualContent;
  return visual ? visual.body ?? "" : "";
}

self.addEventListener("push", (event) => {
  let message = null;
  try { message = event.data?.json(); } catch { message = null; }
  if (!message) return;
  event.waitUntil(handle(message));
});

async function handle(message) {
  if (message.type === "show" && message.notification) {
    const n = message.notification;
    const actions = [{ action: "dismiss", title: "Dismiss" }];
    (n.actions ?? []).slice(0, 1).forEach((a, i) => actions.push({ action: `act-${i + 1}`, title: a.label }));
    await self.registration.showNotification(title(n), {
      body: body(n), tag: n.id, data: { id: n.id }, actions, requireInteraction: n.priority === "High",
    });
  } else if (message.type === "close" && message.id) {
    const shown = await self.registration.getNotifications({ tag: message.id });
    if (shown.length === 0) return;
    const by = message.by?.device ?? message.by?.user ?? "another device";
    // Replaced by a quiet "Handled on DEVICE", then closed.
    await self.registration.showNotification(shown[0].title, { body: `Handled on ${by}`, tag: message.id, silent: true, data: { id: message.id } });
    for (const n of await self.registration.getNotifications({ tag: message.id })) n.close();
  }
}

async function change(id, fields) {
  await fetch(`/v1/me/notifications/${encodeURIComponent(id)}`, {
    method: "PATCH", credentials: "same-origin", headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ ...fields, changedAt: Date.now(), mutationId: crypto.randomUUID() }),
  });
}

self.addEventListener("notificationclick", (event) => {
  const id = event.notification.data?.id;
  event.notification.close();
  if (!id) return;
  if (event.action === "dismiss") {
    event.waitUntil(change(id, { userActionState: "Dismissed" }));
  } else if (event.action.startsWith("act-")) {
    event.waitUntil(fetch(`/v1/me/notifications/${encodeURIComponent(id)}/actions/${event.action.slice(4)}`, { method: "POST", credentials: "same-origin" }));
  } else {
    event.waitUntil(Promise.all([change(id, { userActionState: "Activated", readState: "Read" }), self.clients.openWindow(`/#${encodeURIComponent(id)}`)]));
  }
});

self.addEventListener("notificationclose", (event) => {
  const id = event.notification.data?.id;
  if (id) event.waitUntil(change(id, { userActionState: "Dismissed" }));
});
