//! One Workers Analytics Engine data point per turn (binding `RUNWAY_ANALYTICS`), queryable
//! with SQL: index `worker`; blobs `worker`, `outcome`, `workspace`, `protocol`; doubles
//! `turns` (1), `first_frame_ms` (-1: none), `duration_ms`, `input_tokens`, `output_tokens`,
//! `reasoning_tokens`, `cost_usd`, `model_calls`, `tool_calls`, `tool_failures`.

use runway_core::meter::{TurnMetrics, TurnReport};
use worker::{AnalyticsEngineDataPointBuilder, AnalyticsEngineDataset};

/// [`TurnMetrics`] writing to a Workers Analytics Engine dataset (and the log line too).
pub(crate) struct AnalyticsMetrics {
    dataset: AnalyticsEngineDataset,
}

impl AnalyticsMetrics {
    pub(crate) fn new(dataset: AnalyticsEngineDataset) -> Self {
        Self { dataset }
    }
}

impl TurnMetrics for AnalyticsMetrics {
    fn turn_ended(&self, r: &TurnReport) {
        r.log();
        let u = &r.usage;
        let point = AnalyticsEngineDataPointBuilder::new()
            .indexes([r.worker.as_str()])
            .blobs([
                r.worker.clone(),
                r.outcome.to_owned(),
                r.workspace.clone(),
                r.protocol.to_owned(),
            ])
            .doubles([
                1.0,
                r.first_frame_ms.map_or(-1.0, |ms| ms as f64),
                r.duration_ms as f64,
                u.input_tokens as f64,
                u.output_tokens as f64,
                u.reasoning_tokens as f64,
                r.cost_usd(),
                u.model_calls as f64,
                u.tool_calls as f64,
                u.tool_failures as f64,
            ])
            .build();
        if let Err(e) = self.dataset.write_data_point(&point) {
            tracing::warn!(error = %e, "could not write the Analytics Engine data point");
        }
    }
}
