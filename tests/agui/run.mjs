// Drives runway's AG-UI endpoint with the official client (`@ag-ui/client` HttpAgent:
// parse, verify, apply) and checks every frame it received against `@ag-ui/core`'s
// EventSchema. Called by tests/tests/serve_agui.rs:
//
//   node run.mjs '{"url": "...", "headers": {...}, "cases": [...]}'
//
// Each case: {name, threadId, runId, history: [messages], input: "text", forwardedProps,
// resume?: {status, payload}, resumeEntries?: [...]}; with `resume`, a second run answers the
// first run's interrupts; with `resumeEntries`, the case's one run sends them as its `resume`.
// A case with `replayOf` runs again exactly as that earlier case did (same runId and body).
// A case with `tools` offers them (client-side tools); with `toolResult`, when a run finishes
// with calls pending for the client, a next run sends that text as each call's result.
// Prints one JSON report on stdout: per case, whether the client accepted the run, how many
// frames came (and the bodies they came in) and how many were schema-valid (with the first problems), what the client warned
// about (`[ag-ui]` lines: material it stripped or repaired), the events' types,
// the run's outcome and the client's resulting messages (and any MESSAGES_SNAPSHOT's, with the
// client's messages when each run finished).
import { HttpAgent } from "@ag-ui/client";
import { EventSchema } from "@ag-ui/core/schemas";

const { url, headers, cases } = JSON.parse(process.argv[2]);

// What the client warns about (it strips material it does not recognise, with a
// `[ag-ui]…` line): collected per case, so a frame the client had to repair is a failure.
let warnings = [];
for (const level of ["warn", "error", "info", "log", "debug"]) {
  const original = console[level].bind(console);
  console[level] = (...args) => {
    const line = args.map(String).join(" ");
    if (line.includes("[ag-ui]")) warnings.push(line.slice(0, 300));
    original(...args);
  };
}

/** Splits an SSE body into the JSON of its `data:` frames (comments are skipped). */
function dataFrames(body) {
  return body
    .split("\n\n")
    .map((block) =>
      block
        .split("\n")
        .filter((l) => l.startsWith("data:"))
        .map((l) => l.slice(5).replace(/^ /, ""))
        .join("\n"),
    )
    .filter((data) => data.length > 0);
}

async function runCase(c) {
  warnings = [];
  const bodies = [];
  // The client's own fetch, teed: the frames validated are the bytes the client parsed.
  const teeFetch = async (u, init) => {
    const res = await fetch(u, init);
    if (res.ok && res.body) bodies.push(res.clone().text());
    return res;
  };
  const agent = new HttpAgent({
    url,
    headers,
    threadId: c.threadId,
    initialMessages: c.history ?? [],
    fetch: teeFetch,
  });
  if (c.input !== undefined) {
    agent.addMessage({ id: `${c.runId}-user`, role: "user", content: c.input });
  }
  const events = [];
  let outcome = null;
  let interrupts = [];
  let pending = [];
  const usage = [];
  // Each MESSAGES_SNAPSHOT's messages (ids and roles), and the client's messages right after it
  // applied the run's RUN_FINISHED (which follows the snapshot on an interrupt).
  const messagesSnapshots = [];
  const messagesAtFinish = [];
  let runError = null;
  let accepted = true;
  let error = null;
  const subscriber = {
    onEvent: ({ event }) => {
      events.push(event.type);
    },
    onMessagesSnapshotEvent: ({ event }) => {
      messagesSnapshots.push(event.messages.map((m) => ({ id: m.id, role: m.role, content: m.content ?? null })));
    },
    onRunFinishedEvent: ({ event, outcome: o, interrupts: i, pendingToolCallIds: p, messages }) => {
      messagesAtFinish.push(messages.map((m) => ({ id: m.id, role: m.role, content: m.content ?? null })));
      outcome = o;
      interrupts = i ?? [];
      pending = p ?? [];
      usage.push(event.usage ?? null);
    },
    onRunErrorEvent: ({ event }) => {
      runError = { message: event.message, code: event.code };
      usage.push(event.usage ?? null);
    },
  };
  const run = async (params) => {
    try {
      await agent.runAgent(
        { forwardedProps: c.forwardedProps ?? {}, tools: c.tools ?? [], ...params },
        subscriber,
      );
    } catch (e) {
      // A RUN_ERROR ends the run with an error the client raises: the stream was still
      // accepted. Anything else (verification, parsing, HTTP) is a refusal.
      if (runError === null) {
        accepted = false;
        error = String(e?.message ?? e);
      }
    }
  };
  // `resumeEntries`: this run answers a question asked earlier (by another case) directly.
  await run(c.resumeEntries ? { runId: c.runId, resume: c.resumeEntries } : { runId: c.runId });
  const asked = interrupts;
  const askedTools = pending;
  if (c.toolResult !== undefined && accepted && askedTools.length > 0) {
    // The client runs its tools: one result per pending call, then the next run.
    askedTools.forEach((id, n) =>
      agent.addMessage({ id: `${c.runId}-tool-${n}`, role: "tool", toolCallId: id, content: c.toolResult }),
    );
    await run({ runId: `${c.runId}-tools` });
  }
  if (c.resume && accepted) {
    // The next run answers every open interrupt (AG-UI's rule), by its id.
    await run({
      runId: `${c.runId}-resume`,
      resume: asked.map((i) => ({ interruptId: i.id, status: c.resume.status, payload: c.resume.payload })),
    });
  }
  const frames = [];
  let comments = 0;
  const texts = await Promise.all(bodies);
  for (const body of texts) {
    frames.push(...dataFrames(body));
    comments += body.split("\n").filter((l) => l.startsWith(":")).length;
  }
  const invalid = [];
  for (const data of frames) {
    let parsed;
    try {
      parsed = JSON.parse(data);
    } catch {
      invalid.push({ frame: data.slice(0, 200), issues: "not JSON" });
      continue;
    }
    const r = EventSchema.safeParse(parsed);
    if (!r.success) invalid.push({ frame: data.slice(0, 200), issues: r.error.issues.slice(0, 3) });
  }
  return {
    name: c.name,
    runId: c.runId,
    accepted,
    error,
    frames: frames.length,
    comments,
    valid: frames.length - invalid.length,
    invalid: invalid.slice(0, 3),
    events,
    outcome,
    interrupts: asked,
    pendingToolCallIds: askedTools,
    usage,
    messagesSnapshots,
    messagesAtFinish,
    warnings,
    runError,
    rawFrames: c.keepFrames ? frames : undefined,
    // Each response body as received (one per run): what ag-ui-validate judges.
    bodies: texts,
    messages: agent.messages.map((m) => ({
      id: m.id,
      role: m.role,
      content: m.content ?? null,
      toolCallId: m.toolCallId,
      toolCalls: m.toolCalls,
    })),
  };
}

const results = [];
for (const c of cases) {
  const run = c.replayOf ? { ...cases.find((x) => x.name === c.replayOf), name: c.name } : c;
  results.push(await runCase({ ...run, keepFrames: c.keepFrames }));
}
process.stdout.write(JSON.stringify(results));
