// What a turn and its thread used, shown: the thread's line above the chat and the turn's row in
// the inspector. The figures come from usage_meter.js.

import { $, el } from "./dom.js";
import { plural, usd } from "./format.js";
import { caller } from "./ids.js";
import { addTally, zeroTally } from "./tally.js";

/** A tally as a line of text and figures: `1 turn · 2 model calls · …`. */
function usageLine(t) {
  const n = (field, value) => el("b", { "data-usage": field, text: value });
  const count = (v) => v.toLocaleString("en-US");
  return [
    n("turns", count(t.turns)),
    ` ${plural(t.turns, "turn")} · `,
    n("modelCalls", count(t.modelCalls)),
    ` ${plural(t.modelCalls, "model call")} · `,
    n("inputTokens", count(t.inputTokens)),
    " input / ",
    n("outputTokens", count(t.outputTokens)),
    " output tokens · ",
    n("toolCalls", count(t.toolCalls)),
    ` ${plural(t.toolCalls, "tool call")} · `,
    el("b", { "data-usage": "cost", text: usd(t.costMicroUsd), title: `${t.costMicroUsd} millionths of a US dollar` }),
  ];
}

export function turnUsageText(turn) {
  if (!turn.usage) return "measured when the turn ends";
  if (turn.usage.unavailable) return `unavailable: ${turn.usage.unavailable}`;
  return usageLine(turn.usage.tally)
    .map((x) => (x instanceof Node ? x.textContent : x))
    .join("");
}

export function renderThreadUsage(thread) {
  const line = $("#thread-usage");
  line.title =
    `Estimates by the deployment, from its GET usage: the row of this page's workspaceId ${caller.workspaceId} × the ` +
    "agentId each turn was sent with, read before and after every turn; a turn's figures are what the row gained. " +
    "Tokens are what the model endpoint reported; the cost uses the prices in the deployment's workers file ($0 without one). " +
    "The workspaceId is random for this page load, so other clients' turns are not counted unless they send the same ids. " +
    "A stopped turn may be recorded after the page reads it: it is added when the next turn starts.";
  const total = zeroTally();
  const missing = [];
  let measured = 0;
  for (const t of thread.turns) {
    if (!t.usage) continue;
    if (t.usage.unavailable) missing.push(t.usage.unavailable);
    else {
      addTally(total, t.usage.tally);
      measured += 1;
    }
  }
  const unavailable = (text) => el("span", { class: "usage-unavailable", "data-usage": "unavailable", text });
  const why = missing.length ? `${missing[missing.length - 1]}${missing.length > 1 ? ` (${missing.length} turns)` : ""}` : "";
  if (!thread.turns.length) line.replaceChildren("Usage: no turns yet");
  else if (!measured && !missing.length) line.replaceChildren("Usage: measured when the turn ends");
  else if (!measured) line.replaceChildren(unavailable(`Usage unavailable: ${why}`));
  else {
    line.replaceChildren("Usage (the deployment's estimate): ", ...usageLine(total));
    if (missing.length) line.append(" · ", unavailable(`not counted: ${why}`));
  }
}
