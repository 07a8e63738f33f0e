//! The ad table: live ads keyed by (ad type, name, daemon host), with HTCondor's lifetime and
//! absent-ad rules. No I/O and no clock: every call that depends on time takes `now` (Unix
//! seconds).
//!
//! This file is the table itself, [`AdTable`]: advertising (the text fast path, parsing,
//! validation, storing), invalidation, `CLASSAD_LIFETIME` expiry, absent and offline ads and
//! their mirror of the replicated state, and queries. Three concerns that the table uses but
//! that have rules of their own are split out, each a child module so it can read the
//! table's private fields without widening them to the rest of the collector:
//!
//! - [`key`]: which ads are the same ad ([`AdKey`], [`AdType`], after HTCondor's
//!   `hashkey.cpp`), the vocabulary everything else uses and which depends on nothing else.
//! - [`private`]: the attributes no query may show (`ClaimId` and the like), split off on the
//!   way in, and the only two ways back out (the negotiator and the relay).
//! - [`sync`]: what keeps CMs in step: versions, last-writer-wins, tombstones, relay items
//!   and digests. The table asks it whether an update may be stored and under which version.
//!
//! Absent and offline ads stay here rather than in `sync`: Raft replicates them, and what the
//! table does with them (hide them, expire them, bring a machine back) is table behaviour.
use classad::{ClassAd, Expr, Value};
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::hash::BuildHasher;
use std::sync::Arc;

use super::binding::Sender;

mod key;

pub use key::{address_host, AdKey, AdType};
use key::{describe, literal, validate};

mod private;

pub use private::is_private_attr;
use private::split_private;

mod sync;

mod totals;
pub use totals::TotalsRow;

use sync::Source;
pub use sync::{DigestDiff, DigestEntry, DigestPage, RelayItem, Version};

/// Why an ad was refused. The message names the ad (when it has a name) and the attribute.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AdError {
    /// The ad's `Name`, or a placeholder when it has none.
    pub ad: String,
    /// The attribute at fault, if one is.
    pub attribute: Option<String>,
    /// What is wrong, as the end of a sentence ("missing (every ad needs a Name)").
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
    /// `AERIE_COLLECTOR_MAX_AD_LIFETIME`, seconds: the longest `ClassAdLifetime` an ad may ask
    /// for (a longer one is refused: an ad that never expires is how a table grows for ever).
    pub max_ad_lifetime: i64,
    /// `AERIE_COLLECTOR_MAX_OFFLINE_ADS`: offline ads held at most (each becomes a replicated
    /// record that only its machine's return removes).
    pub max_offline_ads: usize,
    /// `AERIE_COLLECTOR_MAX_OFFLINE_ADS_PER_HOST`: offline ads one daemon host may hold.
    pub max_offline_ads_per_host: usize,
    /// `AERIE_COLLECTOR_MAX_TOMBSTONES`: invalidations remembered at most (the oldest are
    /// forgotten first).
    pub max_tombstones: usize,
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
            max_ad_lifetime: 7 * 86400,
            max_offline_ads: 10_000,
            max_offline_ads_per_host: 64,
            max_tombstones: 1_000_000,
        }
    }
}

impl CollectorParams {
    /// Reads the knobs from a loaded configuration; a knob with a bad value is an error
    /// naming it.
    pub fn from_config(c: &aerie_config::Config) -> Result<Self, String> {
        let d = CollectorParams::default();
        let knobs = crate::knob::Knobs::with_env(Some(c), |_| None);
        let day = std::time::Duration::from_secs(86400);
        let secs = |name: &str, fallback: i64, min: u64, max: std::time::Duration| {
            knobs
                .duration(
                    name,
                    None,
                    std::time::Duration::from_secs(1),
                    std::time::Duration::from_secs(fallback.max(0) as u64),
                    std::time::Duration::from_secs(min),
                    max,
                )
                .map(|d| d.as_secs() as i64)
                .map_err(|e| e.to_string())
        };
        let count = |name: &str, fallback: usize| {
            knobs
                .count(name, None, fallback as u64, 1, 100_000_000)
                .map(|n| n as usize)
                .map_err(|e| e.to_string())
        };
        let max = knobs
            .count(
                "AERIE_COLLECTOR_MAX_AD_SIZE",
                None,
                d.max_ad_size as u64,
                1,
                64 << 20,
            )
            .map_err(|e| e.to_string())?;
        Ok(CollectorParams {
            classad_lifetime: secs("CLASSAD_LIFETIME", d.classad_lifetime, 1, 30 * day)?,
            absent_requirements: c
                .expr("ABSENT_REQUIREMENTS")
                .map_err(|e| format!("ABSENT_REQUIREMENTS: {e}"))?,
            absent_expire_ads_after: secs(
                "ABSENT_EXPIRE_ADS_AFTER",
                d.absent_expire_ads_after,
                0,
                3650 * day,
            )?,
            expire_invalidated_ads: c
                .bool("EXPIRE_INVALIDATED_ADS")
                .map_err(|e| format!("EXPIRE_INVALIDATED_ADS: {e}"))?
                .unwrap_or(d.expire_invalidated_ads),
            max_ad_size: max as usize,
            max_ad_lifetime: secs(
                "AERIE_COLLECTOR_MAX_AD_LIFETIME",
                d.max_ad_lifetime,
                1,
                3650 * day,
            )?,
            max_offline_ads: count("AERIE_COLLECTOR_MAX_OFFLINE_ADS", d.max_offline_ads)?,
            max_offline_ads_per_host: count(
                "AERIE_COLLECTOR_MAX_OFFLINE_ADS_PER_HOST",
                d.max_offline_ads_per_host,
            )?,
            max_tombstones: count("AERIE_COLLECTOR_MAX_TOMBSTONES", d.max_tombstones)?,
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

/// A matching ad as a query shows it: the public part only (private attributes are split off
/// on the way in and never reach this), and the `LastHeardFrom` the collector adds.
#[derive(Clone, Debug)]
pub struct Shown {
    /// The stored public ad, shared with the table (not a copy).
    pub ad: ClassAd,
    /// When this CM last heard of the ad (Unix seconds), shown as `LastHeardFrom`.
    pub last_heard_from: i64,
}

/// One stored ad: its public and private parts and the bookkeeping the rules need.
#[derive(Clone, Debug)]
struct Entry {
    /// The public part of the ad as the node sent it (plus `Absent = true` once absent):
    /// what queries see and constraints are evaluated on.
    ad: ClassAd,
    /// The private attributes (claim capabilities...), kept apart so no query can return
    /// them or probe them with a constraint; `None` when the ad had none.
    private: Option<ClassAd>,
    /// Who received the last update, when and in which order (last writer wins between CMs;
    /// `version.time` is the origin CM's clock, used only for ordering).
    version: Version,
    /// When this CM last heard of the ad, by its own clock (an update here, or a relayed one
    /// minus its age): what expires it and what `LastHeardFrom` shows. Clocks of different
    /// CMs are never compared, so a CM whose clock is off expires ads as the others do.
    heard: i64,
    /// Seconds this ad lives without an update.
    lifetime: i64,
    /// When it became absent (or was stored offline): hidden from plain queries since.
    absent_since: Option<i64>,
    /// The ad says `Offline = true` (a powered-down machine kept for matchmaking tools).
    offline: bool,
    /// A hidden ad mirrored from the replicated state (not one this CM found itself, which
    /// the leader still has to commit).
    replicated: bool,
    /// Hash of the text of the last update, when it came as text and is live.
    text_hash: Option<u64>,
}

impl Entry {
    /// When this CM last heard of the ad (what `LastHeardFrom` shows).
    fn updated(&self) -> i64 {
        self.heard
    }

    /// Whether peers' collectors compare and repair this ad by digest: a live ad, or an
    /// offline ad the leader has not committed yet. Once committed, Raft carries hidden ads;
    /// before that, an offline ad whose relay was lost (sent before this CM knew its peers,
    /// or dropped from a full queue) would reach the leader no other way.
    pub(super) fn in_digest(&self) -> bool {
        self.absent_since.is_none() || (self.offline && !self.replicated)
    }
}

/// A hidden ad (absent or offline) held by the table, as the Raft layer sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HiddenAd {
    /// The ad.
    pub key: AdKey,
    /// Stored offline (`Offline = true`) rather than absent.
    pub offline: bool,
    /// Mirrored from the replicated state (else found by this CM, not yet committed).
    pub replicated: bool,
    /// When it became absent / was stored offline.
    pub since: i64,
    /// The public ad in old syntax (with `Absent = true` when absent).
    pub text: String,
}

/// A replicated absent/offline ad to mirror into the table.
#[derive(Clone, Debug)]
pub struct ReplicatedAd<'a> {
    /// The bucket it is stored in (`PoolState.ads`).
    pub bucket: &'a str,
    /// Its record name there.
    pub name: &'a str,
    /// The ad as committed (a [`HiddenAd`]'s text).
    pub text: &'a str,
    /// When it became absent / was stored offline.
    pub time: i64,
    /// An offline ad (else an absent one).
    pub offline: bool,
}

/// The live ads of the pool.
#[derive(Debug, Default)]
pub struct AdTable {
    params: CollectorParams,
    /// Keys are shared with `by_text` (one allocation per ad for both).
    ads: BTreeMap<Arc<AdKey>, Entry>,
    /// Hash of the exact text of each live ad's last update -> its key. Most updates repeat
    /// the previous text; this recognises them without parsing. The hasher is foldhash with
    /// a per-table random seed (several times faster than SipHash on 1-2 KB ads), so a sender
    /// cannot craft collisions without knowing the seed.
    by_text: HashMap<u64, Arc<AdKey>>,
    hasher: foldhash::fast::RandomState,
    /// Parsed attribute lines shared between ads: slot ads repeat most of their lines, so
    /// this saves both parsing and memory (the stored ads share the expressions).
    lines: classad::AttrCache,
    /// Invalidated keys and the version of the invalidation, so a relayed or digested older
    /// copy does not bring the ad back. Kept for twice `CLASSAD_LIFETIME`.
    tombstones: BTreeMap<AdKey, Version>,
    /// The replicated records mirrored into the table: (bucket, record name) -> the time
    /// stored and the ad's key, so an unchanged record is not parsed again every sweep.
    mirrored: HashMap<(String, String), (i64, AdKey)>,
    /// This CM's Raft id, stamped on the versions of updates it receives directly.
    origin_id: u64,
    /// Orders the updates this CM receives within one second.
    seq: u64,
    /// See [`AdTable::peer_synced`]: `None` until a relay expects a comparison with a peer
    /// (a table without peers is complete as it is), then when to stop waiting for one.
    sync_wait: Option<std::time::Instant>,
    /// The table was compared with a peer's (a digest exchange) since this CM started.
    synced_with_peer: bool,
}

/// The most evaluation steps one query's constraint may take over all the ads it looks at
/// (a typical constraint takes a few dozen per ad: 100,000 ads cost a few million; this is
/// about a second of work).
pub const QUERY_EVAL_BUDGET: u64 = 20_000_000;

/// The attribute a node uses to give its ad its own lifetime (HTCondor's `ClassAdLifetime`).
const LIFETIME_ATTR: &str = "ClassAdLifetime";

/// The attribute HTCondor's collector adds to every ad: the time of its last update.
const LAST_HEARD_FROM: &str = "LastHeardFrom";

/// The ad as queries see it: the stored public part plus `LastHeardFrom`.
fn stamp(e: &Entry) -> ClassAd {
    let mut ad = e.ad.clone();
    ad.insert_int(LAST_HEARD_FROM, e.updated());
    ad
}

impl AdTable {
    /// An empty table with these knobs and origin id 0.
    pub fn new(params: CollectorParams) -> Self {
        AdTable {
            params,
            ..AdTable::default()
        }
    }

    /// The knobs the table was made with.
    pub fn params(&self) -> &CollectorParams {
        &self.params
    }

    /// Number of ads held, absent ones included.
    pub fn len(&self) -> usize {
        self.ads.len()
    }

    /// No ads held, absent ones included.
    pub fn is_empty(&self) -> bool {
        self.ads.is_empty()
    }

    /// Number of absent (and offline) ads.
    pub fn absent_count(&self) -> usize {
        self.ads
            .values()
            .filter(|e| e.absent_since.is_some())
            .count()
    }

    /// Every ad held (public part), its key, and whether it is absent, in key order: what
    /// the metrics census counts.
    pub fn iter(&self) -> impl Iterator<Item = (&AdKey, &ClassAd, bool)> {
        self.ads
            .iter()
            .map(|(k, e)| (&**k, &e.ad, e.absent_since.is_some()))
    }

    /// The first entry of `ad_type` named `name` (whatever its address).
    fn first_by_name(&self, ad_type: &AdType, name: &str) -> Option<(&AdKey, &Entry)> {
        self.ads
            .range(AdKey::new(ad_type.clone(), name, "")..)
            .next()
            .filter(|(k, _)| k.ad_type == *ad_type && k.name == name)
            .map(|(k, e)| (&**k, e))
    }

    /// The stored ad of `ad_type` named `name` (the first one, if several daemons at
    /// different addresses use the same name).
    pub fn get(&self, ad_type: &AdType, name: &str) -> Option<&ClassAd> {
        self.first_by_name(ad_type, name).map(|(_, e)| &e.ad)
    }

    /// The stored ad under exactly `key`.
    pub fn get_key(&self, key: &AdKey) -> Option<&ClassAd> {
        self.ads.get(key).map(|e| &e.ad)
    }

    /// Whether the ad of `ad_type` named `name` is absent.
    pub fn is_absent(&self, ad_type: &AdType, name: &str) -> bool {
        self.first_by_name(ad_type, name)
            .is_some_and(|(_, e)| e.absent_since.is_some())
    }

    /// Parses and stores one ad sent as text (old or new syntax). The size limit is checked
    /// before parsing, so an oversized ad costs nothing.
    pub fn advertise_text(&mut self, text: &str, now: i64) -> Result<(AdKey, Update), AdError> {
        self.advertise_text_as(text, now, &Sender::Unbound)
    }

    /// [`AdTable::advertise_text`] for a caller bound to its own ads ([`Sender`]): an ad the
    /// sender may not send is refused, naming the attribute that does not match, whether it
    /// parses anew or repeats a stored ad word for word.
    pub fn advertise_text_as(
        &mut self,
        text: &str,
        now: i64,
        sender: &Sender,
    ) -> Result<(AdKey, Update), AdError> {
        let v = self.next_version(now);
        self.ingest_text(text, v, Source::Local { now }, sender)
            .and_then(|r| r.ok_or_else(|| not_stored(guess_name(text))))
    }

    fn ingest_text(
        &mut self,
        text: &str,
        version: Version,
        source: Source,
        sender: &Sender,
    ) -> Result<Option<(AdKey, Update)>, AdError> {
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
                    owned(sender, &e.ad, &key.name, true)?;
                    let Some(version) = source.refresh_version(version, e.version, e.lifetime)
                    else {
                        return Ok(None);
                    };
                    e.version = version;
                    e.heard = source.heard();
                    return Ok(Some((AdKey::clone(key), Update::Unchanged)));
                }
            }
        }
        let ad = parse_one_ad(text, &mut self.lines).map_err(|reason| AdError {
            ad: guess_name(text),
            attribute: None,
            reason,
        })?;
        owned(sender, &ad, &guess_name(text), true)?;
        self.store(ad, Some(h), version, source)
    }

    /// Validates and stores one ad. An ad identical to the stored one only refreshes its
    /// timestamp; an update for an absent ad replaces it (the machine is back).
    pub fn advertise(&mut self, ad: ClassAd, now: i64) -> Result<(AdKey, Update), AdError> {
        let v = self.next_version(now);
        let name = ad
            .eval_attr("Name")
            .as_str()
            .unwrap_or("<no Name>")
            .to_string();
        self.store(ad, None, v, Source::Local { now })
            .and_then(|r| r.ok_or_else(|| not_stored(name)))
    }

    fn store(
        &mut self,
        mut ad: ClassAd,
        text_hash: Option<u64>,
        version: Version,
        source: Source,
    ) -> Result<Option<(AdKey, Update)>, AdError> {
        let key = validate(&ad)?;
        let literal_of = |attr: &str| {
            literal(&ad, attr).map_err(|reason| AdError {
                ad: key.name.clone(),
                attribute: Some(attr.into()),
                reason,
            })
        };
        let lifetime = match literal_of(LIFETIME_ATTR)? {
            Value::Int(n) if n > self.params.max_ad_lifetime => {
                return Err(AdError {
                    ad: key.name,
                    attribute: Some(LIFETIME_ATTR.into()),
                    reason: format!(
                        "{n} seconds is longer than this collector keeps an ad without an \
                         update ({} s, AERIE_COLLECTOR_MAX_AD_LIFETIME)",
                        self.params.max_ad_lifetime
                    ),
                })
            }
            Value::Int(n) if n > 0 => n,
            Value::Undefined => self.params.classad_lifetime,
            Value::Int(_) => self.params.classad_lifetime,
            other => {
                return Err(AdError {
                    ad: key.name,
                    attribute: Some(LIFETIME_ATTR.into()),
                    reason: format!(
                        "must be an integer number of seconds, not {}",
                        describe(&other)
                    ),
                })
            }
        };
        let version = match source {
            Source::Relayed { .. } => {
                if !self.relayed_wins(&key, &ad, version, lifetime, source) {
                    return Ok(None);
                }
                version
            }
            Source::Local { .. } => self.local_version(&key, version),
        };
        let offline = matches!(literal_of("Offline")?, Value::Bool(true));
        if offline {
            self.check_offline_quota(&key)?;
        }
        self.tombstones.remove(&key);
        let private = split_private(&mut ad);
        ad.shrink_to_fit();
        let hidden_since = offline.then_some(version.time);
        let text_hash = if offline { None } else { text_hash };
        if let Some(old) = self.ads.get(&key).and_then(|e| e.text_hash) {
            self.by_text.remove(&old);
        }
        let shared = match self.ads.get_key_value(&key) {
            Some((k, _)) => k.clone(),
            None => Arc::new(key.clone()),
        };
        if let Some(h) = text_hash {
            self.by_text.insert(h, shared.clone());
        }
        let fresh = Entry {
            ad,
            private,
            version,
            heard: source.heard(),
            lifetime,
            absent_since: hidden_since,
            offline,
            replicated: false,
            text_hash,
        };
        let outcome = match self.ads.get_mut(&key) {
            Some(e) if e.absent_since.is_some() && !e.offline => {
                *e = fresh;
                Update::ReplacedAbsent
            }
            Some(e) => {
                let same = e.ad == fresh.ad && e.private == fresh.private;
                *e = fresh;
                if same {
                    Update::Unchanged
                } else {
                    Update::Changed
                }
            }
            None => {
                self.ads.insert(shared, fresh);
                Update::New
            }
        };
        Ok(Some((key, outcome)))
    }

    /// A daemon asks for its ad of `ad_type` named `name` to go away now. With
    /// `EXPIRE_INVALIDATED_ADS` the ad is treated as expired instead (so a slot may become
    /// absent). Returns whether an ad was there. `host` is the daemon's host (see
    /// [`AdTable::invalidate_name`]).
    pub fn invalidate(&mut self, ad_type: &AdType, name: &str, host: &str, now: i64) -> bool {
        !self.invalidate_name(ad_type, name, host, now).is_empty()
    }

    /// [`AdTable::invalidate`], returning what to relay: one invalidation per key removed.
    /// Only the ad of that name at `host` goes, so one machine cannot remove another's ad of
    /// the same name; an empty `host` removes every ad of that name (an operator's choice).
    pub fn invalidate_name(
        &mut self,
        ad_type: &AdType,
        name: &str,
        host: &str,
        now: i64,
    ) -> Vec<RelayItem> {
        self.invalidate_name_as(ad_type, name, host, now, &Sender::Unbound)
            .unwrap_or_default()
    }

    /// [`AdTable::invalidate_name`] for a caller bound to its own ads: when any ad it would
    /// remove belongs to another daemon, nothing is removed and the refusal says whose it is.
    pub fn invalidate_name_as(
        &mut self,
        ad_type: &AdType,
        name: &str,
        host: &str,
        now: i64,
        sender: &Sender,
    ) -> Result<Vec<RelayItem>, AdError> {
        let keys: Vec<AdKey> = self
            .ads
            .range(AdKey::new(ad_type.clone(), name, "")..)
            .take_while(|(k, _)| k.ad_type == *ad_type && k.name == name)
            .filter(|(k, _)| host.is_empty() || k.host() == host)
            .map(|(k, _)| AdKey::clone(k))
            .collect();
        for key in &keys {
            if let Some(e) = self.ads.get(key) {
                owned(sender, &e.ad, &key.name, false)?;
            }
        }
        let mut out = Vec::new();
        for key in keys {
            let mut v = self.next_version(now);
            if let Some(e) = self.ads.get(&key) {
                v.time = v.time.max(e.version.time);
            }
            if self.invalidate_key(&key, v, Source::Local { now }) {
                out.push(RelayItem {
                    key,
                    version: v,
                    heard: now,
                    text: None,
                });
            }
        }
        Ok(out)
    }

    fn invalidate_key(&mut self, key: &AdKey, version: Version, source: Source) -> bool {
        let Some(e) = self.ads.get(key) else {
            if matches!(source, Source::Relayed { .. }) {
                self.bury(key, version);
            }
            return false;
        };
        if e.absent_since.is_some() {
            // Absent and offline ads belong to the replicated state, not to invalidations.
            return matches!(source, Source::Local { .. });
        }
        if matches!(source, Source::Relayed { .. }) && version <= e.version {
            return false;
        }
        let absent = self.params.expire_invalidated_ads && self.becomes_absent(&key.ad_type, &e.ad);
        if absent {
            self.mark_absent(key, version.time);
        } else {
            self.remove(key);
        }
        self.bury(key, version);
        true
    }

    /// Drops or turns absent every ad whose time is up at `now`: a live ad not updated for
    /// more than its lifetime, an absent ad older than `ABSENT_EXPIRE_ADS_AFTER` (never when
    /// that is 0). Old tombstones go too.
    pub fn expire(&mut self, now: i64) -> ExpiryReport {
        let mut report = ExpiryReport::default();
        let expire_after = self.params.absent_expire_ads_after;
        let due: Vec<AdKey> = self
            .ads
            .iter()
            .filter(|(_, e)| match e.absent_since {
                Some(since) => expire_after > 0 && now.saturating_sub(since) > expire_after,
                None => now.saturating_sub(e.updated()) > e.lifetime,
            })
            .map(|(k, _)| AdKey::clone(k))
            .collect();
        for key in due {
            let Some(e) = self.ads.get(&key) else {
                continue;
            };
            if e.absent_since.is_none() && self.becomes_absent(&key.ad_type, &e.ad) {
                self.mark_absent(&key, now);
                report.made_absent.push(key);
            } else {
                self.remove(&key);
                report.removed.push(key);
            }
        }
        self.expire_tombstones(now);
        report
    }

    /// Ads matching `q`, projected, in key order, each with `LastHeardFrom` (its last
    /// update time) as HTCondor's collector adds it. An ad whose constraint would take more
    /// than [`classad::MAX_EVAL_STEPS`] to evaluate does not match; the whole query stops
    /// (with what it found) once the constraint has cost [`QUERY_EVAL_BUDGET`].
    pub fn query(&self, q: &Query) -> Vec<ClassAd> {
        self.query_keyed(q).into_iter().map(|(_, ad)| ad).collect()
    }

    /// [`AdTable::query`] with each ad's key, for callers that come back for the private part
    /// of exactly that ad ([`AdTable::private_attrs_of`]).
    pub fn query_keyed(&self, q: &Query) -> Vec<(AdKey, ClassAd)> {
        match self.query_within(q, QUERY_EVAL_BUDGET) {
            Ok(v) | Err((v, _)) => v,
        }
    }

    /// [`AdTable::query`], refused once evaluating the constraint has cost more than
    /// `budget` steps: a query runs under the table's read lock, which updates wait for, so
    /// one hostile constraint must not hold it for long. The error carries what was found.
    pub fn try_query(&self, q: &Query, budget: u64) -> Result<Vec<ClassAd>, classad::EvalLimit> {
        self.query_within(q, budget)
            .map(|v| v.into_iter().map(|(_, ad)| ad).collect())
            .map_err(|(_, e)| e)
    }

    /// The public ads matching `q` (its projection ignored), each with its `LastHeardFrom`,
    /// in key order, for a caller that renders them after the read lock is released
    /// ([`crate::collector::text`]): taking an ad costs one reference count, not a copy.
    /// A constraint over a large pool is evaluated on `threads` threads, each over its own
    /// slice of the ads in order and with its share of `budget` (refused as
    /// [`AdTable::try_query`] is once a slice has cost more than its share).
    pub fn try_query_shown(
        &self,
        q: &Query,
        budget: u64,
        threads: usize,
    ) -> Result<Vec<Shown>, classad::EvalLimit> {
        /// Below this many ads a constraint is evaluated on the caller's thread.
        const PARALLEL_FROM: usize = 4096;
        let shown = |e: &Entry| Shown {
            ad: e.ad.clone(),
            last_heard_from: e.updated(),
        };
        let entries: Vec<(&AdKey, &Entry)> = self.of_type(q).collect();
        if threads <= 1 || q.limit > 0 || q.constraint.is_none() || entries.len() < PARALLEL_FROM {
            let mut out = Vec::new();
            scan_entries(entries.into_iter(), q, budget, false, |_, e, _| {
                out.push(shown(e));
                !(q.limit > 0 && out.len() >= q.limit)
            })?;
            return Ok(out);
        }
        let share = budget / threads as u64;
        let parts: Vec<Result<Vec<Shown>, classad::EvalLimit>> = std::thread::scope(|scope| {
            let handles: Vec<_> = entries
                .chunks(entries.len().div_ceil(threads))
                .map(|part| {
                    scope.spawn(move || {
                        let mut out = Vec::new();
                        scan_entries(part.iter().copied(), q, share, false, |_, e, _| {
                            out.push(shown(e));
                            true
                        })?;
                        Ok(out)
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                .collect()
        });
        let mut out = Vec::with_capacity(parts.iter().flatten().map(Vec::len).sum());
        for p in parts {
            out.extend(p.map_err(|_| classad::EvalLimit { steps: budget })?);
        }
        Ok(out)
    }

    #[allow(clippy::type_complexity)]
    fn query_within(
        &self,
        q: &Query,
        budget: u64,
    ) -> Result<Vec<(AdKey, ClassAd)>, (Vec<(AdKey, ClassAd)>, classad::EvalLimit)> {
        let mut out = Vec::new();
        let scanned = self.scan(q, budget, false, |key, e, stamped| {
            let ad = if q.projection.is_empty() {
                stamped.unwrap_or_else(|| stamp(e))
            } else {
                let mut p = ClassAd::with_capacity(q.projection.len());
                for name in &q.projection {
                    if name.eq_ignore_ascii_case(LAST_HEARD_FROM) {
                        p.insert_int(name, e.updated());
                    } else if let Some(x) = e.ad.lookup(name) {
                        p.insert(name, x.clone());
                    }
                }
                p
            };
            out.push((key.clone(), ad));
            !(q.limit > 0 && out.len() >= q.limit)
        });
        match scanned {
            Ok(()) => Ok(out),
            Err(e) => Err((out, e)),
        }
    }

    /// Calls `f` with every ad of `q`'s type matching its constraint (absent ads only when
    /// asked for or mentioned), in key order, until `f` returns false. `f` also gets the ad
    /// stamped with `LastHeardFrom` when the constraint needed it (or `stamp` asks for it).
    /// Fails once evaluating the constraint has cost more than `budget` steps.
    fn scan(
        &self,
        q: &Query,
        budget: u64,
        stamp_always: bool,
        f: impl FnMut(&AdKey, &Entry, Option<ClassAd>) -> bool,
    ) -> Result<(), classad::EvalLimit> {
        scan_entries(self.of_type(q), q, budget, stamp_always, f)
    }

    /// The ads of `q`'s type (every ad without one), in key order.
    fn of_type<'a>(
        &'a self,
        q: &'a Query,
    ) -> Box<dyn Iterator<Item = (&'a AdKey, &'a Entry)> + 'a> {
        match &q.ad_type {
            Some(t) => Box::new(
                self.ads
                    .range(AdKey::new(t.clone(), "", "")..)
                    .take_while(move |(k, _)| &k.ad_type == t)
                    .map(|(k, e)| (&**k, e)),
            ),
            None => Box::new(self.ads.iter().map(|(k, e)| (&**k, e))),
        }
    }

    /// The absent and offline ads held, for the Raft layer to commit.
    pub fn hidden(&self) -> Vec<HiddenAd> {
        self.ads
            .iter()
            .filter_map(|(k, e)| {
                e.absent_since.map(|since| HiddenAd {
                    key: AdKey::clone(k),
                    offline: e.offline,
                    replicated: e.replicated,
                    since,
                    text: e.ad.to_old_syntax(),
                })
            })
            .collect()
    }

    /// The key of the replicated record `name` of `bucket`, once it has been mirrored.
    pub fn mirrored_key(&self, bucket: &str, name: &str) -> Option<&AdKey> {
        self.mirrored
            .get(&(bucket.to_string(), name.to_string()))
            .map(|(_, k)| k)
    }

    /// The live ad under `key` and its last update time, if live.
    pub fn live_updated(&self, key: &AdKey) -> Option<i64> {
        self.ads
            .get(key)
            .filter(|e| e.absent_since.is_none())
            .map(|e| e.updated())
    }

    /// Makes the table's hidden ads agree with the replicated ones: each replicated ad is
    /// held (unless a live update for its key is at least as new: the machine is back), and
    /// a hidden ad that was committed and is no longer is dropped (the leader removed it). A
    /// hidden ad found here that was never committed waits for the leader however long that
    /// takes (an election, a partition), instead of being forgotten. Returns the keys of
    /// replicated ads that could not be read back (bad text), for the log.
    pub fn sync_replicated(&mut self, replicated: &[ReplicatedAd<'_>]) -> Vec<String> {
        let mut bad = Vec::new();
        let mut keep = std::collections::HashSet::new();
        let mut seen = std::collections::HashSet::new();
        for r in replicated {
            let id = (r.bucket.to_string(), r.name.to_string());
            // An unchanged record already mirrored: nothing to parse.
            if let Some((time, key)) = self.mirrored.get(&id) {
                let held = self.ads.get(key).is_some_and(|e| {
                    e.replicated && e.absent_since == Some(r.time) && e.offline == r.offline
                });
                if *time == r.time && held {
                    keep.insert(key.clone());
                    seen.insert(id);
                    continue;
                }
            }
            let mut ad = match parse_one_ad(r.text, &mut self.lines) {
                Ok(a) => a,
                Err(e) => {
                    bad.push(e);
                    continue;
                }
            };
            let key = match validate(&ad) {
                Ok(k) => k,
                Err(e) => {
                    bad.push(e.to_string());
                    continue;
                }
            };
            keep.insert(key.clone());
            self.mirrored.insert(id.clone(), (r.time, key.clone()));
            seen.insert(id);
            match self.ads.get(&key) {
                Some(e) if e.absent_since.is_none() && e.updated() >= r.time => continue,
                _ => {}
            }
            if let Some(e) = self.ads.get_mut(&key) {
                if e.absent_since == Some(r.time) && e.offline == r.offline {
                    e.replicated = true;
                    continue;
                }
            }
            let private = split_private(&mut ad);
            if !r.offline {
                ad.insert_bool("Absent", true);
            }
            if let Some(old) = self.ads.get(&key).and_then(|e| e.text_hash) {
                self.by_text.remove(&old);
            }
            let lifetime = self.params.classad_lifetime;
            self.ads.insert(
                Arc::new(key),
                Entry {
                    ad,
                    private,
                    version: Version {
                        time: r.time,
                        ..Version::default()
                    },
                    heard: r.time,
                    lifetime,
                    absent_since: Some(r.time),
                    offline: r.offline,
                    replicated: true,
                    text_hash: None,
                },
            );
        }
        self.mirrored.retain(|id, _| seen.contains(id));
        let stale: Vec<AdKey> = self
            .ads
            .iter()
            .filter(|(k, e)| e.absent_since.is_some() && e.replicated && !keep.contains(&**k))
            .map(|(k, _)| AdKey::clone(k))
            .collect();
        for k in stale {
            self.remove(&k);
        }
        bad
    }

    /// Refuses a new offline ad beyond the quotas (a refresh of one already held passes).
    fn check_offline_quota(&self, key: &AdKey) -> Result<(), AdError> {
        if self.ads.get(key).is_some_and(|e| e.offline) {
            return Ok(());
        }
        let (mut all, mut same_host) = (0, 0);
        for (k, e) in &self.ads {
            if e.offline {
                all += 1;
                same_host += usize::from(k.host() == key.host());
            }
        }
        let refuse = |why: String| AdError {
            ad: key.name.clone(),
            attribute: Some("Offline".into()),
            reason: why,
        };
        if all >= self.params.max_offline_ads {
            return Err(refuse(format!(
                "this collector holds {all} offline ads already, its bound \
                 (AERIE_COLLECTOR_MAX_OFFLINE_ADS)"
            )));
        }
        if same_host >= self.params.max_offline_ads_per_host {
            return Err(refuse(format!(
                "host {:?} has {same_host} offline ads already, its bound \
                 (AERIE_COLLECTOR_MAX_OFFLINE_ADS_PER_HOST)",
                key.host()
            )));
        }
        Ok(())
    }

    /// Drops a hidden ad (the leader removed it from the replicated state).
    pub fn drop_hidden(&mut self, key: &AdKey) {
        if self.ads.get(key).is_some_and(|e| e.absent_since.is_some()) {
            self.remove(key);
        }
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
            e.replicated = false;
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

/// Local updates are never judged stale (only relayed copies are); should that rule ever
/// break, the sender gets this error rather than the daemon a panic.
/// The sender's binding applied to one ad, as the table's refusal.
fn owned(sender: &Sender, ad: &ClassAd, name: &str, check_addr: bool) -> Result<(), AdError> {
    sender.may_send(ad, check_addr).map_err(|n| AdError {
        ad: name.to_string(),
        attribute: Some(n.attribute),
        reason: n.reason,
    })
}

fn not_stored(ad: String) -> AdError {
    AdError {
        ad,
        attribute: None,
        reason: "was not stored: an equal or newer copy is held (internal error, please report)"
            .into(),
    }
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

#[cfg(test)]
mod tests;

#[cfg(test)]
mod key_tests;

#[cfg(test)]
mod private_tests;

#[cfg(test)]
mod sync_tests;

#[cfg(test)]
mod totals_tests;

/// [`AdTable::scan`] over `entries`: calls `f` with every ad matching `q`'s constraint
/// (absent ads only when asked for or mentioned), in their order, until `f` returns false.
fn scan_entries<'a>(
    entries: impl Iterator<Item = (&'a AdKey, &'a Entry)>,
    q: &Query,
    budget: u64,
    stamp_always: bool,
    mut f: impl FnMut(&AdKey, &Entry, Option<ClassAd>) -> bool,
) -> Result<(), classad::EvalLimit> {
    let mut left = budget;
    let refs = q.constraint.as_ref().map(|c| c.references());
    let want_absent = q.absent
        || refs
            .as_ref()
            .is_some_and(|r| r.internal.contains("absent") || r.internal.contains("offline"));
    // Stamping LastHeardFrom copies the ad, so do it before evaluating only when the
    // constraint needs it.
    let stamp_first = stamp_always
        || refs
            .as_ref()
            .is_some_and(|r| r.internal.contains("lastheardfrom"));
    for (key, e) in entries {
        if e.absent_since.is_some() && !want_absent {
            continue;
        }
        let stamped = stamp_first.then(|| stamp(e));
        if let Some(c) = &q.constraint {
            match stamped
                .as_ref()
                .unwrap_or(&e.ad)
                .eval_expr_budget(c, None, &mut left)
            {
                Ok(v) if v.is_true() => {}
                Ok(_) => continue,
                Err(_) if left == 0 => return Err(classad::EvalLimit { steps: budget }),
                // Too expensive for this ad alone: it does not match.
                Err(_) => continue,
            }
        }
        if !f(key, e, stamped) {
            break;
        }
    }
    Ok(())
}
