// The page's AG-UI 1.0 side: a turn as `RunAgentInput` to `agui[/{agentId}]`, the thread's
// messages kept as an AG-UI client keeps them (it sends the whole history every run), and an
// interrupt read as the Console question card it carries and answered through `resume[]`.
// The events themselves are rendered by frames.js, as Console's frames of the same names are.

import { hex } from "./ids.js";

/** The `RunAgentInput` of a thread's next run, and the messages the thread holds once sent. */
export function runAgentInput(thread, text, resume, caller) {
  if (!thread.aguiMessages) thread.aguiMessages = [];
  if (thread.history) {
    // A fork: the turns before it, as the messages of a new threadId.
    thread.aguiMessages = thread.history.map((m) => ({ id: `fork-${hex(6)}`, role: m.role, content: m.content }));
    thread.history = null;
  }
  // A resume answers the open question; its run reads no new message.
  if (!resume) thread.aguiMessages.push({ id: `user-${hex(6)}`, role: "user", content: text });
  const body = {
    threadId: thread.id,
    runId: hex(8),
    messages: thread.aguiMessages.slice(),
    state: thread.aguiState || {},
    tools: [],
    context: [],
    forwardedProps: { workspaceId: caller.workspaceId, userId: caller.userId },
  };
  if (resume) body.resume = resume;
  return body;
}

/** Follows one AG-UI event into the turn's messages, as a client builds them from the events. */
export function followEvent(turn, f) {
  const run = turn.agui;
  const message = (id, role) => {
    let m = run.byId.get(id);
    if (!m) {
      m = { id, role };
      run.byId.set(id, m);
      run.messages.push(m);
    }
    return m;
  };
  switch (f.type) {
    case "TEXT_MESSAGE_START":
    case "TEXT_MESSAGE_CONTENT": {
      if (typeof f.messageId !== "string") break;
      const m = message(f.messageId, "assistant");
      if (typeof f.delta === "string") m.content = (m.content || "") + f.delta;
      break;
    }
    case "REASONING_MESSAGE_START":
    case "REASONING_MESSAGE_CONTENT": {
      if (typeof f.messageId !== "string") break;
      const m = message(f.messageId, "reasoning");
      m.content = (m.content || "") + (typeof f.delta === "string" ? f.delta : "");
      break;
    }
    case "TOOL_CALL_START": {
      if (typeof f.toolCallId !== "string") break;
      const m = message(typeof f.parentMessageId === "string" ? f.parentMessageId : `${f.toolCallId}-call`, "assistant");
      const call = { id: f.toolCallId, type: "function", function: { name: String(f.toolCallName), arguments: "" } };
      (m.toolCalls = m.toolCalls || []).push(call);
      run.calls.set(f.toolCallId, call);
      break;
    }
    case "TOOL_CALL_ARGS": {
      const call = run.calls.get(f.toolCallId);
      if (call && typeof f.delta === "string") call.function.arguments += f.delta;
      break;
    }
    case "TOOL_CALL_RESULT": {
      if (typeof f.messageId !== "string" || typeof f.toolCallId !== "string") break;
      const m = message(f.messageId, "tool");
      m.toolCallId = f.toolCallId;
      m.content = typeof f.content === "string" ? f.content : JSON.stringify(f.content);
      break;
    }
    case "MESSAGES_SNAPSHOT":
      if (Array.isArray(f.messages)) run.snapshot = f.messages;
      break;
    case "STATE_SNAPSHOT":
      if (f.snapshot && typeof f.snapshot === "object") run.state = f.snapshot;
      break;
    case "RUN_FINISHED": {
      const asked = f.outcome && f.outcome.type === "interrupt" && Array.isArray(f.outcome.interrupts) ? f.outcome.interrupts : [];
      run.interrupt = asked.length === 1 ? asked[0] : null;
      break;
    }
  }
}

/** A new run's record of what its events add to the thread. */
export function newRun() {
  return { messages: [], byId: new Map(), calls: new Map(), snapshot: null, state: null, interrupt: null };
}

/** After the run: the thread holds the messages a client would (a snapshot replaces them). */
export function keepMessages(turn) {
  const thread = turn.thread;
  const run = turn.agui;
  thread.aguiMessages = run.snapshot ? run.snapshot.slice() : [...(thread.aguiMessages || []), ...run.messages];
  if (run.state) thread.aguiState = run.state;
}

/** The Console question an AG-UI interrupt carries: its `metadata`, the prompt its `message`. */
export function questionOf(interrupt) {
  const meta = interrupt && typeof interrupt.metadata === "object" && interrupt.metadata ? interrupt.metadata : {};
  return { ...meta, prompt: interrupt.message ?? meta.prompt };
}

/** A card's answer (Console's resume object) as AG-UI's `resume[]`: a rejection cancels. */
export function resumeOf(interrupt, answer) {
  if (answer.decision === "reject") return [{ interruptId: interrupt.id, status: "cancelled" }];
  return [{ interruptId: interrupt.id, status: "resolved", payload: answer }];
}
