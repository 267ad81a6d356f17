// notty's service worker (PROTOCOL.md §14): shows what the service pushes and closes what
// was handled on another device; a click opens the inbox at the notification and activates it.

self.addEventListener("install", () => self.skipWaiting());
self.addEventListener("activate", (event) => event.waitUntil(self.clients.claim()));

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
