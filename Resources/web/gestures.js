// Taps and swipes on the list (PROTOCOL.md §14). A click on a row opens it. On a touch screen the
// finger is followed from pointerdown to pointerup: a row follows it sideways, a swipe far enough
// (model.js's `swipe`) asks for its outcome, and a tap (a lift within 10 px of where it went
// down) opens the row it went down on, even when the list was drawn again meanwhile (a change
// arriving from another device), when the browser would send the click nowhere. The click that
// follows a finger's swipe or tap does nothing more.

import { swipe } from "./model.js";

// `on.open(id)`, `on.swiped(id, "dismiss" | "read")`.
export function follow(list, on) {
  let start = null;
  // When a finger last did something here: the click the browser makes of it is not a second one.
  let fingerDone = -Infinity;
  list.addEventListener("click", (event) => {
    const item = event.target.closest(".row");
    if (item && performance.now() - fingerDone > 800) on.open(item.dataset.id);
  });
  list.addEventListener("pointerdown", (event) => {
    const item = event.target.closest(".row");
    start = item && event.pointerType !== "mouse" ? { item, id: item.dataset.id, x: event.clientX, y: event.clientY } : null;
  });
  list.addEventListener("pointermove", (event) => {
    if (start) start.item.style.transform = `translateX(${event.clientX - start.x}px)`;
  });
  const end = (event) => {
    if (!start) return;
    const { item, id, x, y } = start;
    start = null;
    item.style.transform = "";
    if (event.type !== "pointerup") return;
    const dx = event.clientX - x, dy = event.clientY - y;
    const outcome = swipe(dx, dy, item.clientWidth);
    if (outcome) {
      fingerDone = performance.now();
      on.swiped(id, outcome);
    } else if (Math.abs(dx) < 10 && Math.abs(dy) < 10) {
      fingerDone = performance.now();
      on.open(id);
    }
  };
  list.addEventListener("pointerup", end);
  list.addEventListener("pointercancel", end);
}
