// Removes the WebAssembly `name` custom section (function names for stack traces) from a wasm
// file in place, leaving every other byte as it was. worker-build always keeps it (it passes
// `--debuginfo` to wasm-opt); in the repo's model Worker it is about 450 KiB, 113 KiB gzip of
// the upload, and nothing at run time reads it: a panic still logs its message and source
// location (those are in the data section), only the JavaScript stack shows
// `wasm-function[N]` instead of Rust names. infra/cloudflare/tools.sh (cf_build) runs it unless
// RUNWAY_CF_KEEP_NAMES=1.
//
//   node strip-names.mjs FILE.wasm     (prints the bytes removed)
import { readFileSync, writeFileSync } from "node:fs";

const file = process.argv[2];
const wasm = readFileSync(file);
if (wasm.readUInt32LE(0) !== 0x6d736100) throw new Error(`${file} is not a wasm module`);

function leb(at) {
  let value = 0, shift = 0, byte;
  do {
    byte = wasm[at++];
    value += (byte & 0x7f) * 2 ** shift;
    shift += 7;
  } while (byte & 0x80);
  return [value, at];
}

const kept = [wasm.subarray(0, 8)];
let removed = 0;
for (let at = 8; at < wasm.length; ) {
  const start = at;
  const id = wasm[at];
  const [size, body] = leb(at + 1);
  at = body + size;
  if (id === 0) {
    const [nameLength, name] = leb(body);
    if (wasm.toString("utf8", name, name + nameLength) === "name") {
      removed += at - start;
      continue;
    }
  }
  kept.push(wasm.subarray(start, at));
}
writeFileSync(file, Buffer.concat(kept));
console.log(`${file}: removed ${removed} bytes of function names`);
