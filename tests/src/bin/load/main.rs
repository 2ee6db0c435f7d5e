//! A bounded loopback load generator for any runway adapter (BENCHMARKS.md, `scripts/bench.sh`).
//!
//! ```text
//! cargo build --profile fast -p runway-e2e --bin load
//! load BASE_URL [--concurrency N] [--turns N] [--connection new|keep-alive] [--input TEXT]
//!      [--header 'Name: value']... [--server-pid PID] [--json] [--time-limit SECS]
//!      [--thread-turns N] [--threads N]
//! ```
//!
//! `--concurrency` workers share `--turns` turns; each worker sends its turns one after another
//! on its own Console thread (each turn reads the thread's context and writes it back; a new
//! thread every `--thread-turns` turns), with a new TCP connection per turn (`Connection: close`, what a one-shot client does) or one
//! keep-alive connection per worker. Reports first-frame and whole-turn percentiles (from
//! before `connect`; the first frame also from the connection being ready, the server's part),
//! turns per second, errors by kind, the load tool's own CPU and, with
//! `--server-pid`, the server's CPU per turn (utime+stime from `/proc`), its peak RSS
//! (`VmHWM`) and the system's listen-queue overflows during the run (`TcpExtListenOverflows`).
//!
//! Loopback targets only; at most [`MAX_CONCURRENCY`] workers, [`MAX_TURNS`] turns and
//! [`MAX_TIME_LIMIT`]; a turn taking over [`TURN_TIMEOUT`] counts as a `timeout` error.
//! It drives hyper's HTTP/1 client on one thread by default: 1,000 concurrent new-connection
//! turns cost it about as much CPU as the server.

mod proc_stats;
mod report;
mod turn;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use clap::Parser;

use crate::report::{Report, Sample};
use crate::turn::{ConnectionMode, Target};

/// Most workers at once.
const MAX_CONCURRENCY: usize = 4_000;
/// Most turns in one run.
const MAX_TURNS: usize = 200_000;
/// Longest run.
const MAX_TIME_LIMIT: Duration = Duration::from_secs(300);
/// A turn still unfinished after this is abandoned and counted as an error.
const TURN_TIMEOUT: Duration = Duration::from_secs(30);

/// Command line of `load`.
#[derive(Parser, Debug)]
#[command(about = "Bounded loopback load for a runway base URL")]
struct Args {
    /// Base URL on loopback (`http://127.0.0.1:8787`, with any base path).
    base_url: String,
    /// Workers sending turns at once.
    #[arg(long, short = 'c', default_value_t = 8)]
    concurrency: usize,
    /// Turns in all, shared by the workers.
    #[arg(long, short = 'n', default_value_t = 400)]
    turns: usize,
    /// A new TCP connection per turn, or one keep-alive connection per worker.
    #[arg(long, value_enum, default_value_t = ConnectionMode::New)]
    connection: ConnectionMode,
    /// The turn's `input` (the demo agent answers `/long N` with N bytes).
    #[arg(long, default_value = "Hello")]
    input: String,
    /// A header sent on every turn (`'Name: value'`), e.g. the auth headers.
    #[arg(long = "header", short = 'H')]
    headers: Vec<String>,
    /// The server's process id: report its CPU per turn and peak RSS from /proc.
    #[arg(long)]
    server_pid: Option<u32>,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
    /// Stop starting turns after this many seconds.
    #[arg(long, default_value_t = 120)]
    time_limit: u64,
    /// Turns per Console thread: each worker starts a new thread after this many turns, so
    /// the stored context a turn loads and saves stays this short (0: one thread per worker
    /// for the whole run, its context growing every turn).
    #[arg(long, default_value_t = 10)]
    thread_turns: usize,
    /// Client runtime threads (1: a current-thread runtime, the cheapest).
    #[arg(long, default_value_t = 1)]
    threads: usize,
}

fn main() -> std::process::ExitCode {
    let args = Args::parse();
    let target = match Target::parse(&args.base_url, &args.headers, &args.input) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("load: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    if let Err(e) = proc_stats::raise_fd_limit(args.concurrency) {
        eprintln!("load: {e}");
        return std::process::ExitCode::from(2);
    }
    let rt = if args.threads <= 1 {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(args.threads)
            .enable_all()
            .build()
    }
    .expect("tokio runtime");
    let report = rt.block_on(run(&args, Arc::new(target)));
    if args.json {
        println!("{}", report.to_json());
    } else {
        print!("{}", report.to_text());
    }
    if report.errors_total() > 0 {
        std::process::ExitCode::FAILURE
    } else {
        std::process::ExitCode::SUCCESS
    }
}

async fn run(args: &Args, target: Arc<Target>) -> Report {
    let concurrency = args.concurrency.clamp(1, MAX_CONCURRENCY);
    let turns = args.turns.clamp(1, MAX_TURNS);
    let time_limit = Duration::from_secs(args.time_limit).min(MAX_TIME_LIMIT);
    let server_before = args.server_pid.map(proc_stats::ProcessCpu::read);
    let overflows_before = proc_stats::listen_overflows();
    let client_before = proc_stats::ProcessCpu::read_self();
    let started = Instant::now();
    let deadline = started + time_limit;
    let next = Arc::new(AtomicUsize::new(0));
    let workers: Vec<_> = (0..concurrency)
        .map(|w| {
            let (target, next) = (Arc::clone(&target), Arc::clone(&next));
            let (mode, thread_turns) = (args.connection, args.thread_turns);
            tokio::spawn(async move {
                worker(w, &target, mode, thread_turns, &next, turns, deadline).await
            })
        })
        .collect();
    let mut samples: Vec<Sample> = Vec::with_capacity(turns);
    for w in workers {
        samples.extend(w.await.expect("worker task"));
    }
    let elapsed = started.elapsed();
    Report::new(report::RunFacts {
        base_url: args.base_url.clone(),
        concurrency,
        connection: args.connection,
        input_bytes: args.input.len(),
        thread_turns: args.thread_turns,
        elapsed,
        samples,
        client_cpu: client_before
            .and_then(|b| Some(proc_stats::ProcessCpu::read_self()?.since(&b))),
        server: args.server_pid.and_then(|pid| {
            let before = server_before.flatten()?;
            let after = proc_stats::ProcessCpu::read(pid)?;
            Some(report::ServerFacts {
                pid,
                cpu: after.since(&before),
                peak_rss_kib: proc_stats::peak_rss_kib(pid),
            })
        }),
        listen_overflows: match (overflows_before, proc_stats::listen_overflows()) {
            (Some(b), Some(a)) => Some(a.saturating_sub(b)),
            _ => None,
        },
    })
}

/// One worker: takes turn numbers from `next` until `turns` are taken or `deadline` passes.
async fn worker(
    w: usize,
    target: &Target,
    mode: ConnectionMode,
    thread_turns: usize,
    next: &AtomicUsize,
    turns: usize,
    deadline: Instant,
) -> Vec<Sample> {
    let mut thread_id = String::new();
    let mut samples = Vec::new();
    let mut conn = None;
    while next.fetch_add(1, Ordering::Relaxed) < turns && Instant::now() < deadline {
        if thread_id.is_empty() || (thread_turns > 0 && samples.len() % thread_turns == 0) {
            thread_id = format!("load-{}-{w}", runway_e2e::client::fresh_id());
        }
        let run_id = runway_e2e::client::fresh_id();
        let sample = match tokio::time::timeout(
            TURN_TIMEOUT,
            target.turn(&mut conn, mode, &run_id, &thread_id),
        )
        .await
        {
            Ok(s) => s,
            Err(_) => {
                conn = None;
                Sample::failed(turn::ErrorKind::Timeout)
            }
        };
        samples.push(sample);
    }
    samples
}

/// The resolved address of a loopback base URL.
fn loopback_addr(host: &str, port: u16) -> Option<SocketAddr> {
    let ip: std::net::IpAddr = match host {
        "localhost" => std::net::Ipv4Addr::LOCALHOST.into(),
        h => h
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse()
            .ok()?,
    };
    ip.is_loopback().then_some(SocketAddr::new(ip, port))
}
