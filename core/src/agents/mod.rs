//! Ready-made agents: [`EchoAgent`], the deterministic [`DemoAgent`] used for demos and
//! conformance checks, [`HttpProbeAgent`] that checks a runtime's HTTP client, and
//! [`BuiltinAgent`] to pick one by name.

mod builtin;
mod demo;
mod echo;
mod http_probe;
mod model;

pub use builtin::BuiltinAgent;
pub use demo::DemoAgent;
pub use echo::EchoAgent;
pub use http_probe::HttpProbeAgent;
pub use model::*;
