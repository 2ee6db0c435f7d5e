// Checks frames against `@ag-ui/core`'s EventSchema, one by one: Console's stream is AG-UI
// 1.0 frame by frame (it has no RUN_STARTED: Console sends its own). Called by
// tests/src/agui.rs:
//
//   node validate.mjs < [[label, frame], ...]
//
// Prints {"checked": N, "invalid": [{label, type, issues}]}.
import { EventSchema } from "@ag-ui/core/schemas";

let input = "";
for await (const chunk of process.stdin) input += chunk;
const invalid = [];
const frames = JSON.parse(input);
for (const [label, frame] of frames) {
  const parsed = EventSchema.safeParse(frame);
  if (!parsed.success) {
    const issues = parsed.error.issues.slice(0, 3).map((i) => `${i.path.join(".")}: ${i.message}`);
    invalid.push({ label, type: frame && frame.type, issues });
  }
}
console.log(JSON.stringify({ checked: frames.length, invalid }));
