"""Runs the AG-UI conformance validator (PyPI ag-ui-validate, pinned in requirements.txt) over
many recorded AG-UI streams in one process. Called by tests/src/agui.rs:

    python conformance.py < [[label, sse_body], ...]

Each body is one HTTP response of `POST .../agui` as the client received it (one run), judged as
`ag-ui-validate -` judges a recording (`recorded`: the timing and disconnect rules are skipped,
since the bytes are replayed, not live). Prints
{"version", "checked", "events", "findings": [{label, rule, severity, message, eventType,
eventIndex}]}, every finding at every severity: the caller decides which fail.
"""

import asyncio
import json
import sys
from importlib.metadata import version

from ag_ui_validate.transport import TransportOptions, validate_body


async def one(body: str):
    async def chunks():
        yield body.encode()

    result = await validate_body(chunks(), "text/event-stream", TransportOptions(recorded=True))
    return result.report


async def main() -> None:
    streams = json.load(sys.stdin)
    findings = []
    events = 0
    for label, body in streams:
        report = await one(body)
        events += report.event_count
        for error in report.internal_errors:
            findings.append({"label": label, "rule": "internal", "severity": "error", "message": error})
        for d in report.diagnostics:
            findings.append(
                {
                    "label": label,
                    "rule": d.rule,
                    "severity": d.severity,
                    "message": d.message,
                    "eventType": d.event_type,
                    "eventIndex": d.event_index,
                }
            )
    json.dump(
        {"version": version("ag-ui-validate"), "checked": len(streams), "events": events, "findings": findings},
        sys.stdout,
    )


asyncio.run(main())
