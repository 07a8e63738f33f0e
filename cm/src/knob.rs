//! Reading the daemon's own knobs (timings, sizes, rates): one place that finds a knob in the
//! environment or the configuration file, parses it and checks it against the range the code
//! can live with, and names the knob and where it was set when it cannot.
//!
//! Why ranges: a knob is used as a `Duration`, added to an `Instant` or multiplied, and a value
//! like `NEGOTIATOR_INTERVAL = 1e30` would otherwise panic the daemon (or wrap) far from the
//! line that set it. Every knob has a bound well beyond any sane setting, and a value outside
//! it is refused at start-up with "NEGOTIATOR_INTERVAL = 1e30 (/etc/aerie/cm.conf, line 12):
//! must be at most 1 day".
use aerie_config::{Config, Origin};
use std::time::Duration;

/// A knob the daemon cannot use, with where it was set.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{knob} = {value:?} ({origin}): {why}")]
pub struct KnobError {
    /// The knob (or environment variable) name.
    pub knob: String,
    /// Its text as given.
    pub value: String,
    /// Where it was set: `file, line N` or `environment variable X`.
    pub origin: String,
    /// What is wrong.
    pub why: String,
}

/// Looks an environment variable up.
type EnvLookup<'a> = Box<dyn Fn(&str) -> Option<String> + 'a>;

/// Finds knobs in the environment (which wins, for tests and demos) and the configuration.
pub struct Knobs<'a> {
    cfg: Option<&'a Config>,
    env: EnvLookup<'a>,
}

/// A knob's text and where it came from.
struct Raw {
    knob: String,
    value: String,
    source: String,
}

impl Raw {
    fn error(&self, why: impl Into<String>) -> KnobError {
        KnobError {
            knob: self.knob.clone(),
            value: self.value.clone(),
            origin: self.source.clone(),
            why: why.into(),
        }
    }
}

impl<'a> Knobs<'a> {
    /// Knobs of `cfg` (if any), overridden by this process's environment.
    pub fn new(cfg: Option<&'a Config>) -> Self {
        Knobs::with_env(cfg, |k| std::env::var(k).ok())
    }

    /// Knobs of `cfg` overridden by `env` (tests give their own).
    pub fn with_env(cfg: Option<&'a Config>, env: impl Fn(&str) -> Option<String> + 'a) -> Self {
        Knobs {
            cfg,
            env: Box::new(env),
        }
    }

    /// The text of `knob`: the environment variable `env` if set, else the configuration.
    fn raw(&self, knob: &str, env: Option<&str>) -> Result<Option<Raw>, KnobError> {
        if let Some(var) = env {
            if let Some(v) = (self.env)(var).filter(|v| !v.trim().is_empty()) {
                return Ok(Some(Raw {
                    knob: var.to_string(),
                    value: v,
                    source: format!("environment variable {var}"),
                }));
            }
        }
        let Some(cfg) = self.cfg else {
            return Ok(None);
        };
        let value = cfg.expanded(knob).map_err(|e| KnobError {
            knob: knob.to_string(),
            value: String::new(),
            origin: "configuration".into(),
            why: e.to_string(),
        })?;
        let Some(value) = value.filter(|v| !v.trim().is_empty()) else {
            return Ok(None);
        };
        let source = match cfg.lookup(knob).map(|f| f.origin) {
            Some(Origin::File(l)) => l.to_string(),
            Some(Origin::Environment) => format!("environment variable _CONDOR_{knob}"),
            Some(Origin::Default) => "default".into(),
            _ => "configuration".into(),
        };
        Ok(Some(Raw {
            knob: knob.to_string(),
            value,
            source,
        }))
    }

    /// A duration (`30`, `1.5`, `200ms`, `5m`, `1h`: a bare number is `unit`), `default` when
    /// unset, refused outside `min..=max`.
    pub fn duration(
        &self,
        knob: &str,
        env: Option<&str>,
        unit: Duration,
        default: Duration,
        min: Duration,
        max: Duration,
    ) -> Result<Duration, KnobError> {
        let Some(raw) = self.raw(knob, env)? else {
            return Ok(default);
        };
        let d = parse_duration(&raw.value, unit)
            .ok_or_else(|| raw.error("not a duration (a number, or one with ms, s, m, h or d)"))?;
        in_range(&raw, d, min, max, |d| format_duration(*d))
    }

    /// A whole number, `default` when unset, refused outside `min..=max`.
    pub fn count(
        &self,
        knob: &str,
        env: Option<&str>,
        default: u64,
        min: u64,
        max: u64,
    ) -> Result<u64, KnobError> {
        let Some(raw) = self.raw(knob, env)? else {
            return Ok(default);
        };
        let n: u64 = raw
            .value
            .trim()
            .parse()
            .map_err(|_| raw.error("not a whole number"))?;
        in_range(&raw, n, min, max, |n| n.to_string())
    }

    /// A number, `default` when unset, refused outside `min..=max` (and when not finite).
    pub fn number(
        &self,
        knob: &str,
        env: Option<&str>,
        default: f64,
        min: f64,
        max: f64,
    ) -> Result<f64, KnobError> {
        let Some(raw) = self.raw(knob, env)? else {
            return Ok(default);
        };
        let x: f64 = raw
            .value
            .trim()
            .parse()
            .ok()
            .filter(|x: &f64| x.is_finite())
            .ok_or_else(|| raw.error("not a number"))?;
        in_range(&raw, x, min, max, |x| x.to_string())
    }

    /// A range of two durations `LOW-HIGH` (or one, `LOW`, meaning `LOW-2*LOW`), each within
    /// `min..=max`, HIGH above LOW.
    #[allow(clippy::too_many_arguments)]
    pub fn duration_range(
        &self,
        knob: &str,
        env: Option<&str>,
        unit: Duration,
        default: (Duration, Duration),
        min: Duration,
        max: Duration,
    ) -> Result<(Duration, Duration), KnobError> {
        let Some(raw) = self.raw(knob, env)? else {
            return Ok(default);
        };
        let bad = || raw.error("not a duration or a range LOW-HIGH of durations");
        let (lo, hi) = match raw.value.split_once('-') {
            Some((a, b)) => (
                parse_duration(a, unit).ok_or_else(bad)?,
                parse_duration(b, unit).ok_or_else(bad)?,
            ),
            None => {
                let lo = parse_duration(&raw.value, unit).ok_or_else(bad)?;
                (lo, lo.saturating_mul(2))
            }
        };
        let lo = in_range(&raw, lo, min, max, |d| format_duration(*d))?;
        let hi = in_range(&raw, hi, min, max, |d| format_duration(*d))?;
        if hi <= lo {
            return Err(raw.error("the high end must be above the low end"));
        }
        Ok((lo, hi))
    }
}

fn in_range<T: PartialOrd>(
    raw: &Raw,
    v: T,
    min: T,
    max: T,
    show: impl Fn(&T) -> String,
) -> Result<T, KnobError> {
    if v < min {
        return Err(raw.error(format!("must be at least {}", show(&min))));
    }
    if v > max {
        return Err(raw.error(format!("must be at most {}", show(&max))));
    }
    Ok(v)
}

/// `30`, `1.5`, `200ms`, `5 s`, `2m`, `1h`, `1d`; a bare number counts in `unit`.
pub fn parse_duration(text: &str, unit: Duration) -> Option<Duration> {
    let t = text.trim();
    let units = [
        ("ms", Duration::from_millis(1)),
        ("s", Duration::from_secs(1)),
        ("m", Duration::from_secs(60)),
        ("h", Duration::from_secs(3600)),
        ("d", Duration::from_secs(86400)),
    ];
    let (num, unit) = units
        .iter()
        .find_map(|(suffix, u)| t.strip_suffix(suffix).map(|n| (n.trim_end(), *u)))
        .unwrap_or((t, unit));
    // A constant expression (`15 * 60`) is a number too, as HTCondor's readers take it.
    let x: f64 = match num.parse() {
        Ok(x) => x,
        Err(_) => aerie_config::parse_duration(num)?.as_secs_f64(),
    };
    if !x.is_finite() || x < 0.0 {
        return None;
    }
    // Beyond what a Duration holds is still a duration: the range check refuses it by name.
    Some(Duration::try_from_secs_f64(x * unit.as_secs_f64()).unwrap_or(Duration::MAX))
}

fn format_duration(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s >= 86400.0 && s % 86400.0 == 0.0 {
        format!("{} d", s / 86400.0)
    } else if s >= 1.0 {
        format!("{s} s")
    } else {
        format!("{} ms", d.as_millis())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);
    const MS: Duration = Duration::from_millis(1);
    const DAY: Duration = Duration::from_secs(86400);

    #[test]
    fn durations_parse_with_units_and_are_bounded_with_the_file_and_line_named() {
        let dir = tempfile::TempDir::new().expect("temp dir");
        let path = dir.path().join("cm.conf");
        std::fs::write(
            &path,
            "# timings\nNEGOTIATOR_INTERVAL = 1e30\nFAST = 250ms\n",
        )
        .unwrap();
        let cfg = Config::load(
            &path,
            &aerie_config::LoadOptions::for_subsystem("NEGOTIATOR"),
        )
        .expect("load");
        let k = Knobs::with_env(Some(&cfg), |_| None);
        assert_eq!(k.duration("FAST", None, S, S, MS, DAY), Ok(250 * MS));
        assert_eq!(parse_duration("15 * 60", S), Some(900 * S));
        assert_eq!(k.duration("UNSET", None, S, 7 * S, MS, DAY), Ok(7 * S));
        let e = k
            .duration("NEGOTIATOR_INTERVAL", None, S, S, MS, DAY)
            .unwrap_err();
        assert_eq!(e.knob, "NEGOTIATOR_INTERVAL");
        assert!(e.origin.ends_with("cm.conf, line 2"), "{e}");
        assert!(e.to_string().contains("must be at most 1 d"), "{e}");
        // The environment wins, and is named when it is wrong.
        let k = Knobs::with_env(Some(&cfg), |v| {
            (v == "AERIE_NEGOTIATOR_INTERVAL").then(|| "soon".to_string())
        });
        let e = k
            .duration(
                "NEGOTIATOR_INTERVAL",
                Some("AERIE_NEGOTIATOR_INTERVAL"),
                S,
                S,
                MS,
                DAY,
            )
            .unwrap_err();
        assert_eq!(e.origin, "environment variable AERIE_NEGOTIATOR_INTERVAL");
        assert!(e.why.contains("not a duration"), "{e}");
    }

    #[test]
    fn ranges_counts_and_numbers_refuse_what_would_overflow() {
        let env = |v: &str| match v {
            "R1" => Some("400-800".to_string()),
            "R2" => Some("300".to_string()),
            "R3" => Some("800-400".to_string()),
            "R4" => Some("18446744073709551615".to_string()),
            "N" => Some("inf".to_string()),
            "C" => Some("-3".to_string()),
            _ => None,
        };
        let k = Knobs::with_env(None, env);
        let r = |name| k.duration_range(name, Some(name), MS, (S, 2 * S), MS, 60 * S);
        assert_eq!(r("R1"), Ok((400 * MS, 800 * MS)));
        assert_eq!(r("R2"), Ok((300 * MS, 600 * MS)));
        assert!(r("R3").unwrap_err().why.contains("above the low end"));
        assert!(r("R4").unwrap_err().why.contains("at most"));
        assert!(k.number("N", Some("N"), 1.0, 0.0, 1e6).is_err());
        assert!(k.count("C", Some("C"), 1, 1, 10).is_err());
        assert_eq!(k.count("X", Some("X"), 5, 1, 10), Ok(5));
    }
}
