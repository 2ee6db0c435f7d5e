//! Files users attach to a turn, made safe to use: downloaded under an SSRF guard
//! ([`AddressPolicy`], [`download`]; natively through `PublicOnlyClient`, feature `reqwest`), typed from their
//! bytes ([`sniff`]), and kept with the thread ([`AttachmentStore`]) so later turns can use
//! them after the link expired.

mod address_policy;
mod download;
mod file_store;
#[cfg(feature = "reqwest")]
mod public_client;
mod sniff;
pub mod sql_files;

pub use address_policy::{AddressPolicy, Refusal, is_loopback, is_public};
pub use download::{DownloadError, REFUSED_ADDRESS_MARKER, download, human_bytes};
pub use file_store::{
    AttachmentStore, KEEP_ATTACHMENTS_FOR, MemoryAttachmentStore, attachment_digest,
};
#[cfg(feature = "reqwest")]
pub use public_client::PublicOnlyClient;
pub use sniff::{FileKind, sniff};
