//! Request intake, sans I/O: what every adapter does with a request before
//! [`Runway::handle`], written once.
//!
//! 1. [`Runway::intake`] decides from the head alone: the auth header set
//!    ([`Runway::authorize`]: a stranger's body is never read), then the declared
//!    `Content-Length` against [`MAX_BODY_BYTES`]. It gives the body's accumulator.
//! 2. The adapter feeds its body to the [`BodyIntake`] as it arrives ([`BodyIntake::push`]; a
//!    body received whole: [`BodyIntake::whole`]), which refuses the first byte past the bound.
//! 3. Any refusal is an [`IntakeRefusal`], answered as [`IntakeRefusal::into_response`] says.
//!
//! What stays in each adapter is its runtime: how it reads its body stream, and how long it
//! waits for it (`runway serve`: [`IntakeRefusal::TimedOut`] after 10 s).

use bytes::{Bytes, BytesMut};

use crate::agent::Agent;
use crate::platform::runtime::Runtime;
use crate::service::config::MAX_BODY_BYTES;
use crate::service::{Runway, json_error};
use crate::store::TurnStore;

/// Why a request is answered before [`Runway::handle`] sees it.
#[derive(Debug)]
pub enum IntakeRefusal {
    /// The head was refused ([`Runway::authorize`]): its complete answer (401; 500 when no
    /// header set is configured). The body is not to be read.
    Head(Box<http::Response<Bytes>>),
    /// The body is, or its `Content-Length` says it is, larger than `max_bytes` (413).
    TooLarge {
        /// The bound it passed.
        max_bytes: usize,
    },
    /// The body's stream failed before its end (400).
    Unreadable,
    /// The body was not received within the adapter's time for it (408).
    TimedOut,
}

impl IntakeRefusal {
    /// The answer: the head's own, or a JSON `{"error"}` with 413, 400 or 408.
    #[must_use]
    pub fn into_response(self) -> http::Response<Bytes> {
        match self {
            Self::Head(answer) => *answer,
            Self::TooLarge { max_bytes } => json_error(
                413,
                &format!("body larger than {}", size_in_words(max_bytes)),
            ),
            Self::Unreadable => json_error(400, "unreadable body"),
            Self::TimedOut => json_error(408, "request body not received in time"),
        }
    }
}

/// `Err(TooLarge)` when `len` bytes are more than `max_bytes`.
///
/// # Errors
/// [`IntakeRefusal::TooLarge`] past the bound.
pub fn within_bound(len: usize, max_bytes: usize) -> Result<(), IntakeRefusal> {
    if len > max_bytes {
        Err(IntakeRefusal::TooLarge { max_bytes })
    } else {
        Ok(())
    }
}

/// A request body as it arrives, kept up to its bound: past it, bytes are counted (an
/// adapter may read on and drop them, so the client reads its 413) and never kept.
#[derive(Debug)]
pub struct BodyIntake {
    kept: BytesMut,
    seen: usize,
    max_bytes: usize,
}

impl BodyIntake {
    /// An empty body that may grow to `max_bytes`.
    #[must_use]
    pub fn new(max_bytes: usize) -> Self {
        Self {
            kept: BytesMut::new(),
            seen: 0,
            max_bytes,
        }
    }

    /// The accumulator for a request with `headers`, refused at once when its
    /// `Content-Length` declares more than `max_bytes` (a value that is not a number is left
    /// to the bytes themselves, counted as they come).
    ///
    /// # Errors
    /// [`IntakeRefusal::TooLarge`] for a declared length past the bound.
    pub fn for_head(headers: &http::HeaderMap, max_bytes: usize) -> Result<Self, IntakeRefusal> {
        let declared = headers
            .get(http::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok()?.trim().parse::<usize>().ok());
        if let Some(n) = declared {
            within_bound(n, max_bytes)?;
        }
        Ok(Self::new(max_bytes))
    }

    /// Adds the next piece of the body.
    ///
    /// # Errors
    /// [`IntakeRefusal::TooLarge`] once the body passes the bound (then and on every later
    /// piece; what passed it is not kept).
    pub fn push(&mut self, chunk: &[u8]) -> Result<(), IntakeRefusal> {
        self.seen = self.seen.saturating_add(chunk.len());
        within_bound(self.seen, self.max_bytes)?;
        self.kept.extend_from_slice(chunk);
        Ok(())
    }

    /// How many bytes of the body arrived, kept or not.
    #[must_use]
    pub fn seen(&self) -> usize {
        self.seen
    }

    /// The body, once all of it arrived within the bound.
    #[must_use]
    pub fn finish(self) -> Bytes {
        self.kept.freeze()
    }

    /// A body received whole (Lambda's event), checked against the bound without a copy.
    ///
    /// # Errors
    /// [`IntakeRefusal::TooLarge`] past the bound.
    pub fn whole(mut self, body: Bytes) -> Result<Bytes, IntakeRefusal> {
        if self.seen > 0 {
            self.push(&body)?;
            return Ok(self.finish());
        }
        within_bound(body.len(), self.max_bytes)?;
        Ok(body)
    }
}

impl<A: Agent, S: TurnStore, R: Runtime> Runway<A, S, R> {
    /// Decides from the request head alone whether its body may be read: the auth header set
    /// ([`Runway::authorize`]), then a declared `Content-Length` against
    /// [`MAX_BODY_BYTES`]. `Ok` is the accumulator the adapter reads the body into.
    ///
    /// # Errors
    /// [`IntakeRefusal::Head`] for a stranger (read nothing of the body),
    /// [`IntakeRefusal::TooLarge`] for a body declared past 1 MiB.
    pub fn intake(&self, parts: &http::request::Parts) -> Result<BodyIntake, IntakeRefusal> {
        self.authorize(parts).map_err(IntakeRefusal::Head)?;
        BodyIntake::for_head(&parts.headers, MAX_BODY_BYTES)
    }
}

/// `n` bytes as a reader says it: `1 MiB`, `64 KiB`, `1000 bytes`.
fn size_in_words(n: usize) -> String {
    const KIB: usize = 1024;
    const MIB: usize = 1024 * KIB;
    if n >= MIB && n.is_multiple_of(MIB) {
        format!("{} MiB", n / MIB)
    } else if n >= KIB && n.is_multiple_of(KIB) {
        format!("{} KiB", n / KIB)
    } else {
        format!("{n} bytes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn said(refused: IntakeRefusal) -> (u16, String) {
        let r = refused.into_response();
        let body: serde_json::Value = serde_json::from_slice(r.body()).unwrap();
        (
            r.status().as_u16(),
            body["error"].as_str().unwrap().to_owned(),
        )
    }

    fn head(content_length: Option<&str>) -> http::HeaderMap {
        let mut h = http::HeaderMap::new();
        if let Some(n) = content_length {
            h.insert(http::header::CONTENT_LENGTH, n.parse().unwrap());
        }
        h
    }

    #[test]
    fn a_body_within_the_bound_is_kept_whole() {
        let mut body = BodyIntake::new(10);
        body.push(b"hello").unwrap();
        body.push(b"").unwrap();
        body.push(b"world").unwrap();
        assert_eq!(body.seen(), 10);
        assert_eq!(body.finish(), Bytes::from_static(b"helloworld"));
        assert_eq!(BodyIntake::new(10).finish(), Bytes::new());
    }

    #[test]
    fn the_first_byte_past_the_bound_is_refused_and_not_kept() {
        let mut body = BodyIntake::new(10);
        body.push(b"123456789").unwrap();
        let refused = body.push(b"ab").unwrap_err();
        assert!(matches!(refused, IntakeRefusal::TooLarge { max_bytes: 10 }));
        // Read on (a server drains what the client still sends): counted, refused, not kept.
        assert!(body.push(b"c").is_err());
        assert_eq!(body.seen(), 12);
        assert_eq!(body.finish(), Bytes::from_static(b"123456789"));
    }

    #[test]
    fn a_declared_length_past_the_bound_is_refused_from_the_head() {
        let refused = BodyIntake::for_head(&head(Some("1048577")), MAX_BODY_BYTES).unwrap_err();
        assert_eq!(said(refused), (413, "body larger than 1 MiB".to_owned()));
        for within in [Some("1048576"), Some("0"), None, Some("lots"), Some("-1")] {
            assert!(
                BodyIntake::for_head(&head(within), MAX_BODY_BYTES).is_ok(),
                "{within:?}"
            );
        }
        // A declared length is no promise: the bytes are still counted.
        let mut body = BodyIntake::for_head(&head(Some("1")), 2).unwrap();
        assert!(body.push(b"abc").is_err());
    }

    #[test]
    fn a_body_received_whole_is_checked_without_a_copy() {
        let small = Bytes::from_static(b"0123456789");
        assert_eq!(
            BodyIntake::new(10).whole(small.clone()).unwrap().as_ptr(),
            small.as_ptr()
        );
        let refused = BodyIntake::new(9).whole(small).unwrap_err();
        assert_eq!(said(refused), (413, "body larger than 9 bytes".to_owned()));
        let mut started = BodyIntake::new(4);
        started.push(b"ab").unwrap();
        assert!(started.whole(Bytes::from_static(b"cde")).is_err());
    }

    #[test]
    fn each_refusal_has_its_status_and_text() {
        assert_eq!(
            said(IntakeRefusal::TooLarge {
                max_bytes: MAX_BODY_BYTES
            }),
            (413, "body larger than 1 MiB".to_owned())
        );
        assert_eq!(
            said(IntakeRefusal::TooLarge {
                max_bytes: 20 * 1024 * 1024
            }),
            (413, "body larger than 20 MiB".to_owned())
        );
        assert_eq!(
            said(IntakeRefusal::TooLarge {
                max_bytes: 64 * 1024
            }),
            (413, "body larger than 64 KiB".to_owned())
        );
        assert_eq!(
            said(IntakeRefusal::Unreadable),
            (400, "unreadable body".to_owned())
        );
        assert_eq!(
            said(IntakeRefusal::TimedOut),
            (408, "request body not received in time".to_owned())
        );
        let own = json_error(401, "who are you");
        let r = IntakeRefusal::Head(Box::new(own)).into_response();
        assert_eq!(r.status(), 401);
        assert_eq!(r.headers()[http::header::CONTENT_TYPE], "application/json");
    }
}
