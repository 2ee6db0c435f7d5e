//! Ready-made agents: [`EchoAgent`] and the deterministic [`DemoAgent`] used for demos and
//! conformance checks.

mod demo;
mod echo;

pub use demo::DemoAgent;
pub use echo::EchoAgent;
