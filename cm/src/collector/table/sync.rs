//! Keeping the CMs' tables in step: the [`Version`] each ad is stored under, last-writer-wins
//! between a held copy and a relayed one, tombstones for invalidated ads, the [`RelayItem`]s
//! the relay sends, and the periodic digest ([`DigestEntry`], [`DigestDiff`]) that repairs
//! what the relay lost.
//!
//! Split out because these rules are about agreement between CMs, not about one table: a
//! table with one CM never relays, yet every update it stores passes through the version
//! rules here ([`Source::refresh_version`], [`AdTable::relayed_wins`],
//! [`AdTable::local_version`]). The table decides what an update does to the stored ad; this
//! module decides whether it may, and under which version. Absent and offline ads are not
//! synchronised here: Raft replicates them (see `AdTable::sync_replicated`).
use super::{AdError, AdKey, AdTable, Update};
use classad::ClassAd;

/// The version of an ad's state, for last-writer-wins between CMs: the time the ad was
/// received by the CM a node sent it to (its origin), a per-origin sequence number that
/// orders updates received in the same second, and the origin's Raft id (the final
/// tie-break). Ordered lexicographically in that order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Version {
    /// When the origin CM received the update (Unix seconds).
    pub time: i64,
    /// The origin's sequence number, ordering its updates within one second.
    pub seq: u64,
    /// The origin CM's Raft id (0 for a version read back from the replicated state).
    pub origin: u64,
}

/// One change to hand to the other CMs: an ad's whole text (public and private attributes),
/// or its invalidation (`text == None`), with the version it was stored under.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RelayItem {
    /// The ad changed.
    pub key: AdKey,
    /// The version the change was stored under.
    pub version: Version,
    /// When this CM last heard of the ad, by its own clock: the relay sends the ad's age
    /// (now minus this), never this time, so CMs whose clocks disagree expire it alike.
    pub heard: i64,
    /// The whole ad in old syntax, or `None` for an invalidation. Shared: every peer's
    /// queue holds the same text, copied only into the message that carries it.
    pub text: Option<std::sync::Arc<str>>,
}

/// What a CM holds for one key, as a digest line: the version and whether it is a deletion.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DigestEntry {
    /// The ad.
    pub key: AdKey,
    /// The version of the live ad or of its invalidation.
    pub version: Version,
    /// The line is a tombstone (the ad was invalidated).
    pub deleted: bool,
}

/// The answer to a peer's digest: what this table holds newer (or the peer lacks), and the
/// keys for which the peer's version is newer (it should send them).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DigestDiff {
    /// What to send the peer: ads (or invalidations) newer here, and live ads it lacks.
    pub newer: Vec<RelayItem>,
    /// The keys the peer holds newer, or holds live and this table lacks: it should send
    /// them here. In key order.
    pub wanted: Vec<AdKey>,
    /// `Some(k)` when the reply was cut at its size cap: it is complete only for the keys up
    /// to `k`, and the peer should ask again for the rest of its page after `k`.
    pub covered: Option<AdKey>,
}

/// How a store treats versions: a CM's own updates always win locally; relayed ones only
/// when newer than what is held.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Source {
    /// Sent to this CM by a node (or a local call), at `now` by this CM's clock.
    Local { now: i64 },
    /// Relayed by another CM, received at `now` (this CM's clock), `age` seconds after the
    /// CM the node sent it to last heard of it (clocks are never compared).
    Relayed { now: i64, age: i64 },
}

impl Source {
    /// When, by this CM's clock, the ad was last heard of: what expires it here.
    pub(super) fn heard(self) -> i64 {
        match self {
            Source::Local { now } => now,
            Source::Relayed { now, age } => now.saturating_sub(age.max(0)),
        }
    }

    /// How old the update is (0 for a local one).
    fn age(self) -> i64 {
        match self {
            Source::Local { .. } => 0,
            Source::Relayed { age, .. } => age.max(0),
        }
    }

    /// Last writer wins for an unchanged text over the live copy held (its version `held`,
    /// its lifetime `lifetime`): the version to store the refresh under, or `None` when a
    /// relayed copy is not newer than `held` or had already expired at its origin by `now`.
    /// A local refresh always wins, and is never older than `held`: a CM whose clock is
    /// behind the one that sent the held copy still orders the node's newer update after it.
    #[inline]
    pub(super) fn refresh_version(
        self,
        version: Version,
        held: Version,
        lifetime: i64,
    ) -> Option<Version> {
        match self {
            Source::Relayed { .. } => (version > held && self.age() <= lifetime).then_some(version),
            Source::Local { .. } => Some(Version {
                time: version.time.max(held.time),
                ..version
            }),
        }
    }
}

impl AdTable {
    /// Sets the Raft id stamped on the versions of directly received updates.
    pub fn set_origin_id(&mut self, id: u64) {
        self.origin_id = id;
    }

    /// The Raft id stamped on the versions of directly received updates.
    pub fn origin_id(&self) -> u64 {
        self.origin_id
    }

    /// A relay will compare this table with its peers'; until one comparison is done, or
    /// `until` passes, the table is not [`AdTable::peer_synced`].
    pub fn expect_peer_sync(&mut self, until: std::time::Instant) {
        self.sync_wait = Some(until);
    }

    /// A comparison with a peer's table (a digest exchange) completed, or there is no peer.
    pub fn mark_peer_synced(&mut self) {
        self.synced_with_peer = true;
    }

    /// Whether the table holds the pool as the other CMs know it, as far as this CM can
    /// tell: it was compared with a peer's since this CM started, it has no peers, or the
    /// wait for one is over. A restarted CM starts empty and hears most nodes again only
    /// at their next update (minutes); a leader negotiating and charging usage from such a
    /// table would see a fraction of the pool and charge its users almost nothing.
    pub fn peer_synced(&self, now: std::time::Instant) -> bool {
        self.synced_with_peer || self.sync_wait.is_none_or(|until| now >= until)
    }

    /// The version an ad is stored under.
    pub fn version_of(&self, key: &AdKey) -> Option<Version> {
        self.ads.get(key).map(|e| e.version)
    }

    /// The version of the next update this CM receives directly, at `now`.
    pub(super) fn next_version(&mut self, now: i64) -> Version {
        self.seq = self.seq.saturating_add(1);
        Version {
            time: now,
            seq: self.seq,
            origin: self.origin_id,
        }
    }

    /// Lamport rule: this CM's next sequence number is above any it has seen, so a change
    /// made here after seeing another CM's (in the same second) is ordered after it.
    fn witness(&mut self, v: Version) {
        self.seq = self.seq.max(v.seq);
    }

    /// Last writer wins for a relayed copy of the ad under `key` (parsed: `ad`, living
    /// `lifetime` seconds): whether to store it. Not when the key's tombstone or live ad is
    /// as new, nor when it is older than the absent ad held, nor when it had already expired
    /// at its origin by `now` unless it is a slot that becomes absent (the next sweep here
    /// makes it absent, so the leader learns of it even when the relay was slower than the
    /// ad's lifetime).
    pub(super) fn relayed_wins(
        &self,
        key: &AdKey,
        ad: &ClassAd,
        version: Version,
        lifetime: i64,
        source: Source,
    ) -> bool {
        if source.age() > lifetime && !self.becomes_absent(&key.ad_type, ad) {
            return false;
        }
        if self.tombstones.get(key).is_some_and(|t| *t >= version) {
            return false;
        }
        match self.ads.get(key) {
            Some(e) if e.absent_since.is_some_and(|s| version.time < s) => false,
            Some(e) if e.absent_since.is_none() && version <= e.version => false,
            _ => true,
        }
    }

    /// The version a local update of `key` is stored under: `version`, never older than the
    /// copy held or the key's tombstone, whatever this CM's clock says (as in
    /// [`Source::refresh_version`]).
    pub(super) fn local_version(&self, key: &AdKey, mut version: Version) -> Version {
        if let Some(e) = self.ads.get(key) {
            version.time = version.time.max(e.version.time);
        }
        if let Some(t) = self.tombstones.get(key) {
            version.time = version.time.max(t.time);
        }
        version
    }

    /// How many invalidations are remembered.
    pub fn tombstone_count(&self) -> usize {
        self.tombstones.len()
    }

    /// Records that `key` was invalidated under `version` (the newest invalidation wins), so
    /// an older copy relayed or digested later does not bring the ad back.
    pub(super) fn bury(&mut self, key: &AdKey, version: Version) {
        let t = self.tombstones.entry(key.clone()).or_default();
        *t = (*t).max(version);
        if self.tombstones.len() > self.params.max_tombstones {
            self.forget_oldest_tombstones();
        }
    }

    /// Over the bound (a flood of invalidations, relayed ones for keys never held among
    /// them), forgets the oldest tenth of the tombstones at once, so the cost of the sort is
    /// shared by many invalidations.
    fn forget_oldest_tombstones(&mut self) {
        let mut times: Vec<Version> = self.tombstones.values().copied().collect();
        let last = times.len() - 1;
        let cut = (times.len() / 10 + (times.len() - self.params.max_tombstones)).min(last);
        times.select_nth_unstable(cut);
        let limit = times[cut];
        self.tombstones.retain(|_, v| *v > limit);
    }

    /// Forgets the tombstones older than twice `CLASSAD_LIFETIME` at `now`.
    pub(super) fn expire_tombstones(&mut self, now: i64) {
        let keep = 2 * self.params.classad_lifetime.max(1);
        self.tombstones
            .retain(|_, v| now.saturating_sub(v.time) <= keep);
    }

    /// Stores an ad another CM relayed, `age` seconds after that CM last heard of it, if its
    /// version is newer than what is held (last writer wins); `Ok(None)` when it is not (a
    /// duplicate or an older copy), or when it had already expired.
    pub fn apply_relayed_aged(
        &mut self,
        text: &str,
        version: Version,
        age: i64,
        now: i64,
    ) -> Result<Option<(AdKey, Update)>, AdError> {
        self.witness(version);
        self.ingest_text(
            text,
            version,
            Source::Relayed { now, age },
            &super::Sender::Unbound,
        )
    }

    /// [`AdTable::apply_relayed_aged`] for a sender whose clock agrees with this CM's (the
    /// age is `now` minus the version's time).
    pub fn apply_relayed_text(
        &mut self,
        text: &str,
        version: Version,
        now: i64,
    ) -> Result<Option<(AdKey, Update)>, AdError> {
        self.apply_relayed_aged(text, version, now.saturating_sub(version.time), now)
    }

    /// Applies an invalidation relayed by another CM, if newer than the ad held.
    pub fn apply_relayed_invalidate(&mut self, key: &AdKey, version: Version, now: i64) -> bool {
        self.witness(version);
        self.invalidate_key(key, version, Source::Relayed { now, age: 0 })
    }

    /// What to relay for `key`: the live ad's whole text (private attributes included, so
    /// the leader can hand out claims), or its invalidation; `None` for hidden or unknown ads.
    pub fn relay_item(&self, key: &AdKey) -> Option<RelayItem> {
        if let Some(e) = self.ads.get(key) {
            if !e.in_digest() {
                return None;
            }
            return Some(RelayItem {
                key: key.clone(),
                version: e.version,
                heard: e.heard,
                text: Some(e.whole_text().into()),
            });
        }
        self.tombstones.get(key).map(|v| RelayItem {
            key: key.clone(),
            version: *v,
            heard: v.time,
            text: None,
        })
    }

    /// The (key, version) of every live ad and tombstone, for the periodic digest exchange,
    /// in key order (so it can be sent in pages of key ranges). Absent ads and committed
    /// offline ads are left out: Raft replicates those.
    pub fn digest(&self) -> Vec<DigestEntry> {
        let mut out: Vec<DigestEntry> = self
            .ads
            .iter()
            .filter(|(_, e)| e.in_digest())
            .map(|(k, e)| DigestEntry {
                key: AdKey::clone(k),
                version: e.version,
                deleted: false,
            })
            .chain(self.tombstones.iter().map(|(k, v)| DigestEntry {
                key: k.clone(),
                version: *v,
                deleted: true,
            }))
            .collect();
        // A key is either live or a tombstone, never both: a sort merges the two runs.
        out.sort_by(|a, b| a.key.cmp(&b.key));
        out
    }

    /// Compares a peer's whole digest with this table (last writer wins): what this table
    /// should send it (newer here, or missing there) and which keys it should send here.
    pub fn diff_digest(&self, theirs: &[DigestEntry]) -> DigestDiff {
        self.diff_digest_page(theirs, &DigestPage::default(), usize::MAX)
    }

    /// [`AdTable::diff_digest`] for one page of a peer's digest: only the keys inside
    /// `page` are compared, and the ads sent back stop once their text passes `max_bytes`
    /// (at least one is always sent, so a paging peer makes progress). When the reply is
    /// cut, [`DigestDiff::covered`] says up to which key it is complete; `wanted` is then cut
    /// at the same key, so the peer asks again from there without duplicates.
    pub fn diff_digest_page(
        &self,
        theirs: &[DigestEntry],
        page: &DigestPage,
        max_bytes: usize,
    ) -> DigestDiff {
        let mut newer: Vec<&AdKey> = Vec::new();
        let mut wanted: Vec<AdKey> = Vec::new();
        let mut seen = std::collections::HashSet::with_capacity(theirs.len());
        for d in theirs.iter().filter(|d| page.contains(&d.key)) {
            seen.insert(&d.key);
            let mine = match self.ads.get(&d.key) {
                Some(e) if e.in_digest() => Some(e.version),
                _ => self.tombstones.get(&d.key).copied(),
            };
            match mine {
                Some(v) if v > d.version => newer.push(&d.key),
                Some(v) if v == d.version => {}
                _ if d.deleted && mine.is_none() => {}
                _ => wanted.push(d.key.clone()),
            }
        }
        let lower = match &page.after {
            Some(k) => std::ops::Bound::Excluded(k),
            None => std::ops::Bound::Unbounded,
        };
        let upper = match &page.upto {
            Some(k) => std::ops::Bound::Included(k),
            None => std::ops::Bound::Unbounded,
        };
        for (k, _) in self
            .ads
            .range::<AdKey, _>((lower, upper))
            .filter(|(_, e)| e.in_digest())
        {
            if !seen.contains(&**k) {
                newer.push(k);
            }
        }
        newer.sort();
        newer.dedup();
        let mut diff = DigestDiff::default();
        let mut bytes = 0usize;
        for k in newer {
            if bytes >= max_bytes && !diff.newer.is_empty() {
                diff.covered = diff.newer.last().map(|i| i.key.clone());
                break;
            }
            if let Some(item) = self.relay_item(k) {
                bytes += item.text.as_deref().map_or(0, str::len) + k.name.len();
                diff.newer.push(item);
            }
        }
        wanted.sort();
        if let Some(c) = &diff.covered {
            wanted.retain(|k| k <= c);
        }
        diff.wanted = wanted;
        diff
    }
}

/// A page of a digest: the keys after `after` (exclusive) up to `upto` (inclusive); `None`
/// leaves that end open, so the default page is the whole key space.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DigestPage {
    /// The page starts after this key.
    pub after: Option<AdKey>,
    /// The page ends with this key.
    pub upto: Option<AdKey>,
}

impl DigestPage {
    /// Whether `key` falls inside the page.
    pub fn contains(&self, key: &AdKey) -> bool {
        self.after.as_ref().is_none_or(|a| key > a) && self.upto.as_ref().is_none_or(|u| key <= u)
    }
}
