//! What the model reads back from an MCP tool call: the result's content blocks as text.
//!
//! Text is kept as is; an image or audio clip is described (type and size: the chat
//! completions API takes no binary tool results); a resource link gives its name and URI; an
//! embedded resource gives its text, or a description of its bytes; `structuredContent` is
//! added as JSON when no text block carries it; `isError` marks the whole result as the
//! tool's failure.

use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};

/// The text the model reads for `result`, before the agent cuts it to its size limit.
pub(crate) fn model_text(result: &CallToolResult) -> String {
    let mut parts: Vec<String> = result.content.iter().map(block_text).collect();
    let has_text = result
        .content
        .iter()
        .any(|b| matches!(b, ContentBlock::Text(_)));
    if let Some(structured) = &result.structured_content
        && !has_text
    {
        parts.push(structured.to_string());
    }
    let text = parts.join("\n");
    if result.is_error == Some(true) {
        format!("Error: the tool reported a failure: {text}")
    } else if text.is_empty() {
        "(the tool returned no content)".to_owned()
    } else {
        text
    }
}

fn block_text(block: &ContentBlock) -> String {
    match block {
        ContentBlock::Text(t) => t.text.clone(),
        ContentBlock::Image(i) => {
            format!("[image: {}, {} bytes]", i.mime_type, decoded_len(&i.data))
        }
        ContentBlock::Audio(a) => {
            format!("[audio: {}, {} bytes]", a.mime_type, decoded_len(&a.data))
        }
        ContentBlock::ResourceLink(r) => {
            let mut s = format!("[resource link: {} <{}>", r.name, r.uri);
            if let Some(m) = &r.mime_type {
                s.push_str(&format!(", {m}"));
            }
            if let Some(d) = &r.description {
                s.push_str(&format!(": {d}"));
            }
            s.push(']');
            s
        }
        ContentBlock::Resource(e) => match &e.resource {
            ResourceContents::TextResourceContents { uri, text, .. } => {
                format!("[resource <{uri}>]\n{text}")
            }
            ResourceContents::BlobResourceContents {
                uri,
                mime_type,
                blob,
                ..
            } => format!(
                "[resource <{uri}>: {}, {} bytes]",
                mime_type.as_deref().unwrap_or("application/octet-stream"),
                decoded_len(blob)
            ),
            #[allow(unreachable_patterns)]
            _ => "[resource]".to_owned(),
        },
        #[allow(unreachable_patterns)]
        _ => "[content of a type this client does not read]".to_owned(),
    }
}

/// Bytes that base64 text of this length decodes to.
fn decoded_len(base64: &str) -> usize {
    let t = base64.trim_end_matches('=');
    t.len() * 3 / 4
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn result(v: serde_json::Value) -> CallToolResult {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn every_kind_of_content_reads_as_text() {
        let r = result(json!({"content": [
            {"type": "text", "text": "Sum: 3"},
            {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
            {"type": "resource_link", "uri": "test://static/resource/1", "name": "Resource 1",
             "mimeType": "text/plain", "description": "A text resource"},
            {"type": "resource", "resource": {"uri": "test://r/2", "text": "inside"}},
            {"type": "resource", "resource": {"uri": "test://r/3", "blob": "AAAA", "mimeType": "application/gzip"}},
        ]}));
        assert_eq!(
            model_text(&r),
            "Sum: 3\n[image: image/png, 8 bytes]\n\
             [resource link: Resource 1 <test://static/resource/1>, text/plain: A text resource]\n\
             [resource <test://r/2>]\ninside\n[resource <test://r/3>: application/gzip, 3 bytes]"
        );
    }

    #[test]
    fn structured_content_and_errors() {
        let r = result(json!({"content": [], "structuredContent": {"temperature": 22}}));
        assert_eq!(model_text(&r), r#"{"temperature":22}"#);
        let r = result(
            json!({"content": [{"type": "text", "text": "{\"temperature\":22}"}],
                              "structuredContent": {"temperature": 22}}),
        );
        assert_eq!(model_text(&r), r#"{"temperature":22}"#, "not said twice");
        let r = result(json!({"content": [{"type": "text", "text": "offline"}], "isError": true}));
        assert_eq!(
            model_text(&r),
            "Error: the tool reported a failure: offline"
        );
        let r = result(json!({"content": []}));
        assert_eq!(model_text(&r), "(the tool returned no content)");
    }
}
