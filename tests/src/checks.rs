//! The checks, each on its own fresh thread ids.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::Target;
use crate::client::{Client, TurnStream, fresh_id, run_body};

type Check = Result<(), String>;

macro_rules! ensure {
    ($cond:expr, $($fmt:tt)+) => {
        if !$cond {
            return Err(format!($($fmt)+));
        }
    };
}

/// Runs every check; returns one line per failure.
pub(crate) async fn run_all<T: Target>(target: &mut T) -> Vec<String> {
    let mut failures = Vec::new();
    let mut record = |name: &str, r: Check| {
        match &r {
            Ok(()) => eprintln!("[e2e] pass  {name}"),
            Err(e) => eprintln!("[e2e] FAIL  {name}: {e}"),
        }
        if let Err(e) = r {
            failures.push(format!("- {name}: {e}"));
        }
    };
    let c = Client::new(&target.base_url(), target.auth_headers());
    record("health", health(&c).await);
    record("auth", auth(&c).await);
    record("first frame and headers", first_frame(&c).await);
    record("proper ending", proper_ending(&c).await);
    record("context across turns", context(&c).await);
    record("branch isolation", branch(&c).await);
    record("validation thread", validation_thread(&c).await);
    record("heartbeat", heartbeat(&c).await);
    record("idempotent replay", replay(&c).await);
    record("concurrent duplicate", concurrent_duplicate(&c).await);
    record(
        "overlapping turns on one thread",
        crate::overlap::overlapping_turns(&c).await,
    );
    let n = target.thread_burst_turns();
    record(
        &format!("{n}-turn burst on one thread"),
        crate::overlap::burst(&c, n).await,
    );
    record("runId reused with another body", reused_run_id(&c).await);
    record("interrupts and resume", interrupts(&c).await);
    record("tool call ordering", tool_call(&c).await);
    record("reasoning", reasoning(&c).await);
    record("hosted file", hosted_file(&c).await);
    record("agent error and panic", failures_end_cleanly(&c).await);
    record("stream limits", limits(&c).await);
    record("turn deadline", deadline(&c).await);
    record("bad input", bad_input(&c).await);
    if target.supports_disconnect() {
        record("client disconnect stops the agent", disconnect(&c).await);
    }
    let (base, auth) = (target.base_url(), target.auth_headers());
    let stalled = crate::stalled_reader::check(&c, &base, &auth).await;
    record("a stalled reader ends at the deadline", stalled);
    let (thread, token) = (fresh_id(), format!("persist-{}", fresh_id()));
    let before = c.turn(&run_body(&fresh_id(), &thread, &token)).await;
    target.restart().await;
    let c = Client::new(&target.base_url(), target.auth_headers());
    record(
        "context survives a restart",
        after_restart(&c, &thread, &token, &before).await,
    );
    failures
}

fn ended_ok(t: &TurnStream) -> Check {
    ensure!(t.status == 200, "HTTP {} {}", t.status, t.body);
    ensure!(
        t.last()["type"] == "RUN_FINISHED",
        "last frame is {} (frames: {:?})",
        t.last(),
        t.types()
    );
    Ok(())
}

fn open_items_closed(t: &TurnStream) -> Check {
    let mut open = HashSet::new();
    for f in &t.frames {
        let ty = f["type"].as_str().unwrap_or("");
        let key = ["messageId", "toolCallId", "stepName"]
            .iter()
            .find_map(|k| f.get(*k).and_then(Value::as_str))
            .unwrap_or("")
            .to_owned();
        match ty {
            "TEXT_MESSAGE_START"
            | "TOOL_CALL_START"
            | "STEP_STARTED"
            | "REASONING_MESSAGE_START" => {
                open.insert(format!("{ty}:{key}"));
            }
            "TEXT_MESSAGE_END" => ensure!(
                open.remove(&format!("TEXT_MESSAGE_START:{key}")),
                "end of unopened {key}"
            ),
            "TOOL_CALL_END" => ensure!(
                open.remove(&format!("TOOL_CALL_START:{key}")),
                "end of unopened {key}"
            ),
            "STEP_FINISHED" => ensure!(
                open.remove(&format!("STEP_STARTED:{key}")),
                "end of unopened step {key}"
            ),
            "REASONING_MESSAGE_END" => ensure!(
                open.remove(&format!("REASONING_MESSAGE_START:{key}")),
                "end of unopened {key}"
            ),
            _ => {}
        }
    }
    ensure!(
        open.is_empty(),
        "left open before the final frame: {open:?}"
    );
    let finals = t
        .types()
        .iter()
        .filter(|t| **t == "RUN_FINISHED" || **t == "RUN_ERROR")
        .count();
    ensure!(finals == 1, "{finals} final frames");
    ensure!(
        !t.types()
            .iter()
            .any(|t| *t == "RUN_STARTED" || *t == "REASONING_END"),
        "sent a frame Console emits itself"
    );
    Ok(())
}

async fn health(c: &Client) -> Check {
    let (status, body) = c.health().await;
    ensure!(status == 200, "HTTP {status}");
    ensure!(body["status"] == "ok", "status {}", body["status"]);
    ensure!(
        body["protocolVersions"]
            .as_array()
            .is_some_and(|v| v.contains(&json!("1"))),
        "protocolVersions {}",
        body["protocolVersions"]
    );
    Ok(())
}

async fn auth(c: &Client) -> Check {
    let good = c.with_auth(Vec::new());
    let full = c.clone();
    let body = run_body(&fresh_id(), &fresh_id(), "Hello")
        .to_string()
        .into_bytes();
    let mut variants = vec![("no headers", Vec::new())];
    let headers = full_auth(c);
    for i in 0..headers.len() {
        let mut less = headers.clone();
        let (name, _) = less.remove(i);
        variants.push((Box::leak(format!("without {name}").into_boxed_str()), less));
        let mut wrong = headers.clone();
        wrong[i].1.push('x');
        variants.push((
            Box::leak(format!("wrong {}", wrong[i].0).into_boxed_str()),
            wrong,
        ));
    }
    for (label, h) in variants {
        let client = good.with_auth(h);
        let (s, b) = client.health().await;
        ensure!(s == 401, "/health {label}: HTTP {s}");
        ensure!(b["error"].is_string(), "/health {label}: body {b}");
        let (s, b) = client
            .raw(reqwest::Method::POST, "/runs", body.clone())
            .await;
        ensure!(s == 401, "/runs {label}: HTTP {s}");
        ensure!(b["error"].is_string(), "/runs {label}: body {b}");
    }
    let (s, _) = full.health().await;
    ensure!(s == 200, "with every header: HTTP {s}");
    Ok(())
}

fn full_auth(c: &Client) -> Vec<(String, String)> {
    crate::target_auth()
        .into_iter()
        .filter(|_| !c.base().is_empty())
        .collect()
}

async fn first_frame(c: &Client) -> Check {
    let t = c.turn(&run_body(&fresh_id(), &fresh_id(), "Hello")).await;
    ended_ok(&t)?;
    let h = |n: &str| {
        t.headers
            .get(n)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned()
    };
    ensure!(
        h("content-type").starts_with("text/event-stream"),
        "content-type {:?}",
        h("content-type")
    );
    ensure!(
        h("cache-control") == "no-cache",
        "cache-control {:?}",
        h("cache-control")
    );
    ensure!(
        h("x-accel-buffering") == "no",
        "x-accel-buffering {:?}",
        h("x-accel-buffering")
    );
    ensure!(
        t.frames[0]["type"] == "STEP_STARTED",
        "first frame {}",
        t.frames[0]
    );
    let ttfb = t.first_frame.unwrap_or_default();
    eprintln!("[e2e]       first frame after {} ms", ttfb.as_millis());
    ensure!(ttfb < Duration::from_secs(3), "first frame after {ttfb:?}");
    Ok(())
}

async fn proper_ending(c: &Client) -> Check {
    let t = c
        .turn(&run_body(&fresh_id(), &fresh_id(), "Hi there"))
        .await;
    ended_ok(&t)?;
    open_items_closed(&t)?;
    ensure!(
        t.last()["outcome"]["type"] == "success",
        "outcome {}",
        t.last()
    );
    ensure!(t.text().contains("Hi there"), "answer {:?}", t.text());
    for f in &t.frames {
        ensure!(
            f.get("run_id").is_none_or(|r| r == &json!(null)),
            "run_id in frame {f}"
        );
    }
    Ok(())
}

async fn context(c: &Client) -> Check {
    let thread = fresh_id();
    let token = format!("token-{}", fresh_id());
    ended_ok(&c.turn(&run_body(&fresh_id(), &thread, &token)).await)?;
    let t = c
        .turn(&run_body(&fresh_id(), &thread, "what did I say?"))
        .await;
    ended_ok(&t)?;
    ensure!(
        t.text()
            .contains(&format!("Before that you said \"{token}\"")),
        "second turn does not remember the first: {:?}",
        t.text()
    );
    Ok(())
}

async fn branch(c: &Client) -> Check {
    let thread = fresh_id();
    let token = format!("main-{}", fresh_id());
    ended_ok(&c.turn(&run_body(&fresh_id(), &thread, &token)).await)?;
    let t = c
        .turn(&run_body(
            &fresh_id(),
            &format!("{thread}:7"),
            "branch turn",
        ))
        .await;
    ended_ok(&t)?;
    ensure!(
        !t.text().contains(&token),
        "branch saw the main thread: {:?}",
        t.text()
    );
    // A fork that arrives with history is seeded from it.
    let mut b = run_body(&fresh_id(), &format!("{thread}:8"), "after fork");
    b["history"] = json!([{"role": "user", "content": "seeded-question"},
                          {"role": "assistant", "content": "seeded answer"}]);
    let t = c.turn(&b).await;
    ended_ok(&t)?;
    ensure!(
        t.text().contains("seeded-question"),
        "fork not seeded from history: {:?}",
        t.text()
    );
    Ok(())
}

async fn validation_thread(c: &Client) -> Check {
    let mut raw = [0u8; 8];
    getrandom::fill(&mut raw).map_err(|e| e.to_string())?;
    let hex: String = raw.iter().map(|b| format!("{b:02x}")).collect();
    let t = c
        .turn(&run_body(&fresh_id(), &format!("validate-{hex}"), "Hello"))
        .await;
    ended_ok(&t)?;
    ensure!(t.text().contains("Hello"), "answer {:?}", t.text());
    Ok(())
}

async fn heartbeat(c: &Client) -> Check {
    let t = c.turn(&run_body(&fresh_id(), &fresh_id(), "/slow 4")).await;
    ended_ok(&t)?;
    eprintln!(
        "[e2e]       {} heartbeats, longest silence {} ms",
        t.comments,
        t.longest_silence().as_millis()
    );
    ensure!(
        t.comments >= 2,
        "{} heartbeats in 4 s with a 1 s interval",
        t.comments
    );
    ensure!(
        t.longest_silence() < Duration::from_millis(2500),
        "silence of {:?}",
        t.longest_silence()
    );
    Ok(())
}

async fn replay(c: &Client) -> Check {
    let thread = fresh_id();
    let first = run_body(&fresh_id(), &thread, "/count");
    let a = c.turn(&first).await;
    ended_ok(&a)?;
    ensure!(
        a.text().contains("run 1 times"),
        "first /count: {:?}",
        a.text()
    );
    let b = c.turn(&first).await;
    ended_ok(&b)?;
    ensure!(
        a.frames == b.frames,
        "replay differs:\n{:?}\n{:?}",
        a.types(),
        b.types()
    );
    let n = c.turn(&run_body(&fresh_id(), &thread, "/count")).await;
    ensure!(
        n.text().contains("run 2 times"),
        "the replay ran the agent again: {:?}",
        n.text()
    );
    Ok(())
}

async fn concurrent_duplicate(c: &Client) -> Check {
    let thread = fresh_id();
    let body = run_body(&fresh_id(), &thread, "/slow 2");
    let (a, b) = tokio::join!(c.turn(&body), c.turn(&body));
    ended_ok(&a)?;
    ended_ok(&b)?;
    ensure!(
        a.text() == b.text(),
        "answers differ: {:?} vs {:?}",
        a.text(),
        b.text()
    );
    let n = c.turn(&run_body(&fresh_id(), &thread, "/count")).await;
    ensure!(
        n.text().contains("run 2 times"),
        "the duplicate ran the agent twice: {:?}",
        n.text()
    );
    Ok(())
}

async fn reused_run_id(c: &Client) -> Check {
    let run = fresh_id();
    let thread = fresh_id();
    ended_ok(&c.turn(&run_body(&run, &thread, "first body")).await)?;
    let t = c.turn(&run_body(&run, &thread, "another body")).await;
    ensure!(t.last()["type"] == "RUN_ERROR", "last frame {}", t.last());
    ensure!(
        t.last()["code"] == "RUN_ID_REUSED",
        "code {}",
        t.last()["code"]
    );
    ensure!(
        !t.text().contains("another body"),
        "the agent ran: {:?}",
        t.text()
    );
    // A client that de-duplicates by event_id must not drop the error.
    let original = c.turn(&run_body(&run, &thread, "first body")).await;
    let seen: HashSet<&Value> = original.frames.iter().map(|f| &f["event_id"]).collect();
    let clash: Vec<&Value> = t
        .frames
        .iter()
        .map(|f| &f["event_id"])
        .filter(|i| seen.contains(i))
        .collect();
    ensure!(
        clash.is_empty(),
        "RUN_ID_REUSED repeats event ids {clash:?}"
    );
    Ok(())
}

async fn interrupts(c: &Client) -> Check {
    let cases = [
        (
            "/approve",
            "approval",
            json!({"decision": "approve"}),
            "",
            "you approved",
        ),
        (
            "/choice",
            "choice",
            json!({"decision": "respond", "message": "Green", "answers": ["green"]}),
            "Green",
            "you answered \"Green\"",
        ),
        (
            "/input",
            "input",
            json!({"decision": "respond", "message": "Ada"}),
            "Ada",
            "you answered \"Ada\"",
        ),
        (
            "/review",
            "review",
            json!({"decision": "edit", "editedAction": {"name": "send_email", "arguments": "{\"to\":\"x@example.com\"}"}}),
            "",
            "you edited the call to send_email",
        ),
        (
            "/authorize",
            "authorization",
            json!({"decision": "authorized"}),
            "",
            "you connected the account",
        ),
    ];
    for (cmd, kind, resume, input, expect) in cases {
        let thread = fresh_id();
        let t = c.turn(&run_body(&fresh_id(), &thread, cmd)).await;
        ended_ok(&t)?;
        open_items_closed(&t)?;
        let outcome = &t.last()["outcome"];
        ensure!(outcome["type"] == "interrupt", "{cmd}: outcome {outcome}");
        let list = outcome["interrupts"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        ensure!(list.len() == 1, "{cmd}: {} interrupts", list.len());
        ensure!(list[0]["kind"] == kind, "{cmd}: kind {}", list[0]["kind"]);
        let mut b = run_body(&fresh_id(), &thread, input);
        b["resume"] = resume;
        let r = c.turn(&b).await;
        ended_ok(&r)?;
        ensure!(
            r.text().contains(expect),
            "{cmd} resume answer {:?}",
            r.text()
        );
    }
    Ok(())
}

async fn tool_call(c: &Client) -> Check {
    let t = c.turn(&run_body(&fresh_id(), &fresh_id(), "/tool")).await;
    ended_ok(&t)?;
    open_items_closed(&t)?;
    let ty = t.types();
    let pos = |name: &str| ty.iter().position(|t| *t == name);
    let (Some(start), Some(result)) = (pos("TOOL_CALL_START"), pos("TOOL_CALL_RESULT")) else {
        return Err(format!("no tool call: {ty:?}"));
    };
    ensure!(
        pos("TEXT_MESSAGE_END") < Some(start),
        "text not closed before the tool call: {ty:?}"
    );
    let after: Vec<_> = t.frames[result..]
        .iter()
        .filter(|f| f["type"] == "TEXT_MESSAGE_START")
        .collect();
    ensure!(!after.is_empty(), "no text after the tool call: {ty:?}");
    ensure!(
        after[0]["messageId"] != t.frames[pos("TEXT_MESSAGE_START").unwrap_or(0)]["messageId"],
        "text after the tool call reuses the first message id"
    );
    ensure!(
        t.frames[pos("TOOL_CALL_ARGS").unwrap_or(0)]["delta"].is_string(),
        "args delta not a string"
    );
    Ok(())
}

async fn reasoning(c: &Client) -> Check {
    let t = c.turn(&run_body(&fresh_id(), &fresh_id(), "/reason")).await;
    ended_ok(&t)?;
    open_items_closed(&t)?;
    ensure!(
        t.types().contains(&"REASONING_MESSAGE_CONTENT"),
        "no reasoning: {:?}",
        t.types()
    );
    Ok(())
}

async fn hosted_file(c: &Client) -> Check {
    let t = c.turn(&run_body(&fresh_id(), &fresh_id(), "/file")).await;
    ended_ok(&t)?;
    let snaps: Vec<_> = t
        .frames
        .iter()
        .filter(|f| f["type"] == "STATE_SNAPSHOT")
        .collect();
    ensure!(snaps.len() == 1, "{} state snapshots", snaps.len());
    ensure!(!t.types().contains(&"CUSTOM"), "file sent on two channels");
    let url = snaps[0]["snapshot"]["artifacts"][0]["url"]
        .as_str()
        .ok_or("no artifact url")?
        .to_owned();
    let (s, ct, body) = c.get_plain(&url).await;
    ensure!(s == 200, "GET artifact: HTTP {s}");
    ensure!(ct.starts_with("text/csv"), "content-type {ct}");
    ensure!(body.contains("Hanoi"), "body {body:?}");
    // The last `/files/`: the base path may itself contain one.
    let token_start = url.rfind("/files/").ok_or("no /files/ in url")? + 7;
    let mut forged = url.clone();
    forged.replace_range(token_start..token_start + 4, "0000");
    let (s, _, _) = c.get_plain(&forged).await;
    ensure!(s == 404, "forged token: HTTP {s}");
    // The link names the file: the same token under another name is no file.
    let renamed = format!("{}/anything.html", &url[..url.rfind('/').ok_or("no name")?]);
    let (s, _, _) = c.get_plain(&renamed).await;
    ensure!(s == 404, "same token, another name: HTTP {s}");
    // Links never come from headers the caller controls.
    ensure!(
        url.starts_with(&format!("{}/files/", c.base())),
        "link {url} is not under the base URL {}",
        c.base()
    );
    let liar = c.with_extra_headers(&[("Host", "evil.example"), ("X-Forwarded-Proto", "https")]);
    let t = liar
        .turn(&run_body(&fresh_id(), &fresh_id(), "/file"))
        .await;
    ended_ok(&t)?;
    let body = serde_json::to_string(&t.frames).unwrap_or_default();
    ensure!(
        !body.contains("evil.example") && !body.contains("https://"),
        "a link was built from the caller's Host or X-Forwarded-Proto: {body}"
    );
    Ok(())
}

async fn failures_end_cleanly(c: &Client) -> Check {
    let t = c.turn(&run_body(&fresh_id(), &fresh_id(), "/fail")).await;
    ensure!(
        t.last()["type"] == "RUN_ERROR",
        "/fail last frame {}",
        t.last()
    );
    ensure!(
        t.last()["message"] == "The demo agent failed on purpose.",
        "message {}",
        t.last()["message"]
    );
    open_items_closed(&t)?;
    let t = c.turn(&run_body(&fresh_id(), &fresh_id(), "/panic")).await;
    ensure!(
        t.last()["type"] == "RUN_ERROR",
        "/panic last frame {}",
        t.last()
    );
    open_items_closed(&t)?;
    ensure!(
        !t.last()["message"].as_str().unwrap_or("").contains("panic"),
        "panic detail leaked: {}",
        t.last()
    );
    let (s, _) = c.health().await;
    ensure!(s == 200, "after a panic /health is HTTP {s}");
    let t = c
        .turn(&run_body(&fresh_id(), &fresh_id(), "still there?"))
        .await;
    ended_ok(&t)
}

async fn limits(c: &Client) -> Check {
    let t = c
        .turn(&run_body(&fresh_id(), &fresh_id(), "/long 300000"))
        .await;
    ended_ok(&t)?;
    ensure!(
        t.text().len() == 300_000,
        "text of {} bytes",
        t.text().len()
    );
    ensure!(
        t.frame_sizes.iter().all(|s| *s <= 256 * 1024),
        "a frame over 256 KiB"
    );
    let t = c
        .turn(&run_body(&fresh_id(), &fresh_id(), "/long 9000000"))
        .await;
    ensure!(
        t.total_bytes <= 8 * 1024 * 1024,
        "stream of {} bytes",
        t.total_bytes
    );
    ensure!(t.frames.len() <= 20_000, "{} frames", t.frames.len());
    ensure!(
        t.frame_sizes.iter().all(|s| *s <= 256 * 1024),
        "a frame over 256 KiB"
    );
    ensure!(t.last()["type"] == "RUN_ERROR", "last frame {}", t.last());
    ensure!(
        t.last()["code"] == "LIMIT_EXCEEDED",
        "code {}",
        t.last()["code"]
    );
    open_items_closed(&t)
}

async fn deadline(c: &Client) -> Check {
    let started = Instant::now();
    let t = c
        .turn(&run_body(&fresh_id(), &fresh_id(), "/slow 30"))
        .await;
    let took = started.elapsed();
    ensure!(t.last()["type"] == "RUN_ERROR", "last frame {}", t.last());
    ensure!(
        t.last()["code"] == "TURN_DEADLINE",
        "code {}",
        t.last()["code"]
    );
    ensure!(
        took < Duration::from_secs(20),
        "took {took:?} with an 8 s deadline"
    );
    open_items_closed(&t)
}

async fn bad_input(c: &Client) -> Check {
    let ok = run_body(&fresh_id(), &fresh_id(), "x");
    let mut numeric = ok.clone();
    numeric["threadId"] = json!(918_273_645_500_123_456_u64);
    let mut version = ok.clone();
    version["protocolVersion"] = json!("2");
    let mut missing = ok.clone();
    missing.as_object_mut().map(|o| o.remove("runId"));
    let mut bad_resume = ok.clone();
    bad_resume["resume"] = json!("approve");
    let cases: Vec<(&str, Vec<u8>, u16)> = vec![
        ("invalid JSON", b"{not json".to_vec(), 400),
        ("numeric threadId", numeric.to_string().into_bytes(), 400),
        ("protocolVersion 2", version.to_string().into_bytes(), 400),
        ("missing runId", missing.to_string().into_bytes(), 400),
        (
            "resume not an object",
            bad_resume.to_string().into_bytes(),
            400,
        ),
        ("array body", b"[]".to_vec(), 400),
        ("body over 1 MiB", vec![b' '; 1024 * 1024 + 10], 413),
    ];
    for (label, body, want) in cases {
        let (s, b) = c.raw(reqwest::Method::POST, "/runs", body).await;
        ensure!(s == want, "{label}: HTTP {s}, want {want}");
        ensure!(b["error"].is_string(), "{label}: body {b}");
    }
    let (s, b) = c.raw(reqwest::Method::GET, "/runs", Vec::new()).await;
    ensure!(
        s == 405 && b["error"].is_string(),
        "GET /runs: HTTP {s} {b}"
    );
    let (s, b) = c.raw(reqwest::Method::POST, "/health", Vec::new()).await;
    ensure!(
        s == 405 && b["error"].is_string(),
        "POST /health: HTTP {s} {b}"
    );
    // Routes are exact below the base URL: no suffix or substring matches.
    for path in ["/x/runs", "/runs/x", "/x/health", "/x/files/y/z"] {
        let (s, _) = c.raw(reqwest::Method::GET, path, Vec::new()).await;
        ensure!(s == 404, "GET {path}: HTTP {s}, want 404");
    }
    let (s, b) = c.raw(reqwest::Method::GET, "/nope", Vec::new()).await;
    ensure!(
        s == 404 && b["error"].is_string(),
        "GET /nope: HTTP {s} {b}"
    );
    let (s, _) = c.health().await;
    ensure!(s == 200, "after bad input /health is HTTP {s}");
    Ok(())
}

async fn disconnect(c: &Client) -> Check {
    let body = run_body(&fresh_id(), &fresh_id(), "/slow 6");
    let first = c.turn_then_hang_up(&body).await;
    ensure!(first.contains("STEP_STARTED"), "no first frame: {first:?}");
    // The agent must stop well before its 6 s: the run then replays as cancelled.
    let started = Instant::now();
    loop {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let r = c.turn(&body).await;
        if r.last()["code"] == "CANCELLED" {
            return Ok(());
        }
        ensure!(
            started.elapsed() < Duration::from_secs(5) && r.last()["type"] != "RUN_FINISHED",
            "the agent kept running after the client left (replay: {})",
            r.last()
        );
    }
}

async fn after_restart(c: &Client, thread: &str, token: &str, before: &TurnStream) -> Check {
    let mut health = (0, Value::Null);
    for _ in 0..20 {
        health = c.health().await;
        if health.0 == 200 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    ensure!(health.0 == 200, "/health after restart: HTTP {}", health.0);
    ended_ok(before)?;
    let t = c.turn(&run_body(&fresh_id(), thread, "and now?")).await;
    ended_ok(&t)?;
    ensure!(
        t.text().contains(token),
        "context lost across the restart: {:?}",
        t.text()
    );
    Ok(())
}
