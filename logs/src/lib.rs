//! How Aerie's daemons log, for operators and their log shippers.
//!
//! * `AERIE_LOG` selects what is logged (tracing's env-filter syntax), with a default per
//!   daemon;
//! * `--log-format text|json`: text for people (colour only when stderr is a terminal, so log
//!   files hold no escape codes), JSON lines for log shippers;
//! * warnings and errors that repeat at a high rate are rate-limited per call site: the first
//!   is logged, then at most one per [`REPEAT_INTERVAL`], saying how many were left out. A CM
//!   with one peer down would otherwise log an error for every heartbeat and every read
//!   (openraft logs each failed replication and each unconfirmed read).
#![warn(missing_docs)]

use std::collections::HashMap;
use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use tracing::{Level, Metadata, Subscriber};
use tracing_subscriber::layer::{Context, Filter, SubscriberExt};
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

/// How often a repeating warning or error from one call site is let through.
pub const REPEAT_INTERVAL: Duration = Duration::from_secs(60);

/// The log line format.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line.
    Json,
}

/// Sets up logging to stderr for a daemon whose own crate is `crate_name` (logged at `info`,
/// everything else at `warn`, unless `AERIE_LOG` says otherwise). Does nothing if logging is
/// set up already (tests).
pub fn init(crate_name: &str, format: LogFormat) {
    let filter = EnvFilter::try_from_env("AERIE_LOG")
        .unwrap_or_else(|_| EnvFilter::new(format!("warn,{crate_name}=info")));
    let repeats = RepeatLimit::new(REPEAT_INTERVAL);
    // A note line between JSON objects would break a shipper's parser.
    repeats.note_held.store(
        format == LogFormat::Text,
        std::sync::atomic::Ordering::Relaxed,
    );
    let registry = tracing_subscriber::registry().with(filter);
    let _ = match format {
        LogFormat::Text => registry
            .with(
                tracing_subscriber::fmt::layer()
                    .with_writer(std::io::stderr)
                    .with_ansi(std::io::stderr().is_terminal())
                    .with_filter(repeats),
            )
            .try_init(),
        LogFormat::Json => registry
            .with(
                tracing_subscriber::fmt::layer()
                    .json()
                    .with_writer(std::io::stderr)
                    .with_filter(repeats),
            )
            .try_init(),
    };
}

/// Lets a warning or error from one call site through at most once per interval (info and
/// below always pass), and notes how many were held back.
pub struct RepeatLimit {
    every: Duration,
    seen: Mutex<HashMap<tracing::callsite::Identifier, (Instant, u64)>>,
    /// Whether to say, before an event let through again, how many were held back.
    note_held: std::sync::atomic::AtomicBool,
}

impl RepeatLimit {
    /// A limit of one event per call site per `every`.
    pub fn new(every: Duration) -> Self {
        RepeatLimit {
            every,
            seen: Mutex::new(HashMap::new()),
            note_held: std::sync::atomic::AtomicBool::new(true),
        }
    }

    /// Whether an event of `meta` at `now` passes; when it does after others were held back,
    /// how many were.
    fn admit(&self, meta: &Metadata<'_>, now: Instant) -> Option<u64> {
        if *meta.level() > Level::WARN || !meta.is_event() {
            return Some(0);
        }
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        match seen.get_mut(&meta.callsite()) {
            Some((last, held)) if now.duration_since(*last) < self.every => {
                *held += 1;
                None
            }
            Some((last, held)) => {
                let n = *held;
                *last = now;
                *held = 0;
                Some(n)
            }
            None => {
                seen.insert(meta.callsite(), (now, 0));
                Some(0)
            }
        }
    }
}

impl<S: Subscriber> Filter<S> for RepeatLimit {
    fn enabled(&self, _meta: &Metadata<'_>, _cx: &Context<'_, S>) -> bool {
        // Decided per event, in event_enabled: callsite interest is cached.
        true
    }

    fn event_enabled(&self, event: &tracing::Event<'_>, _cx: &Context<'_, S>) -> bool {
        match self.admit(event.metadata(), Instant::now()) {
            None => false,
            Some(0) => true,
            Some(held) => {
                if !self.note_held.load(std::sync::atomic::Ordering::Relaxed) {
                    return true;
                }
                // The line itself cannot be edited here; say it on a line of its own.
                eprintln!(
                    "({held} more like the next one were left out in the last {} s)",
                    self.every.as_secs()
                );
                true
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repeating_warning_passes_once_per_interval() {
        let limit = RepeatLimit::new(Duration::from_secs(60));
        let meta = tracing::Metadata::new(
            "x",
            "t",
            Level::ERROR,
            None,
            None,
            None,
            tracing::field::FieldSet::new(&[], tracing::callsite::Identifier(&CALLSITE)),
            tracing::metadata::Kind::EVENT,
        );
        let t0 = Instant::now();
        assert_eq!(limit.admit(&meta, t0), Some(0));
        assert_eq!(limit.admit(&meta, t0 + Duration::from_secs(1)), None);
        assert_eq!(limit.admit(&meta, t0 + Duration::from_secs(2)), None);
        assert_eq!(limit.admit(&meta, t0 + Duration::from_secs(61)), Some(2));
        assert_eq!(limit.admit(&meta, t0 + Duration::from_secs(62)), None);
    }

    struct Site;
    static CALLSITE: Site = Site;
    impl tracing::callsite::Callsite for Site {
        fn set_interest(&self, _: tracing::subscriber::Interest) {}
        fn metadata(&self) -> &Metadata<'_> {
            unreachable!("not registered")
        }
    }
}
