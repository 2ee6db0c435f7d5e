//! [`Turn::claim_action`](crate::Turn::claim_action): a turn's way to the store's action claims
//! ([`crate::store::action_claims`]), type-erased so [`Turn`](crate::Turn) is not generic over
//! the store.

use std::fmt;
use std::sync::Arc;

use crate::error::StoreError;
use crate::platform::maybe_send::{BoxFuture, MaybeSend, MaybeSync};

/// Claims actions in the store serving a turn, with the platform's clock and the thread
/// context's lifetime as the claim's.
pub(crate) trait ActionStore: MaybeSend + MaybeSync + 'static {
    fn claim(
        &self,
        thread_key: &str,
        action: &str,
        holder: &str,
    ) -> BoxFuture<'_, Result<bool, StoreError>>;
}

/// What a served turn claims its actions with: the store, its thread and this delivery's
/// holder name. Absent outside a served turn: every claim then fails (closed).
#[derive(Clone, Default)]
pub(crate) struct TurnActions {
    scope: Option<(Arc<dyn ActionStore>, String, String)>,
}

impl TurnActions {
    /// Claims of `thread_key`'s actions by `holder` (unique per delivery of the turn).
    pub(crate) fn new(store: Arc<dyn ActionStore>, thread_key: String, holder: String) -> Self {
        Self {
            scope: Some((store, thread_key, holder)),
        }
    }

    pub(crate) async fn claim(&self, action: &str) -> Result<bool, StoreError> {
        match &self.scope {
            Some((store, thread_key, holder)) => store.claim(thread_key, action, holder).await,
            None => Err(StoreError::Unavailable(
                "this turn has no store to claim actions in".into(),
            )),
        }
    }
}

impl fmt::Debug for TurnActions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TurnActions")
            .field("available", &self.scope.is_some())
            .finish()
    }
}
