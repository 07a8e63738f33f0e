//! The ad table: live ads keyed by (ad type, name), with HTCondor's lifetime and absent-ad
//! rules. No I/O and no clock: every call that depends on time takes `now` (Unix seconds).
use classad::{ClassAd, Expr, Value};
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::hash::BuildHasher;

/// The ad types HTCondor's collector keeps apart. Anything else is kept by its `MyType`
/// (HTCondor's generic ads).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum AdType {
    /// Startd slot ads (`MyType = "Machine"`).
    Machine,
    Submitter,
    Scheduler,
    Negotiator,
    Master,
    Collector,
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

/// How an ad is keyed: its type and its `Name` (HTCondor compares names case-sensitively).
pub type AdKey = (AdType, String);

/// Why an ad was refused. The message names the ad (when it has a name) and the attribute.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AdError {
    /// The ad's `Name`, or a placeholder when it has none.
    pub ad: String,
    /// The attribute at fault, if one is.
    pub attribute: Option<String>,
    pub reason: String,
}

impl fmt::Display for AdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ad {:?}", self.ad)?;
        if let Some(a) = &self.attribute {
            write!(f, ", attribute {a}")?;
        }
        write!(f, ": {}", self.reason)
    }
}

impl std::error::Error for AdError {}

/// The collector's knobs, read from the configuration (catalogue defaults when unset).
#[derive(Clone, Debug)]
pub struct CollectorParams {
    /// `CLASSAD_LIFETIME`, seconds: an ad not updated for longer than this expires.
    pub classad_lifetime: i64,
    /// `ABSENT_REQUIREMENTS`: evaluated on an expiring slot ad; True keeps it as absent.
    /// `None` (or an expression that is not True) removes it.
    pub absent_requirements: Option<Expr>,
    /// `ABSENT_EXPIRE_ADS_AFTER`, seconds; 0 keeps absent ads forever.
    pub absent_expire_ads_after: i64,
    /// `EXPIRE_INVALIDATED_ADS`: an invalidation counts as an expiry (may make the ad absent).
    pub expire_invalidated_ads: bool,
    /// `AERIE_COLLECTOR_MAX_AD_SIZE`, bytes of ad text.
    pub max_ad_size: usize,
}

impl Default for CollectorParams {
    /// The catalogue defaults (HTCondor's built-in values).
    fn default() -> Self {
        CollectorParams {
            classad_lifetime: 900,
            absent_requirements: None,
            absent_expire_ads_after: 2_592_000,
            expire_invalidated_ads: false,
            max_ad_size: 1_048_576,
        }
    }
}

impl CollectorParams {
    /// Reads the knobs from a loaded configuration; a knob with a bad value is an error
    /// naming it.
    pub fn from_config(c: &aerie_config::Config) -> Result<Self, String> {
        let d = CollectorParams::default();
        let secs = |name: &str, fallback: i64| -> Result<i64, String> {
            Ok(c.duration(name)
                .map_err(|e| format!("{name}: {e}"))?
                .map(|d| d.as_secs() as i64)
                .unwrap_or(fallback))
        };
        let max = c
            .int("AERIE_COLLECTOR_MAX_AD_SIZE")
            .map_err(|e| format!("AERIE_COLLECTOR_MAX_AD_SIZE: {e}"))?
            .unwrap_or(d.max_ad_size as i64);
        if max <= 0 {
            return Err(format!(
                "AERIE_COLLECTOR_MAX_AD_SIZE: {max} is not a positive number of bytes"
            ));
        }
        Ok(CollectorParams {
            classad_lifetime: secs("CLASSAD_LIFETIME", d.classad_lifetime)?,
            absent_requirements: c
                .expr("ABSENT_REQUIREMENTS")
                .map_err(|e| format!("ABSENT_REQUIREMENTS: {e}"))?,
            absent_expire_ads_after: secs("ABSENT_EXPIRE_ADS_AFTER", d.absent_expire_ads_after)?,
            expire_invalidated_ads: c
                .bool("EXPIRE_INVALIDATED_ADS")
                .map_err(|e| format!("EXPIRE_INVALIDATED_ADS: {e}"))?
                .unwrap_or(d.expire_invalidated_ads),
            max_ad_size: max as usize,
        })
    }
}

/// What an accepted update did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Update {
    /// A new ad.
    New,
    /// Replaced a different live ad.
    Changed,
    /// Identical to the stored ad: only its timestamp was refreshed.
    Unchanged,
    /// The machine came back: its absent ad was replaced.
    ReplacedAbsent,
}

/// What one expiry sweep did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExpiryReport {
    /// Live ads that became absent (ABSENT_REQUIREMENTS was True).
    pub made_absent: Vec<AdKey>,
    /// Ads dropped: expired live ads and absent ads past ABSENT_EXPIRE_ADS_AFTER.
    pub removed: Vec<AdKey>,
}

/// A query: ads of one type (or all types) matching a constraint, reduced to a projection.
#[derive(Clone, Debug, Default)]
pub struct Query {
    /// `None` = every type (`condor_status -any`).
    pub ad_type: Option<AdType>,
    /// Ads for which this evaluates to True (no constraint: all ads).
    pub constraint: Option<Expr>,
    /// Attributes to return; empty = all.
    pub projection: Vec<String>,
    /// Return absent ads too (`condor_status -absent`). They are also returned when the
    /// constraint mentions the `Absent` attribute, as HTCondor does.
    pub absent: bool,
    /// At most this many ads (0 = no limit).
    pub limit: usize,
}

#[derive(Clone, Debug)]
struct Entry {
    /// The public part of the ad as the node sent it (plus `Absent = true` once absent):
    /// what queries see and constraints are evaluated on.
    ad: ClassAd,
    /// The private attributes (claim capabilities...), kept apart so no query can return
    /// them or probe them with a constraint; `None` when the ad had none.
    private: Option<ClassAd>,
    /// Last update, Unix seconds.
    updated: i64,
    /// Seconds this ad lives without an update.
    lifetime: i64,
    /// When it became absent.
    absent_since: Option<i64>,
    /// Hash of the text of the last update, when it came as text and is live.
    text_hash: Option<u64>,
}

/// The live ads of the pool.
#[derive(Debug, Default)]
pub struct AdTable {
    params: CollectorParams,
    ads: BTreeMap<AdKey, Entry>,
    /// Hash of the exact text of each live ad's last update -> its key. Most updates repeat
    /// the previous text; this recognises them without parsing. The hasher is foldhash with
    /// a per-table random seed (several times faster than SipHash on 1-2 KB ads), so a sender
    /// cannot craft collisions without knowing the seed.
    by_text: HashMap<u64, AdKey>,
    hasher: foldhash::fast::RandomState,
    /// Parsed attribute lines shared between ads: slot ads repeat most of their lines, so
    /// this saves both parsing and memory (the stored ads share the expressions).
    lines: classad::AttrCache,
}

/// The attribute a node uses to give its ad its own lifetime (HTCondor's `ClassAdLifetime`).
const LIFETIME_ATTR: &str = "ClassAdLifetime";

/// The attribute HTCondor's collector adds to every ad: the time of its last update.
const LAST_HEARD_FROM: &str = "LastHeardFrom";

/// The ad as queries see it: the stored public part plus `LastHeardFrom`.
fn stamp(e: &Entry) -> ClassAd {
    let mut ad = e.ad.clone();
    ad.insert_int(LAST_HEARD_FROM, e.updated);
    ad
}

impl AdTable {
    pub fn new(params: CollectorParams) -> Self {
        AdTable {
            params,
            ads: BTreeMap::new(),
            by_text: HashMap::new(),
            hasher: Default::default(),
            lines: classad::AttrCache::default(),
        }
    }

    pub fn params(&self) -> &CollectorParams {
        &self.params
    }

    /// Number of ads held, absent ones included.
    pub fn len(&self) -> usize {
        self.ads.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ads.is_empty()
    }

    /// Number of absent ads.
    pub fn absent_count(&self) -> usize {
        self.ads
            .values()
            .filter(|e| e.absent_since.is_some())
            .count()
    }

    /// The stored ad under `key`, if any.
    pub fn get(&self, ad_type: &AdType, name: &str) -> Option<&ClassAd> {
        self.ads
            .get(&(ad_type.clone(), name.to_string()))
            .map(|e| &e.ad)
    }

    /// The private attributes of a live ad (the claim capability), for the negotiator to hand
    /// to the access point that won the match. Never exposed by [`AdTable::query`]; `None`
    /// for absent ads, which are never matched.
    pub fn private_attrs(&self, ad_type: &AdType, name: &str) -> Option<&ClassAd> {
        self.ads
            .get(&(ad_type.clone(), name.to_string()))
            .filter(|e| e.absent_since.is_none())
            .and_then(|e| e.private.as_ref())
    }

    /// Whether the ad under `key` is absent.
    pub fn is_absent(&self, ad_type: &AdType, name: &str) -> bool {
        self.ads
            .get(&(ad_type.clone(), name.to_string()))
            .is_some_and(|e| e.absent_since.is_some())
    }

    /// Parses and stores one ad sent as text (old or new syntax). The size limit is checked
    /// before parsing, so an oversized ad costs nothing.
    pub fn advertise_text(&mut self, text: &str, now: i64) -> Result<(AdKey, Update), AdError> {
        if text.len() > self.params.max_ad_size {
            return Err(AdError {
                ad: guess_name(text),
                attribute: None,
                reason: format!(
                    "{} bytes is larger than AERIE_COLLECTOR_MAX_AD_SIZE ({} bytes)",
                    text.len(),
                    self.params.max_ad_size
                ),
            });
        }
        let h = self.hasher.hash_one(text);
        if let Some(key) = self.by_text.get(&h) {
            if let Some(e) = self.ads.get_mut(key) {
                if e.text_hash == Some(h) && e.absent_since.is_none() {
                    e.updated = now;
                    return Ok((key.clone(), Update::Unchanged));
                }
            }
        }
        let ad = parse_one_ad(text, &mut self.lines).map_err(|reason| AdError {
            ad: guess_name(text),
            attribute: None,
            reason,
        })?;
        self.store(ad, Some(h), now)
    }

    /// Validates and stores one ad. An ad identical to the stored one only refreshes its
    /// timestamp; an update for an absent ad replaces it (the machine is back).
    pub fn advertise(&mut self, ad: ClassAd, now: i64) -> Result<(AdKey, Update), AdError> {
        self.store(ad, None, now)
    }

    fn store(
        &mut self,
        mut ad: ClassAd,
        text_hash: Option<u64>,
        now: i64,
    ) -> Result<(AdKey, Update), AdError> {
        let key = validate(&ad)?;
        let private = split_private(&mut ad);
        ad.shrink_to_fit();
        let lifetime = match ad.eval_attr(LIFETIME_ATTR) {
            Value::Int(n) if n > 0 => n,
            Value::Undefined => self.params.classad_lifetime,
            Value::Int(_) => self.params.classad_lifetime,
            other => {
                return Err(AdError {
                    ad: key.1,
                    attribute: Some(LIFETIME_ATTR.into()),
                    reason: format!(
                        "must be an integer number of seconds, not {}",
                        describe(&other)
                    ),
                })
            }
        };
        if let Some(old) = self.ads.get(&key).and_then(|e| e.text_hash) {
            self.by_text.remove(&old);
        }
        if let Some(h) = text_hash {
            self.by_text.insert(h, key.clone());
        }
        let outcome = match self.ads.get_mut(&key) {
            Some(e) if e.absent_since.is_some() => {
                *e = Entry {
                    ad,
                    private,
                    updated: now,
                    lifetime,
                    absent_since: None,
                    text_hash,
                };
                Update::ReplacedAbsent
            }
            Some(e) => {
                e.updated = now;
                e.lifetime = lifetime;
                e.text_hash = text_hash;
                if e.ad == ad && e.private == private {
                    Update::Unchanged
                } else {
                    e.ad = ad;
                    e.private = private;
                    Update::Changed
                }
            }
            None => {
                self.ads.insert(
                    key.clone(),
                    Entry {
                        ad,
                        private,
                        updated: now,
                        lifetime,
                        absent_since: None,
                        text_hash,
                    },
                );
                Update::New
            }
        };
        Ok((key, outcome))
    }

    /// A daemon asks for its ad to go away now. With `EXPIRE_INVALIDATED_ADS` the ad is
    /// treated as expired instead (so a slot may become absent). Returns whether an ad was
    /// there.
    pub fn invalidate(&mut self, ad_type: &AdType, name: &str, now: i64) -> bool {
        let key = (ad_type.clone(), name.to_string());
        if self.params.expire_invalidated_ads {
            if let Some(e) = self.ads.get(&key) {
                if e.absent_since.is_none() {
                    let absent = self.becomes_absent(&key.0, &e.ad);
                    if absent {
                        self.mark_absent(&key, now);
                    } else {
                        self.remove(&key);
                    }
                }
                return true;
            }
            return false;
        }
        self.remove(&key)
    }

    /// Drops or turns absent every ad whose time is up at `now`: a live ad not updated for
    /// more than its lifetime, an absent ad older than `ABSENT_EXPIRE_ADS_AFTER` (never when
    /// that is 0).
    pub fn expire(&mut self, now: i64) -> ExpiryReport {
        let mut report = ExpiryReport::default();
        let expire_after = self.params.absent_expire_ads_after;
        let due: Vec<AdKey> = self
            .ads
            .iter()
            .filter(|(_, e)| match e.absent_since {
                Some(since) => expire_after > 0 && now - since > expire_after,
                None => now - e.updated > e.lifetime,
            })
            .map(|(k, _)| k.clone())
            .collect();
        for key in due {
            let Some(e) = self.ads.get(&key) else {
                continue;
            };
            if e.absent_since.is_none() && self.becomes_absent(&key.0, &e.ad) {
                self.mark_absent(&key, now);
                report.made_absent.push(key);
            } else {
                self.remove(&key);
                report.removed.push(key);
            }
        }
        report
    }

    /// Ads matching `q`, projected, in key order, each with `LastHeardFrom` (its last
    /// update time) as HTCondor's collector adds it.
    pub fn query(&self, q: &Query) -> Vec<ClassAd> {
        let refs = q.constraint.as_ref().map(|c| c.references());
        let want_absent = q.absent || refs.as_ref().is_some_and(|r| r.internal.contains("absent"));
        // Stamping LastHeardFrom copies the ad, so do it before evaluating only when the
        // constraint needs it.
        let stamp_first = refs
            .as_ref()
            .is_some_and(|r| r.internal.contains("lastheardfrom"));
        let mut out = Vec::new();
        let iter: Box<dyn Iterator<Item = (&AdKey, &Entry)>> = match &q.ad_type {
            Some(t) => Box::new(
                self.ads
                    .range((t.clone(), String::new())..)
                    .take_while(move |(k, _)| &k.0 == t),
            ),
            None => Box::new(self.ads.iter()),
        };
        for (_, e) in iter {
            if e.absent_since.is_some() && !want_absent {
                continue;
            }
            let stamped = stamp_first.then(|| stamp(e));
            if let Some(c) = &q.constraint {
                if !stamped.as_ref().unwrap_or(&e.ad).eval_expr(c).is_true() {
                    continue;
                }
            }
            let ad = if q.projection.is_empty() {
                stamped.unwrap_or_else(|| stamp(e))
            } else {
                let mut p = ClassAd::with_capacity(q.projection.len());
                for name in &q.projection {
                    if name.eq_ignore_ascii_case(LAST_HEARD_FROM) {
                        p.insert_int(name, e.updated);
                    } else if let Some(x) = e.ad.lookup(name) {
                        p.insert(name, x.clone());
                    }
                }
                p
            };
            out.push(ad);
            if q.limit > 0 && out.len() >= q.limit {
                break;
            }
        }
        out
    }

    fn becomes_absent(&self, ad_type: &AdType, ad: &ClassAd) -> bool {
        *ad_type == AdType::Machine
            && self
                .params
                .absent_requirements
                .as_ref()
                .is_some_and(|r| ad.eval_expr(r).is_true())
    }

    fn mark_absent(&mut self, key: &AdKey, now: i64) {
        if let Some(e) = self.ads.get_mut(key) {
            e.ad.insert_bool("Absent", true);
            e.absent_since = Some(now);
            if let Some(h) = e.text_hash.take() {
                self.by_text.remove(&h);
            }
        }
    }

    /// Drops an ad and its text-hash entry; returns whether it was there.
    fn remove(&mut self, key: &AdKey) -> bool {
        match self.ads.remove(key) {
            Some(e) => {
                if let Some(h) = e.text_hash {
                    self.by_text.remove(&h);
                }
                true
            }
            None => false,
        }
    }

    /// Number of text hashes held (one per live ad last updated as text); for tests.
    #[cfg(test)]
    pub(crate) fn text_index_len(&self) -> usize {
        self.by_text.len()
    }
}

/// HTCondor's private attributes (compat_classad's fixed list, compared case-insensitively)
/// and any name with the `_condor_priv` prefix: secrets no query may return.
pub fn is_private_attr(name: &str) -> bool {
    const FIXED: [&str; 6] = [
        "Capability",
        "ChildClaimIds",
        "ClaimId",
        "ClaimIdList",
        "ClaimIds",
        "TransferKey",
    ];
    const PREFIX: &str = "_condor_priv";
    FIXED.iter().any(|p| p.eq_ignore_ascii_case(name))
        || name
            .get(..PREFIX.len())
            .is_some_and(|p| p.eq_ignore_ascii_case(PREFIX))
}

/// Moves the private attributes of `ad` into their own ad.
fn split_private(ad: &mut ClassAd) -> Option<ClassAd> {
    let names: Vec<String> = ad
        .iter()
        .filter(|(n, _)| is_private_attr(n))
        .map(|(n, _)| n.to_string())
        .collect();
    if names.is_empty() {
        return None;
    }
    let mut private = ClassAd::with_capacity(names.len());
    for n in &names {
        if let Some(e) = ad.remove(n) {
            private.insert(n, e);
        }
    }
    Some(private)
}

/// Parses one ad: new syntax (`[...]`) or old syntax, strictly (a line that does not parse
/// refuses the whole ad rather than silently dropping the rest of it).
fn parse_one_ad(text: &str, lines: &mut classad::AttrCache) -> Result<ClassAd, String> {
    if text.trim_start().starts_with('[') {
        return classad::parse_ad(text).map_err(|e| format!("does not parse: {e}"));
    }
    let mut ads =
        classad::parse_old_ads_cached(text, lines).map_err(|e| format!("does not parse: {e}"))?;
    match ads.len() {
        1 => Ok(ads.remove(0)),
        0 => Err("is empty".into()),
        n => Err(format!(
            "holds {n} ads separated by blank lines; send one ad per message"
        )),
    }
}

/// Checks the attributes every ad needs: `MyType` and `Name`, both strings.
fn validate(ad: &ClassAd) -> Result<AdKey, AdError> {
    let name = match ad.eval_attr("Name") {
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
    let my_type = match ad.eval_attr("MyType") {
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
    Ok((AdType::parse(&my_type), name))
}

fn describe(v: &Value) -> String {
    match v {
        Value::Str(s) => format!("the empty string {s:?}"),
        other => other.type_name().to_string(),
    }
}

/// The `Name` of an ad we could not parse, for the error message (best effort).
fn guess_name(text: &str) -> String {
    for line in text.lines().take(10_000) {
        let l = line.trim_start().trim_start_matches('[').trim_start();
        if let Some(rest) = l.strip_prefix("Name").or_else(|| l.strip_prefix("name")) {
            let rest = rest.trim_start();
            if let Some(v) = rest.strip_prefix('=') {
                let v = v.trim().trim_end_matches(';').trim();
                if let Some(s) = v.strip_prefix('"') {
                    if let Some(end) = s.find('"') {
                        return s[..end].to_string();
                    }
                }
            }
        }
    }
    "<unparsed>".into()
}
