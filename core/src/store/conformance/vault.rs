//! The vault and the connect states (see [`crate::store::connections`]): a connect state is
//! claimed once and expires exactly; connections are kept per workspace, user and provider,
//! listed by workspace and user page by page, and deleted one at a time.

use futures::future::join_all;

use crate::store::{
    ConnectStage, ConnectState, ConnectionFilter, ConnectionKey, StoredConnection, TurnStore,
};

fn connect_state(id: &str, key: &ConnectionKey, expires_at_ms: u64) -> ConnectState {
    ConnectState {
        id: id.into(),
        stage: ConnectStage::Link,
        worker: "agent-1".into(),
        thread: "thread-1".into(),
        key: key.clone(),
        verifier: format!("verifier-of-{id}"),
        redirect_uri: "https://agent.example/callback".into(),
        expires_at_ms,
    }
}

fn connection_key(workspace: &str, user: &str, provider: &str) -> ConnectionKey {
    ConnectionKey {
        workspace: workspace.into(),
        user: user.into(),
        provider: provider.into(),
    }
}

/// Of ten concurrent claims of one state, exactly one gets it, whole; a claim after that gets
/// nothing; an unknown id gets nothing.
pub async fn a_connect_state_is_claimed_once<S: TurnStore>(s: &S, p: &str) {
    let key = connection_key(&format!("{p}-ws"), "u1", "acme");
    let state = connect_state(&format!("{p}-id"), &key, 10_000);
    s.put_connect_state(&state)
        .await
        .expect("put_connect_state");
    let claims = (0..10).map(|_| s.claim_connect_state(&state.id, 5));
    let got: Vec<_> = join_all(claims)
        .await
        .into_iter()
        .map(|r| r.expect("claim_connect_state"))
        .collect();
    let won: Vec<_> = got.iter().flatten().collect();
    assert_eq!(won.len(), 1, "{got:?}");
    assert_eq!(won[0], &state);
    assert_eq!(won[0].verifier, state.verifier);
    assert_eq!(s.claim_connect_state(&state.id, 6).await.unwrap(), None);
    assert_eq!(
        s.claim_connect_state(&format!("{p}-forged"), 6)
            .await
            .unwrap(),
        None
    );
}

/// A state expired at the claim's `now` is not given out (even if the backend still holds
/// it), and one just before its expiry is.
pub async fn a_connect_state_expires_exactly<S: TurnStore>(s: &S, p: &str) {
    let key = connection_key(&format!("{p}-ws"), "u1", "acme");
    let late = connect_state(&format!("{p}-late"), &key, 600_000);
    s.put_connect_state(&late).await.unwrap();
    assert_eq!(
        s.claim_connect_state(&late.id, 600_000).await.unwrap(),
        None
    );
    let on_time = connect_state(&format!("{p}-on-time"), &key, 600_000);
    s.put_connect_state(&on_time).await.unwrap();
    assert_eq!(
        s.claim_connect_state(&on_time.id, 599_999).await.unwrap(),
        Some(on_time)
    );
}

/// A sealed entry is found under its own (workspace, user, provider) only, and a new one
/// replaces the old.
pub async fn connections_are_kept_per_workspace_user_and_provider<S: TurnStore>(s: &S, p: &str) {
    let ws = format!("{p}-ws");
    let mine = connection_key(&ws, "u1", "acme");
    assert_eq!(s.get_connection(&mine).await.unwrap(), None);
    s.put_connection(&mine, "sealed-1").await.unwrap();
    assert_eq!(
        s.get_connection(&mine).await.unwrap().as_deref(),
        Some("sealed-1")
    );
    for other in [
        connection_key(&ws, "u2", "acme"),
        connection_key(&format!("{p}-other-ws"), "u1", "acme"),
        connection_key(&ws, "u1", "globex"),
    ] {
        assert_eq!(s.get_connection(&other).await.unwrap(), None, "{other:?}");
    }
    s.put_connection(&mine, "sealed-2").await.unwrap();
    assert_eq!(
        s.get_connection(&mine).await.unwrap().as_deref(),
        Some("sealed-2")
    );
}

/// Every entry `filter` names, page after page of `page` entries (each page starting after the
/// last entry of the one before), checking no page is longer than asked and only the last is
/// shorter.
async fn list_all<S: TurnStore>(
    s: &S,
    filter: &ConnectionFilter,
    page: usize,
) -> Vec<StoredConnection> {
    let mut all: Vec<StoredConnection> = Vec::new();
    loop {
        let after = all.last().map(|c| c.key.clone());
        let got = s
            .list_connections(filter, after.as_ref(), page)
            .await
            .expect("list_connections");
        assert!(got.len() <= page, "{got:?}");
        let done = got.len() < page;
        all.extend(got);
        if done {
            return all;
        }
        assert!(all.len() < 10_000, "listing does not end");
    }
}

fn keys_of(listed: &[StoredConnection]) -> Vec<ConnectionKey> {
    let mut keys: Vec<ConnectionKey> = listed.iter().map(|c| c.key.clone()).collect();
    keys.sort();
    keys
}

/// A listing names a workspace's entries, a user's in a workspace, or a user's in every
/// workspace (on a store that lists every workspace at once; another refuses that filter),
/// each with its sealed entry as stored, and nothing else.
pub async fn connections_are_listed_by_workspace_and_user<S: TurnStore>(s: &S, p: &str) {
    let (ws, other_ws) = (format!("{p}-ws"), format!("{p}-other-ws"));
    let (u1, u2) = (format!("{p}-u1"), format!("{p}-u2"));
    let entries = [
        connection_key(&ws, &u1, "acme"),
        connection_key(&ws, &u1, "globex"),
        connection_key(&ws, &u2, "acme"),
        connection_key(&other_ws, &u1, "acme"),
    ];
    for (i, key) in entries.iter().enumerate() {
        s.put_connection(key, &format!("sealed-{i}")).await.unwrap();
    }
    let filter = |w: Option<&str>, u: Option<&str>| ConnectionFilter {
        workspace: w.map(str::to_owned),
        user: u.map(str::to_owned),
    };
    let in_ws = list_all(s, &filter(Some(&ws), None), 100).await;
    assert_eq!(keys_of(&in_ws), entries[..3].to_vec());
    for c in &in_ws {
        let i = entries.iter().position(|k| *k == c.key).unwrap();
        assert_eq!(c.sealed, format!("sealed-{i}"), "{:?}", c.key);
    }
    let mine = list_all(s, &filter(Some(&ws), Some(&u1)), 100).await;
    assert_eq!(keys_of(&mine), entries[..2].to_vec());
    let theirs = list_all(s, &filter(Some(&ws), Some(&u2)), 100).await;
    assert_eq!(keys_of(&theirs), vec![entries[2].clone()]);
    let nobody = list_all(s, &filter(Some(&format!("{p}-empty-ws")), None), 100).await;
    assert!(nobody.is_empty(), "{nobody:?}");
    if s.lists_every_workspace() {
        let everywhere = list_all(s, &filter(None, Some(&u1)), 100).await;
        let mut expected = vec![entries[0].clone(), entries[1].clone(), entries[3].clone()];
        expected.sort();
        assert_eq!(keys_of(&everywhere), expected);
        // Other checks' entries may share the store: ours are all there.
        let all = list_all(s, &ConnectionFilter::default(), 1000).await;
        let all = keys_of(&all);
        assert!(entries.iter().all(|k| all.contains(k)), "{all:?}");
    } else {
        assert!(
            s.list_connections(&filter(None, Some(&u1)), None, 10)
                .await
                .is_err(),
            "a store that lists one workspace at a time refuses a filter without one"
        );
    }
}

/// Pages of any size list every entry exactly once, and a page can start after an entry
/// deleted since.
pub async fn connections_are_listed_page_by_page<S: TurnStore>(s: &S, p: &str) {
    let ws = format!("{p}-ws");
    let mut entries: Vec<ConnectionKey> = (0..7)
        .map(|i| connection_key(&ws, &format!("{p}-u{}", i % 3), &format!("provider-{i}")))
        .collect();
    entries.sort();
    for key in &entries {
        s.put_connection(key, "sealed").await.unwrap();
    }
    let filter = ConnectionFilter {
        workspace: Some(ws.clone()),
        user: None,
    };
    for page in [1, 2, 3, 7, 8] {
        let listed = list_all(s, &filter, page).await;
        assert_eq!(listed.len(), entries.len(), "pages of {page}: {listed:?}");
        assert_eq!(keys_of(&listed), entries, "pages of {page}");
    }
    let first = s.list_connections(&filter, None, 3).await.unwrap();
    let last = first.last().unwrap().key.clone();
    assert!(s.delete_connection(&last).await.unwrap());
    let rest = s.list_connections(&filter, Some(&last), 100).await.unwrap();
    assert_eq!(rest.len(), entries.len() - 3, "{rest:?}");
    assert!(rest.iter().all(|c| first.iter().all(|f| f.key != c.key)));
}

/// Deleting one entry leaves the same user's other providers, other users and other
/// workspaces as they were; deleting it again finds nothing.
pub async fn deleting_a_connection_leaves_the_others<S: TurnStore>(s: &S, p: &str) {
    let ws = format!("{p}-ws");
    let gone = connection_key(&ws, "u1", "acme");
    let kept = [
        connection_key(&ws, "u1", "globex"),
        connection_key(&ws, "u2", "acme"),
        connection_key(&format!("{p}-other-ws"), "u1", "acme"),
    ];
    s.put_connection(&gone, "sealed-gone").await.unwrap();
    for key in &kept {
        s.put_connection(key, "sealed-kept").await.unwrap();
    }
    assert!(s.delete_connection(&gone).await.unwrap());
    assert_eq!(s.get_connection(&gone).await.unwrap(), None);
    assert!(!s.delete_connection(&gone).await.unwrap(), "already gone");
    for key in &kept {
        assert_eq!(
            s.get_connection(key).await.unwrap().as_deref(),
            Some("sealed-kept"),
            "{key:?}"
        );
    }
    let left = list_all(
        s,
        &ConnectionFilter {
            workspace: Some(ws),
            user: None,
        },
        100,
    )
    .await;
    assert_eq!(keys_of(&left), kept[..2].to_vec());
}
