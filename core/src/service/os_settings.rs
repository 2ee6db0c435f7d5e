//! Reading settings from the process environment without hiding what cannot be read.
//!
//! `std::env::var(name).ok()` turns a value that is not UTF-8 into "not set", which for
//! `RUNWAY_AUTH_HEADERS` means "no auth". [`OsSettings`] reads with `var_os` instead and
//! remembers every setting that was present but unreadable, so start-up can refuse it.

use std::ffi::OsString;
use std::sync::Mutex;

use crate::error::BadRequest;

/// A settings lookup over OS strings (the process environment) that records, rather than
/// hides, a value that is not UTF-8. Read through [`OsSettings::get`], then call
/// [`OsSettings::check`] before serving.
#[derive(Debug)]
pub struct OsSettings<G> {
    get: G,
    unreadable: Mutex<Vec<String>>,
}

impl<G: Fn(&str) -> Option<OsString>> OsSettings<G> {
    /// Settings from `get` (`std::env::var_os` for the process environment).
    pub fn new(get: G) -> Self {
        Self {
            get,
            unreadable: Mutex::new(Vec::new()),
        }
    }

    /// The setting `name`: `None` when absent, and also when it is not UTF-8 (which
    /// [`OsSettings::check`] then reports).
    pub fn get(&self, name: &str) -> Option<String> {
        match (self.get)(name)?.into_string() {
            Ok(v) => Some(v),
            Err(_) => {
                if let Ok(mut u) = self.unreadable.lock()
                    && !u.iter().any(|n| n == name)
                {
                    u.push(name.to_owned());
                }
                None
            }
        }
    }

    /// # Errors
    /// Names every setting read so far that was present but not UTF-8.
    pub fn check(&self) -> Result<(), BadRequest> {
        let unreadable = self
            .unreadable
            .lock()
            .map(|u| u.clone())
            .unwrap_or_default();
        if unreadable.is_empty() {
            return Ok(());
        }
        Err(BadRequest::new(format!(
            "{} is set but not valid UTF-8",
            unreadable.join(", ")
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn a_value_that_is_not_utf8_is_reported_not_hidden() {
        use std::os::unix::ffi::OsStringExt;
        let s = OsSettings::new(|k: &str| match k {
            "RUNWAY_AUTH_HEADERS" => Some(OsString::from_vec(b"X-Key: \xff".to_vec())),
            "RUNWAY_NAME" => Some(OsString::from("n")),
            _ => None,
        });
        assert_eq!(s.get("RUNWAY_NAME").as_deref(), Some("n"));
        assert!(s.check().is_ok());
        assert_eq!(s.get("RUNWAY_AUTH_HEADERS"), None);
        assert_eq!(s.get("RUNWAY_OTHER"), None);
        let e = s.check().unwrap_err().to_string();
        assert!(
            e.contains("RUNWAY_AUTH_HEADERS") && e.contains("UTF-8"),
            "{e}"
        );
    }
}
