// Run beside a configured main.ts whose agent is NOT running, under the jail's permissions:
//   deno test --no-prompt --allow-net=<domain> unreachable_test.ts

import { AGENT_BASE_URL, onInstall } from "./main.ts";
import { assert, assertIncludes, rejection } from "./assert.ts";

Deno.test("onInstall fails clearly when the agent is unreachable", async () => {
  const e = await rejection(() => onInstall({}));
  assert(e instanceof Error, `${e}`);
  assertIncludes(e.message, "unreachable");
  assertIncludes(e.message, `${AGENT_BASE_URL}/health`);
  console.log(`onInstall refused: ${e.message}`);
});
