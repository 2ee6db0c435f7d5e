//! The protocols as plain data: Console's request ([`RunRequest`]), the parts of a turn both
//! protocols share (attachments, interrupts, the user's [`Resume`] decision, the limits, the
//! health body), Lowkey's request ([`lowkey`]) and AG-UI 1.0's `RunAgentInput` ([`agui`]). How a turn's output is *encoded* for each is
//! in `crate::wire`.

pub mod agui;
mod attachment;
mod client_context;
mod client_tool;
mod ending;
mod health;
mod interrupt;
mod json_kind;
mod limits;
mod log_id;
pub mod lowkey;
mod message;
mod resume;
mod run_request;

pub use attachment::{Attachment, SecretUrl};
pub use client_context::{ContextEntry, MAX_CLIENT_CONTEXT_BYTES};
pub use client_tool::{
    ClientTool, ClientToolResult, MAX_CLIENT_TOOL_DESCRIPTION_BYTES, MAX_CLIENT_TOOL_NAME_LEN,
    MAX_CLIENT_TOOL_PARAMETERS_BYTES, MAX_CLIENT_TOOL_RESULT_BYTES, MAX_CLIENT_TOOLS,
};
pub use ending::Ending;
pub use health::{HealthBody, HealthStatus};
pub use interrupt::{ChoiceOption, Interrupt, InterruptError, ReviewItem};
pub use limits::StreamLimits;
pub use log_id::{LogId, MAX_LOGGED_ID_BYTES};
pub use message::{Message, Role};
pub use resume::{Decision, EditedAction, Resume};
pub use run_request::{
    MAX_ID_LEN, PROTOCOL_VERSION, RunRequest, is_validation_thread, validate_id,
};
