//! Downloading one attachment: the address policy on every hop, redirects followed by hand
//! (each one checked again), a size cap enforced while the body streams, and a time limit.
//! Nothing here logs or returns the URL.

use std::time::Duration;

use bytes::{Bytes, BytesMut};

use super::address_policy::{AddressPolicy, Refusal};
use crate::http_client::{Http, HttpError};

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
