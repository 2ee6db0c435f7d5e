//! Downloading one attachment: the address policy on every hop, redirects followed by hand
//! (each one checked again), a size cap enforced while the body streams, and a time limit.
//! Nothing here logs or returns the URL.

use std::time::Duration;

use bytes::{Bytes, BytesMut};

use super::address_policy::{AddressPolicy, Refusal};
use runway_core::http_client::{Http, HttpError};

/// Most redirects followed for one download.
const MAX_REDIRECTS: usize = 5;

/// The text a download client puts in the error of a connection it refused because the host
/// resolved to an address the policy refuses (see `PublicOnlyClient`).
pub const REFUSED_ADDRESS_MARKER: &str = "refused by the attachment address policy";

/// Why an attachment could not be downloaded. Its `Display` is safe to show the user and to
/// log: it never contains the URL.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DownloadError {
    /// The address policy refused the link or one of its redirects.
    #[error("{0}")]
    Refused(#[from] Refusal),
    /// The file is larger than the cap (counted as it streamed, whatever was declared).
    #[error("it is larger than the {} limit", human_bytes(*.limit))]
    TooLarge {
        /// The cap in bytes.
        limit: usize,
    },
    /// The file server answered with an error status (an expired link, typically).
    #[error("the file server answered HTTP {0} (the link may have expired)")]
    Status(u16),
    /// More redirects than allowed.
    #[error("the link redirected too many times")]
    TooManyRedirects,
    /// It took longer than the time allowed.
    #[error("the download took too long")]
    Timeout,
    /// No client can download files on this runtime.
    #[error("this deployment cannot download files")]
    Unavailable,
    /// The connection or the body failed (`detail` for the log: it has no URL).
    #[error("the download failed")]
    Failed {
        /// What failed.
        detail: String,
    },
}

/// `n` bytes in KiB or MiB, for messages.
pub fn human_bytes(n: usize) -> String {
    if n >= 1024 * 1024 && n.is_multiple_of(1024 * 1024) {
        format!("{} MiB", n / (1024 * 1024))
    } else if n >= 1024 && n.is_multiple_of(1024) {
        format!("{} KiB", n / 1024)
    } else {
        format!("{n} bytes")
    }
}

/// Downloads `url` with `http` (which must not follow redirects by itself, and which checks
/// resolved addresses: `PublicOnlyClient` natively), refusing what `policy` refuses, at most
/// `max_bytes`, within `timeout` (and the turn's deadline).
///
/// # Errors
/// Why the file could not be had; never with the URL in it.
pub async fn download(
    http: &Http,
    url: &str,
    policy: &AddressPolicy,
    max_bytes: usize,
    timeout: Duration,
) -> Result<Bytes, DownloadError> {
    let mut url = url::Url::parse(url).map_err(|_| Refusal::BadUrl)?;
    let started_left = http.time_left().ok_or(DownloadError::Unavailable)?;
    for _ in 0..=MAX_REDIRECTS {
        policy.check_url(&url)?;
        let spent = started_left.saturating_sub(http.time_left().unwrap_or_default());
        let left = timeout.saturating_sub(spent);
        if left.is_zero() {
            return Err(DownloadError::Timeout);
        }
        let mut response = http
            .get(url.as_str())
            .timeout(left)
            .send()
            .await
            .map_err(failure)?;
        let status = response.status();
        if status.is_redirection() {
            let next = response
                .headers()
                .get(http::header::LOCATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|loc| url.join(loc).ok())
                .ok_or(DownloadError::Status(status.as_u16()))?;
            url = next;
            continue;
        }
        if !status.is_success() {
            return Err(DownloadError::Status(status.as_u16()));
        }
        let mut all = BytesMut::new();
        while let Some(chunk) = response.chunk().await.map_err(failure)? {
            if all.len() + chunk.len() > max_bytes {
                return Err(DownloadError::TooLarge { limit: max_bytes });
            }
            all.extend_from_slice(&chunk);
        }
        return Ok(all.freeze());
    }
    Err(DownloadError::TooManyRedirects)
}

fn failure(e: HttpError) -> DownloadError {
    match e {
        HttpError::Connect(detail) if detail.contains(REFUSED_ADDRESS_MARKER) => {
            DownloadError::Refused(Refusal::PrivateAddress)
        }
        HttpError::Timeout(_) | HttpError::TurnDeadline => DownloadError::Timeout,
        HttpError::Unavailable => DownloadError::Unavailable,
        other => DownloadError::Failed {
            detail: other.to_string(),
        },
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use bytes::Bytes;
    use futures::StreamExt;

    use super::*;
    use crate::paused_clock::PausedClock;
    use runway_core::adapter::BoxFuture;
    use runway_core::http_client::{HttpBody, HttpClient, HttpRequest, HttpResponse};
    use runway_core::testing::{TurnHttpGuard, turn_http};

    /// Answers by path: `/redirect-to?<location>` a 302, `/big` 10 pieces of 1,000 bytes with
    /// a small declared length, `/stall` a body that never ends, `/ok` "hello". Records paths.
    #[derive(Default)]
    struct Files {
        asked: Mutex<Vec<String>>,
    }

    /// [`Files`] as the turn's client, shared with the test that reads what was asked.
    #[derive(Clone)]
    struct FilesClient(Arc<Files>);

    impl HttpClient for FilesClient {
        fn send(&self, r: HttpRequest) -> BoxFuture<'static, Result<HttpResponse, HttpError>> {
            self.0.asked.lock().unwrap().push(r.url.path().to_owned());
            let mut head = http::HeaderMap::new();
            let (status, body) = match r.url.path() {
                "/redirect-to" => {
                    let to = r.url.query().unwrap_or_default().to_owned();
                    head.insert(http::header::LOCATION, to.parse().unwrap());
                    (302, HttpBody::empty())
                }
                "/big" => {
                    head.insert(http::header::CONTENT_LENGTH, "10".parse().unwrap());
                    let pieces = (0..10).map(|_| Ok(Bytes::from(vec![b'x'; 1000])));
                    (200, HttpBody::from_stream(futures::stream::iter(pieces)))
                }
                "/stall" => (
                    200,
                    HttpBody::from_stream(
                        futures::stream::once(async { Ok(Bytes::from_static(b"a")) })
                            .chain(futures::stream::pending()),
                    ),
                ),
                _ => (
                    200,
                    HttpBody::from_stream(futures::stream::once(async {
                        Ok(Bytes::from_static(b"hello"))
                    })),
                ),
            };
            let status = http::StatusCode::from_u16(status).unwrap();
            Box::pin(async move { Ok(HttpResponse::new(status, head, body)) })
        }
    }

    fn turn(files: &Arc<Files>) -> (Http, TurnHttpGuard) {
        turn_http(
            Arc::new(FilesClient(files.clone())),
            PausedClock::now(),
            Duration::from_secs(60),
        )
    }

    const POLICY: AddressPolicy = AddressPolicy {
        allow_loopback: false,
    };

    #[tokio::test(start_paused = true)]
    async fn the_cap_is_counted_as_the_body_streams_whatever_was_declared() {
        let files = Arc::new(Files::default());
        let (http, _g) = turn(&files);
        let t = Duration::from_secs(30);
        let e = download(&http, "https://files.example/big", &POLICY, 2500, t).await;
        assert_eq!(e, Err(DownloadError::TooLarge { limit: 2500 }));
        let ok = download(&http, "https://files.example/big", &POLICY, 10_000, t).await;
        assert_eq!(ok.unwrap().len(), 10_000);
    }

    #[tokio::test(start_paused = true)]
    async fn a_stalled_body_times_out() {
        let files = Arc::new(Files::default());
        let (http, _g) = turn(&files);
        let started = tokio::time::Instant::now();
        let e = download(
            &http,
            "https://files.example/stall",
            &POLICY,
            1000,
            Duration::from_secs(3),
        )
        .await;
        assert_eq!(e, Err(DownloadError::Timeout));
        assert!(started.elapsed() >= Duration::from_secs(3));
        assert!(started.elapsed() < Duration::from_secs(4));
    }

    #[tokio::test(start_paused = true)]
    async fn each_redirect_hop_is_checked_before_it_is_fetched() {
        let files = Arc::new(Files::default());
        let (http, _g) = turn(&files);
        let t = Duration::from_secs(30);
        for to in [
            "https://169.254.169.254/latest",
            "https://[::ffff:10.0.0.1]/x",
            "http://files.example/ok",
        ] {
            let url = format!("https://files.example/redirect-to?{to}");
            let e = download(&http, &url, &POLICY, 1000, t).await.unwrap_err();
            assert!(matches!(e, DownloadError::Refused(_)), "{to}: {e:?}");
        }
        // Only the first hops were requested, never a refused target.
        assert!(
            files
                .asked
                .lock()
                .unwrap()
                .iter()
                .all(|p| p == "/redirect-to"),
            "{:?}",
            files.asked.lock().unwrap()
        );
        let ok = download(
            &http,
            "https://files.example/redirect-to?/ok",
            &POLICY,
            1000,
            t,
        )
        .await;
        assert_eq!(ok.unwrap(), "hello");
        // A relative Location resolves against the hop; a chain longer than 5 is refused.
        let mut url = "/ok".to_owned();
        for _ in 0..6 {
            url = format!("/redirect-to?{url}");
        }
        let e = download(
            &http,
            &format!("https://files.example{url}"),
            &POLICY,
            1000,
            t,
        )
        .await;
        assert_eq!(e, Err(DownloadError::TooManyRedirects));
    }
}
