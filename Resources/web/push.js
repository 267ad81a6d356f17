// Web Push (PROTOCOL.md §14): the service worker, and the browser's push subscription handed
// to the service, which pushes what arrives and closes what was handled elsewhere.

export function supported() {
  return "serviceWorker" in navigator && "PushManager" in window && "Notification" in window;
}

function keyBytes(base64url) {
  const plain = atob(base64url.replace(/-/g, "+").replace(/_/g, "/"));
  return Uint8Array.from(plain, (c) => c.charCodeAt(0));
}

export async function registration() {
  return navigator.serviceWorker.register("/sw.js", { scope: "/", type: "module" });
}

export async function enable() {
  if ((await Notification.requestPermission()) !== "granted") throw new Error("notifications are not allowed for this site");
  const worker = await registration();
  const { publicKey } = await (await fetch("/v1/webpush/key")).json();
  const subscription = await worker.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: keyBytes(publicKey) });
  const answer = await fetch("/v1/me/webpush", {
    method: "POST",
    credentials: "same-origin",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(subscription.toJSON()),
  });
  if (!answer.ok) throw new Error((await answer.json())?.error?.message ?? `the service answered ${answer.status}`);
  return (await answer.json()).id;
}

export async function isEnabled() {
  if (!supported()) return false;
  const worker = await navigator.serviceWorker.getRegistration("/");
  return Boolean(await worker?.pushManager.getSubscription());
}
