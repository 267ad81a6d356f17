// Taps and swipes on the list (PROTOCOL.md §14): a click (or tap) on a row opens it; on a touch
// screen a row follows the finger sideways, and a swipe far enough (model.js's `swipe`) asks for
// its outcome instead; the click that follows a swipe opens nothing.

import { swipe } from "./model.js";

// `on.open(id)`, `on.swiped(id, "dismiss" | "read")`.
export function follow(list, on) {
  let start = null;
  list.addEventListener("click", (event) => {
    const item = event.target.closest(".row");
    if (item && !start?.swiped) on.open(item.dataset.id);
  });
  list.addEventListener("pointerdown", (event) => {
    const item = event.target.closest(".row");
    start = item && event.pointerType !== "mouse" ? { item, x: event.clientX, y: event.clientY, swiped: false } : null;
  });
  list.addEventListener("pointermove", (event) => {
    if (start) start.item.style.transform = `translateX(${event.clientX - start.x}px)`;
  });
  const end = (event) => {
    if (!start) return;
    const { item, x, y } = start;
    item.style.transform = "";
    const outcome = event.type === "pointerup" ? swipe(event.clientX - x, event.clientY - y, item.clientWidth) : null;
    if (!outcome) {
      start = null;
      return;
    }
    start.swiped = true;
    setTimeout(() => { start = null; }, 0);
    on.swiped(item.dataset.id, outcome);
  };
  list.addEventListener("pointerup", end);
  list.addEventListener("pointercancel", end);
}
