//! Starting moto's DynamoDB through `infra/aws/local --dynamodb-only`, and a store on it.

#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aws_sdk_dynamodb::config::interceptors::{
    BeforeDeserializationInterceptorContextRef, BeforeTransmitInterceptorContextRef,
};
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_dynamodb::error::BoxError;
use runway_lambda::DynamoStore;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// A moto server process group, stopped on drop.
pub struct Moto {
    child: Child,
    pub endpoint: String,
}

impl Drop for Moto {
    /// Stops the script's process group with SIGTERM and waits (up to 10 s) for the script,
    /// which stops its own children first.
    fn drop(&mut self) {
        if let Some(pid) = self.child.id() {
            let _ = std::process::Command::new("bash")
                .args(["-c", &format!("kill -TERM -- -{pid}")])
                .status();
            for _ in 0..100 {
                if !matches!(self.child.try_wait(), Ok(None)) {
                    return;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            let _ = std::process::Command::new("bash")
                .args(["-c", &format!("kill -KILL -- -{pid}")])
                .status();
        }
    }
}

pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Starts moto with table `table` (created by the script).
pub async fn moto(table: &str) -> Moto {
    let mut cmd = Command::new(repo_root().join("infra/aws/local"));
    cmd.args(["--dynamodb-only", "--table", table])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .stdin(Stdio::null())
        .process_group(0);
    let mut child = cmd.spawn().expect("infra/aws/local starts");
    let mut lines = BufReader::new(child.stdout.take().expect("piped")).lines();
    let endpoint = tokio::time::timeout(Duration::from_secs(600), async {
        while let Some(line) = lines.next_line().await.expect("stdout") {
            if let Some(e) = line.strip_prefix("dynamodb_endpoint:") {
                return e.trim().to_owned();
            }
        }
        panic!("infra/aws/local exited without printing dynamodb_endpoint");
    })
    .await
    .expect("moto ready in time");
    Moto { child, endpoint }
}

/// One SDK request as the client saw it: operation and when it was in flight.
#[derive(Debug, Clone)]
pub struct Sent {
    pub target: String,
    pub start: Instant,
    pub end: Option<Instant>,
}

/// Records every request attempt the SDK transmits.
#[derive(Debug, Clone, Default)]
pub struct Recorder(pub Arc<Mutex<Vec<Sent>>>);

impl Recorder {
    pub fn take(&self) -> Vec<Sent> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

impl Intercept for Recorder {
    fn name(&self) -> &'static str {
        "Recorder"
    }

    fn read_before_transmit(
        &self,
        ctx: &BeforeTransmitInterceptorContextRef<'_>,
        _rc: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        self.0.lock().unwrap().push(Sent {
            target: ctx
                .request()
                .headers()
                .get("x-amz-target")
                .map(|t| t.rsplit('.').next().unwrap_or(t).to_owned())
                .unwrap_or_default(),
            start: Instant::now(),
            end: None,
        });
        Ok(())
    }

    fn read_after_transmit(
        &self,
        ctx: &BeforeDeserializationInterceptorContextRef<'_>,
        _rc: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let _ = ctx;
        let mut v = self.0.lock().unwrap();
        let now = Instant::now();
        // The oldest request still in flight (answers of concurrent requests may arrive in any
        // order, but only overlap matters to the tests).
        if let Some(s) = v.iter_mut().find(|s| s.end.is_none()) {
            s.end = Some(now);
        }
        Ok(())
    }
}

/// A store on `endpoint`/`table` whose requests are recorded.
pub async fn store(endpoint: &str, table: &str) -> (DynamoStore, Recorder) {
    let sdk = runway_lambda::sdk_config(|_| None).await;
    let rec = Recorder::default();
    let conf = aws_sdk_dynamodb::config::Builder::from(&sdk)
        .endpoint_url(endpoint)
        .credentials_provider(aws_sdk_dynamodb::config::Credentials::new(
            "local", "local", None, None, "tests",
        ))
        .interceptor(rec.clone())
        .build();
    (
        DynamoStore::new(aws_sdk_dynamodb::Client::from_conf(conf), table),
        rec,
    )
}
