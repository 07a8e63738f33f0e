//! What one client may cost a CM (issue 16, item 8): the per-identity budget of admin writes.
//!
//! Every admin write becomes a Raft entry every CM stores and applies, so a script in a loop
//! (or a stolen admin certificate) could fill the log and starve negotiation. HTCondor has no
//! such budget (its admin commands are few and slow); Aerie's are cheap to send, so each
//! identity gets a token bucket ([`aerie_security::rate`]). The collector's budget of ads per
//! identity is next to its other ingest knobs ([`crate::collector::service`]).
use aerie_security::rate::Limiter;
use std::sync::Arc;

/// The knob naming the per-identity admin write rate (writes per second).
pub const ADMIN_WRITE_RATE_KNOB: &str = "AERIE_ADMIN_MAX_WRITE_RATE_PER_IDENTITY";

/// Default of [`ADMIN_WRITE_RATE_KNOB`]: far above what a person or a script of `cmctl`
/// commands sends, far below what would flood the log.
pub const DEFAULT_ADMIN_WRITE_RATE: f64 = 50.0;

/// How many writes an identity may send at once before the rate applies.
pub const ADMIN_WRITE_BURST: f64 = 100.0;

/// The admin write limiter per the configuration (or the environment variable of the knob's
/// name); defaults when unset.
pub fn admin_write_limiter(c: Option<&aerie_config::Config>) -> Result<Arc<Limiter>, String> {
    let rate = crate::knob::Knobs::new(c)
        .number(
            ADMIN_WRITE_RATE_KNOB,
            Some(ADMIN_WRITE_RATE_KNOB),
            DEFAULT_ADMIN_WRITE_RATE,
            0.001,
            1e6,
        )
        .map_err(|e| e.to_string())?;
    Ok(Arc::new(Limiter::new(
        ADMIN_WRITE_RATE_KNOB,
        "admin writes",
        rate,
        ADMIN_WRITE_BURST.min(rate.max(1.0) * 2.0),
    )))
}
