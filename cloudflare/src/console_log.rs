//! A small `tracing` subscriber writing one line per event to the Workers console
//! (`wrangler dev` prints it; `wrangler tail` and Workers Logs collect it in production).
//!
//! Each line carries the event's fields and those of the spans it happened in (the engine's
//! `turn` span has `runId` and `threadId`). The core never logs credentials, request bodies or
//! attachment URLs, and neither does this adapter.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use tracing::field::{Field, Visit};
use tracing::level_filters::LevelFilter;
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};

#[derive(Default)]
struct Spans {
    fields: HashMap<u64, (String, usize)>,
    stack: Vec<u64>,
}

/// The console subscriber.
pub struct ConsoleLog {
    max: LevelFilter,
    next_id: AtomicU64,
    spans: Mutex<Spans>,
}

impl ConsoleLog {
    /// Installs the subscriber process-wide (once per isolate) with the level named by
    /// `RUNWAY_LOG` (`error`, `warn`, `info`, `debug`, `trace`; default `info`).
    pub fn install(level: Option<&str>) {
        let max = match level.map(|l| l.trim().to_ascii_lowercase()).as_deref() {
            Some("error") => LevelFilter::ERROR,
            Some("warn") => LevelFilter::WARN,
            Some("debug") => LevelFilter::DEBUG,
            Some("trace") => LevelFilter::TRACE,
            Some("off") => LevelFilter::OFF,
            _ => LevelFilter::INFO,
        };
        let _ = tracing::subscriber::set_global_default(Self {
            max,
            next_id: AtomicU64::new(1),
            spans: Mutex::new(Spans::default()),
        });
    }
}

struct Line(String);

impl Visit for Line {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            let _ = write!(self.0, " {value}");
        } else {
            let _ = write!(self.0, " {}={value}", field.name());
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.0, " {value:?}");
        } else {
            let _ = write!(self.0, " {}={value:?}", field.name());
        }
    }
}

impl Subscriber for ConsoleLog {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        *metadata.level() <= self.max
    }

    fn max_level_hint(&self) -> Option<LevelFilter> {
        Some(self.max)
    }

    fn new_span(&self, span: &Attributes<'_>) -> Id {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut line = Line(String::new());
        span.record(&mut line);
        if let Ok(mut s) = self.spans.try_lock() {
            s.fields.insert(id, (line.0, 1));
        }
        Id::from_u64(id)
    }

    fn record(&self, span: &Id, values: &Record<'_>) {
        let mut line = Line(String::new());
        values.record(&mut line);
        if let Ok(mut s) = self.spans.try_lock()
            && let Some((fields, _)) = s.fields.get_mut(&span.into_u64())
        {
            fields.push_str(&line.0);
        }
    }

    fn record_follows_from(&self, _span: &Id, _follows: &Id) {}

    fn event(&self, event: &Event<'_>) {
        let meta = event.metadata();
        let mut line = Line(format!("{} {}:", meta.level(), meta.target()));
        event.record(&mut line);
        if let Ok(s) = self.spans.try_lock() {
            for id in &s.stack {
                if let Some((fields, _)) = s.fields.get(id) {
                    line.0.push_str(fields);
                }
            }
        }
        let text = wasm_bindgen::JsValue::from_str(&line.0);
        match *meta.level() {
            Level::ERROR => web_sys::console::error_1(&text),
            Level::WARN => web_sys::console::warn_1(&text),
            _ => web_sys::console::log_1(&text),
        }
    }

    fn enter(&self, span: &Id) {
        if let Ok(mut s) = self.spans.try_lock() {
            s.stack.push(span.into_u64());
        }
    }

    fn exit(&self, span: &Id) {
        if let Ok(mut s) = self.spans.try_lock()
            && let Some(pos) = s.stack.iter().rposition(|i| *i == span.into_u64())
        {
            s.stack.remove(pos);
        }
    }

    fn clone_span(&self, id: &Id) -> Id {
        if let Ok(mut s) = self.spans.try_lock()
            && let Some((_, refs)) = s.fields.get_mut(&id.into_u64())
        {
            *refs += 1;
        }
        id.clone()
    }

    fn try_close(&self, id: Id) -> bool {
        let Ok(mut s) = self.spans.try_lock() else {
            return false;
        };
        let key = id.into_u64();
        let closed = match s.fields.get_mut(&key) {
            Some((_, refs)) if *refs > 1 => {
                *refs -= 1;
                false
            }
            Some(_) => true,
            None => false,
        };
        if closed {
            s.fields.remove(&key);
        }
        closed
    }
}
