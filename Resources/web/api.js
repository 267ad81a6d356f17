// The service's /v1/me API with the session cookie (PROTOCOL.md §2.3, §14).

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
  const answer = await fetch(path, init);
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

export const api = {
  signIn: (username, password, deviceName) => request("POST", "/v1/web/session", { username, password, deviceName }),
  signOut: () => request("DELETE", "/v1/web/session"),
  me: () => request("GET", "/v1/me"),
  counts: () => request("GET", "/v1/me/notifications/counts"),
  list: (view, top, skip, search = "") =>
    request("GET", `/v1/me/notifications?view=${view}&top=${top}&skip=${skip}${search ? `&search=${encodeURIComponent(search)}` : ""}`),
  one: (id) => request("GET", `/v1/me/notifications/${encodeURIComponent(id)}`),
  remove: (id) => request("DELETE", `/v1/me/notifications/${encodeURIComponent(id)}`),
  act: (id, n) => request("POST", `/v1/me/notifications/${encodeURIComponent(id)}/actions/${n}`),
  pushKey: () => request("GET", "/v1/webpush/key"),
  subscribePush: (subscription) => request("POST", "/v1/me/webpush", subscription),
  unsubscribePush: (id) => request("DELETE", `/v1/me/webpush/${encodeURIComponent(id)}`),

  // A change of state with its mutation id: sent again with the same id after a failure of
  // the network, so the service applies it once (PROTOCOL.md §1).
  async change(id, fields) {
    const body = { ...fields, changedAt: Date.now(), mutationId: crypto.randomUUID() };
    for (let attempt = 0; ; attempt++) {
      try {
        return await request("PATCH", `/v1/me/notifications/${encodeURIComponent(id)}`, body);
      } catch (error) {
        if (error instanceof ApiError || attempt >= 4) throw error;
        await new Promise((done) => setTimeout(done, 500 * 2 ** attempt));
      }
    }
  },
};
