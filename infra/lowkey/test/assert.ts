// Small assertions, so the tests import nothing from the network.

export function assert(cond: unknown, message: string): asserts cond {
  if (!cond) throw new Error(`assertion failed: ${message}`);
}

export function assertIncludes(text: string, part: string): void {
  assert(text.includes(part), `${JSON.stringify(text)} does not include ${JSON.stringify(part)}`);
}

/** Awaits `fn` and returns the error it rejects with; fails if it resolves. */
export async function rejection(fn: () => Promise<unknown>): Promise<unknown> {
  try {
    await fn();
  } catch (e) {
    return e;
  }
  throw new Error("assertion failed: expected a rejection, got a value");
}
