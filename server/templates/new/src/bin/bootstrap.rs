//! The AWS Lambda function (`cargo lambda build --release`, `sam build`): the agent behind a
//! response-streaming function URL, threads in DynamoDB.

// `runway_lambda::run`'s future (init, then the runtime loop answering through the core) nests
// deeper than rustc's default query depth lets it lay out; runway's own `bootstrap` sets the
// same. Compile time only.
#![recursion_limit = "256"]

#[tokio::main]
async fn main() -> Result<(), runway_lambda::Error> {
    runway_lambda::run({{crate}}::MyAgent).await
}
