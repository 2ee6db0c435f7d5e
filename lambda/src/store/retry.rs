//! What DynamoDB refuses under load, retried: transactions cancelled by throttling or a
//! conflicting transaction, and the unprocessed rest of a batch, with exponential backoff and
//! full jitter (the SDK retries single requests itself, see [`crate::sdk_config`]). What still
//! fails becomes a [`StoreError`].

use std::time::Duration;

use aws_sdk_dynamodb::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{PutRequest, TransactWriteItem, WriteRequest};
use runway_core::adapter::StoreError;

use super::DynamoStore;
use super::item::Item;

/// Attempts for a transaction cancelled by throttling or a conflicting transaction.
const TX_ATTEMPTS: u32 = 4;
/// Items in one `BatchWriteItem` (DynamoDB's limit).
const BATCH_ITEMS: usize = 25;
/// Attempts for the unprocessed remainder of a `BatchWriteItem`.
const BATCH_ATTEMPTS: u32 = 6;

/// Why a transaction was not written.
pub(super) enum TxFailure {
    /// A condition failed: the cancellation reason code of each action, in order.
    Condition(Vec<String>),
    /// Anything else.
    Store(StoreError),
}

impl DynamoStore {
    /// Runs `items` as one transaction, retrying cancellations caused by throttling or a
    /// conflicting transaction with backoff and jitter.
    pub(super) async fn transact(&self, items: Vec<TransactWriteItem>) -> Result<(), TxFailure> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let r = self
                .client
                .transact_write_items()
                .set_transact_items(Some(items.clone()))
                .send()
                .await;
            let e = match r {
                Ok(_) => return Ok(()),
                Err(e) => e,
            };
            let retryable = match e.as_service_error() {
                Some(TransactWriteItemsError::TransactionCanceledException(c)) => {
                    c.cancellation_reasons().iter().any(|r| {
                        matches!(
                            r.code(),
                            Some(
                                "ThrottlingError"
                                    | "ProvisionedThroughputExceeded"
                                    | "TransactionConflict"
                                    | "RequestLimitExceeded"
                            )
                        )
                    })
                }
                Some(TransactWriteItemsError::TransactionInProgressException(_)) => true,
                _ => false,
            };
            if let Some(TransactWriteItemsError::TransactionCanceledException(c)) =
                e.as_service_error()
                && !retryable
                && c.cancellation_reasons()
                    .iter()
                    .any(|r| r.code() == Some("ConditionalCheckFailed"))
            {
                return Err(TxFailure::Condition(
                    c.cancellation_reasons()
                        .iter()
                        .map(|r| r.code().unwrap_or("None").to_owned())
                        .collect(),
                ));
            }
            if !retryable || attempt >= TX_ATTEMPTS {
                return Err(TxFailure::Store(match e.as_service_error() {
                    Some(TransactWriteItemsError::TransactionCanceledException(c)) => {
                        let codes: Vec<&str> = c
                            .cancellation_reasons()
                            .iter()
                            .filter_map(|r| r.code())
                            .filter(|c| *c != "None")
                            .collect();
                        if retryable {
                            StoreError::Throttled(format!(
                                "TransactWriteItems cancelled: {codes:?}"
                            ))
                        } else {
                            StoreError::Unavailable(format!(
                                "TransactWriteItems cancelled: {codes:?}"
                            ))
                        }
                    }
                    _ => sdk_error("TransactWriteItems", e),
                }));
            }
            tracing::warn!(attempt, "transaction cancelled by contention: retrying");
            tokio::time::sleep(backoff(attempt)).await;
        }
    }

    /// Writes `items` with `BatchWriteItem`, 25 at a time, retrying unprocessed items with
    /// backoff and jitter. Not atomic: used for parts that nothing references yet.
    pub(super) async fn batch_put(&self, items: Vec<Item>) -> Result<(), StoreError> {
        let mut pending: Vec<WriteRequest> = items
            .into_iter()
            .map(|item| {
                PutRequest::builder()
                    .set_item(Some(item))
                    .build()
                    .map(|p| WriteRequest::builder().put_request(p).build())
                    .map_err(|e| StoreError::Unavailable(e.to_string()))
            })
            .collect::<Result<_, _>>()?;
        let mut attempt = 0;
        while !pending.is_empty() {
            let rest = pending.split_off(pending.len().min(BATCH_ITEMS));
            let batch = std::mem::replace(&mut pending, rest);
            let out = self
                .client
                .batch_write_item()
                .request_items(&self.table, batch)
                .send()
                .await
                .map_err(|e| sdk_error("BatchWriteItem", e))?;
            let unprocessed = out
                .unprocessed_items
                .and_then(|mut m| m.remove(&self.table))
                .unwrap_or_default();
            if !unprocessed.is_empty() {
                attempt += 1;
                if attempt >= BATCH_ATTEMPTS {
                    return Err(StoreError::Throttled(format!(
                        "BatchWriteItem left {} items unprocessed",
                        unprocessed.len()
                    )));
                }
                tokio::time::sleep(backoff(attempt)).await;
                pending.extend(unprocessed);
            }
        }
        Ok(())
    }
}

/// Exponential backoff with full jitter: a random wait in `[0, min(2 s, 50 ms × 2^attempt))`.
pub(super) fn backoff(attempt: u32) -> Duration {
    let cap = 50u64.saturating_mul(1 << attempt.min(10)).min(2000);
    Duration::from_millis(fastrand::u64(cap / 4..=cap))
}

/// Full jitter for commits of overlapping turns: a random wait in
/// `[0, min(400 ms, 10 ms × 2^attempt))`.
pub(super) fn contention_backoff(attempt: u32) -> Duration {
    let cap = 10u64.saturating_mul(1 << attempt.min(10)).min(400);
    Duration::from_millis(fastrand::u64(0..cap))
}

/// A [`StoreError`] for a failed SDK call: throttling after the SDK's own retries is
/// [`StoreError::Throttled`], an item over the size limit [`StoreError::TooLarge`], anything
/// else [`StoreError::Unavailable`].
pub(super) fn sdk_error<E, R>(op: &str, e: SdkError<E, R>) -> StoreError
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
    R: std::fmt::Debug,
{
    let code = e.code().map(str::to_owned);
    let message = e.message().unwrap_or_default().to_owned();
    match code.as_deref() {
        Some(
            "ProvisionedThroughputExceededException"
            | "ThrottlingException"
            | "RequestLimitExceeded",
        ) => StoreError::Throttled(format!("{op}: {}", code.unwrap_or_default())),
        Some("ItemCollectionSizeLimitExceededException") => {
            StoreError::TooLarge(format!("{op}: {message}"))
        }
        Some("ValidationException") if message.contains("size") => {
            StoreError::TooLarge(format!("{op}: {message}"))
        }
        Some(c) => StoreError::Unavailable(format!("{op}: {c}: {message}")),
        None => StoreError::Unavailable(format!("{op}: {}", DisplayErrorContext(&e))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_and_is_bounded() {
        for attempt in 1..20 {
            let d = backoff(attempt);
            assert!(d <= Duration::from_secs(2));
        }
        assert!(backoff(1) <= Duration::from_millis(100));
    }
}
