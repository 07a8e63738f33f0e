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
}

impl Default for Knobs {
    fn default() -> Self {
        Knobs {
            interval: Duration::from_secs(60),
            cycle_delay: Duration::from_secs(20),
            ap_timeout: Duration::from_secs(5),
        }
    }
}

fn seconds(knob: &str, text: &str) -> Result<Duration, String> {
    let v: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("{knob}: {:?} is not a number of seconds", text.trim()))?;
    if !v.is_finite() || v < 0.0 {
        return Err(format!("{knob}: {v} must be a number of seconds >= 0"));
    }
    Ok(Duration::from_secs_f64(v))
}

impl Knobs {
    /// Reads the knobs: `config` answers "what is knob X" from the configuration file, `env`
    /// from the environment (`AERIE_NEGOTIATOR_INTERVAL`, `AERIE_NEGOTIATOR_CYCLE_DELAY`,
    /// `AERIE_NEGOTIATOR_AP_TIMEOUT`), which wins.
    pub fn from_lookup(
        config: impl Fn(&str) -> Option<String>,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Knobs, String> {
        let mut k = Knobs::default();
        let pick = |cfg_name: &str, env_name: &str| -> Option<(String, String)> {
            env(env_name)
                .map(|v| (env_name.to_string(), v))
                .or_else(|| config(cfg_name).map(|v| (cfg_name.to_string(), v)))
        };
        if let Some((n, v)) = pick("NEGOTIATOR_INTERVAL", "AERIE_NEGOTIATOR_INTERVAL") {
            k.interval = seconds(&n, &v)?;
            if k.interval.is_zero() {
                return Err(format!("{n}: must be more than 0 seconds"));
            }
        }
        if let Some((n, v)) = pick("NEGOTIATOR_CYCLE_DELAY", "AERIE_NEGOTIATOR_CYCLE_DELAY") {
            k.cycle_delay = seconds(&n, &v)?;
        }
        if let Some((n, v)) = pick("AERIE_NEGOTIATOR_AP_TIMEOUT", "AERIE_NEGOTIATOR_AP_TIMEOUT") {
            k.ap_timeout = seconds(&n, &v)?;
            if k.ap_timeout.is_zero() {
                return Err(format!("{n}: must be more than 0 seconds"));
            }
        }
        // A delay longer than the interval would silently stretch the interval.
        k.cycle_delay = k.cycle_delay.min(k.interval);
        Ok(k)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_config_and_env_override() {
        let none = |_: &str| None;
        assert_eq!(Knobs::from_lookup(none, none).unwrap(), Knobs::default());
        let cfg = |k: &str| match k {
            "NEGOTIATOR_INTERVAL" => Some("300".to_string()),
            "NEGOTIATOR_CYCLE_DELAY" => Some("10".to_string()),
            _ => None,
        };
        let k = Knobs::from_lookup(cfg, none).unwrap();
        assert_eq!(k.interval, Duration::from_secs(300));
        assert_eq!(k.cycle_delay, Duration::from_secs(10));
        // The environment wins, and the delay never exceeds the interval.
        let env = |k: &str| (k == "AERIE_NEGOTIATOR_INTERVAL").then(|| "1".to_string());
        let k = Knobs::from_lookup(cfg, env).unwrap();
        assert_eq!(k.interval, Duration::from_secs(1));
        assert_eq!(k.cycle_delay, Duration::from_secs(1));
        let bad = |k: &str| (k == "AERIE_NEGOTIATOR_INTERVAL").then(|| "soon".to_string());
        let e = Knobs::from_lookup(none, bad).unwrap_err();
        assert!(
            e.contains("AERIE_NEGOTIATOR_INTERVAL") && e.contains("soon"),
            "{e}"
        );
        let zero = |k: &str| (k == "NEGOTIATOR_INTERVAL").then(|| "0".to_string());
        assert!(Knobs::from_lookup(zero, none).is_err());
    }
}
