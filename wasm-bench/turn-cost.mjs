// CPU per whole turn of the core compiled for wasm32 (the Worker's own work), under Node.
//
//   node wasm-bench/turn-cost.mjs PKG_DIR [PLAIN_TURNS] [LONG_TURNS] [RUNS] [MODEL_TURNS]
//
// PKG_DIR holds `wasm-bindgen --target nodejs` output of runway-wasm-bench
// (scripts/wasm-turn-cost.sh builds it). Each run times PLAIN_TURNS "Hello" turns,
// LONG_TURNS `/long 1048576` turns (a 1 MiB answer) and MODEL_TURNS model turns (a tool call,
// its result and a 500-token streamed answer from a scripted model, usage recorded) after a
// warm-up, with the process's CPU time (process.cpuUsage) and wall time; prints the median of
// RUNS runs as JSON.
import { createRequire } from "node:module";
import path from "node:path";

const [pkgDir, plainArg = "2000", longArg = "20", runsArg = "5", modelArg = "200"] =
  process.argv.slice(2);
if (!pkgDir) {
  console.error("usage: node turn-cost.mjs PKG_DIR [PLAIN_TURNS] [LONG_TURNS] [RUNS] [MODEL_TURNS]");
  process.exit(2);
}
const require = createRequire(import.meta.url);
const { TurnBench, ModelTurnBench } = require(path.resolve(pkgDir, "runway_wasm_bench.js"));

const plainTurns = Math.min(Number(plainArg), 100000);
const longTurns = Math.min(Number(longArg), 200);
const runs = Math.min(Number(runsArg), 20);
const modelTurns = Math.min(Number(modelArg), 10000);

function timeTurns(count, input) {
  // A fresh engine per measurement: the memory store keeps every turn's recording.
  const bench = input === undefined ? new ModelTurnBench() : new TurnBench();
  bench.run(Math.max(1, Math.floor(count / 10)), input); // warm-up (JIT tiers, allocator)
  const cpu0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  const bytes = bench.run(count, input);
  const wallUs = Number(process.hrtime.bigint() - t0) / 1e3;
  const cpu = process.cpuUsage(cpu0);
  bench.free();
  return {
    cpuUsPerTurn: (cpu.user + cpu.system) / count,
    wallUsPerTurn: wallUs / count,
    bytesPerTurn: bytes / count,
  };
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor((s.length - 1) / 2)];
};
const round = (x) => Math.round(x * 10) / 10;

const plain = [];
const long = [];
const model = [];
for (let i = 0; i < runs; i++) {
  plain.push(timeTurns(plainTurns, "Hello"));
  long.push(timeTurns(longTurns, "/long 1048576"));
  model.push(timeTurns(modelTurns)); // ModelTurnBench.run takes the count alone
}
const summary = (rs, count) => ({
  turns_per_run: count,
  runs: rs.length,
  cpu_us_per_turn_median: round(median(rs.map((r) => r.cpuUsPerTurn))),
  wall_us_per_turn_median: round(median(rs.map((r) => r.wallUsPerTurn))),
  wall_us_per_turn_all: rs.map((r) => round(r.wallUsPerTurn)),
  sse_bytes_per_turn: Math.round(rs[0].bytesPerTurn),
});
console.log(
  JSON.stringify({
    node: process.version,
    plain: summary(plain, plainTurns),
    long_1mib: summary(long, longTurns),
    model_tool_call_500_tokens: summary(model, modelTurns),
  }),
);
