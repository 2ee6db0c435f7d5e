//! The thread that owns `runway serve`'s SQLite connection. Every store call runs there, in
//! the order queued; the calls waiting together run in one transaction (group commit).
//!
//! Why a thread: SQLite serialises writers anyway, and on tokio's blocking pool 1,000
//! concurrent turns each parked a pool thread on the connection's lock (hundreds of threads:
//! stacks, malloc arenas, context switches). Why group commit: each commit writes every page
//! it touched to the WAL (page checksums, file writes, locks) — per turn, that cost more CPU
//! than the statements. Now a burst of turns shares one commit.
//!
//! Each call runs inside its own `SAVEPOINT`: a call that fails (or panics) is rolled back
//! alone and answered with its error, the others in its batch still commit. A call's answer is
//! sent only once the batch's transaction has committed, so a turn never reports a commit
//! that did not happen; if the commit itself fails, every call in the batch gets the error.

use std::panic::AssertUnwindSafe;
use std::sync::mpsc;

use runway_core::adapter::StoreError;
use rusqlite::Connection;

/// Name of the thread.
pub const CONNECTION_THREAD: &str = "runway-sqlite";
/// Most calls sharing one transaction (bounds the wait of the first call in a batch).
const MAX_BATCH: usize = 64;

fn unavailable(e: impl std::fmt::Display) -> StoreError {
    StoreError::Unavailable(e.to_string())
}

/// Runs one of the transaction statements below from the connection's statement cache:
/// `execute_batch` parsed it anew on every call, two to four times a store call (a tenth of
/// `runway serve`'s instructions per turn, callgrind).
fn run(conn: &Connection, statement: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(statement)?.execute([]).map(|_| ())
}

/// Sends a call's answer once its batch's fate is known.
type Answer = Box<dyn FnOnce(Result<(), StoreError>) + Send>;

/// A queued call.
trait Job: Send {
    /// Runs the call inside its savepoint; returns how to answer once the batch is committed.
    fn run(self: Box<Self>, conn: &Connection) -> Answer;
    /// Answers with `error` without running.
    fn fail(self: Box<Self>, error: StoreError);
}

struct Call<F, T> {
    f: F,
    reply: tokio::sync::oneshot::Sender<Result<T, StoreError>>,
}

impl<F, T> Job for Call<F, T>
where
    F: FnOnce(&Connection) -> Result<T, StoreError> + Send,
    T: Send + 'static,
{
    fn run(self: Box<Self>, conn: &Connection) -> Answer {
        let Call { f, reply } = *self;
        let out = run(conn, "SAVEPOINT runway_call")
            .map_err(unavailable)
            .and_then(|()| {
                std::panic::catch_unwind(AssertUnwindSafe(|| f(conn)))
                    .unwrap_or_else(|_| Err(unavailable("the database call panicked")))
            });
        let out = match out {
            Ok(v) => run(conn, "RELEASE runway_call")
                .map(|()| v)
                .map_err(unavailable),
            Err(e) => Err(e),
        };
        match out {
            // The turn may have gone (client left): nobody to answer, hence `let _`.
            Ok(v) => Box::new(move |committed| {
                let _ = reply.send(committed.map(|()| v));
            }),
            Err(e) => {
                // Undo this call's writes only; the rest of the batch goes on.
                let _ = run(conn, "ROLLBACK TO runway_call")
                    .and_then(|()| run(conn, "RELEASE runway_call"));
                Box::new(move |_| {
                    let _ = reply.send(Err(e));
                })
            }
        }
    }

    fn fail(self: Box<Self>, error: StoreError) {
        let _ = self.reply.send(Err(error));
    }
}

/// A handle to the connection's thread; the thread ends when the last handle is dropped.
#[derive(Clone)]
pub struct ConnectionThread {
    jobs: mpsc::Sender<Box<dyn Job>>,
}

impl ConnectionThread {
    /// Moves `conn` to a new thread.
    ///
    /// # Errors
    /// The thread could not be started.
    pub fn start(conn: Connection) -> std::io::Result<Self> {
        let (jobs, queue) = mpsc::channel::<Box<dyn Job>>();
        std::thread::Builder::new()
            .name(CONNECTION_THREAD.into())
            .spawn(move || serve(&conn, &queue))?;
        Ok(Self { jobs })
    }

    /// Runs `f` on the connection, inside a transaction; answers once it has committed.
    pub async fn call<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        self.jobs
            .send(Box::new(Call { f, reply }))
            .map_err(|_| unavailable("the database thread has stopped"))?;
        answer
            .await
            .map_err(|_| unavailable("the database thread has stopped"))?
    }
}

fn serve(conn: &Connection, queue: &mpsc::Receiver<Box<dyn Job>>) {
    while let Ok(first) = queue.recv() {
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match queue.try_recv() {
                Ok(job) => batch.push(job),
                Err(_) => break,
            }
        }
        if let Err(e) = run(conn, "BEGIN IMMEDIATE") {
            let e = unavailable(e);
            for job in batch {
                job.fail(e.clone());
            }
            continue;
        }
        let answers: Vec<Answer> = batch.into_iter().map(|job| job.run(conn)).collect();
        let committed = run(conn, "COMMIT").map_err(unavailable);
        if committed.is_err() {
            let _ = run(conn, "ROLLBACK");
        }
        for answer in answers {
            answer(committed.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn thread() -> ConnectionThread {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch("CREATE TABLE t (k TEXT PRIMARY KEY)")
            .unwrap();
        ConnectionThread::start(conn).unwrap()
    }

    fn insert(k: &'static str) -> impl FnOnce(&Connection) -> Result<(), StoreError> {
        move |c| {
            c.execute("INSERT INTO t VALUES (?1)", [k])
                .map(|_| ())
                .map_err(unavailable)
        }
    }

    async fn keys(db: &ConnectionThread) -> Vec<String> {
        db.call(|c| {
            let mut s = c
                .prepare("SELECT k FROM t ORDER BY k")
                .map_err(unavailable)?;
            let rows = s.query_map([], |r| r.get(0)).map_err(unavailable)?;
            rows.collect::<Result<_, _>>().map_err(unavailable)
        })
        .await
        .unwrap()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn every_call_runs_on_the_connections_own_thread() {
        // Not on tokio's blocking pool: a burst of turns must not park a pool thread each.
        let db = thread();
        let calls =
            (0..64).map(|_| db.call(|_| Ok(std::thread::current().name().map(str::to_owned))));
        for name in futures::future::join_all(calls).await {
            assert_eq!(name.unwrap().as_deref(), Some(CONNECTION_THREAD));
        }
    }

    #[tokio::test]
    async fn a_failing_call_in_a_batch_is_rolled_back_alone() {
        let db = thread();
        // Queued together: one batch. The third writes, then fails; its write must go.
        let (a, b, bad, c) = futures::join!(
            db.call(insert("a")),
            db.call(insert("b")),
            db.call(|c| {
                insert("bad")(c)?;
                Err::<(), _>(StoreError::Corrupt("refused".into()))
            }),
            db.call(insert("c")),
        );
        assert!(a.is_ok() && b.is_ok() && c.is_ok());
        assert!(matches!(bad, Err(StoreError::Corrupt(_))));
        assert_eq!(keys(&db).await, ["a", "b", "c"]);
        // A constraint error is the call's own too.
        let (dup, d) = futures::join!(db.call(insert("a")), db.call(insert("d")));
        assert!(matches!(dup, Err(StoreError::Unavailable(_))));
        assert!(d.is_ok());
        assert_eq!(keys(&db).await, ["a", "b", "c", "d"]);
    }

    #[tokio::test]
    async fn a_panicking_call_fails_alone_and_the_thread_keeps_serving() {
        let db = thread();
        let (p, a) = futures::join!(
            db.call(|c| -> Result<(), StoreError> {
                insert("p")(c)?;
                panic!("boom")
            }),
            db.call(insert("a")),
        );
        assert!(matches!(p, Err(StoreError::Unavailable(_))));
        assert!(a.is_ok());
        assert_eq!(keys(&db).await, ["a"]);
        db.call(insert("b")).await.unwrap();
        assert_eq!(keys(&db).await, ["a", "b"]);
    }
}
