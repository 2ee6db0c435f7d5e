//! [`ServeModels`]: how `runway serve` runs a model agent, the built-in one
//! (`RUNWAY_AGENT=model`) and a workers file's model workers alike.

use std::path::Path;
use std::sync::Arc;

use runway_agents::ModelAgent;
use runway_core::adapter::TokioRuntime;

use crate::sqlite_attachments::SqliteAttachmentStore;

/// The file in the data directory holding the model agents' downloaded attachments.
const ATTACHMENTS_FILE: &str = "attachments.sqlite3";

/// What every model agent of one `runway serve` process shares: the store of downloaded
/// attachments in its data directory.
#[derive(Debug, Clone)]
pub struct ServeModels {
    files: Arc<SqliteAttachmentStore>,
}

impl ServeModels {
    /// Opens (creating if needed) the attachments database in `data_dir`.
    ///
    /// # Errors
    /// The directory or the database cannot be created or opened.
    pub fn open(data_dir: &Path) -> Result<Self, String> {
        let files = SqliteAttachmentStore::open(&data_dir.join(ATTACHMENTS_FILE))?;
        Ok(Self {
            files: Arc::new(files),
        })
    }

    /// `model` as `runway serve` runs it: downloaded attachments kept in the data directory
    /// (a later turn uses a file after its link expired, and after a restart), downloads,
    /// tools and MCP servers through the agent's own native clients (public addresses only,
    /// under its settings' policy).
    pub fn prepare(&self, model: ModelAgent<TokioRuntime>) -> ModelAgent<TokioRuntime> {
        model.with_attachment_store(self.files.clone())
    }
}
