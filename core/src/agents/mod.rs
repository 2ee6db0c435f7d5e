//! Ready-made agents: [`EchoAgent`], the deterministic [`DemoAgent`] used for demos and
//! conformance checks, and [`BuiltinAgent`] to pick one by name.

mod builtin;
mod demo;
mod echo;

pub use builtin::BuiltinAgent;
pub use demo::DemoAgent;
pub use echo::EchoAgent;
