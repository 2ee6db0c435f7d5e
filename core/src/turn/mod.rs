//! One turn, from the first frame to the committed recording: the engine ([`engine`]), the
//! back-pressure that keeps memory following what clients read ([`flow`]), the streamed body an
//! adapter returns ([`body`]) and what ends it if the process dies ([`abort_tail`]).

pub(crate) mod abort_tail;
pub(crate) mod body;
pub(crate) mod engine;
pub(crate) mod flow;
