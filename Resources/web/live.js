// The doorbell (PROTOCOL.md §3): a WebSocket that rings on every change of the user's inbox.
// Reconnects with jittered backoff from 1 s to 60 s and asks for a refresh after every
// reconnect, so a change made while it was down is not missed; the browser's word that the
// network is back tries again at once.

export function follow(onChange, onState) {
  let socket = null;
  let attempt = 0;
  let stopped = false;
  let timer = null;
  function open() {
    const scheme = location.protocol === "https:" ? "wss:" : "ws:";
    socket = new WebSocket(`${scheme}//${location.host}/v1/me/push`);
    socket.onopen = () => {
      attempt = 0;
      onState("live");
      onChange();
    };
    socket.onmessage = () => onChange();
    socket.onclose = () => {
      if (stopped) return;
      onState("offline");
      const ceiling = Math.min(60, 2 ** Math.min(attempt++, 6));
      timer = setTimeout(open, 1000 * (ceiling / 2 + Math.random() * (ceiling / 2)));
    };
  }
  addEventListener("online", () => {
    if (stopped || socket?.readyState !== WebSocket.CLOSED) return;
    clearTimeout(timer);
    open();
  });
  open();
  return () => {
    stopped = true;
    socket?.close();
  };
}
