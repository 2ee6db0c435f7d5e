// Threads: each its own chat list and threadId, and the protocol it speaks (the page's when it
// starts); a fork is a new thread that sends the turns before the forked one as `history`, as
// Console does (in AG-UI, as its first messages).

import { $, el } from "./dom.js";
import { hex, id63 } from "./ids.js";
import { select } from "./inspector.js";
import { composer, page } from "./page_state.js";
import { renderThreadUsage } from "./usage_view.js";

export function addThread(id, label, extra) {
  const thread = {
    id,
    label,
    turns: [],
    history: null, // sent with the first turn of a fork, as Console does
    protocol: page.protocol,
    list: el("ol", { class: "chat", "data-thread-id": id }),
    ...extra,
  };
  page.threads.push(thread);
  $("#threads").append(thread.list);
  const option = el("option", { value: id, text: label });
  $("#thread-select").append(option);
  showThread(thread);
  return thread;
}

export function showThread(thread) {
  page.current = thread;
  for (const t of page.threads) t.list.hidden = t !== thread;
  $("#thread-select").value = thread.id;
  $("#thread-title").textContent = `threadId ${thread.id}${thread.protocol === "agui" ? " · AG-UI" : ""}`;
  renderThreadUsage(thread);
  const last = thread.turns[thread.turns.length - 1];
  if (last) select(last);
}

export function newThread() {
  const n = page.threads.filter((t) => !t.test).length + 1;
  return addThread(id63(), `Thread ${n}`);
}

export function fork(thread, turn) {
  const before = thread.turns.slice(0, thread.turns.indexOf(turn));
  const history = [];
  for (const t of before) {
    if (t.input) history.push({ role: "user", content: t.input });
    const answer = t.view ? t.view.texts.join("\n") : "";
    if (answer) history.push({ role: "assistant", content: answer });
  }
  const root = thread.id.split(":")[0];
  const branch = addThread(`${root}:${hex(4)}`, `${thread.label} fork`, { protocol: thread.protocol });
  branch.history = history;
  const note = el(
    "li",
    { class: "fork-note" },
    `Forked from ${thread.label} before “${turn.label}”. The next turn sends threadId `,
    el("code", { text: branch.id }),
    ` with ${history.length} history message(s):`,
  );
  const shown = el("ul", { class: "history" });
  for (const m of history) shown.append(el("li", { class: m.role }, `${m.role}: ${m.content}`));
  note.append(shown);
  branch.list.append(note);
  composer.input.value = turn.input;
  composer.input.focus();
}
