//! Which ads are "the same ad": [`AdType`], [`AdKey`] and [`validate`], the rule that derives
//! a key from an ad's `MyType`, `Name` and daemon address, after HTCondor's collector
//! (`makeStartdAdHashKey`, `makeScheddAdHashKey` and the other `make*AdHashKey` functions of
//! `src/condor_collector.V6/hashkey.cpp` in htcondor/htcondor, since moved to
//! `src/condor_utils/hashkey.cpp`).
//!
//! The key is split out because it is the one thing every other part agrees on and it depends
//! on none of them: the table orders and finds ads by it, relay items and digest lines name
//! ads by it, and the Raft layer stores absent ads under it. Nothing here looks at time,
//! versions or private attributes.
use super::AdError;
use classad::{ClassAd, Value};
use std::fmt;

/// The ad types HTCondor's collector keeps apart. Anything else is kept by its `MyType`
/// (HTCondor's generic ads).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum AdType {
    /// Startd slot ads (`MyType = "Machine"`).
    Machine,
    /// A user's jobs at one access point (`MyType = "Submitter"`), which the negotiator
    /// negotiates for.
    Submitter,
    /// Schedd (access point) daemon ads (`MyType = "Scheduler"`).
    Scheduler,
    /// Negotiator daemon ads.
    Negotiator,
    /// condor_master daemon ads.
    Master,
    /// Collector daemon ads.
    Collector,
    /// condor_defrag daemon ads.
    Defrag,
    /// Any other `MyType`, lowercased (HTCondor compares ad types case-insensitively).
    Generic(String),
}

impl AdType {
    /// The type of an ad whose `MyType` is `my_type` (case-insensitive, as HTCondor compares
    /// it). `Slot` and `Startd` are accepted as names of the machine table, as
    /// `condor_status` users say them.
    pub fn parse(my_type: &str) -> AdType {
        match my_type.to_ascii_lowercase().as_str() {
            "machine" | "slot" | "startd" => AdType::Machine,
            "submitter" => AdType::Submitter,
            "scheduler" | "schedd" => AdType::Scheduler,
            "negotiator" => AdType::Negotiator,
            "master" => AdType::Master,
            "collector" => AdType::Collector,
            "defrag" => AdType::Defrag,
            other => AdType::Generic(other.to_string()),
        }
    }

    /// The canonical `MyType` spelling.
    pub fn as_str(&self) -> &str {
        match self {
            AdType::Machine => "Machine",
            AdType::Submitter => "Submitter",
            AdType::Scheduler => "Scheduler",
            AdType::Negotiator => "Negotiator",
            AdType::Master => "Master",
            AdType::Collector => "Collector",
            AdType::Defrag => "Defrag",
            AdType::Generic(s) => s,
        }
    }
}

impl fmt::Display for AdType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How an ad is keyed, as HTCondor's collector hashed ads before 10.8 (`AdNameHashKey` in
/// `hashkey.cpp`): its type, its `Name` (case-sensitive) and the host of the daemon's address
/// (`MyAddress`, or the older `StartdIpAddr`/`ScheddIpAddr`), so two machines that both call a
/// slot `slot1@localhost` stay apart. A Submitter's `addr` is prefixed with its `ScheddName`
/// and a slash, since one user submits through several schedds. An ad without an address has
/// an empty `addr`. (HTCondor 10.8 and later compare keys by name alone, HTCONDOR-1948; Aerie
/// still keeps the address.) Ordered by type, then name, then address, so all the ads of one
/// type, and all the ads of one name, are neighbours in the table.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct AdKey {
    /// The table the ad belongs to, from its `MyType`.
    pub ad_type: AdType,
    /// The ad's `Name`, as sent (case-sensitive).
    pub name: String,
    /// The daemon's host (a Submitter's: `ScheddName/host`), or empty.
    pub addr: String,
}

impl AdKey {
    /// The key of the `ad_type` ad named `name` at `addr`.
    pub fn new(ad_type: AdType, name: impl Into<String>, addr: impl Into<String>) -> Self {
        AdKey {
            ad_type,
            name: name.into(),
            addr: addr.into(),
        }
    }
}

impl fmt::Display for AdKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {:?}", self.ad_type, self.name)?;
        if !self.addr.is_empty() {
            write!(f, " at {}", self.addr)?;
        }
        Ok(())
    }
}

/// The value of attribute `name` when it is written as a literal (`Name = "slot1@a"`); an
/// expression is refused. The collector reads `Name`, `MyType`, `ClassAdLifetime` and `Offline`
/// under its table's write lock, so they must cost nothing to read: an expression there could
/// take any time to evaluate (issue 13.2), and HTCondor's daemons always send them as literals.
pub(super) fn literal(ad: &ClassAd, name: &str) -> Result<Value, String> {
    match ad.lookup(name) {
        None => Ok(Value::Undefined),
        Some(classad::Expr::Lit(v)) => Ok(v.clone()),
        Some(e) => Err(format!(
            "must be written as a value, not the expression {e}"
        )),
    }
}

/// Checks the attributes every ad needs: `MyType` and `Name`, both literal strings, and
/// derives the ad's key from them and its address.
pub(super) fn validate(ad: &ClassAd) -> Result<AdKey, AdError> {
    let literal_of = |attr: &str, ad_name: &str| {
        literal(ad, attr).map_err(|reason| AdError {
            ad: ad_name.to_string(),
            attribute: Some(attr.into()),
            reason,
        })
    };
    let name = match literal_of("Name", "<no Name>")? {
        Value::Str(s) if !s.is_empty() => s.to_string(),
        Value::Undefined => {
            return Err(AdError {
                ad: "<no Name>".into(),
                attribute: Some("Name".into()),
                reason: "missing (every ad needs a Name)".into(),
            })
        }
        other => {
            return Err(AdError {
                ad: "<no Name>".into(),
                attribute: Some("Name".into()),
                reason: format!("must be a non-empty string, not {}", describe(&other)),
            })
        }
    };
    let my_type = match literal_of("MyType", &name)? {
        Value::Str(s) if !s.is_empty() => s.to_string(),
        Value::Undefined => {
            return Err(AdError {
                ad: name,
                attribute: Some("MyType".into()),
                reason: "missing (every ad needs a MyType)".into(),
            })
        }
        other => {
            return Err(AdError {
                ad: name,
                attribute: Some("MyType".into()),
                reason: format!("must be a non-empty string, not {}", describe(&other)),
            })
        }
    };
    let ad_type = AdType::parse(&my_type);
    let mut addr = daemon_host(ad);
    if ad_type == AdType::Submitter {
        // One user submits through several schedds: HTCondor keys submitters by both names.
        if let Value::Str(s) = ad.eval_attr("ScheddName") {
            addr = format!("{s}/{addr}");
        }
    }
    Ok(AdKey::new(ad_type, name, addr))
}

/// The host part of the daemon's address, as HTCondor's `getIpAddr` takes it: `MyAddress`,
/// else the older per-daemon attributes. Empty when the ad carries no address (test tools,
/// generic ads).
fn daemon_host(ad: &ClassAd) -> String {
    for attr in ["MyAddress", "StartdIpAddr", "ScheddIpAddr"] {
        if let Value::Str(s) = ad.eval_attr(attr) {
            let host = address_host(&s);
            if !host.is_empty() {
                return host.to_string();
            }
        }
    }
    String::new()
}

/// The host of an address: a sinful string `<host:port?params>`, `host:port`, `[v6]:port`.
pub fn address_host(addr: &str) -> &str {
    let s = addr.trim().trim_start_matches('<');
    let s = s.split(['?', '>']).next().unwrap_or("");
    if let Some(rest) = s.strip_prefix('[') {
        rest.split(']').next().unwrap_or("")
    } else {
        s.rsplit_once(':').map(|(h, _)| h).unwrap_or(s)
    }
}

impl AdKey {
    /// The daemon host part of the key (a Submitter's `addr` is `ScheddName/host`).
    pub fn host(&self) -> &str {
        match self.ad_type {
            AdType::Submitter => self.addr.rsplit('/').next().unwrap_or(""),
            _ => &self.addr,
        }
    }
}

/// Names a refused value in an [`AdError`]'s reason.
pub(super) fn describe(v: &Value) -> String {
    match v {
        Value::Str(s) if s.is_empty() => "the empty string".to_string(),
        Value::Str(s) => format!("the string {s:?}"),
        other => other.type_name().to_string(),
    }
}
