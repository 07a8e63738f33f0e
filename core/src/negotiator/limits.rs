//! Concurrency limits: parsing `ConcurrencyLimits` strings and counting use.
//!
//! Names are case-insensitive, so everything is kept lower-case. A list is separated by
//! commas and/or spaces; `NAME:N` uses N units (default 1). A name is letters, digits and
//! `_` with at most one `.`, and may not start with a digit.
use super::config::NegotiatorConfig;
use std::collections::BTreeMap;

/// Is `name` a valid concurrency limit name?
pub fn valid_limit_name(name: &str) -> bool {
    let mut chars = name.chars();
    match chars.next() {
        Some(c) if c.is_ascii_alphabetic() || c == '_' => {}
        _ => return false,
    }
    let mut dots = 0;
    for c in name.chars() {
        if c == '.' {
            dots += 1;
        } else if !(c.is_ascii_alphanumeric() || c == '_') {
            return false;
        }
    }
    dots <= 1
}

/// Parses a limits string into lower-case `(name, units)` pairs; `Err` names the bad entry.
pub fn parse_limits(s: &str) -> Result<Vec<(String, f64)>, String> {
    let mut out: Vec<(String, f64)> = Vec::new();
    for item in s
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|x| !x.is_empty())
    {
        let (name, units) = match item.split_once(':') {
            Some((n, u)) => {
                let u: f64 = u
                    .trim()
                    .parse()
                    .ok()
                    .filter(|v: &f64| v.is_finite() && *v >= 0.0)
                    .ok_or_else(|| format!("bad units in concurrency limit {item:?}"))?;
                (n, u)
            }
            None => (item, 1.0),
        };
        if !valid_limit_name(name) {
            return Err(format!("invalid concurrency limit name {name:?}"));
        }
        let lower = name.to_ascii_lowercase();
        match out.iter_mut().find(|(n, _)| *n == lower) {
            Some(e) => e.1 += units,
            None => out.push((lower, units)),
        }
    }
    Ok(out)
}

/// Units in use per limit name (lower-case), counted from running jobs and this cycle's matches.
#[derive(Clone, Debug, Default)]
pub struct LimitUsage {
    /// Units in use per limit name.
    pub in_use: BTreeMap<String, f64>,
}

impl LimitUsage {
    /// Counts `limits` (name, units) as in use.
    pub fn add(&mut self, limits: &[(String, f64)]) {
        for (n, u) in limits {
            *self.in_use.entry(n.clone()).or_insert(0.0) += u;
        }
    }
    /// Releases `limits` (never below zero).
    pub fn remove(&mut self, limits: &[(String, f64)]) {
        for (n, u) in limits {
            if let Some(v) = self.in_use.get_mut(n) {
                *v = (*v - u).max(0.0);
            }
        }
    }
    /// The first limit that would be exceeded by adding `limits`, if any (HTCondor rejects
    /// when `in_use + units > capacity`).
    pub fn rejects(&self, limits: &[(String, f64)], cfg: &NegotiatorConfig) -> Option<String> {
        for (n, u) in limits {
            let cur = self.in_use.get(n).copied().unwrap_or(0.0);
            if cur + u > cfg.limit_capacity(n) {
                return Some(n.clone());
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert!(valid_limit_name("XSW"));
        assert!(valid_limit_name("LARGE.SWLICENSE"));
        assert!(valid_limit_name("_x1"));
        assert!(!valid_limit_name("1ABC"));
        assert!(!valid_limit_name("A.B.C"));
        assert!(!valid_limit_name("a-b"));
        assert!(!valid_limit_name(""));
    }

    #[test]
    fn parse() {
        assert_eq!(
            parse_limits("XSW, DATABASE, FILESERVER:3").unwrap(),
            vec![
                ("xsw".into(), 1.0),
                ("database".into(), 1.0),
                ("fileserver".into(), 3.0)
            ]
        );
        assert_eq!(
            parse_limits("SWX:2 NETWORK_A").unwrap(),
            vec![("swx".into(), 2.0), ("network_a".into(), 1.0)]
        );
        assert!(parse_limits("1ABC").unwrap_err().contains("1ABC"));
        assert!(parse_limits("A.B.C").is_err());
    }
}
