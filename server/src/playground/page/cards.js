// The five question cards Console draws for an interrupting RUN_FINISHED. A card answers by
// `turn.answer(text, resume, label)`, which the player gives each turn: the next turn of the
// thread, carrying the resume.

import { el } from "./dom.js";
import { page } from "./page_state.js";
import { loopbackUrl, safeUrl } from "./urls.js";

export function interruptCard(turn, it) {
  const card = el("div", { class: "interrupt", "data-kind": String(it.kind) });
  const answer = (text, resume, label, button) => {
    if (page.playing) return;
    closeCard(card, button);
    turn.answer(text, resume, label);
  };
  const decisionButton = (decision, text, onclick, cls) =>
    el("button", { type: "button", class: cls || "", "data-decision": decision, text, onclick: (e) => onclick(e.currentTarget) });
  // A card's text box sends with Enter (Shift+Enter adds a line), like the message box: its
  // send button is the next button after it.
  const textBox = (placeholder) => {
    const box = el("textarea", { rows: 2, class: "answer", placeholder, "aria-label": placeholder });
    box.addEventListener("keydown", (e) => {
      if (e.key !== "Enter" || e.shiftKey || e.isComposing) return;
      e.preventDefault();
      const send = box.parentElement && box.parentElement.querySelector("button");
      if (send) send.click();
    });
    return box;
  };
  // A free answer in words: the box and its Send button, answered as `respond` with the text.
  const freeAnswer = (placeholder, cls) => {
    const box = textBox(placeholder);
    return el(
      "div",
      { class: "free" },
      box,
      decisionButton("respond", "Send", (b) => {
        const text = box.value.trim();
        if (text) answer(text, { decision: "respond", message: text, answers: [text] }, text, b);
      }, cls),
    );
  };
  if (it.prompt) card.append(el("p", { class: "prompt", text: it.prompt }));
  switch (it.kind) {
    case "approval":
      card.append(
        el(
          "div",
          { class: "actions" },
          decisionButton("approve", "Approve", (b) => answer("", { decision: "approve" }, "Approved", b), "primary"),
          decisionButton("reject", "Reject", (b) => answer("", { decision: "reject" }, "Rejected", b)),
        ),
      );
      break;
    case "choice": {
      const options = el("div", { class: "options" });
      for (const o of Array.isArray(it.options) ? it.options : []) {
        const id = typeof o === "object" && o ? String(o.id ?? o.value ?? o.label) : String(o);
        const label = typeof o === "object" && o ? String(o.label ?? o.id ?? o.value) : String(o);
        options.append(
          el("button", {
            type: "button",
            "data-decision": "respond",
            "data-option": id,
            text: label,
            onclick: (e) => answer(label, { decision: "respond", message: label, answers: [id] }, label, e.currentTarget),
          }),
        );
      }
      card.append(options, freeAnswer("Or type an answer"));
      break;
    }
    case "input": {
      card.append(freeAnswer("Your answer", "primary"));
      break;
    }
    case "review": {
      // Each call shows its id: an edit names the call it changes, so two calls of one tool
      // are never mixed up.
      const items = (Array.isArray(it.items) ? it.items : []).map((item) => {
        const args = el("textarea", { class: "review-args", rows: 5, "aria-label": `Arguments of ${item.name}` });
        args.value = JSON.stringify(item.arguments ?? {}, null, 2);
        const head = el("div", { class: "tool-name" }, el("span", { class: "tag", text: "tool" }), el("strong", { text: item.name }));
        if (item.id != null) head.append(el("code", { class: "call-id", title: "call id", text: String(item.id) }));
        card.append(el("div", { class: "review-item", "data-call-id": item.id != null ? String(item.id) : "" }, head, args));
        return { item, args };
      });
      const problem = el("p", { class: "problem", role: "alert" });
      const reply = textBox("Or reply in words");
      card.append(
        problem,
        el(
          "div",
          { class: "actions" },
          decisionButton("approve", "Approve", (b) => answer("", { decision: "approve" }, "Approved", b), "primary"),
          decisionButton("edit", "Send edited", (b) => {
            // Every edited call, each with its id and the arguments it was shown with.
            const edited = items.filter((x) => x.args.value !== JSON.stringify(x.item.arguments ?? {}, null, 2));
            if (!edited.length) {
              problem.textContent = "Nothing was edited: change a call's arguments, or use Approve.";
              return;
            }
            const actions = [];
            for (const x of edited) {
              let parsed;
              try {
                parsed = JSON.parse(x.args.value);
              } catch (e) {
                problem.textContent = `The arguments of ${x.item.name} are not JSON: ${e.message}`;
                return;
              }
              const action = { name: x.item.name, arguments: parsed, originalArguments: x.item.arguments ?? {} };
              if (x.item.id != null) action.id = String(x.item.id);
              actions.push(action);
            }
            const editedAction = actions.length === 1 ? actions[0] : actions;
            answer("", { decision: "edit", editedAction }, `Edited ${edited.map((x) => x.item.name).join(", ")}`, b);
          }),
          decisionButton("reject", "Reject", (b) => answer("", { decision: "reject" }, "Rejected", b)),
        ),
        el(
          "div",
          { class: "free" },
          reply,
          decisionButton("respond", "Reply", (b) => {
            const text = reply.value.trim();
            if (text) answer(text, { decision: "respond", message: text }, text, b);
          }),
        ),
      );
      break;
    }
    case "authorization": {
      // Like Console: the popup opens authorizeUrl (https; here also http on this machine, where
      // `runway serve` links to itself), and the thread resumes with `authorized` once the user
      // is back: told by the deployment's page on the `runway-connect` channel when it is this
      // page's origin, or by the user pressing Continue (a deployment elsewhere).
      const url = safeUrl(it.authorizeUrl, ["https:"]) || loopbackUrl(it.authorizeUrl);
      const status = el("p", { class: "connect-status", hidden: true });
      const resume = (b) => {
        if (channel) channel.close();
        answer("", { decision: "authorized" }, `Connected ${it.provider}`, b);
      };
      const cont = decisionButton("authorized", "Continue", (b) => resume(b));
      let channel = null;
      card.append(
        el("p", { class: "prompt", text: `Connect your ${it.provider} account to continue.` }),
        el(
          "div",
          { class: "actions" },
          el("button", {
            type: "button",
            class: "primary",
            "data-action": "connect",
            text: `Connect ${it.provider}`,
            onclick: () => {
              if (!url) return;
              window.open(url, "_blank", "popup,noopener,noreferrer");
              status.hidden = false;
              status.textContent = `Finish in the window that opened; the conversation goes on once ${it.provider} is connected.`;
              if (!channel && "BroadcastChannel" in window) {
                channel = new BroadcastChannel("runway-connect");
                channel.onmessage = (e) => {
                  const m = e.data;
                  if (m && m.type === "connected" && m.provider === it.provider && !card.classList.contains("answered")) resume(cont);
                };
              }
            },
          }),
          cont,
        ),
        status,
      );
      break;
    }
    default:
      card.append(el("p", { class: "problem", text: `Unknown question kind ${JSON.stringify(it.kind)}` }));
  }
  turn.agent.append(card);
}

export function closeCard(card, chosen) {
  card.classList.add("answered");
  for (const c of card.querySelectorAll("button, textarea")) c.disabled = true;
  if (chosen) chosen.classList.add("chosen");
}
