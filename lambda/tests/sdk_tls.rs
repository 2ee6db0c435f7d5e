//! The AWS SDK's HTTPS client (`lambda/src/sdk_http.rs`: rustls on ring) completes a real TLS
//! handshake and verifies the server's certificate: a DynamoDB client made from
//! [`runway_lambda::sdk_config`], as the function makes it, calls TLS servers on 127.0.0.1.
//! moto, the other tests' AWS, speaks plain HTTP, so nothing else covers this path.
//!
//! The client trusts the roots `rustls-native-certs` loads, once per process: that crate reads
//! `SSL_CERT_FILE` when it is set. So this binary (no libtest harness) generates a test CA
//! and certificates, then runs itself again as a child with `SSL_CERT_FILE` naming that CA:
//! production code is unchanged, only its environment differs.
//!
//! The child checks three servers, one request each:
//! - a certificate for `localhost` signed by the trusted CA: the call succeeds with the
//!   server's answer;
//! - a certificate for `localhost` signed by another CA: the call fails as an unknown issuer
//!   and the server never sees an HTTP request;
//! - the trusted certificate reached as `127.0.0.1`, a name it does not carry: the call fails.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use aws_sdk_dynamodb::error::DisplayErrorContext;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// Set (to the directory of the generated files) in the child's environment.
const CHILD_DIR: &str = "RUNWAY_TEST_SDK_TLS_DIR";
/// The value the trusted server answers with.
const VALUE: &str = "read-over-tls";

fn main() -> ExitCode {
    match std::env::var_os(CHILD_DIR) {
        Some(dir) => child(Path::new(&dir)),
        None => parent(),
    }
}

/// Writes the CAs and server certificates, runs the child with the trusted CA as
/// `SSL_CERT_FILE`, and passes its verdict on.
fn parent() -> ExitCode {
    let dir = std::env::temp_dir().join(format!("runway-sdk-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let trusted = ca("runway test CA (trusted)");
    let untrusted = ca("runway test CA (untrusted)");
    std::fs::write(dir.join("trusted-ca.pem"), &trusted.1).expect("write CA");
    write_server_cert(&dir, "trusted", &trusted.0);
    write_server_cert(&dir, "untrusted", &untrusted.0);

    let mut child = Command::new(std::env::current_exe().expect("own path"))
        .env(CHILD_DIR, &dir)
        .env("SSL_CERT_FILE", dir.join("trusted-ca.pem"))
        .env_remove("SSL_CERT_DIR")
        .env("AWS_REGION", "us-east-1")
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .env_remove("AWS_SESSION_TOKEN")
        .env_remove("AWS_PROFILE")
        .env_remove("HTTPS_PROXY")
        .env_remove("https_proxy")
        .env_remove("ALL_PROXY")
        .env_remove("all_proxy")
        .spawn()
        .expect("the test binary runs itself");
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("child status") {
            break status;
        }
        if started.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the TLS checks took over 120 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let _ = std::fs::remove_dir_all(&dir);
    if status.success() {
        println!("sdk_tls: ok");
        ExitCode::SUCCESS
    } else {
        eprintln!("sdk_tls: the child failed: {status}");
        ExitCode::FAILURE
    }
}

/// A CA's issuer and its certificate in PEM.
fn ca(name: &str) -> (Issuer<'static, KeyPair>, String) {
    let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, name);
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let key = KeyPair::generate().expect("CA key");
    let cert = params.self_signed(&key).expect("CA certificate");
    (Issuer::new(params, key), cert.pem())
}

/// `{name}.der` and `{name}.key.der`: a server certificate for `localhost` from `issuer`.
fn write_server_cert(dir: &Path, name: &str, issuer: &Issuer<'static, KeyPair>) {
    let key = KeyPair::generate().expect("server key");
    let params = CertificateParams::new(vec!["localhost".to_owned()]).expect("server params");
    let cert = params.signed_by(&key, issuer).expect("server certificate");
    std::fs::write(dir.join(format!("{name}.der")), cert.der()).expect("write certificate");
    std::fs::write(dir.join(format!("{name}.key.der")), key.serialize_der()).expect("write key");
}

/// The checks, with `SSL_CERT_FILE` set: exits non-zero (a panic) on the first miss.
fn child(dir: &Path) -> ExitCode {
    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
    runtime.block_on(async {
        let get = |k: &str| std::env::var(k).ok();
        let sdk = runway_lambda::sdk_config(get).await;

        let (trusted_port, trusted_requests) = serve(&dir.join("trusted")).await;
        let value = list_tables(&sdk, &format!("https://localhost:{trusted_port}"))
            .await
            .unwrap_or_else(|e| panic!("the call to the trusted server failed: {e}"));
        assert_eq!(value, VALUE);
        assert_eq!(trusted_requests.load(Ordering::SeqCst), 1);
        println!("sdk_tls: the trusted server answered over TLS");

        let (untrusted_port, untrusted_requests) = serve(&dir.join("untrusted")).await;
        let e = list_tables(&sdk, &format!("https://localhost:{untrusted_port}"))
            .await
            .expect_err("a certificate from an unknown CA is refused");
        assert!(e.contains("UnknownIssuer"), "not a certificate error: {e}");
        assert_eq!(untrusted_requests.load(Ordering::SeqCst), 0);
        println!("sdk_tls: the untrusted certificate was refused: {e}");

        let e = list_tables(&sdk, &format!("https://127.0.0.1:{trusted_port}"))
            .await
            .expect_err("a certificate without the host's name is refused");
        assert!(e.contains("NotValidForName"), "not a name error: {e}");
        assert_eq!(trusted_requests.load(Ordering::SeqCst), 1);
        println!("sdk_tls: the certificate for another name was refused: {e}");
    });
    ExitCode::SUCCESS
}

/// `ListTables` through a DynamoDB client made from the function's `sdk` config, at
/// `endpoint`: the first table's name, or the error with its sources.
async fn list_tables(sdk: &aws_config::SdkConfig, endpoint: &str) -> Result<String, String> {
    let config = aws_sdk_dynamodb::config::Builder::from(sdk)
        .endpoint_url(endpoint)
        .build();
    aws_sdk_dynamodb::Client::from_conf(config)
        .list_tables()
        .send()
        .await
        .map(|out| out.table_names.unwrap_or_default().join(","))
        .map_err(|e| DisplayErrorContext(&e).to_string())
}

/// A TLS server on 127.0.0.1 with the certificate `{path}.der`: answers every DynamoDB
/// `ListTables` with [`VALUE`] as the one table. Its port, and the count of HTTP requests it has read.
async fn serve(path: &Path) -> (u16, Arc<AtomicUsize>) {
    let cert = CertificateDer::from(read(path.with_extension("der")));
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(read(
        path.with_extension("key.der"),
    )));
    let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
    let config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("TLS versions")
        .with_no_client_auth()
        .with_single_cert(vec![cert], key)
        .expect("server certificate and key");
    let acceptor = TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("address").port();
    let requests = Arc::new(AtomicUsize::new(0));
    let counted = requests.clone();
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                return;
            };
            let acceptor = acceptor.clone();
            let counted = counted.clone();
            tokio::spawn(async move {
                // A refused handshake ends here: the client closed the connection.
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let service = service_fn(move |req: hyper::Request<Incoming>| {
                    counted.fetch_add(1, Ordering::SeqCst);
                    async move { Ok::<_, hyper::Error>(answer(&req)) }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(tls), service)
                    .await;
            });
        }
    });
    (port, requests)
}

/// DynamoDB's answer to `ListTables` (JSON 1.0 protocol), or 400 for any other request.
fn answer(req: &hyper::Request<Incoming>) -> hyper::Response<String> {
    let target = req
        .headers()
        .get("x-amz-target")
        .and_then(|v| v.to_str().ok());
    if target != Some("DynamoDB_20120810.ListTables") {
        return hyper::Response::builder()
            .status(400)
            .body(format!("unexpected target {target:?}"))
            .expect("response");
    }
    let body = serde_json::json!({ "TableNames": [VALUE] });
    hyper::Response::builder()
        .header("content-type", "application/x-amz-json-1.0")
        .body(body.to_string())
        .expect("response")
}

fn read(path: PathBuf) -> Vec<u8> {
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}
