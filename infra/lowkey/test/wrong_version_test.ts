// Run beside a configured main.ts whose URL serves a /health without protocol version "1"
// (fake_health.ts), under the jail's permissions:
//   deno test --no-prompt --allow-net=<domain> wrong_version_test.ts

import { onInstall } from "./main.ts";
import { assert, assertIncludes, rejection } from "./assert.ts";

Deno.test('onInstall fails clearly when the agent has no protocol version "1"', async () => {
  const e = await rejection(() => onInstall({}));
  assert(e instanceof Error, `${e}`);
  assertIncludes(e.message, 'does not speak protocol version "1"');
  assertIncludes(e.message, '["2"]');
  console.log(`onInstall refused: ${e.message}`);
});
