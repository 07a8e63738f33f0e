//! A loaded configuration: the knob table, lookups with the `LOCALNAME.` / `SUBSYS.` prefix
//! rules, macro expansion on lookup, and typed access.
use crate::catalogue::{self, KnobType};
use crate::error::{ConfigError, Location};
use crate::expand::{self, MacroEnv};
use crate::numeric;
use std::collections::HashMap;
use std::time::Duration;

/// Where a value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// A statement in a config file (or a metaknob template it used).
    File(Location),
    /// HTCondor's default table (or Aerie's, for `AERIE_` knobs).
    Default,
    /// Detected on this machine at start-up (host name, cores, memory), or set from the context
    /// (`SUBSYSTEM`).
    Detected,
    /// Set by the program through [`Config::set`].
    Override,
    /// Set by a `_CONDOR_<NAME>` (or `_AERIE_<NAME>`) environment variable.
    Environment,
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Origin::File(l) => write!(f, "{l}"),
            Origin::Default => f.write_str("<Default>"),
            Origin::Detected => f.write_str("<Detected>"),
            Origin::Override => f.write_str("<Override>"),
            Origin::Environment => f.write_str("<Environment>"),
        }
    }
}

/// One knob as stored: the name as first written, the raw value (self references already
/// expanded, other macros not), and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The name as written where the knob was first defined.
    pub name: String,
    /// The raw value.
    pub raw: String,
    /// Where it was (last) defined.
    pub origin: Origin,
}

/// The daemon a configuration is read for: HTCondor looks up `LOCALNAME.KNOB`, then
/// `SUBSYS.KNOB`, then `KNOB`, so a central manager reads `NEGOTIATOR.X` in its negotiator and
/// `COLLECTOR.X` in its collector.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Context {
    /// Subsystem name, e.g. `NEGOTIATOR`, `COLLECTOR`; `None` reads as HTCondor's tools do
    /// (`TOOL`).
    pub subsystem: Option<String>,
    /// Local name (`-local-name`), e.g. `VIEWSERV01`.
    pub local_name: Option<String>,
}

impl Context {
    /// A context for a subsystem.
    pub fn subsystem(name: &str) -> Self {
        Context {
            subsystem: Some(name.to_ascii_uppercase()),
            local_name: None,
        }
    }

    /// The prefixes to try, most specific first.
    fn prefixes(&self) -> impl Iterator<Item = &str> {
        self.local_name
            .iter()
            .chain(self.subsystem.iter())
            .map(|s| s.as_str())
    }
}

/// The result of a lookup before expansion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// The name the value was found under (e.g. `NEGOTIATOR.X` for a lookup of `X`).
    pub name: String,
    /// The raw value.
    pub raw: String,
    /// Where it came from.
    pub origin: Origin,
}

/// A loaded configuration. Cheap to query; clone it to keep a snapshot.
#[derive(Debug, Clone)]
pub struct Config {
    pub(crate) entries: HashMap<String, Entry>,
    pub(crate) context: Context,
    pub(crate) sources: Vec<String>,
    pub(crate) warnings: Vec<String>,
}

impl Config {
    /// A configuration with nothing but the defaults and the detected values.
    pub fn empty(context: Context) -> Self {
        let mut c = Config {
            entries: HashMap::new(),
            context,
            sources: Vec::new(),
            warnings: Vec::new(),
        };
        for (k, v) in crate::defaults::detected() {
            c.insert_entry(k, v, Origin::Detected);
        }
        let subsys = c
            .context
            .subsystem
            .clone()
            .unwrap_or_else(|| "TOOL".to_string());
        let local = c
            .context
            .local_name
            .clone()
            .unwrap_or_else(|| subsys.clone());
        c.insert_entry("SUBSYSTEM", subsys, Origin::Detected);
        c.insert_entry("LOCALNAME", local, Origin::Detected);
        c
    }

    pub(crate) fn insert_entry(&mut self, name: &str, raw: String, origin: Origin) {
        let key = name.to_ascii_uppercase();
        match self.entries.get_mut(&key) {
            Some(e) => {
                e.raw = raw;
                e.origin = origin;
            }
            None => {
                self.entries.insert(
                    key,
                    Entry {
                        name: name.to_string(),
                        raw,
                        origin,
                    },
                );
            }
        }
    }

    /// Sets a knob from the program (e.g. a command-line override). The value is stored raw;
    /// references to the knob itself are expanded as in a file.
    pub fn set(&mut self, name: &str, value: &str) -> Result<(), ConfigError> {
        let short = self.short_name(name).map(str::to_string);
        let v = expand::expand_self(value, name, short.as_deref(), self)
            .map_err(|m| ConfigError::new(m).with_knob(name))?;
        self.insert_entry(name, v, Origin::Override);
        Ok(())
    }

    /// The context (subsystem, local name) this configuration was read for.
    pub fn context(&self) -> &Context {
        &self.context
    }

    /// The files read, in order.
    pub fn sources(&self) -> &[String] {
        &self.sources
    }

    /// Warnings found while reading (obsolete `:` assignments, `warning :` statements).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The name without a local-name or subsystem prefix, if it has one.
    pub(crate) fn short_name<'a>(&self, name: &'a str) -> Option<&'a str> {
        for p in self.context.prefixes() {
            if name.len() > p.len() + 1
                && name.as_bytes()[p.len()] == b'.'
                && name[..p.len()].eq_ignore_ascii_case(p)
            {
                return Some(&name[p.len() + 1..]);
            }
        }
        None
    }

    /// Looks a knob up without expanding it: `LOCALNAME.NAME`, `SUBSYS.NAME`, `NAME` in the
    /// configuration, then `NAME` in the defaults. A knob set to the empty string is found
    /// (with an empty value).
    pub fn lookup(&self, name: &str) -> Option<Found> {
        for p in self.context.prefixes() {
            if let Some(e) = self
                .entries
                .get(&format!("{p}.{name}").to_ascii_uppercase())
            {
                return Some(Found {
                    name: e.name.clone(),
                    raw: e.raw.clone(),
                    origin: e.origin.clone(),
                });
            }
        }
        let key = name.to_ascii_uppercase();
        let e = self
            .entries
            .get(&key)
            .or_else(|| crate::defaults::table().get(&key))?;
        Some(Found {
            name: e.name.clone(),
            raw: e.raw.clone(),
            origin: e.origin.clone(),
        })
    }

    /// Expands the macros in `text` against this configuration.
    pub fn expand(&self, text: &str) -> Result<String, ConfigError> {
        expand::expand(text, self, false).map_err(ConfigError::new)
    }

    /// The fully expanded value of a knob, as `condor_config_val NAME` prints it; `None` when
    /// the knob is undefined or empty. No catalogue fallback (see [`Config::string`]).
    pub fn expanded(&self, name: &str) -> Result<Option<String>, ConfigError> {
        let Some(f) = self.lookup(name) else {
            return Ok(None);
        };
        let v = expand::expand(&f.raw, self, false).map_err(|m| self.value_error(name, &f, m))?;
        Ok((!v.is_empty()).then_some(v))
    }

    fn value_error(&self, name: &str, f: &Found, message: String) -> ConfigError {
        let mut e = ConfigError::new(message).with_knob(name);
        if let Origin::File(l) = &f.origin {
            e.location = Some(l.clone());
        }
        e
    }

    /// The expanded value; when undefined or empty, the catalogue's built-in default (for knobs
    /// the daemons default in code, like `CLASSAD_LIFETIME` 900).
    pub fn string(&self, name: &str) -> Result<Option<String>, ConfigError> {
        if let Some(v) = self.expanded(name)? {
            return Ok(Some(v));
        }
        match catalogue::find(name).and_then(|k| k.builtin_default()) {
            Some(d) => Ok(Some(self.expand(d).map_err(|e| e.with_knob(name))?)),
            None => Ok(None),
        }
    }

    fn typed<T>(
        &self,
        name: &str,
        what: &str,
        parse: impl Fn(&str) -> Option<T>,
    ) -> Result<Option<T>, ConfigError> {
        let Some(v) = self.string(name)? else {
            return Ok(None);
        };
        match parse(&v) {
            Some(t) => Ok(Some(t)),
            None => {
                let mut e = ConfigError::new(format!("value '{v}' is not {what}")).with_knob(name);
                if let Some(Origin::File(l)) = self.lookup(name).map(|f| f.origin) {
                    e.location = Some(l);
                }
                Err(e)
            }
        }
    }

    /// A boolean knob: `true`/`false`/`yes`/`no`/`t`/`f`, numbers (non-zero is true) and
    /// constant expressions (`2 > 1`).
    pub fn bool(&self, name: &str) -> Result<Option<bool>, ConfigError> {
        self.typed(name, "a boolean", numeric::parse_bool)
    }

    /// An integer knob (a literal or a constant expression such as `10000*1024`).
    pub fn int(&self, name: &str) -> Result<Option<i64>, ConfigError> {
        self.typed(name, "an integer", numeric::parse_int)
    }

    /// A real knob.
    pub fn real(&self, name: &str) -> Result<Option<f64>, ConfigError> {
        self.typed(name, "a number", numeric::parse_real)
    }

    /// A duration knob: seconds (integer, real or constant expression, as HTCondor's knobs
    /// are), or a number with a unit `ms`, `s`, `m`, `h`, `d` (Aerie's knobs).
    pub fn duration(&self, name: &str) -> Result<Option<Duration>, ConfigError> {
        self.typed(
            name,
            "a duration (seconds, or a number with ms/s/m/h/d)",
            parse_duration,
        )
    }

    /// A string list: items separated by commas and/or whitespace; empty when undefined.
    pub fn list(&self, name: &str) -> Result<Vec<String>, ConfigError> {
        Ok(self
            .string(name)?
            .map(|v| split_list(&v))
            .unwrap_or_default())
    }

    /// Like [`Config::bool`] with a fallback for an undefined knob.
    pub fn bool_or(&self, name: &str, fallback: bool) -> Result<bool, ConfigError> {
        Ok(self.bool(name)?.unwrap_or(fallback))
    }
    /// Like [`Config::int`] with a fallback for an undefined knob.
    pub fn int_or(&self, name: &str, fallback: i64) -> Result<i64, ConfigError> {
        Ok(self.int(name)?.unwrap_or(fallback))
    }
    /// Like [`Config::real`] with a fallback for an undefined knob.
    pub fn real_or(&self, name: &str, fallback: f64) -> Result<f64, ConfigError> {
        Ok(self.real(name)?.unwrap_or(fallback))
    }

    /// Checks a knob's value against the type the catalogue gives it.
    pub fn check_type(&self, name: &str) -> Result<(), ConfigError> {
        let Some(k) = catalogue::find(name) else {
            return Ok(());
        };
        match k.ty {
            KnobType::Bool => self.bool(name).map(|_| ()),
            KnobType::Int => self.int(name).map(|_| ()),
            KnobType::Real => self.real(name).map(|_| ()),
            KnobType::Duration => self.duration(name).map(|_| ()),
            KnobType::Expr => self.expr(name).map(|_| ()),
            KnobType::Str | KnobType::List | KnobType::Path => self.string(name).map(|_| ()),
        }
    }

    /// The text of an expression knob, fully expanded.
    pub fn expr_text(&self, name: &str) -> Result<Option<String>, ConfigError> {
        self.string(name)
    }

    /// An expression knob, parsed as a ClassAd expression (`START`, `PREEMPTION_REQUIREMENTS`,
    /// `GROUP_SORT_EXPR`...). A value that does not parse is an error naming the knob, where it
    /// was set, and the column.
    pub fn expr(&self, name: &str) -> Result<Option<classad::Expr>, ConfigError> {
        let Some(text) = self.string(name)? else {
            return Ok(None);
        };
        classad::parse_expr(&text).map(Some).map_err(|pe| {
            let mut e =
                ConfigError::new(format!("'{text}' is not a valid ClassAd expression ({pe})"))
                    .with_knob(name);
            if let Some(Origin::File(l)) = self.lookup(name).map(|f| f.origin) {
                e.location = Some(l);
            }
            e
        })
    }

    /// Every knob set in the configuration files (not defaults), in no particular order.
    pub fn entries(&self) -> impl Iterator<Item = &Entry> {
        self.entries
            .values()
            .filter(|e| matches!(e.origin, Origin::File(_) | Origin::Override))
    }

    /// Names of the knobs set in the configuration files (not defaults) that start with
    /// `prefix` (case-insensitive), e.g. `GROUP_QUOTA_`. Names carrying this context's
    /// subsystem or local-name prefix (`NEGOTIATOR.GROUP_QUOTA_x`) are listed without it.
    /// Sorted case-insensitively, without duplicates.
    pub fn names_with_prefix(&self, prefix: &str) -> Vec<String> {
        let up = prefix.to_ascii_uppercase();
        let mut out: Vec<String> = Vec::new();
        for e in self.entries() {
            let name = self.short_name(&e.name).unwrap_or(&e.name);
            if name.len() >= up.len()
                && name.is_char_boundary(up.len())
                && name[..up.len()].eq_ignore_ascii_case(&up)
                && !out.iter().any(|o| o.eq_ignore_ascii_case(name))
            {
                out.push(name.to_string());
            }
        }
        out.sort_by_key(|a| a.to_ascii_uppercase());
        out
    }

    /// Every knob, configuration and defaults merged, whose name contains `pattern`
    /// (case-insensitive; all when `None`), sorted as `condor_config_val -dump` sorts them.
    pub fn dump(&self, pattern: Option<&str>) -> Vec<Entry> {
        let pat = pattern.map(|p| p.to_ascii_uppercase());
        let mut merged: HashMap<&str, &Entry> = HashMap::new();
        for (k, e) in crate::defaults::table() {
            merged.insert(k.as_str(), e);
        }
        for (k, e) in &self.entries {
            merged.insert(k.as_str(), e);
        }
        let mut v: Vec<Entry> = merged
            .into_iter()
            .filter(|(k, _)| pat.as_ref().is_none_or(|p| k.contains(p.as_str())))
            .map(|(_, e)| e.clone())
            .collect();
        v.sort_by(|a, b| {
            a.name
                .to_ascii_uppercase()
                .cmp(&b.name.to_ascii_uppercase())
        });
        v
    }
}

impl MacroEnv for Config {
    fn lookup_raw(&self, name: &str) -> Option<String> {
        self.lookup(name).map(|f| f.raw)
    }
}

/// Splits a list on commas and whitespace, dropping empty items.
pub fn split_list(v: &str) -> Vec<String> {
    v.split(|c: char| c == ',' || c.is_ascii_whitespace())
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// Parses a duration: seconds as a number or constant expression, or a number with a unit.
pub fn parse_duration(v: &str) -> Option<Duration> {
    let t = v.trim();
    let units: [(&str, f64); 5] = [
        ("ms", 0.001),
        ("s", 1.0),
        ("m", 60.0),
        ("h", 3600.0),
        ("d", 86400.0),
    ];
    for (suffix, mult) in units {
        if let Some(num) = t.strip_suffix(suffix) {
            let num = num.trim_end();
            if !num.is_empty() && num.bytes().all(|c| c.is_ascii_digit() || c == b'.') {
                let secs = num.parse::<f64>().ok()? * mult;
                return Duration::try_from_secs_f64(secs).ok();
            }
        }
    }
    let secs = numeric::parse_real(t)?;
    Duration::try_from_secs_f64(secs).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_and_durations() {
        assert_eq!(split_list("a, b  c,,d\te"), vec!["a", "b", "c", "d", "e"]);
        assert_eq!(parse_duration("300"), Some(Duration::from_secs(300)));
        assert_eq!(parse_duration("1.5"), Some(Duration::from_millis(1500)));
        assert_eq!(parse_duration("150ms"), Some(Duration::from_millis(150)));
        assert_eq!(parse_duration("2m"), Some(Duration::from_secs(120)));
        assert_eq!(parse_duration("1d"), Some(Duration::from_secs(86400)));
        assert_eq!(parse_duration("5 * 60"), Some(Duration::from_secs(300)));
        assert_eq!(parse_duration("-1"), None);
        assert_eq!(parse_duration("soon"), None);
    }

    #[test]
    fn empty_config_reads_defaults_and_detected_values() {
        let c = Config::empty(Context::default());
        assert_eq!(c.int("PRIORITY_HALFLIFE").unwrap(), Some(86400));
        assert_eq!(
            c.expanded("SPOOL").unwrap().as_deref(),
            Some("/var/lib/condor/spool")
        );
        assert_eq!(c.expanded("GROUP_NAMES").unwrap(), None);
        assert_eq!(c.expanded("SUBSYSTEM").unwrap().as_deref(), Some("TOOL"));
        assert!(c.int("DETECTED_CPUS").unwrap().unwrap() >= 1);
        // not a param default, but the collector's built-in value
        assert_eq!(c.expanded("CLASSAD_LIFETIME").unwrap(), None);
        assert_eq!(c.int("CLASSAD_LIFETIME").unwrap(), Some(900));
        assert_eq!(c.real("NICE_USER_PRIO_FACTOR").unwrap(), Some(1e10));
        assert_eq!(c.int("COLLECTOR_SOCKET_BUFSIZE").unwrap(), Some(10_240_000));
        assert_eq!(
            c.bool("NEGOTIATOR_ALLOW_QUOTA_OVERSUBSCRIPTION").unwrap(),
            Some(true)
        );
    }

    #[test]
    fn prefix_lookup_order() {
        let mut c = Config::empty(Context {
            subsystem: Some("NEGOTIATOR".into()),
            local_name: Some("NEG2".into()),
        });
        c.set("X", "plain").unwrap();
        assert_eq!(c.expanded("X").unwrap().as_deref(), Some("plain"));
        c.set("NEGOTIATOR.X", "subsys").unwrap();
        assert_eq!(c.expanded("X").unwrap().as_deref(), Some("subsys"));
        c.set("neg2.x", "local").unwrap();
        assert_eq!(c.expanded("X").unwrap().as_deref(), Some("local"));
        assert_eq!(c.lookup("x").unwrap().name, "neg2.x");
        c.set("COLLECTOR.Y", "coll").unwrap();
        assert_eq!(c.expanded("Y").unwrap(), None);
    }

    #[test]
    fn expressions_parse_with_the_classad_crate() {
        let mut c = Config::empty(Context::default());
        assert!(c.expr("PREEMPTION_RANK").unwrap().is_some());
        assert!(c.expr("GROUP_SORT_EXPR").unwrap().is_some());
        assert!(c.expr("ABSENT_REQUIREMENTS").unwrap().is_some()); // builtin False
        c.set("MINUTE", "60").unwrap();
        c.set(
            "START",
            "KeyboardIdle > 15 * $(MINUTE) && Owner == \"coltrane\"",
        )
        .unwrap();
        assert!(c.expr("START").unwrap().is_some());
        c.set("MachineBusy", "($(CPUBusy) || $(KeyboardBusy)")
            .unwrap();
        let e = c.expr("MachineBusy").unwrap_err();
        assert_eq!(e.knob.as_deref(), Some("MachineBusy"));
        assert!(
            c.check_type("MachineBusy").is_ok(),
            "not in the catalogue: not checked"
        );
        c.set("START", "((").unwrap();
        assert!(c.check_type("START").is_err());
        assert_eq!(
            c.string("STATE_FILE").unwrap().as_deref(),
            Some("/var/lib/condor/spool/Accountantnew.log")
        );
    }

    #[test]
    fn typed_errors_name_the_knob() {
        let mut c = Config::empty(Context::default());
        c.set("NEGOTIATOR_INTERVAL", "soon").unwrap();
        let e = c.int("NEGOTIATOR_INTERVAL").unwrap_err();
        assert_eq!(e.knob.as_deref(), Some("NEGOTIATOR_INTERVAL"));
        assert!(e.to_string().contains("'soon' is not an integer"), "{e}");
    }
}
