// What each turn used, as the deployment recorded it.
// runway counts usage per workspace × worker × UTC day (`GET usage`), not per thread. This page's
// workspaceId is random per page load, so the row of (that workspaceId, the agentId a turn is
// sent with) holds only this page's turns, and the page plays one turn at a time: what the row
// gained between a reading before a turn and one after it is that turn's usage. A turn stopped
// or broken mid-way can be recorded after the page's reading: anything the row gains before the
// next turn is added to the turn played last.

import { renderInspector } from "./inspector.js";
import { authHeaders, page } from "./page_state.js";
import { USAGE_FIELDS, addTally, isZero, zeroTally } from "./tally.js";
import { renderThreadUsage } from "./usage_view.js";

const USAGE_READ_TIMEOUT_MS = 10_000;
const DAY_MS = 86_400_000;

/** The last reading: the row's figures at `key` (ids and days), and the turn played since. */
let meter = { key: null, seen: null, lastTurn: null, settled: false, reason: null };
let meterQueue = Promise.resolve();
/** Why the agent has no usage report at all (it answered 404: not runway): not asked again. */
let noUsageReport = null;

/** Runs `op` after every reading queued before it: readings and turns never interleave. */
function metered(op) {
  const next = meterQueue.then(op);
  meterQueue = next.catch(() => {});
  return next;
}

/** Ids as runway stores them in the usage row, as the server derives them (the core's
 * `storage_id`, by `GET playground/storage-id`): the page keeps no copy of the format. */
const storageIds = new Map();
async function storageForm(id) {
  if (!storageIds.has(id)) {
    const r = await fetch(`playground/storage-id?id=${encodeURIComponent(id)}`, {
      cache: "no-store",
      signal: AbortSignal.timeout(USAGE_READ_TIMEOUT_MS),
    });
    const body = await r.json().catch(() => null);
    if (!r.ok || !body || typeof body.storageId !== "string") throw new Error(`playground/storage-id answered HTTP ${r.status}`);
    if (storageIds.size >= 64) storageIds.clear();
    storageIds.set(id, body.storageId);
  }
  return storageIds.get(id);
}

const utcDay = (ms) => new Date(ms).toISOString().slice(0, 10);

/** What a turn is measured on: its ids, and yesterday to tomorrow (UTC), which holds the day the
 * deployment records the turn under even if the two clocks disagree by hours. */
function usageScope(turn) {
  const now = Date.now();
  const scope = { workspaceId: turn.scope.workspaceId, agentId: turn.scope.agentId, from: utcDay(now - DAY_MS), to: utcDay(now + DAY_MS) };
  scope.key = JSON.stringify(scope);
  return scope;
}

/** Reads the row of `scope`: `{ tally }`, or `{ unavailable: why }`. */
async function readUsage(scope) {
  if (noUsageReport) return { unavailable: noUsageReport };
  try {
    const r = await fetch(`usage?from=${scope.from}&to=${scope.to}`, {
      headers: authHeaders(),
      cache: "no-store",
      signal: AbortSignal.timeout(USAGE_READ_TIMEOUT_MS),
    });
    const body = await r.json().catch(() => null);
    if (!r.ok) {
      const why = body && typeof body.error === "string" ? `: ${body.error.slice(0, 200)}` : "";
      const unavailable = `GET usage answered HTTP ${r.status}${why}`;
      // A proxy error (the agent unreachable) may pass; a 404 from the agent itself will not.
      if (r.status === 404 && !r.headers.get("x-playground-proxy-error")) noUsageReport = unavailable;
      return { unavailable };
    }
    if (!body || !Array.isArray(body.rows)) return { unavailable: "GET usage did not answer a usage report" };
    const [workspaceId, agentId] = await Promise.all([storageForm(scope.workspaceId), storageForm(scope.agentId)]);
    const tally = zeroTally();
    for (const row of body.rows) {
      if (row && row.workspaceId === workspaceId && row.agentId === agentId) {
        for (const f of USAGE_FIELDS) tally[f] += Number.isSafeInteger(row[f]) ? row[f] : 0;
      }
    }
    return { tally };
  } catch (e) {
    const why = e && e.name === "TimeoutError" ? `no answer within ${USAGE_READ_TIMEOUT_MS / 1000} s` : String((e && e.message) || e);
    return { unavailable: `GET usage failed: ${why}` };
  }
}

/** Adds `delta` to what `turn` used, and shows it. */
function credit(turn, delta) {
  addTally(turn.usage.tally, delta);
  if (turn.thread === page.current) renderThreadUsage(page.current);
  if (page.selected === turn) renderInspector(turn);
}

/** Before a turn: the reading it is measured from (the last one, if nothing can have changed
 * since: the last turn ended with its final frame, on the same ids and days). */
export function usageBefore(turn) {
  turn.usageScope = usageScope(turn);
  return metered(async () => {
    const scope = turn.usageScope;
    if (meter.key === scope.key && meter.settled) return;
    const read = await readUsage(scope);
    if (read.unavailable) {
      meter = { key: null, seen: null, lastTurn: null, settled: false, reason: read.unavailable };
      return;
    }
    // Recorded since the last reading: the last turn's (stopped, broken, or refused).
    if (meter.key === scope.key && meter.lastTurn && meter.lastTurn.usage && !meter.lastTurn.usage.unavailable) {
      const late = addTally({ ...read.tally }, meter.seen, -1);
      if (!isZero(late)) credit(meter.lastTurn, late);
    }
    meter = { key: scope.key, seen: read.tally, lastTurn: null, settled: true, reason: null };
  });
}

/** After a turn: its usage is what the row gained since the reading before it. */
export function usageAfter(turn) {
  return metered(async () => {
    const scope = turn.usageScope;
    const read = await readUsage(scope);
    if (read.unavailable || meter.key !== scope.key) {
      const reason = read.unavailable || `no reading before the turn (${meter.reason || "the ids or days changed"})`;
      turn.usage = { tally: zeroTally(), unavailable: reason };
      meter = read.unavailable
        ? { key: null, seen: null, lastTurn: null, settled: false, reason }
        : { key: scope.key, seen: read.tally, lastTurn: null, settled: false, reason: null };
    } else {
      const tally = addTally({ ...read.tally }, meter.seen, -1);
      // A turn that ran to its final frame is recorded before its stream ends: none recorded
      // means the deployment keeps no usage (or could not write it), not that it used nothing.
      const unrecorded = turn.view.final && tally.turns === 0;
      turn.usage = { tally, unavailable: unrecorded ? "the deployment recorded no usage for a turn that ran" : null };
      meter = { key: scope.key, seen: read.tally, lastTurn: turn, settled: Boolean(turn.view.final), reason: null };
    }
    if (turn.thread === page.current) renderThreadUsage(page.current);
  });
}
