//! [`Recording`]: what a replay of a finished run sends, as a commit carries it to the store.

use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The frames (or lines) a replay of a run sends after its first one. Shared, not copied:
/// a store that moves a commit to another thread (SQLite's blocking pool) clones the commit
/// without copying a recording of up to 8 MiB. Reads as a `&str`; serialises as a string.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Recording(Arc<String>);

impl Recording {
    /// The text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::ops::Deref for Recording {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl From<String> for Recording {
    /// Takes `s` without copying it.
    fn from(s: String) -> Self {
        Self(Arc::new(s))
    }
}

impl From<&str> for Recording {
    fn from(s: &str) -> Self {
        Self(Arc::new(s.to_owned()))
    }
}

impl std::fmt::Debug for Recording {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self.as_str(), f)
    }
}

impl Serialize for Recording {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Recording {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(Self::from)
    }
}
