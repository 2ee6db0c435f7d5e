//! The model agent's side of user attachments: each file of a turn is downloaded once per
//! thread (de-duplicated by attachment `id`), typed from its bytes, kept with the thread, and
//! recorded in the transcript as a [`FileRef`]: text inline (bounded), an image by reference
//! (its bytes come from the [`AttachmentStore`] when the model is called), anything unusable as
//! the reason only. The URL is never logged, stored or shown.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use serde_json::{Value, json};

use super::file_ref::{FileRef, FileRefKind};
use super::transcript::{ChatMessage, Transcript, truncate};
use crate::attachments::{
    AddressPolicy, AttachmentStore, DownloadError, FileKind, download, human_bytes, sniff,
};
use runway_core::Turn;
use runway_core::http_client::HttpClient;
use runway_core::protocol::LogId;

/// How attachments are fetched and what of them reaches the model.
#[derive(Debug, Clone)]
pub struct AttachmentSettings {
    /// What downloads may reach (public addresses over https; loopback only for tests).
    pub policy: AddressPolicy,
    /// Largest file downloaded, counted as it streams (default 4 MiB).
    pub max_bytes: usize,
    /// Longest time one download may take (default 30 s, and never past the turn's deadline).
    pub timeout: Duration,
    /// Most text of one file sent to the model (default 16 KiB; longer text is cut).
    pub max_text_bytes: usize,
    /// Most text of all files of one message (default 24 KiB: the transcript's window must
    /// still hold it).
    pub max_message_text_bytes: usize,
    /// Most files used from one turn (default 10; the rest are reported as not used).
    pub max_files_per_turn: usize,
    /// Most images sent with one model request, the most recent first (default 8); older
    /// ones are referred to by name.
    pub max_images_per_request: usize,
    /// Most bytes of images sent with one model request, before base64 (default 8 MiB).
    pub max_image_bytes_per_request: usize,
    /// Most bytes of files kept for one thread (default 32 MiB,
    /// `RUNWAY_ATTACHMENTS_MAX_THREAD_BYTES`): past it, a new file is not downloaded, and the
    /// user and the model are told why.
    pub max_thread_bytes: u64,
}

impl Default for AttachmentSettings {
    fn default() -> Self {
        Self {
            policy: AddressPolicy::default(),
            max_bytes: 4 * 1024 * 1024,
            timeout: Duration::from_secs(30),
            max_text_bytes: 16 * 1024,
            max_message_text_bytes: 24 * 1024,
            max_files_per_turn: 10,
            max_images_per_request: 8,
            max_image_bytes_per_request: 8 * 1024 * 1024,
            max_thread_bytes: 32 * 1024 * 1024,
        }
    }
}

/// Time kept back before the turn's deadline for the model call itself.
const DEADLINE_MARGIN: Duration = Duration::from_secs(10);

/// Takes this turn's attachments in: the [`FileRef`]s for the user message (files already in
/// the transcript are left out), and a note for the user naming each file that could not be
/// used.
/// The bytes of the files it takes in are added to `t.kept_bytes`; past
/// [`AttachmentSettings::max_thread_bytes`], a new file is not downloaded.
pub(crate) async fn take_in(
    turn: &Turn,
    settings: &AttachmentSettings,
    client: Option<&Arc<dyn HttpClient>>,
    store: &dyn AttachmentStore,
    t: &mut Transcript,
) -> (Vec<FileRef>, Option<String>) {
    if turn.attachments.is_empty() {
        return (Vec::new(), None);
    }
    let thread_key = runway_core::adapter::thread_key(&turn.agent_id, &turn.thread_id);
    let known: Vec<String> = known_ids(t).into_iter().map(str::to_owned).collect();
    let http = client.and_then(|c| turn.http().with_client(c.clone()));
    let mut refs: Vec<FileRef> = Vec::new();
    let mut text_left = settings.max_message_text_bytes;
    for (index, a) in turn.attachments.iter().enumerate() {
        if known.contains(&a.id) || refs.iter().any(|r| r.id == a.id) {
            continue; // de-duplicated by id: the model has it already
        }
        let kind = if index >= settings.max_files_per_turn {
            FileRefKind::Unusable {
                reason: format!(
                    "only {} files of one message are used",
                    settings.max_files_per_turn
                ),
            }
        } else if t.kept_bytes >= settings.max_thread_bytes {
            FileRefKind::Unusable {
                reason: format!(
                    "this conversation already keeps {} of files, its most",
                    human_bytes(usize::try_from(settings.max_thread_bytes).unwrap_or(usize::MAX))
                ),
            }
        } else {
            match fetch(turn, settings, http.as_ref(), store, &thread_key, a).await {
                Ok(bytes) => {
                    t.kept_bytes = t.kept_bytes.saturating_add(bytes.len() as u64);
                    turn.usage().attachment_bytes(bytes.len() as u64);
                    classify(&bytes, settings, &mut text_left)
                }
                Err(e) => {
                    if let DownloadError::Failed { detail } = &e {
                        tracing::warn!(
                            run_id = %LogId(&turn.run_id), thread_id = %LogId(&turn.thread_id),
                            attachment_id = %a.id, error = %detail,
                            "attachment download failed"
                        );
                    } else {
                        tracing::info!(
                            run_id = %LogId(&turn.run_id), thread_id = %LogId(&turn.thread_id),
                            attachment_id = %a.id, reason = %e,
                            "attachment not used"
                        );
                    }
                    FileRefKind::Unusable {
                        reason: e.to_string(),
                    }
                }
            }
        };
        refs.push(FileRef {
            id: a.id.clone(),
            name: Some(truncate(&a.name, 200)),
            kind,
        });
    }
    let unusable: Vec<&str> = refs
        .iter()
        .filter_map(|r| match &r.kind {
            FileRefKind::Unusable { reason } => Some(reason.as_str()),
            _ => None,
        })
        .collect();
    let note = (!unusable.is_empty()).then(|| {
        let lines: Vec<String> = unusable
            .iter()
            .map(|r| format!("An attached file could not be used: {r}."))
            .collect();
        lines.join("\n")
    });
    (refs, note)
}

/// The file's bytes: from the store when this thread kept them, else downloaded (and kept).
async fn fetch(
    turn: &Turn,
    settings: &AttachmentSettings,
    http: Option<&runway_core::http_client::Http>,
    store: &dyn AttachmentStore,
    thread_key: &str,
    a: &runway_core::protocol::Attachment,
) -> Result<bytes::Bytes, DownloadError> {
    match store.get(thread_key, &a.id).await {
        Ok(Some(bytes)) => return Ok(bytes),
        Ok(None) => {}
        Err(e) => tracing::warn!(
            run_id = %LogId(&turn.run_id), thread_id = %LogId(&turn.thread_id), error = %e,
            "attachment store read failed: downloading"
        ),
    }
    let http = http.ok_or(DownloadError::Unavailable)?;
    let left = http.time_left().unwrap_or_default();
    let timeout = settings.timeout.min(left.saturating_sub(DEADLINE_MARGIN));
    let bytes = download(
        http,
        a.url.expose(),
        &settings.policy,
        settings.max_bytes,
        timeout,
    )
    .await?;
    if let Err(e) = store.put_if_absent(thread_key, &a.id, bytes.clone()).await {
        tracing::warn!(
            run_id = %LogId(&turn.run_id), thread_id = %LogId(&turn.thread_id), error = %e,
            "attachment store write failed: the file is used this turn only"
        );
    }
    Ok(bytes)
}

fn classify(bytes: &[u8], settings: &AttachmentSettings, text_left: &mut usize) -> FileRefKind {
    match sniff(bytes) {
        FileKind::Text(text) => {
            let room = settings.max_text_bytes.min(*text_left);
            if room < 64 && !text.is_empty() {
                return FileRefKind::Unusable {
                    reason: "too much text was attached to one message".into(),
                };
            }
            let text = truncate(&text, room);
            *text_left = text_left.saturating_sub(text.len());
            FileRefKind::Text {
                text,
                bytes: bytes.len() as u64,
            }
        }
        FileKind::Image { mime } => FileRefKind::Image {
            mime: mime.into(),
            bytes: bytes.len() as u64,
        },
        FileKind::Unsupported { mime } => FileRefKind::Unusable {
            reason: format!(
                "its type ({mime}) is not supported; text files and PNG, JPEG, GIF or WebP \
                 images are"
            ),
        },
    }
}

/// Ids of the files the transcript holds.
fn known_ids(t: &Transcript) -> Vec<&str> {
    t.messages
        .iter()
        .flat_map(|m| match m {
            ChatMessage::User { files, .. } => files.iter().map(|f| f.id.as_str()).collect(),
            _ => Vec::new(),
        })
        .collect()
}

/// The images of one model request: data URLs of those sent, and the ids of those left out to
/// keep the request small.
#[derive(Debug, Default)]
pub(crate) struct Images {
    urls: HashMap<String, String>,
    left_out: HashSet<String>,
}

/// The images the transcript refers to, most recent first, as many as
/// [`AttachmentSettings::max_images_per_request`] and
/// [`AttachmentSettings::max_image_bytes_per_request`] allow, read from the store: only those
/// are loaded. An image the store no longer has is left out (the model is told it is
/// unavailable); one past the bounds is referred to by name.
pub(crate) async fn load_images(
    turn: &Turn,
    settings: &AttachmentSettings,
    store: &dyn AttachmentStore,
    t: &Transcript,
) -> Images {
    let thread_key = runway_core::adapter::thread_key(&turn.agent_id, &turn.thread_id);
    let mut images = Images::default();
    let mut bytes_left = settings.max_image_bytes_per_request;
    let newest_first = t.messages.iter().rev().flat_map(|m| match m {
        ChatMessage::User { files, .. } => files.iter().rev().collect(),
        _ => Vec::new(),
    });
    for f in newest_first {
        let FileRefKind::Image { mime, bytes } = &f.kind else {
            continue;
        };
        if images.urls.contains_key(&f.id) || images.left_out.contains(&f.id) {
            continue;
        }
        let size = usize::try_from(*bytes).unwrap_or(usize::MAX);
        if images.urls.len() >= settings.max_images_per_request || size > bytes_left {
            images.left_out.insert(f.id.clone());
            continue;
        }
        match store.get(&thread_key, &f.id).await {
            Ok(Some(data)) if data.len() <= bytes_left => {
                bytes_left -= data.len();
                let b64 = base64::engine::general_purpose::STANDARD.encode(&data);
                images
                    .urls
                    .insert(f.id.clone(), format!("data:{mime};base64,{b64}"));
            }
            Ok(Some(_)) => {
                images.left_out.insert(f.id.clone());
            }
            Ok(None) => {}
            Err(e) => tracing::warn!(
                run_id = %LogId(&turn.run_id), thread_id = %LogId(&turn.thread_id), error = %e,
                "attachment store read failed"
            ),
        }
    }
    images
}

/// A user message with files, as chat-completions content parts.
pub(crate) fn user_content(content: &str, files: &[FileRef], images: &Images) -> Value {
    let mut parts = Vec::with_capacity(files.len() + 1);
    if !content.is_empty() {
        parts.push(json!({"type": "text", "text": content}));
    }
    for (n, f) in files.iter().enumerate() {
        let n = n + 1;
        match &f.kind {
            FileRefKind::Text { text, bytes } => parts.push(json!({"type": "text", "text":
                format!("[Attached file {n}: text, {}]\n{text}", human_bytes(*bytes as usize))})),
            FileRefKind::Image { .. } if images.left_out.contains(&f.id) => {
                parts.push(json!({"type": "text", "text": format!(
                    "[Attached file {n}: the image {} (shown earlier; not sent again with this \
                     request, which carries the most recent images only)]",
                    f.name.as_deref().map_or_else(|| f.id.clone(), |n| format!("{n:?}"))
                )}));
            }
            FileRefKind::Image { .. } => match images.urls.get(&f.id) {
                Some(url) => parts.push(json!({"type": "image_url", "image_url": {"url": url}})),
                None => parts.push(json!({"type": "text", "text":
                    format!("[Attached file {n}: an image that is no longer available]")})),
            },
            FileRefKind::Unusable { reason } => parts.push(json!({"type": "text", "text":
                format!("[Attached file {n} could not be used: {reason}]")})),
        }
    }
    Value::Array(parts)
}
