// notty's web inbox (PROTOCOL.md §14): sign in (with a password, or once with a one-time link,
// `#signin=TOKEN`), then the inbox. The service worker is registered at the first load, so the
// app opens with no network after it. Plain ES modules, no build step.

import { api, ApiError } from "./api.js";
import { Inbox } from "./inbox.js";
import { fromHash, PAGE } from "./model.js";
import * as push from "./push.js";

const root = document.getElementById("app");

function signInForm(message) {
  const main = document.createElement("main");
  const form = document.createElement("form");
  form.className = "signin";
  const heading = document.createElement("h1");
  heading.textContent = "Sign in to notty";
  const user = Object.assign(document.createElement("input"), { name: "username", autocomplete: "username", required: true });
  const password = Object.assign(document.createElement("input"), { name: "password", type: "password", autocomplete: "current-password", required: true });
  const device = Object.assign(document.createElement("input"), { name: "device", value: deviceName() });
  const labelled = (text, input) => {
    const label = document.createElement("label");
    label.append(text, input);
    return label;
  };
  const submit = Object.assign(document.createElement("button"), { type: "submit", textContent: "Sign in" });
  const error = Object.assign(document.createElement("p"), { className: "error", role: "alert", textContent: message ?? "" });
  form.append(heading, labelled("User name", user), labelled("Password", password), labelled("This browser's name", device), submit, error);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    submit.disabled = true;
    try {
      await api.signIn(user.value, password.value, device.value || "browser");
      await start();
    } catch (failure) {
      error.textContent = failure.message;
      submit.disabled = false;
    }
  });
  main.append(form);
  root.replaceChildren(main);
  user.focus();
}

function deviceName() {
  const agent = navigator.userAgent;
  const browser = /Firefox\//.test(agent) ? "Firefox" : /Edg\//.test(agent) ? "Edge" : /Chrom/.test(agent) ? "Chromium" : /Safari\//.test(agent) ? "Safari" : "browser";
  const system = /Android/.test(agent) ? "Android" : /iPhone|iPad/.test(agent) ? "iOS" : /Mac OS/.test(agent) ? "macOS" : /Windows/.test(agent) ? "Windows" : /Linux/.test(agent) ? "Linux" : "";
  return system ? `${browser} on ${system}` : browser;
}

async function start() {
  // A one-time link (notty demo --web): exchanged once for the session cookie, then gone from
  // the address (and from the history), whether it worked or not.
  const link = fromHash(location.hash).signin;
  if (link) {
    history.replaceState(null, "", location.pathname + location.search);
    try {
      await api.signInWithLink(link, deviceName());
    } catch (failure) {
      return signInForm(failure.message);
    }
  }
  // Who is signed in, and beside it the first list the inbox shows (Unread's first window), so
  // the list does not wait for `me` to come first.
  const first = api.list("unread", PAGE, 0);
  first.catch(() => {});
  try {
    const me = await api.me();
    inbox = new Inbox(root, me, first);
  } catch (error) {
    signInForm(error instanceof ApiError && error.status === 401 ? null : error.message);
  }
}

let inbox = null;
if ("serviceWorker" in navigator) {
  push.registration().catch(() => { /* the app works without it, only not offline */ });
  // The first load's answers came before the service worker: asked again through it, so that
  // the app opens offline from the next load on.
  navigator.serviceWorker.addEventListener("controllerchange", () => {
    api.me().catch(() => {});
    inbox?.refresh();
  });
}
start();
