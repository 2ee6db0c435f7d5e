// Ids, as Console sends them: strings holding 63-bit integers; and the caller this page plays.

export function id63() {
  const words = new Uint32Array(2);
  crypto.getRandomValues(words);
  const n = (BigInt(words[0] & 0x7fffffff) << 32n) | BigInt(words[1]);
  return (n === 0n ? 1n : n).toString();
}

export function hex(bytes) {
  const b = new Uint8Array(bytes);
  crypto.getRandomValues(b);
  return Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
}

/** Console's caller for this page load: random ids, so the usage row holds only this page's turns. */
export const caller = { agentId: id63(), workspaceId: id63(), userId: id63() };
