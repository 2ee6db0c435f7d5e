//! Hosted files (`put_file`, `get_file`): served until they expire, by their token only.

use crate::store::{HostedFile, TurnStore};

/// Files are found by token until they expire.
pub async fn hosted_files<S: TurnStore>(s: &S, p: &str) {
    let token = format!("{p}-0123456789abcdef");
    let file = HostedFile {
        token: token.clone(),
        name: "a.csv".into(),
        mime: "text/csv".into(),
        bytes: b"a,b\n1,2\n".to_vec(),
        expires_at_ms: 1000,
    };
    s.put_file(&file).await.expect("put_file");
    assert_eq!(s.get_file(&token, 999).await.expect("get_file"), Some(file));
    assert_eq!(s.get_file(&token, 1000).await.expect("get_file"), None);
    assert_eq!(s.get_file("nope", 0).await.expect("get_file"), None);
}
