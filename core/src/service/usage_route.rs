//! `GET …/usage?from=YYYY-MM-DD&to=YYYY-MM-DD[&cursor=…]` on [`Runway`]: the usage rows of
//! those days (workspace × worker × UTC day), at most `MAX_USAGE_ROWS` an answer, behind the
//! same header set as `/runs`.

use bytes::Bytes;

use crate::agent::Agent;
use crate::meter::usage_report::{MAX_USAGE_ROWS, usage_query, usage_report};
use crate::platform::runtime::Runtime;
use crate::service::{Runway, json_error, json_response, method_not_allowed};
use crate::store::TurnStore;

impl<A: Agent, S: TurnStore, R: Runtime> Runway<A, S, R> {
    /// Answers `GET …/usage` once auth has passed.
    pub(crate) async fn usage_route(&self, req: &http::Request<Bytes>) -> http::Response<Bytes> {
        if req.method() != http::Method::GET {
            return method_not_allowed("GET");
        }
        let now = self.engine.rt.now_ms();
        let query = match usage_query(req.uri().query(), now) {
            Ok(query) => query,
            Err(message) => return json_error(400, &message),
        };
        let report = usage_report(
            &self.engine.store,
            &self.engine.policy,
            &query,
            now,
            MAX_USAGE_ROWS,
        );
        match report.await {
            Ok(report) => json_response(200, &report),
            Err(e) => {
                self.engine.note_store_error();
                tracing::error!(code = "STORE_UNAVAILABLE", error = %e, "could not read the usage");
                json_error(503, "storage unavailable")
            }
        }
    }
}
