//! [`ModelAgent`]: a Digital Worker backed by any OpenAI-compatible chat-completions endpoint,
//! with HTTP and MCP tools and human approval, configured by settings (`RUNWAY_AGENT=model`) or in code.

mod attachment_intake;
mod call_meter;
mod chat_stream;
mod file_ref;
mod log_budget;
pub(crate) mod mcp;
mod model_agent;
mod redaction;
mod secret;
mod settings;
mod tool_runner;
mod toolbox;
pub(crate) mod tools_file;
mod transcript;

pub use attachment_intake::AttachmentSettings;
pub use chat_stream::{ChatStreamError, ChatStreamEvent, ChatStreamParser};
pub use file_ref::{FileRef, FileRefKind};
pub use mcp::{McpApproval, McpServer};
pub use model_agent::ModelAgent;
pub use secret::Secret;
pub use settings::{ModelSettings, ModelSettingsError, SETTING_NAMES};
pub use tools_file::{HttpTool, Redirects, ToolsFile, ToolsFileError, parse_tools};
pub use transcript::{ChatMessage, FunctionCall, ModelToolCall, STATE_KEY, Transcript};
