// What the page holds while it runs: its settings, the header values typed in, the threads,
// the thread shown, the turn streaming and the turn inspected. One object, so every module
// reads and sets the same values.

import { $ } from "./dom.js";

export const page = {
  settings: { mode: "serve", target: null, authHeaderNames: [] },
  authValues: new Map(), // header name -> value (memory only)
  threads: [],
  current: null, // the thread shown
  playing: null, // { controller, turn } while a turn streams
  selected: null, // the turn shown in the inspector
};

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
