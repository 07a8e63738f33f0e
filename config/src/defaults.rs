//! The default layer under every configuration: HTCondor 23.9.6's own defaults (its parameter
//! table, as `condor_config_val -dump` prints it with an empty configuration; a data table,
//! `data/htcondor-23.9.6-defaults.txt`), Aerie's defaults for its `AERIE_` knobs, and values
//! detected on this machine (host name, cores, memory), as HTCondor detects them at start-up.
//! Macros in a configuration expand against this layer, so `$(SPOOL)` means what it means to
//! HTCondor.
use crate::config::{Entry, Origin};
use std::collections::HashMap;
use std::sync::OnceLock;

const DATA: &str = include_str!("data/htcondor-23.9.6-defaults.txt");

/// HTCondor's defaults plus Aerie's, keyed by upper-case name.
pub(crate) fn table() -> &'static HashMap<String, Entry> {
    static T: OnceLock<HashMap<String, Entry>> = OnceLock::new();
    T.get_or_init(|| {
        let mut m = HashMap::new();
        for line in DATA.lines() {
            let Some(eq) = line.find(" =") else { continue };
            let name = &line[..eq];
            let raw = line[eq + 2..].strip_prefix(' ').unwrap_or(&line[eq + 2..]);
            m.insert(
                name.to_ascii_uppercase(),
                Entry {
                    name: name.to_string(),
                    raw: raw.to_string(),
                    origin: Origin::Default,
                },
            );
        }
        for k in crate::catalogue::CATALOGUE {
            if let (crate::catalogue::DefaultKind::Aerie, Some(d)) = (k.kind, k.default) {
                m.entry(k.name.to_ascii_uppercase())
                    .or_insert_with(|| Entry {
                        name: k.name.to_string(),
                        raw: d.to_string(),
                        origin: Origin::Default,
                    });
            }
        }
        m
    })
}

/// The raw HTCondor/Aerie default of a knob.
pub fn default_raw(name: &str) -> Option<&'static str> {
    table()
        .get(&name.to_ascii_uppercase())
        .map(|e| e.raw.as_str())
}

fn read_trimmed(path: &str) -> Option<String> {
    let s = std::fs::read_to_string(path).ok()?;
    let t = s.trim();
    (!t.is_empty()).then(|| t.to_string())
}

/// Values detected on this machine, as HTCondor inserts them before reading the configuration.
pub(crate) fn detected() -> Vec<(&'static str, String)> {
    let mut v = Vec::new();
    let host = read_trimmed("/proc/sys/kernel/hostname")
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "localhost".to_string());
    let short = host.split('.').next().unwrap_or(&host).to_string();
    let domain = read_trimmed("/proc/sys/kernel/domainname").filter(|d| d != "(none)");
    let full = if host.contains('.') {
        host.clone()
    } else {
        match domain {
            Some(d) => format!("{host}.{d}"),
            None => host.clone(),
        }
    };
    v.push(("HOSTNAME", short));
    v.push(("FULL_HOSTNAME", full));
    let cpus = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    v.push(("DETECTED_CPUS", cpus.to_string()));
    v.push(("DETECTED_CORES", cpus.to_string()));
    if let Some(mem) = std::fs::read_to_string("/proc/meminfo").ok().and_then(|m| {
        m.lines()
            .find(|l| l.starts_with("MemTotal:"))
            .and_then(|l| {
                l.split_whitespace()
                    .nth(1)
                    .and_then(|k| k.parse::<u64>().ok())
            })
    }) {
        v.push(("DETECTED_MEMORY", (mem / 1024).to_string()));
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_has_htcondor_and_aerie_defaults() {
        assert_eq!(default_raw("PRIORITY_HALFLIFE"), Some("86400"));
        assert_eq!(default_raw("negotiator_interval"), Some("60"));
        assert_eq!(default_raw("SPOOL"), Some("$(LOCAL_DIR)/spool"));
        assert_eq!(default_raw("GROUP_NAMES"), Some(""));
        assert_eq!(default_raw("CLASSAD_LIFETIME"), None);
        assert!(default_raw("AERIE_DATA_DIR").is_some());
        assert!(table().len() > 1000);
        assert_eq!(table()["RUNBENCHMARKS"].name, "RunBenchmarks");
    }
}
