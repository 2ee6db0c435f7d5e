"""The FastAPI peer: the same Console turn as runway's demo agent, written the way a team
would write it in Python, for `scripts/bench-peer.sh` (issue 26's side-by-side CPU figures).

What it does per turn, like `runway serve`: checks the body, answers a replayed `runId` from its
record, loads the thread's context from SQLite (WAL, synchronous=NORMAL), flushes STEP_STARTED
at once, streams the demo agent's plain answer ("You said …"), and commits the context and the
run's frames in one transaction. No auth (loopback bench, like `runway serve` without headers).
"""

import json
import os
import sqlite3

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, StreamingResponse

MAX_BODY = 1 << 20

db = sqlite3.connect(os.environ.get("PEER_DB", "peer.sqlite3"), isolation_level=None)
db.execute("PRAGMA journal_mode=WAL")
db.execute("PRAGMA synchronous=NORMAL")
db.execute("CREATE TABLE IF NOT EXISTS threads (id TEXT PRIMARY KEY, context TEXT NOT NULL)")
db.execute("CREATE TABLE IF NOT EXISTS runs (id TEXT PRIMARY KEY, frames TEXT NOT NULL)")

app = FastAPI()


def frame(event: dict) -> bytes:
    return b"data: " + json.dumps(event, separators=(",", ":")).encode() + b"\n\n"


@app.get("/health")
async def health():
    return {"status": "ok"}


@app.post("/runs")
async def runs(request: Request):
    body = await request.body()
    if len(body) > MAX_BODY:
        return JSONResponse({"error": "body too large"}, status_code=413)
    try:
        req = json.loads(body)
        run_id, thread_id = req["runId"], req["threadId"]
        agent_id, workspace_id = req["agentId"], req["workspaceId"]
        text = req.get("input") or ""
    except (ValueError, KeyError, TypeError):
        return JSONResponse({"error": "bad request body"}, status_code=400)
    if not all(isinstance(v, str) and 0 < len(v) <= 256 for v in (run_id, thread_id, agent_id, workspace_id)):
        return JSONResponse({"error": "bad ids"}, status_code=400)

    recorded = db.execute("SELECT frames FROM runs WHERE id = ?", (run_id,)).fetchone()

    async def stream():
        yield frame({"type": "STEP_STARTED", "stepName": "turn"})
        if recorded is not None:
            yield recorded[0].encode()
            return
        key = f"{workspace_id}/{agent_id}/{thread_id}"
        row = db.execute("SELECT context FROM threads WHERE id = ?", (key,)).fetchone()
        context = json.loads(row[0]) if row else {"messages": [], "state": {}}
        previous = next((m["content"] for m in reversed(context["messages"]) if m["role"] == "user"), None)
        said = text or "(nothing)"
        answer = (
            f'You said "{said}". Before that you said "{previous}".'
            if previous is not None
            else f'You said "{said}". This is the first thing you said in this conversation.'
        )
        message_id = f"{run_id}-m1"
        frames = b"".join(
            [
                frame({"type": "TEXT_MESSAGE_START", "messageId": message_id, "role": "assistant"}),
                frame({"type": "TEXT_MESSAGE_CONTENT", "messageId": message_id, "delta": answer}),
                frame({"type": "TEXT_MESSAGE_END", "messageId": message_id}),
                frame({"type": "STEP_FINISHED", "stepName": "turn"}),
                frame({"type": "RUN_FINISHED", "threadId": thread_id, "runId": run_id}),
            ]
        )
        context["messages"] += [{"role": "user", "content": text}, {"role": "assistant", "content": answer}]
        context["state"] = {"runs": context["state"].get("runs", 0) + 1}
        db.execute("BEGIN IMMEDIATE")
        db.execute(
            "INSERT INTO threads (id, context) VALUES (?, ?) ON CONFLICT(id) DO UPDATE SET context = excluded.context",
            (key, json.dumps(context)),
        )
        db.execute("INSERT OR IGNORE INTO runs (id, frames) VALUES (?, ?)", (run_id, frames.decode()))
        db.execute("COMMIT")
        yield frames

    return StreamingResponse(
        stream(),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )
