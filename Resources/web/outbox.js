// Changes made in this browser, kept until the service has them (PROTOCOL.md §14): each is
// written to IndexedDB before it is sent, with its mutation id, so that a change made with the
// network down, or in a tab closed before it went, is sent later, by this page or the next one,
// and applied once. Sent in the order made; one that the service refuses for good (a 4xx: the
// notification is gone) is dropped, one it cannot take now (a 5xx, 429) waits with the rest.

const DATABASE = "notty";
const STORE = "outbox";

function opened() {
  return new Promise((resolve, reject) => {
    const request = indexedDB.open(DATABASE, 1);
    request.onupgradeneeded = () => request.result.createObjectStore(STORE, { keyPath: "mutationId" });
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
  });
}

let database = null;

async function run(mode, work) {
  database ??= opened();
  const db = await database;
  return new Promise((resolve, reject) => {
    const transaction = db.transaction(STORE, mode);
    const result = work(transaction.objectStore(STORE));
    transaction.oncomplete = () => resolve(result.result);
    transaction.onerror = () => reject(transaction.error);
  });
}

export class Outbox {
  // `send(entry)` sends one change and answers the notification; it throws an error with a
  // `status` when the service answered, any other error when it could not be reached.
  constructor(send) {
    this.send = send;
    this.flushing = null;
    // Whose changes this page sends (the signed-in user's id): another user's, made before a
    // sign-out in this browser, wait for that user's next sign-in.
    this.owner = null;
  }

  // Keeps the change, then sends what is waiting (this one last). Answers the notification as
  // the service has it, or null when the change waits for the network.
  async change(id, fields) {
    const entry = { owner: this.owner, id, fields, changedAt: Date.now(), mutationId: crypto.randomUUID(), queuedAt: performance.timeOrigin + performance.now() };
    await run("readwrite", (store) => store.put(entry));
    // A flush under way may have read the outbox before this change was in it: then another.
    for (let round = 0; round < 3; round++) {
      const sent = await this.flush();
      if (sent.failed?.mutationId === entry.mutationId) throw sent.failed.error;
      if (sent.answers.has(entry.mutationId)) return sent.answers.get(entry.mutationId);
      if (sent.offline) break;
    }
    return null;
  }

  // The owner's changes that wait, oldest first.
  async pending() {
    const entries = await run("readonly", (store) => store.getAll());
    return entries.filter((entry) => entry.owner === this.owner).sort((a, b) => a.queuedAt - b.queuedAt);
  }

  // How many of the owner's changes wait.
  async waiting() {
    return (await this.pending()).length;
  }

  // Sends what waits, oldest first, until the network fails; one flush at a time.
  flush() {
    this.flushing ??= (async () => {
      const answers = new Map();
      let failed = null;
      let offline = false;
      try {
        const entries = await this.pending();
        for (const entry of entries) {
          try {
            answers.set(entry.mutationId, await this.send(entry));
          } catch (error) {
            if (error.status === undefined || error.status === 429 || error.status >= 500) {
              offline = true;
              break;
            }
            failed = { mutationId: entry.mutationId, error };
          }
          await run("readwrite", (store) => store.delete(entry.mutationId));
        }
      } finally {
        this.flushing = null;
      }
      return { answers, failed, offline };
    })();
    return this.flushing;
  }
}
