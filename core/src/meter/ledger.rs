//! [`BudgetLedger`]: a turn's way to the shared budget counters while it runs, type-erased so
//! [`crate::meter::TurnUsage`] (and so [`crate::Turn`]) is not generic over the store.

use crate::error::StoreError;
use crate::meter::tally::{Tally, TallyKey};
use crate::platform::maybe_send::{BoxFuture, MaybeSend, MaybeSync};

/// The store's tally rows and the platform's clock, as a running turn reaches them to add its
/// model calls to the shared counters and read them back before its next call.
pub(crate) trait BudgetLedger: MaybeSend + MaybeSync + 'static {
    /// Now, in ms since the epoch.
    fn now_ms(&self) -> u64;

    /// [`crate::store::TurnStore::tallies`] of `part`, now.
    fn tallies<'a>(
        &'a self,
        part: &'a str,
    ) -> BoxFuture<'a, Result<Vec<(String, Tally)>, StoreError>>;

    /// [`crate::store::TurnStore::add_tally`].
    fn add_tally<'a>(
        &'a self,
        key: &'a TallyKey,
        tally: &'a Tally,
        expires_at_ms: u64,
        write_id: &'a str,
    ) -> BoxFuture<'a, Result<(), StoreError>>;
}
