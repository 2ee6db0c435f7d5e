//! Serves the agent locally, like `runway serve`:
//!
//! ```text
//! cargo run -- serve [--listen 127.0.0.1:8787] [--data-dir ./.runway]
//! cargo run -- check BASE_URL [--header 'Name: value']... [--strict]
//! ```

fn main() -> std::process::ExitCode {
    runway::serve({{crate}}::MyAgent)
}
