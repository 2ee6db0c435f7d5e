//! [`PersonSessions`]: the MCP connections of one server with `auth`, one per person
//! (workspace and user), so that a session opened with one user's token (its
//! `Mcp-Session-Id`, its tool list, its owed cancellations) is never used for another user or
//! in another workspace. Bounded: past [`MAX_PEOPLE_PER_SERVER`] the least recently used
//! person's connection is forgotten (their next turn opens a new session), and its session
//! ended at the server by the turn that pushed it out.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use super::connection::McpConnection;
use super::server_config::McpServer;

/// People whose sessions one server keeps at most.
pub(crate) const MAX_PEOPLE_PER_SERVER: usize = 64;

/// Whom an MCP session of a server with `auth` belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Person {
    /// The turn's `workspaceId`.
    pub workspace: String,
    /// The turn's `userId`.
    pub user: String,
}

/// One server's connections, by person; the most recently used last.
#[derive(Debug)]
pub(crate) struct PersonSessions {
    server: McpServer,
    kept: Mutex<VecDeque<(Person, Arc<McpConnection>)>>,
}

impl PersonSessions {
    pub(crate) fn new(server: McpServer) -> Self {
        Self {
            server,
            kept: Mutex::new(VecDeque::new()),
        }
    }

    /// The server's configuration.
    pub(crate) fn server(&self) -> &McpServer {
        &self.server
    }

    /// `person`'s connection: the one kept (now the most recently used), or a new one, which
    /// pushes out the least recently used past [`MAX_PEOPLE_PER_SERVER`]: that one is
    /// returned too, for its session to be ended
    /// ([`ending_alongside`](super::connection::ending_alongside)).
    pub(crate) fn of(&self, person: &Person) -> (Arc<McpConnection>, Option<Arc<McpConnection>>) {
        let mut kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(at) = kept.iter().position(|(p, _)| p == person) {
            let entry = kept.remove(at).expect("the position just found");
            let connection = entry.1.clone();
            kept.push_back(entry);
            return (connection, None);
        }
        let mut forgotten = None;
        if kept.len() >= MAX_PEOPLE_PER_SERVER {
            forgotten = kept.pop_front().map(|(_, c)| c);
            tracing::debug!(server = %self.server.name,
                "MCP sessions of too many people: the least recently used is forgotten");
        }
        let connection = Arc::new(McpConnection::new(self.server.clone()));
        kept.push_back((person.clone(), connection.clone()));
        (connection, forgotten)
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.kept.lock().unwrap().len()
    }
}

#[cfg(test)]
mod tests {
    use super::super::server_config::McpApproval;
    use super::*;

    fn person(workspace: &str, user: &str) -> Person {
        Person {
            workspace: workspace.into(),
            user: user.into(),
        }
    }

    #[test]
    fn one_connection_per_person_bounded_least_recently_used_first_out() {
        let sessions = PersonSessions::new(McpServer {
            name: "crm".into(),
            url: "https://mcp.example.com/mcp".parse().unwrap(),
            headers: Vec::new(),
            allow: None,
            approval: McpApproval::Never,
            timeout: None,
            auth: Some("acme".into()),
        });
        let of = |w: &str, u: &str| sessions.of(&person(w, u)).0;
        let alice = of("w1", "alice");
        assert!(Arc::ptr_eq(&alice, &of("w1", "alice")));
        // Another user, and the same user in another workspace: other connections.
        assert!(!Arc::ptr_eq(&alice, &of("w1", "bob")));
        assert!(!Arc::ptr_eq(&alice, &of("w2", "alice")));
        assert_eq!(sessions.len(), 3);
        let alice_w2 = of("w2", "alice");
        // Alice used last: the fill-up pushes alice (w2) out first, then bob (w1); alice stays.
        of("w1", "alice");
        let bob = of("w1", "bob");
        of("w1", "alice");
        let mut forgotten = Vec::new();
        for i in 0..MAX_PEOPLE_PER_SERVER - 2 {
            forgotten.extend(sessions.of(&person("w3", &format!("u{i}"))).1);
        }
        assert_eq!(sessions.len(), MAX_PEOPLE_PER_SERVER);
        // Each connection pushed out is handed back, for its session to be ended.
        assert_eq!(forgotten.len(), 1);
        assert!(Arc::ptr_eq(&forgotten[0], &alice_w2));
        assert!(Arc::ptr_eq(&alice, &of("w1", "alice")));
        let (_, pushed_out) = sessions.of(&person("w3", "one-more"));
        assert!(Arc::ptr_eq(&pushed_out.unwrap(), &bob));
        assert_eq!(sessions.len(), MAX_PEOPLE_PER_SERVER);
        let (bob_again, pushed_out) = sessions.of(&person("w1", "bob"));
        assert!(!Arc::ptr_eq(&bob, &bob_again), "bob's was forgotten");
        assert!(pushed_out.is_some());
        assert!(Arc::ptr_eq(&alice, &of("w1", "alice")));
    }
}
