// What the page holds while it runs: its settings, the header values typed in, the threads,
// the thread shown, the turn streaming and the turn inspected. One object, so every module
// reads and sets the same values.

import { $ } from "./dom.js";

const PROTOCOL_KEY = "runway-playground.protocol";

export const page = {
  settings: { mode: "serve", target: null, authHeaderNames: [] },
  protocol: storedProtocol(), // "console" (Console's POST runs) or "agui" (AG-UI's POST agui), for new threads
  authValues: new Map(), // header name -> value (memory only)
  threads: [],
  current: null, // the thread shown
  playing: null, // { controller, turn } while a turn streams
  selected: null, // the turn shown in the inspector
};

function storedProtocol() {
  try {
    return localStorage.getItem(PROTOCOL_KEY) === "agui" ? "agui" : "console";
  } catch {
    return "console"; // storage refused: Console, the default
  }
}

/** Switches the protocol new threads speak, and remembers it in this browser. */
export function setProtocol(protocol) {
  page.protocol = protocol === "agui" ? "agui" : "console";
  try {
    localStorage.setItem(PROTOCOL_KEY, page.protocol);
  } catch {
    // not remembered: this page load still uses it
  }
}

/** The message box and the agentId field. */
export const composer = {
  form: $("#composer"),
  input: $("#composer").elements.namedItem("input"),
  agentIdBox: $("#agent-id"),
};

/** The deployment's header set, as typed into the page. */
export function authHeaders() {
  const headers = {};
  for (const name of page.settings.authHeaderNames) headers[name] = page.authValues.get(name) || "";
  return headers;
}
