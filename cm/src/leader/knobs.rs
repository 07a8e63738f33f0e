//! Timing knobs of the leader-run negotiation, from the daemon's configuration file with an
//! environment override for tests and demos.
use std::time::Duration;

/// When cycles run and how long the leader waits for access points.
#[derive(Clone, Debug, PartialEq)]
pub struct Knobs {
    /// `NEGOTIATOR_INTERVAL` (60 s): time from the start of one cycle to the start of the next.
    pub interval: Duration,
    /// `NEGOTIATOR_CYCLE_DELAY` (20 s): the least time between the end of one cycle and the
    /// start of the next, also for `cycle-now` (never more than the interval).
    pub cycle_delay: Duration,
    /// `AERIE_NEGOTIATOR_AP_TIMEOUT` (5 s): deadline of each GetRequests / DeliverGrants call.
    pub ap_timeout: Duration,
    /// `NEGOTIATOR_MAX_TIME_PER_CYCLE` (1200 s, as HTCondor): a matchmaking that takes longer
    /// is abandoned and nothing from it is delivered.
    pub max_cycle_time: Duration,
}

impl Default for Knobs {
    fn default() -> Self {
        Knobs {
            interval: Duration::from_secs(60),
            cycle_delay: Duration::from_secs(20),
            ap_timeout: Duration::from_secs(5),
            max_cycle_time: Duration::from_secs(1200),
        }
    }
}

impl Knobs {
    /// Reads the knobs from the configuration file, with the environment
    /// (`AERIE_NEGOTIATOR_INTERVAL`, `AERIE_NEGOTIATOR_CYCLE_DELAY`,
    /// `AERIE_NEGOTIATOR_AP_TIMEOUT`) winning; each bounded (a day at most, so that adding it
    /// to the clock cannot overflow).
    pub fn read(knobs: &crate::knob::Knobs) -> Result<Knobs, crate::knob::KnobError> {
        let d = Knobs::default();
        let (s, ms) = (Duration::from_secs(1), Duration::from_millis(1));
        let day = Duration::from_secs(86400);
        let interval = knobs.duration(
            "NEGOTIATOR_INTERVAL",
            Some("AERIE_NEGOTIATOR_INTERVAL"),
            s,
            d.interval,
            ms,
            day,
        )?;
        let cycle_delay = knobs.duration(
            "NEGOTIATOR_CYCLE_DELAY",
            Some("AERIE_NEGOTIATOR_CYCLE_DELAY"),
            s,
            d.cycle_delay,
            Duration::ZERO,
            day,
        )?;
        let ap_timeout = knobs.duration(
            "AERIE_NEGOTIATOR_AP_TIMEOUT",
            Some("AERIE_NEGOTIATOR_AP_TIMEOUT"),
            s,
            d.ap_timeout,
            ms,
            Duration::from_secs(3600),
        )?;
        let max_cycle_time = knobs.duration(
            "NEGOTIATOR_MAX_TIME_PER_CYCLE",
            Some("AERIE_NEGOTIATOR_MAX_TIME_PER_CYCLE"),
            s,
            d.max_cycle_time,
            s,
            day,
        )?;
        Ok(Knobs {
            interval,
            max_cycle_time,
            // A delay longer than the interval would silently stretch the interval.
            cycle_delay: cycle_delay.min(interval),
            ap_timeout,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_config_and_env_override() {
        use crate::knob::Knobs as Reader;
        let none = Reader::with_env(None, |_| None);
        assert_eq!(Knobs::read(&none).unwrap(), Knobs::default());
        let mut cfg = aerie_config::Config::empty(aerie_config::Context::default());
        cfg.set("NEGOTIATOR_INTERVAL", "300").unwrap();
        cfg.set("NEGOTIATOR_CYCLE_DELAY", "10").unwrap();
        let k = Knobs::read(&Reader::with_env(Some(&cfg), |_| None)).unwrap();
        assert_eq!(k.interval, Duration::from_secs(300));
        assert_eq!(k.cycle_delay, Duration::from_secs(10));
        // The environment wins, and the delay never exceeds the interval.
        let env = |k: &str| (k == "AERIE_NEGOTIATOR_INTERVAL").then(|| "1".to_string());
        let k = Knobs::read(&Reader::with_env(Some(&cfg), env)).unwrap();
        assert_eq!(k.interval, Duration::from_secs(1));
        assert_eq!(k.cycle_delay, Duration::from_secs(1));
        let bad = |k: &str| (k == "AERIE_NEGOTIATOR_INTERVAL").then(|| "soon".to_string());
        let e = Knobs::read(&Reader::with_env(None, bad)).unwrap_err();
        assert!(
            e.to_string().contains("AERIE_NEGOTIATOR_INTERVAL") && e.to_string().contains("soon"),
            "{e}"
        );
        let zero = |k: &str| (k == "AERIE_NEGOTIATOR_INTERVAL").then(|| "0".to_string());
        assert!(Knobs::read(&Reader::with_env(None, zero)).is_err());
        // Issue 13.13: a value that would overflow the clock is refused, not a panic.
        let huge = |k: &str| (k == "AERIE_NEGOTIATOR_INTERVAL").then(|| "1e30".to_string());
        assert!(Knobs::read(&Reader::with_env(None, huge)).is_err());
    }
}
