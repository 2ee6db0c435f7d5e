//! Console's External Agent contract as plain data: the request, the frames' parts, the
//! interrupts, the health body and the limits.

mod attachment;
mod health;
mod interrupt;
mod limits;
mod resume;
mod run_request;

pub use attachment::{Attachment, SecretUrl};
pub use health::{HealthBody, HealthStatus};
pub use interrupt::{ChoiceOption, Interrupt, InterruptError, ReviewItem};
pub use limits::Limits;
pub use resume::{Decision, EditedAction, Resume};
pub use run_request::{
    MAX_ID_LEN, PROTOCOL_VERSION, RunRequest, is_validation_thread, validate_id,
};
