//! [`ModelAgent`], split by job: what it holds and how it is built (`agent`), the turn loop
//! (`turn_loop`), approvals (`approvals`), running tool calls (`tool_calls`), model calls with
//! their retries (`model_call`, failures in `call_error`) and the streamed answer
//! (`answer_stream`).

mod agent;
mod answer_stream;
mod approvals;
mod call_error;
#[cfg(test)]
mod client_context_tests;
#[cfg(test)]
mod client_tools_tests;
mod model_call;
mod tool_calls;
mod turn_loop;

pub use agent::ModelAgent;
