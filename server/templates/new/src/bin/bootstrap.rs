//! The AWS Lambda function (`cargo lambda build --release`, `sam build`): the agent behind a
//! response-streaming function URL, threads in DynamoDB.

#[tokio::main]
async fn main() -> Result<(), runway_lambda::Error> {
    runway_lambda::run({{crate}}::MyAgent).await
}
