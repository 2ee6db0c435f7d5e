//! A file an agent hands to runway ([`crate::Output::file`]), hosted behind an unguessable
//! link that expires: `{base_url}/files/{token}/{name}` (served by `service::hosted_files`).

use crate::agent::output::{Artifact, OutputFile};
use crate::store::HostedFile;

/// The stored file for `file` under `token` (256 random bits), and the artifact that shows it
/// to the user, its link under `base_url`.
pub(crate) fn hosted_file(
    file: OutputFile,
    token: &[u8; 32],
    base_url: &str,
    expires_at_ms: u64,
) -> (HostedFile, Artifact) {
    let token = hex::encode(token);
    let name = safe_file_name(&file.name);
    let artifact = Artifact {
        id: token[..16].to_owned(),
        url: format!("{base_url}/files/{token}/{name}"),
        name: name.clone(),
        mime: file.mime.clone(),
        size_bytes: file.bytes.len() as u64,
    };
    let hosted = HostedFile {
        token,
        name,
        mime: file.mime,
        bytes: file.bytes,
        expires_at_ms,
    };
    (hosted, artifact)
}

/// A file name safe in a URL path and a `Content-Disposition` header: `A-Z a-z 0-9 . _ -`,
/// no leading dot, at most 100 characters.
fn safe_file_name(name: &str) -> String {
    let cleaned: String = name
        .rsplit(['/', '\\'])
        .next()
        .unwrap_or("")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .take(100)
        .collect();
    let cleaned = cleaned.trim_start_matches('.');
    if cleaned.is_empty() {
        "file".into()
    } else {
        cleaned.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_made_safe() {
        assert_eq!(safe_file_name("../../etc/passwd"), "passwd");
        assert_eq!(safe_file_name("..\\x.exe"), "x.exe");
        assert_eq!(safe_file_name(".htaccess"), "htaccess");
        assert_eq!(safe_file_name("a b\"c.csv"), "a_b_c.csv");
        assert_eq!(safe_file_name(""), "file");
        assert_eq!(safe_file_name("…"), "_");
    }

    #[test]
    fn the_link_names_the_token_and_the_safe_name() {
        let file = OutputFile::new("../r 1.pdf", "application/pdf", b"%PDF".to_vec());
        let (hosted, artifact) = hosted_file(file, &[0xab; 32], "https://a.example/x", 9);
        assert_eq!(hosted.token, "ab".repeat(32));
        assert_eq!(hosted.name, "r_1.pdf");
        assert_eq!(hosted.expires_at_ms, 9);
        assert_eq!(
            artifact.url,
            format!("https://a.example/x/files/{}/r_1.pdf", "ab".repeat(32))
        );
        assert_eq!(artifact.id, "ab".repeat(8));
        assert_eq!(artifact.size_bytes, 4);
    }
}
