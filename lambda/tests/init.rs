//! The real `bootstrap` refuses to start (Lambda reports an init error) when the auth header
//! set is present but unusable: nothing is ever served without the configured auth.
//! Init reads its settings before any network request, so no Lambda runtime API is needed.

use std::ffi::OsString;
use std::process::Command;
use std::time::{Duration, Instant};

fn init_with(auth: OsString) -> (Option<i32>, String) {
    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_bootstrap"))
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("AWS_REGION", "us-east-1")
        .env("AWS_ACCESS_KEY_ID", "local")
        .env("AWS_SECRET_ACCESS_KEY", "local")
        .env("AWS_EC2_METADATA_DISABLED", "true")
        // Nothing listens here: a bootstrap that got past init fails to reach the runtime API.
        .env("AWS_LAMBDA_RUNTIME_API", "127.0.0.1:9")
        .env("RUNWAY_AUTH_HEADERS", auth)
        .output()
        .expect("bootstrap runs");
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "bootstrap took {:?}",
        started.elapsed()
    );
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr),
    )
}

#[test]
fn unusable_auth_settings_fail_init_naming_the_setting() {
    #[cfg(unix)]
    let not_utf8 = {
        use std::os::unix::ffi::OsStringExt;
        OsString::from_vec(b"X-API-Key: caf\xe9".to_vec())
    };
    #[cfg(not(unix))]
    let not_utf8 = OsString::new();
    for (label, value) in [
        ("not UTF-8", not_utf8),
        ("empty", OsString::new()),
        ("blank", " \n\t\n".into()),
        ("no colon", "X-API-Key k1".into()),
        ("bad name", "X API Key: k1".into()),
    ] {
        let (code, output) = init_with(value);
        assert_ne!(code, Some(0), "{label}: {output}");
        assert!(
            output.contains("RUNWAY_AUTH_HEADERS"),
            "{label}: init did not fail on the setting:\n{output}"
        );
    }
    // A usable set gets past init (and then fails only on the missing runtime API).
    let (_, output) = init_with("X-API-Key: k1".into());
    assert!(!output.contains("RUNWAY_AUTH_HEADERS"), "{output}");
}
