//! Console's External Agent contract: `POST {base_url}/runs` answered with an SSE stream of
//! AG-UI-style frames.
//!
//! Routing, auth and the engine are shared with Lowkey's ([`crate::wire::lowkey`]); what is
//! Console's own lives here: the encoding of a turn ([`Console`]: the frame writer
//! [`FrameWriter`] that makes any agent's output a stream Console accepts) and the SSE framing
//! ([`sse`]). The route is [`Runway::console_turn`](crate::adapter::Runway::console_turn); the
//! request and frame types an agent sees stay in [`crate::protocol`].

mod client_view;
mod emit;
mod final_frames;
mod frame;
mod message_id;
mod messages;
pub mod sse;
mod state;
mod writer;

pub use state::STATE_KEYS;
pub use writer::{Console, FrameWriter, TURN_STEP};

#[cfg(test)]
mod agui_tests;
#[cfg(test)]
mod tests;
