//! A bounded loopback load test for any runway adapter.
//!
//! ```text
//! cargo run --release -p runway-e2e --bin load -- BASE_URL [CLIENTS] [TURNS_PER_CLIENT] [HEADER]...
//! ```
//!
//! Each client runs its turns one after another on its own thread (each turn reads the thread's
//! context and writes it back). Prints the median and 95th percentile of the time to the first
//! frame and of the whole turn, and turns per second. At most 64 clients × 500 turns, and it
//! stops after 120 s whatever is left.

use std::time::{Duration, Instant};

use runway_e2e::Client;
use runway_e2e::client::{fresh_id, run_body};

const MAX_CLIENTS: usize = 64;
const MAX_TURNS: usize = 500;
const TIME_LIMIT: Duration = Duration::from_secs(120);

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i]
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(base) = args.first().cloned() else {
        eprintln!("usage: load BASE_URL [CLIENTS] [TURNS_PER_CLIENT] ['Name: value']...");
        std::process::exit(2);
    };
    let host = reqwest::Url::parse(&base)
        .ok()
        .and_then(|u| u.host_str().map(str::to_owned))
        .unwrap_or_default();
    if !(host == "localhost" || host == "::1" || host == "[::1]" || host.starts_with("127.")) {
        eprintln!("load only targets loopback addresses, not {host:?}");
        std::process::exit(2);
    }
    let clients: usize = args
        .get(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(8)
        .min(MAX_CLIENTS);
    let turns: usize = args
        .get(2)
        .and_then(|a| a.parse().ok())
        .unwrap_or(50)
        .min(MAX_TURNS);
    let auth: Vec<(String, String)> = args
        .iter()
        .skip(3)
        .filter_map(|h| h.split_once(':'))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect();
    let client = Client::new(&base, auth);
    let deadline = Instant::now() + TIME_LIMIT;
    let started = Instant::now();
    let tasks: Vec<_> = (0..clients)
        .map(|_| {
            let client = client.clone();
            tokio::spawn(async move {
                let thread = fresh_id();
                let mut samples = Vec::new();
                for i in 0..turns {
                    if Instant::now() > deadline {
                        break;
                    }
                    let t0 = Instant::now();
                    let t = client
                        .turn(&run_body(&fresh_id(), &thread, &format!("message {i}")))
                        .await;
                    let ok = t.last()["type"] == "RUN_FINISHED";
                    samples.push((t.first_frame.unwrap_or_default(), t0.elapsed(), ok));
                }
                samples
            })
        })
        .collect();
    let mut ttfb = Vec::new();
    let mut total = Vec::new();
    let mut failed = 0;
    for t in tasks {
        for (f, a, ok) in t.await.expect("client task") {
            ttfb.push(f);
            total.push(a);
            failed += usize::from(!ok);
        }
    }
    let elapsed = started.elapsed();
    ttfb.sort();
    total.sort();
    println!(
        "{} turns ({} clients), {} failed, {:.0} turns/s",
        total.len(),
        clients,
        failed,
        total.len() as f64 / elapsed.as_secs_f64()
    );
    println!(
        "first frame: median {:.2} ms, p95 {:.2} ms",
        percentile(&ttfb, 0.5).as_secs_f64() * 1e3,
        percentile(&ttfb, 0.95).as_secs_f64() * 1e3
    );
    println!(
        "whole turn:  median {:.2} ms, p95 {:.2} ms",
        percentile(&total, 0.5).as_secs_f64() * 1e3,
        percentile(&total, 0.95).as_secs_f64() * 1e3
    );
    if failed > 0 {
        std::process::exit(1);
    }
}
