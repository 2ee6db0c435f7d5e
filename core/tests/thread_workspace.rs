//! One workspace per thread (issue 25), through `Runway::handle` on the testing kit: a thread
//! belongs to the workspace that started it, and a turn from another workspace on it — such as
//! a resume settling a pending approval — is refused before anything runs, counted nowhere.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use runway_core::adapter::TurnStore;
use runway_core::meter::usage_part;
use runway_core::meter::window::Windows;
use runway_core::protocol::Decision;
use runway_core::store::tally::Tally;
use runway_core::testing::{Frames, TestRunway, TestTurn, VirtualRuntime};
use runway_core::{Agent, AgentResult, Interrupt, Message, Outcome, Output, Role, Turn};

/// Asks before refunding; refunds (once, claimed) when the question is approved.
#[derive(Clone, Default)]
struct Refunds {
    runs: Arc<AtomicUsize>,
    refunds: Arc<AtomicUsize>,
}

impl Agent for Refunds {
    async fn run(&self, turn: &mut Turn, out: &Output) -> AgentResult {
        self.runs.fetch_add(1, Ordering::SeqCst);
        let approved = turn.context.pending_interrupt.is_some()
            && turn
                .resume
                .as_ref()
                .is_some_and(|r| r.decision == Decision::Approve);
        if approved && turn.claim_action("refund").await? {
            self.refunds.fetch_add(1, Ordering::SeqCst);
            out.text("Refunded.");
            return Ok(Outcome::Done);
        }
        Ok(Outcome::Interrupt(Interrupt::Approval {
            prompt: "Refund order 1?".into(),
        }))
    }
}

fn app() -> (TestRunway<Refunds>, Refunds) {
    let agent = Refunds::default();
    let rt = VirtualRuntime::new();
    let app = TestRunway::with(
        agent.clone(),
        rt,
        runway_core::adapter::Config::unauthenticated(),
    );
    (app, agent)
}

fn from(workspace: &str, thread: &str, input: &str) -> TestTurn {
    TestTurn::new(input).thread(thread).workspace(workspace)
}

fn approve(workspace: &str, thread: &str) -> TestTurn {
    from(workspace, thread, "").resume(Decision::Approve)
}

/// Today's usage rows of `app`, by `{workspace}/{worker}`.
async fn usage(app: &TestRunway<Refunds>) -> Vec<(String, Tally)> {
    let now = app.runtime().now_ms();
    let day = Windows::at(now).day.to_string();
    app.store()
        .tallies(&usage_part(&day), now)
        .await
        .expect("usage rows")
}

fn refused(f: &Frames) -> bool {
    f.types().first() == Some(&"STEP_STARTED")
        && f.error().is_some_and(|e| {
            e.code == "THREAD_OTHER_WORKSPACE"
                && e.message
                    == "This conversation belongs to another workspace. Please start a new \
                        conversation."
        })
}

#[tokio::test]
async fn a_resume_from_another_workspace_is_refused_before_anything_runs() {
    let (app, agent) = app();
    let asked = app.send(from("w1", "t", "refund order 1")).await;
    assert!(asked.interrupt().is_some(), "{:?}", asked.types());
    assert_eq!(agent.runs.load(Ordering::SeqCst), 1);

    // The attack: the same threadId, another workspace, approving the pending question.
    let attack = app.send(approve("w2", "t")).await;
    assert!(refused(&attack), "{:?}", attack.all());
    assert_eq!(agent.runs.load(Ordering::SeqCst), 1, "the agent ran");
    assert_eq!(agent.refunds.load(Ordering::SeqCst), 0, "the refund ran");
    let rows = usage(&app).await;
    assert!(
        rows.iter().all(|(item, _)| !item.starts_with("w2/")),
        "the refused turn was counted: {rows:?}"
    );
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0].1.turns, 1, "{rows:?}");

    // The owner's resume still settles the question, once.
    let done = app.send(approve("w1", "t")).await;
    assert_eq!(done.text(), "Refunded.", "{:?}", done.all());
    assert_eq!(agent.refunds.load(Ordering::SeqCst), 1);
    // And a later attempt from the other workspace sees nothing either.
    assert!(refused(
        &app.send(from("w2", "t", "what did w1 say?")).await
    ));
}

#[tokio::test]
async fn a_fork_is_a_new_thread_owned_by_the_forking_workspace() {
    let (app, agent) = app();
    app.send(from("w1", "t", "refund order 1")).await;
    // A fork (`threadId:<branch>`, with `history`) from another workspace: a thread of its own.
    let fork = from("w2", "t:b1", "refund order 2").history([
        Message::new(Role::User, "refund order 1"),
        Message::new(Role::Assistant, "Refund order 1?"),
    ]);
    let forked = app.send(fork).await;
    assert!(forked.interrupt().is_some(), "{:?}", forked.all());
    assert_eq!(agent.runs.load(Ordering::SeqCst), 2);
    assert!(refused(&app.send(approve("w1", "t:b1")).await));
    assert_eq!(agent.refunds.load(Ordering::SeqCst), 0);
    let done = app.send(approve("w2", "t:b1")).await;
    assert_eq!(done.text(), "Refunded.", "{:?}", done.all());
}

#[tokio::test]
async fn a_thread_stored_before_owners_existed_is_claimed_by_its_next_turn() {
    let (app, agent) = app();
    // Stored as if by an earlier release: a pending question and no owner.
    let legacy = runway_core::ThreadContext {
        pending_interrupt: Some(Interrupt::Approval {
            prompt: "Refund order 1?".into(),
        }),
        ..Default::default()
    };
    let first = app.send(approve("w1", "t").context(legacy)).await;
    assert_eq!(first.text(), "Refunded.", "{:?}", first.all());
    assert!(refused(&app.send(from("w2", "t", "hello")).await));
    assert_eq!(agent.runs.load(Ordering::SeqCst), 1);
}
