// Console's Test button's verdict: did a valid first frame arrive within 10 s.

import { el } from "./dom.js";

export function showTestResult(turn) {
  const v = turn.verdict;
  const failed = v.error || v.note || v.outcome.kind === "failed" || v.firstValidFrameMs === null || v.firstValidFrameMs === undefined;
  turn.agent.append(
    el("div", {
      class: `test-result ${failed ? "failed" : "passed"}`,
      text: failed
        ? `Test failed: ${v.error || (v.findings.find((f) => f.severity === "error") || {}).message || "no valid frame"}`
        : `Test passed: the first valid frame arrived after ${v.firstValidFrameMs} ms (Console needs one within 10 s).`,
    }),
  );
}
