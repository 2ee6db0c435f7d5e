//! The data directory `runway serve` owns: one process at a time.
//!
//! The turn store's claims assume that a run marked running has a live process behind it
//! until its lease ends. Holding an exclusive lock on the directory makes that checkable: a
//! second `runway serve` on the same directory refuses to start (two servers would each
//! take the other's turns for live ones), and the lock holder knows that any run still
//! marked running at startup belongs to a process that died, so it frees those runs at once.

use std::fs::{File, TryLockError};
use std::path::{Path, PathBuf};

/// Why the directory cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum DataDirError {
    /// Creating or opening the directory or its lock file failed.
    #[error("cannot open the data directory {0}: {1}")]
    Open(PathBuf, std::io::Error),
    /// Another process holds the lock.
    #[error(
        "the data directory {0} is in use by another runway process (stop it, or give this one its own --data-dir)"
    )]
    InUse(PathBuf),
}

/// The locked directory; the lock is held until this value is dropped (or the process ends,
/// however it ends: the kernel releases it).
#[derive(Debug)]
pub struct DataDir {
    path: PathBuf,
    _lock: File,
}

impl DataDir {
    /// Creates `path` if needed and locks it.
    ///
    /// # Errors
    /// The directory cannot be created or its lock taken.
    pub fn lock(path: &Path) -> Result<Self, DataDirError> {
        let open = |e| DataDirError::Open(path.to_owned(), e);
        std::fs::create_dir_all(path).map_err(open)?;
        let lock = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path.join("runway.lock"))
            .map_err(open)?;
        match lock.try_lock() {
            Ok(()) => Ok(Self {
                path: path.to_owned(),
                _lock: lock,
            }),
            Err(TryLockError::WouldBlock) => Err(DataDirError::InUse(path.to_owned())),
            Err(TryLockError::Error(e)) => Err(open(e)),
        }
    }

    /// The SQLite database's path.
    pub fn database(&self) -> PathBuf {
        self.path.join("runway.sqlite3")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_on_the_same_directory_is_refused_until_the_first_is_dropped() {
        let dir = std::env::temp_dir().join(format!("runway-data-dir-{}", std::process::id()));
        let first = DataDir::lock(&dir).unwrap();
        assert!(matches!(DataDir::lock(&dir), Err(DataDirError::InUse(_))));
        drop(first);
        assert!(DataDir::lock(&dir).is_ok());
        let _ = std::fs::remove_dir_all(dir);
    }
}
