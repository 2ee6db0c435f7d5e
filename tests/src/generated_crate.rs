//! A crate written by `runway new` into a temporary directory outside this workspace, built
//! against this checkout, and the checks every runtime's copy of it must pass.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use crate::client::{Client, fresh_id, run_body};
use crate::process::{free_data_dir, runway_binary};

/// The cargo target directory the workspace builds into (`$CARGO_TARGET_DIR`, else `target/`).
/// The generated crate builds there too, so it reuses every dependency already built.
pub fn workspace_target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target"))
}

/// The variables cargo sets for a running test (`CARGO_MANIFEST_DIR`, `CARGO_PKG_NAME`, …) that
/// must not reach a nested cargo: build scripts such as ring's declare
/// `rerun-if-env-changed` on them, so a nested build that sees them rebuilds ring and everything
/// above it (the TLS stack, the AWS SDK), and the next ordinary build rebuilds it all again.
pub fn cargo_test_env() -> Vec<std::ffi::OsString> {
    const SET_BY_CARGO: [&str; 9] = [
        "CARGO_MANIFEST_",
        "CARGO_PKG_",
        "CARGO_BIN_",
        "CARGO_CRATE_",
        "CARGO_PRIMARY_PACKAGE",
        "CARGO_TARGET_TMPDIR",
        "CARGO_RUSTC_CURRENT_DIR",
        "OUT_DIR",
        "CARGO_CFG_",
    ];
    std::env::vars_os()
        .map(|(k, _)| k)
        .filter(|k| {
            k.to_str()
                .is_some_and(|k| SET_BY_CARGO.iter().any(|p| k.starts_with(p)))
        })
        .collect()
}

/// A crate created by the real `runway new`; removed (with its parent temp dir) on drop.
#[derive(Debug)]
pub struct GeneratedCrate {
    /// The crate's directory.
    pub dir: PathBuf,
    /// Its package name (and local binary's name).
    pub name: String,
    parent: PathBuf,
}

impl GeneratedCrate {
    /// Runs `runway new <temp>/<name>`.
    ///
    /// # Panics
    /// If `runway new` fails or the directory lies inside this workspace.
    pub fn create(name: &str) -> Self {
        let parent = free_data_dir("new");
        let dir = parent.join(name);
        let workspace = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("..")
            .canonicalize()
            .expect("workspace dir");
        assert!(
            !parent
                .canonicalize()
                .expect("temp dir")
                .starts_with(&workspace),
            "the generated crate must live outside the workspace"
        );
        let out = Command::new(runway_binary())
            .arg("new")
            .arg(&dir)
            .output()
            .expect("runway new runs");
        assert!(
            out.status.success(),
            "runway new failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        Self {
            dir,
            name: name.to_owned(),
            parent,
        }
    }

    /// Runs `cargo ARGS` in the crate with the workspace's target directory; panics on
    /// failure. Returns how long it took.
    pub fn cargo(&self, args: &[&str]) -> std::time::Duration {
        self.cargo_in(&workspace_target_dir(), args)
    }

    /// As [`GeneratedCrate::cargo`], building into `target_dir`.
    pub fn cargo_in(&self, target_dir: &Path, args: &[&str]) -> std::time::Duration {
        let started = Instant::now();
        let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
        for name in cargo_test_env() {
            cmd.env_remove(name);
        }
        let status = cmd
            .args(args)
            .current_dir(&self.dir)
            .env("CARGO_TARGET_DIR", target_dir)
            .status()
            .expect("cargo runs");
        assert!(
            status.success(),
            "cargo {args:?} failed in {}",
            self.dir.display()
        );
        let took = started.elapsed();
        eprintln!(
            "[generated crate] cargo {args:?}: {:.1} s",
            took.as_secs_f64()
        );
        took
    }

    /// A native binary of the crate built by [`GeneratedCrate::cargo`] (`debug` profile).
    pub fn binary(&self, name: &str) -> PathBuf {
        workspace_target_dir().join("debug").join(name)
    }

    /// The crate's directory.
    pub fn path(&self) -> &Path {
        &self.dir
    }
}

impl Drop for GeneratedCrate {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.parent);
    }
}

/// Two turns on one thread, and one on another: the starter agent counts turns per thread in
/// its stored `state` and quotes the thread's previous message. Returns what went wrong.
pub async fn check_turn_memory(base_url: &str, auth: Vec<(String, String)>) -> Result<(), String> {
    let client = Client::new(base_url, auth);
    let thread = fresh_id();
    let expect = [
        (
            thread.as_str(),
            "hello",
            "You said: hello (turn 1 of this conversation)",
        ),
        (
            thread.as_str(),
            "again",
            "You said: again (turn 2 of this conversation). Before that you said: hello",
        ),
    ];
    for (thread, input, want) in expect {
        let turn = client.turn(&run_body(&fresh_id(), thread, input)).await;
        if turn.text() != want || turn.last()["type"] != "RUN_FINISHED" {
            return Err(format!(
                "turn {input:?} on thread {thread}: wanted {want:?} and RUN_FINISHED, got {:?} ending {}",
                turn.text(),
                turn.last()
            ));
        }
    }
    let other = client
        .turn(&run_body(&fresh_id(), &fresh_id(), "first"))
        .await;
    let want = "You said: first (turn 1 of this conversation)";
    if other.text() != want {
        return Err(format!(
            "a new thread: wanted {want:?}, got {:?}",
            other.text()
        ));
    }
    Ok(())
}
