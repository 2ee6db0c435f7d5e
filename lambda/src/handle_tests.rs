//! [`handle`](crate::handle) takes a request in as the core's intake says: a stranger is
//! refused from the head whatever its body, and a body past 1 MiB (received, or declared) is
//! answered 413 before the core sees it.

use runway_agents::EchoAgent;
use runway_core::adapter::{Access, AuthHeaders, Config, MAX_BODY_BYTES, Runway, TokioRuntime};

use crate::{App, DynamoStore, LambdaBody, handle};

/// The app on a store that no refused request reaches (nothing listens on its endpoint).
fn app() -> App<EchoAgent> {
    let conf = aws_sdk_dynamodb::Config::builder()
        .behavior_version(aws_config::BehaviorVersion::latest())
        .region(aws_config::Region::new("us-east-1"))
        .endpoint_url("http://127.0.0.1:9")
        .build();
    let store = DynamoStore::new(aws_sdk_dynamodb::Client::from_conf(conf), "unused");
    let config = Config {
        access: Access::Headers(AuthHeaders::parse("X-Key: k").unwrap()),
        ..Config::unauthenticated()
    };
    Runway::new(EchoAgent, store, TokioRuntime, config)
}

fn request(
    method: &str,
    path: &str,
    key: Option<&str>,
    declared: Option<usize>,
    body: lambda_http::Body,
) -> lambda_http::Request {
    let mut b = http::Request::builder().method(method).uri(path);
    if let Some(k) = key {
        b = b.header("x-key", k);
    }
    if let Some(n) = declared {
        b = b.header(http::header::CONTENT_LENGTH, n);
    }
    b.body(body).unwrap()
}

async fn answer(app: &App<EchoAgent>, req: lambda_http::Request) -> (u16, String) {
    let r = handle(app, req).await.unwrap();
    let status = r.status().as_u16();
    let body = match r.into_body() {
        LambdaBody::Full(b) => b.unwrap_or_default(),
        LambdaBody::Stream(_) => panic!("a refusal streams nothing"),
    };
    (status, String::from_utf8_lossy(&body).into_owned())
}

#[tokio::test]
async fn a_stranger_is_refused_first_then_a_body_past_one_mib() {
    let app = app();
    let big = || lambda_http::Body::Text(" ".repeat(MAX_BODY_BYTES + 1));
    let (status, _) = answer(&app, request("POST", "/runs", None, None, big())).await;
    assert_eq!(status, 401);
    let (status, said) = answer(&app, request("POST", "/runs", Some("k"), None, big())).await;
    assert_eq!(
        (status, said.as_str()),
        (413, r#"{"error":"body larger than 1 MiB"}"#)
    );
    // Before any route: `POST /health` would be 405 from the core.
    let binary = lambda_http::Body::Binary(vec![b' '; MAX_BODY_BYTES + 1]);
    let (status, _) = answer(&app, request("POST", "/health", Some("k"), None, binary)).await;
    assert_eq!(status, 413);
    let (status, _) = answer(
        &app,
        request("POST", "/health", Some("k"), None, lambda_http::Body::Empty),
    )
    .await;
    assert_eq!(status, 405);
    // Declared past the bound: refused from the head.
    let small = lambda_http::Body::Text("{}".into());
    let declared = request("POST", "/runs", Some("k"), Some(2 * MAX_BODY_BYTES), small);
    assert_eq!(answer(&app, declared).await.0, 413);
    // Within the bound the core answers (here: a bad run request, 400; /health, 200).
    let small = lambda_http::Body::Text(" ".repeat(MAX_BODY_BYTES));
    let (status, _) = answer(&app, request("POST", "/runs", Some("k"), None, small)).await;
    assert_eq!(status, 400);
    let health = request("GET", "/health", Some("k"), None, lambda_http::Body::Empty);
    assert_eq!(answer(&app, health).await.0, 200);
}
