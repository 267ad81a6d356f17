// notty's web inbox (PROTOCOL.md §14): sign in, then the inbox. Plain ES modules, no build step.

import { api, ApiError } from "./api.js";
import { Inbox } from "./inbox.js";

const root = document.getElementById("app");

function signInForm(message) {
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
  root.replaceChildren(form);
  user.focus();
}

function deviceName() {
  const agent = navigator.userAgent;
  const browser = /Firefox\//.test(agent) ? "Firefox" : /Edg\//.test(agent) ? "Edge" : /Chrom/.test(agent) ? "Chromium" : /Safari\//.test(agent) ? "Safari" : "browser";
  const system = /Android/.test(agent) ? "Android" : /iPhone|iPad/.test(agent) ? "iOS" : /Mac OS/.test(agent) ? "macOS" : /Windows/.test(agent) ? "Windows" : /Linux/.test(agent) ? "Linux" : "";
  return system ? `${browser} on ${system}` : browser;
}

async function start() {
  try {
    const me = await api.me();
    new Inbox(root, me);
  } catch (error) {
    signInForm(error instanceof ApiError && error.status === 401 ? null : error.message);
  }
}

start();
