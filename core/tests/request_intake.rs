//! Request intake as every adapter runs it: [`Runway::intake`] decides from the head alone
//! (a stranger first, then a declared length past 1 MiB), and the accumulator it gives refuses
//! the first byte past the bound.

use runway_core::adapter::{Access, AuthHeaders, Config, IntakeRefusal, MAX_BODY_BYTES};
use runway_core::testing::{TestRunway, VirtualRuntime};
use runway_core::{Agent, AgentResult, Outcome, Output, Turn};

struct Done;

impl Agent for Done {
    async fn run(&self, _turn: &mut Turn, _out: &Output) -> AgentResult {
        Ok(Outcome::Done)
    }
}

fn head(path: &str, key: Option<&str>, length: Option<usize>) -> http::request::Parts {
    let mut b = http::Request::post(path);
    if let Some(k) = key {
        b = b.header("x-api-key", k);
    }
    if let Some(n) = length {
        b = b.header(http::header::CONTENT_LENGTH, n);
    }
    b.body(()).unwrap().into_parts().0
}

fn error_of(refused: IntakeRefusal) -> (u16, String) {
    let r = refused.into_response();
    let body: serde_json::Value = serde_json::from_slice(r.body()).unwrap();
    (
        r.status().as_u16(),
        body["error"].as_str().unwrap().to_owned(),
    )
}

#[test]
fn intake_refuses_a_stranger_then_a_declared_length_then_the_byte_past_the_bound() {
    let config = Config {
        access: Access::Headers(AuthHeaders::parse("X-API-Key: k").unwrap()),
        ..Config::unauthenticated()
    };
    let app = TestRunway::with(Done, VirtualRuntime::new(), config);
    let app = app.runway();

    // A stranger is refused first, whatever it declares: its body is never read.
    let stranger = app
        .intake(&head("/runs", None, Some(MAX_BODY_BYTES + 1)))
        .unwrap_err();
    assert!(matches!(stranger, IntakeRefusal::Head(_)), "{stranger:?}");
    assert_eq!(error_of(stranger).0, 401);

    let declared = app
        .intake(&head("/runs", Some("k"), Some(MAX_BODY_BYTES + 1)))
        .unwrap_err();
    assert_eq!(
        error_of(declared),
        (413, "body larger than 1 MiB".to_owned())
    );

    // Declared within the bound (or not declared): the bytes are counted as they come.
    for length in [Some(MAX_BODY_BYTES), None] {
        let mut body = app.intake(&head("/runs", Some("k"), length)).unwrap();
        body.push(&vec![b' '; MAX_BODY_BYTES]).unwrap();
        let past = body.push(b" ").unwrap_err();
        assert_eq!(error_of(past), (413, "body larger than 1 MiB".to_owned()));
    }
    let mut body = app.intake(&head("/runs", Some("k"), Some(2))).unwrap();
    body.push(b"{}").unwrap();
    assert_eq!(&body.finish()[..], b"{}");

    // Hosted files are opened by a browser, without the header set.
    assert!(app.intake(&head("/files/abc/name.csv", None, None)).is_ok());
}
