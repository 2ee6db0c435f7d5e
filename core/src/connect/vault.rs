//! The vault's cipher: a connection's tokens sealed with AES-256-GCM under
//! `RUNWAY_VAULT_KEY`, the entry's (workspace, user, provider) as associated data, so an
//! entry copied under another key does not open.

use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use serde::{Deserialize, Serialize};

use crate::store::ConnectionKey;

/// The prefix of a sealed entry's format (version 1: nonce then ciphertext, base64url).
const SEALED_V1: &str = "v1.";

/// `RUNWAY_VAULT_KEY`: 32 bytes, base64.
#[derive(Clone)]
pub struct VaultKey(Aes256Gcm);

impl std::fmt::Debug for VaultKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("VaultKey(<redacted>)")
    }
}

/// Why `RUNWAY_VAULT_KEY` cannot be used (the value itself is never named).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("RUNWAY_VAULT_KEY must be 32 bytes in base64 (openssl rand -base64 32)")]
pub struct VaultKeyError;

impl VaultKey {
    /// The key from its base64 form (standard or URL-safe alphabet).
    ///
    /// # Errors
    /// Not base64, or not 32 bytes.
    pub fn from_base64(text: &str) -> Result<Self, VaultKeyError> {
        let text = text.trim();
        let bytes = STANDARD
            .decode(text)
            .or_else(|_| URL_SAFE_NO_PAD.decode(text.trim_end_matches('=')))
            .map_err(|_| VaultKeyError)?;
        Aes256Gcm::new_from_slice(&bytes)
            .map(Self)
            .map_err(|_| VaultKeyError)
    }

    /// Seals `tokens` for `key`, with the 96-bit `nonce` (random, from the runtime's entropy:
    /// never reused under one vault key).
    pub fn seal(&self, key: &ConnectionKey, tokens: &Tokens, nonce: [u8; 12]) -> String {
        self.seal_value(key, tokens, nonce)
    }

    /// Seals any `value` (as JSON) for `key`: what [`VaultKey::seal`] does for tokens, also
    /// used for an MCP authorization server's client registration (its secret, if any).
    pub(crate) fn seal_value<T: Serialize>(
        &self,
        key: &ConnectionKey,
        value: &T,
        nonce: [u8; 12],
    ) -> String {
        let plain = serde_json::to_vec(value).unwrap_or_default();
        let aad = key.associated_data();
        let sealed = self
            .0
            .encrypt(
                Nonce::from_slice(&nonce),
                Payload {
                    msg: &plain,
                    aad: &aad,
                },
            )
            // AES-GCM fails only past 64 GiB of plaintext.
            .unwrap_or_default();
        let mut out = nonce.to_vec();
        out.extend_from_slice(&sealed);
        format!("{SEALED_V1}{}", URL_SAFE_NO_PAD.encode(out))
    }

    /// Opens what [`VaultKey::seal`] sealed for `key`: `None` for anything else (another key,
    /// another vault key, a changed byte, an unknown format), which the caller treats as no
    /// connection.
    pub fn open(&self, key: &ConnectionKey, sealed: &str) -> Option<Tokens> {
        self.open_value(key, sealed)
    }

    /// Opens what [`VaultKey::seal_value`] sealed for `key`, as a `T`.
    pub(crate) fn open_value<T: serde::de::DeserializeOwned>(
        &self,
        key: &ConnectionKey,
        sealed: &str,
    ) -> Option<T> {
        let bytes = URL_SAFE_NO_PAD
            .decode(sealed.strip_prefix(SEALED_V1)?)
            .ok()?;
        if bytes.len() < 12 {
            return None;
        }
        let (nonce, ciphertext) = bytes.split_at(12);
        let aad = key.associated_data();
        let plain = self
            .0
            .decrypt(
                Nonce::from_slice(nonce),
                Payload {
                    msg: ciphertext,
                    aad: &aad,
                },
            )
            .ok()?;
        serde_json::from_slice(&plain).ok()
    }
}

/// A connection's tokens, as the vault keeps them (sealed). Its `Debug` shows no token.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tokens {
    /// The access token, sent as `Authorization: Bearer …`.
    pub access_token: String,
    /// The refresh token, if the provider gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    /// When the access token expires (ms since the epoch), if the provider said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at_ms: Option<u64>,
    /// The scopes granted, as the provider said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// When the user connected (ms since the epoch): set by the callback, kept across
    /// refreshes; none in entries sealed before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connected_at_ms: Option<u64>,
}

impl Tokens {
    /// An entry no turn uses: what replaces tokens the provider's API refused and that
    /// could not be refreshed (the card then).
    pub fn unusable() -> Self {
        Self {
            access_token: String::new(),
            refresh_token: None,
            expires_at_ms: Some(0),
            scope: None,
            connected_at_ms: None,
        }
    }
}

impl std::fmt::Debug for Tokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokens")
            .field("refresh_token", &self.refresh_token.as_ref().map(|_| ".."))
            .field("expires_at_ms", &self.expires_at_ms)
            .field("scope", &self.scope)
            .field("connected_at_ms", &self.connected_at_ms)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vault() -> VaultKey {
        VaultKey::from_base64(&STANDARD.encode([7u8; 32])).unwrap()
    }

    fn key(user: &str) -> ConnectionKey {
        ConnectionKey {
            workspace: "w".into(),
            user: user.into(),
            provider: "acme".into(),
        }
    }

    fn tokens() -> Tokens {
        Tokens {
            access_token: "at-secret".into(),
            refresh_token: Some("rt-secret".into()),
            expires_at_ms: Some(5),
            scope: None,
            connected_at_ms: Some(1),
        }
    }

    #[test]
    fn a_sealed_entry_opens_for_its_own_key_only() {
        let sealed = vault().seal(&key("u1"), &tokens(), [1; 12]);
        assert!(!sealed.contains("secret"), "{sealed}");
        assert_eq!(vault().open(&key("u1"), &sealed), Some(tokens()));
        assert_eq!(vault().open(&key("u2"), &sealed), None);
        let other = VaultKey::from_base64(&STANDARD.encode([8u8; 32])).unwrap();
        assert_eq!(other.open(&key("u1"), &sealed), None);
    }

    #[test]
    fn a_tampered_entry_does_not_open() {
        let sealed = vault().seal(&key("u1"), &tokens(), [1; 12]);
        let mut bytes = URL_SAFE_NO_PAD.decode(&sealed[3..]).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        let tampered = format!("v1.{}", URL_SAFE_NO_PAD.encode(bytes));
        assert_eq!(vault().open(&key("u1"), &tampered), None);
        for junk in ["", "v1.", "v1.AAAA", "v2.whatever", "not sealed"] {
            assert_eq!(vault().open(&key("u1"), junk), None, "{junk}");
        }
    }

    #[test]
    fn the_key_must_be_32_bytes_of_base64() {
        assert!(VaultKey::from_base64(&STANDARD.encode([0u8; 32])).is_ok());
        assert!(VaultKey::from_base64(&URL_SAFE_NO_PAD.encode([0u8; 32])).is_ok());
        assert!(VaultKey::from_base64(&STANDARD.encode([0u8; 16])).is_err());
        assert!(VaultKey::from_base64("not base64!").is_err());
        assert!(!format!("{:?}", tokens()).contains("secret"));
    }
}
