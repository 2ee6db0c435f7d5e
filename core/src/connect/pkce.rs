//! PKCE (RFC 7636, S256) and the random ids of connect states.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};

use crate::platform::runtime::Runtime;

/// 256 random bits, base64url: a state id or a code verifier (43 characters, as RFC 7636
/// asks).
pub(crate) fn random_token<R: Runtime>(rt: &R) -> String {
    let mut bytes = [0u8; 32];
    rt.fill_random(&mut bytes);
    URL_SAFE_NO_PAD.encode(bytes)
}

/// The S256 code challenge of `verifier`.
pub(crate) fn challenge(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

/// Whether `id` looks like a [`random_token`] (43 base64url characters): anything else is not
/// looked up.
pub(crate) fn is_token(id: &str) -> bool {
    id.len() == 43
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_challenge_is_rfc_7636s_example() {
        // RFC 7636, appendix B.
        assert_eq!(
            challenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
        assert!(is_token("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"));
        assert!(!is_token("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjX/"));
    }
}
