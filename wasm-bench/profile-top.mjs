// Where a model turn's CPU went, from V8's CPU profile of scripts/wasm-turn-cost.sh
// (WASM_TURN_PROFILE=DIR keeps the wasm's function names and writes the profile):
//
//   node wasm-bench/profile-top.mjs FILE.cpuprofile [ROOT] [N]
//
// Counts only samples with ROOT on their stack (default: the model turn,
// `ModelTurnBench::one_turn`) and prints the N (default 30) functions with the largest
// inclusive share of them (a function counted once per sample, however deep it recurses),
// then the N with the largest self share.
import fs from "node:fs";

const [file, root = "ModelTurnBench::one_turn", nArg = "30"] = process.argv.slice(2);
if (!file) {
  console.error("usage: node profile-top.mjs FILE.cpuprofile [ROOT] [N]");
  process.exit(2);
}
const profile = JSON.parse(fs.readFileSync(file, "utf8"));
const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const name = (id) => nodes.get(id).callFrame.functionName || "(anonymous)";

const inclusive = new Map();
const self = new Map();
let total = 0;
for (const id of profile.samples) {
  const stack = [];
  for (let x = id; x !== undefined; x = parent.get(x)) stack.push(name(x));
  if (!stack.some((f) => f.includes(root))) continue;
  total += 1;
  self.set(stack[0], (self.get(stack[0]) ?? 0) + 1);
  for (const f of new Set(stack)) inclusive.set(f, (inclusive.get(f) ?? 0) + 1);
}
if (total === 0) {
  console.error(`no sample has ${root} on its stack`);
  process.exit(1);
}
const top = (m) =>
  [...m]
    .sort((a, b) => b[1] - a[1])
    .slice(0, Number(nArg))
    .map(([f, c]) => `${((100 * c) / total).toFixed(1).padStart(5)} %  ${f.slice(0, 150)}`)
    .join("\n");
console.log(`${total} samples under ${root}\n\ninclusive:\n${top(inclusive)}\n\nself:\n${top(self)}`);
