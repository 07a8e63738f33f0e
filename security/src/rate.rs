//! What one client may cost: a token bucket per principal (issue 16, item 8).
//!
//! HTCondor bounds a client's cost per connection (`MAX_*_SOCKETS`,
//! `COLLECTOR_MAX_FILE_DESCRIPTORS`, `src/condor_daemon_core.V6/daemon_core.cpp`); Aerie's
//! clients multiplex many requests over one connection and may open many connections, so the
//! budget that matters is per *authenticated identity*: each principal (`exec1@execute`,
//! `alice@admin`) has its own bucket, refilled at `rate` a second up to `burst`. A caller over
//! its budget is refused with `RESOURCE_EXHAUSTED` naming the knob and the caller, and may
//! retry later; other callers are not slowed.
//!
//! Pure: the caller passes the time in ([`Limiter::take`]).
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

/// How many principals are tracked before full buckets are forgotten (a full bucket is the
/// same as a new one, so forgetting it changes nothing).
const PRUNE_ABOVE: usize = 10_000;

struct Bucket {
    tokens: f64,
    last: Instant,
}

/// Token buckets keyed by principal, all with one rate and burst.
pub struct Limiter {
    knob: &'static str,
    unit: &'static str,
    rate: f64,
    burst: f64,
    buckets: Mutex<HashMap<String, Bucket>>,
}

/// A refusal: which limit, whom.
#[derive(Debug, Clone, PartialEq)]
pub struct Exhausted {
    /// The knob that sets the limit.
    pub knob: &'static str,
    /// What is counted ("ads", "writes").
    pub unit: &'static str,
    /// The limit, per second.
    pub rate: f64,
    /// Whom it was applied to.
    pub who: String,
}

impl std::fmt::Display for Exhausted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} is over its limit of {} {} per second ({}); try again later",
            self.who, self.rate, self.unit, self.knob
        )
    }
}

impl Exhausted {
    /// The refusal as a gRPC status (`RESOURCE_EXHAUSTED`).
    pub fn status(&self) -> tonic::Status {
        tonic::Status::resource_exhausted(self.to_string())
    }
}

impl Limiter {
    /// Buckets of `rate` `unit`s a second, holding up to `burst` (at least one), set by
    /// `knob`.
    pub fn new(knob: &'static str, unit: &'static str, rate: f64, burst: f64) -> Limiter {
        Limiter {
            knob,
            unit,
            rate,
            burst: burst.max(1.0),
            buckets: Mutex::new(HashMap::new()),
        }
    }

    /// The limit, per second.
    pub fn rate(&self) -> f64 {
        self.rate
    }

    /// Takes one token from `who`'s bucket at `now`, or says which limit it is over.
    pub fn take(&self, who: &str, now: Instant) -> Result<(), Exhausted> {
        let mut b = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        if b.len() > PRUNE_ABOVE {
            let (rate, burst) = (self.rate, self.burst);
            b.retain(|_, k| {
                k.tokens + now.saturating_duration_since(k.last).as_secs_f64() * rate < burst
            });
        }
        let k = b.entry(who.to_string()).or_insert(Bucket {
            tokens: self.burst,
            last: now,
        });
        let dt = now.saturating_duration_since(k.last).as_secs_f64();
        k.last = k.last.max(now);
        k.tokens = (k.tokens + dt * self.rate).min(self.burst);
        if k.tokens >= 1.0 {
            k.tokens -= 1.0;
            Ok(())
        } else {
            Err(Exhausted {
                knob: self.knob,
                unit: self.unit,
                rate: self.rate,
                who: who.to_string(),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn each_principal_has_its_own_bucket_refilled_at_the_rate() {
        let l = Limiter::new("AERIE_TEST_RATE", "writes", 2.0, 3.0);
        let t0 = Instant::now();
        for _ in 0..3 {
            assert!(l.take("alice@admin", t0).is_ok());
        }
        let e = l.take("alice@admin", t0).unwrap_err();
        assert_eq!(e.who, "alice@admin");
        let msg = e.status().message().to_string();
        assert!(
            msg.contains("AERIE_TEST_RATE") && msg.contains("alice@admin"),
            "{msg}"
        );
        assert_eq!(e.status().code(), tonic::Code::ResourceExhausted);
        // Bob is not slowed by Alice.
        assert!(l.take("bob@admin", t0).is_ok());
        // Half a second later one token (2 a second) is back, and only one.
        let t1 = t0 + Duration::from_millis(500);
        assert!(l.take("alice@admin", t1).is_ok());
        assert!(l.take("alice@admin", t1).is_err());
        // Never more than the burst, however long the pause.
        let t2 = t1 + Duration::from_secs(3600);
        for _ in 0..3 {
            assert!(l.take("alice@admin", t2).is_ok());
        }
        assert!(l.take("alice@admin", t2).is_err());
    }
}
