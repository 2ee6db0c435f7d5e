//! Reading a file named by a setting at start-up (the workers file, a tools file, a header
//! file): at most [`MAX_START_UP_FILE_BYTES`], so a path such as `/dev/zero` or a log file
//! named by mistake is refused at once instead of being read until memory runs out.

use std::io::Read;
use std::path::Path;

/// The most bytes runway reads of any file at start-up (1 MiB): a workers or tools file is a
/// few KiB.
pub const MAX_START_UP_FILE_BYTES: u64 = 1024 * 1024;

/// Why a start-up file was not read. Its message does not repeat the path: callers name the
/// file and the setting that named it.
#[derive(Debug, thiserror::Error)]
pub enum StartUpFileError {
    /// Opening or reading failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// More than [`MAX_START_UP_FILE_BYTES`].
    #[error(
        "larger than 1 MiB ({MAX_START_UP_FILE_BYTES} bytes), the most runway reads of a file at start-up"
    )]
    TooLarge,
    /// Not UTF-8 text.
    #[error("not UTF-8 text")]
    NotText,
}

/// The text of the file at `path`, read with [`Read::take`] so that at most one byte more
/// than [`MAX_START_UP_FILE_BYTES`] is ever read, whatever the file is (a device, a pipe, a
/// file still growing).
///
/// # Errors
/// The file cannot be read, is larger than the cap, or is not UTF-8.
pub fn read_start_up_file(path: impl AsRef<Path>) -> Result<String, StartUpFileError> {
    let file = std::fs::File::open(path)?;
    let mut bytes = Vec::new();
    file.take(MAX_START_UP_FILE_BYTES + 1)
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_START_UP_FILE_BYTES {
        return Err(StartUpFileError::TooLarge);
    }
    String::from_utf8(bytes).map_err(|_| StartUpFileError::NotText)
}

/// [`read_start_up_file`] with its error as text: the `read_file` the workers file and the
/// model agent's settings take.
///
/// # Errors
/// As [`read_start_up_file`].
pub fn read_start_up_text(path: &str) -> Result<String, String> {
    read_start_up_file(path).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_endless_device_is_refused_after_the_cap() {
        let e = read_start_up_file("/dev/zero").unwrap_err();
        assert!(matches!(e, StartUpFileError::TooLarge), "{e}");
        assert!(e.to_string().contains("1 MiB"), "{e}");
    }

    #[test]
    fn a_file_one_byte_over_the_cap_is_refused_and_one_at_the_cap_read() {
        let dir = std::env::temp_dir().join(format!("runway-start-up-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let at_cap = dir.join("at-cap.toml");
        let over = dir.join("over.toml");
        std::fs::write(&at_cap, vec![b'#'; MAX_START_UP_FILE_BYTES as usize]).unwrap();
        std::fs::write(&over, vec![b'#'; MAX_START_UP_FILE_BYTES as usize + 1]).unwrap();
        assert_eq!(
            read_start_up_file(&at_cap).unwrap().len() as u64,
            MAX_START_UP_FILE_BYTES
        );
        assert!(matches!(
            read_start_up_file(&over),
            Err(StartUpFileError::TooLarge)
        ));
        std::fs::remove_dir_all(dir).unwrap();
    }
}
