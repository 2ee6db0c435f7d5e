// A usage tally: the figures of a usage row (`GET usage`), added and subtracted field by field.

export const USAGE_FIELDS = ["turns", "modelCalls", "inputTokens", "outputTokens", "toolCalls", "costMicroUsd"];

export function zeroTally() {
  return Object.fromEntries(USAGE_FIELDS.map((f) => [f, 0]));
}

export function addTally(into, from, sign = 1) {
  for (const f of USAGE_FIELDS) into[f] += sign * (from[f] || 0);
  return into;
}

export const isZero = (tally) => USAGE_FIELDS.every((f) => !tally[f]);
