//! Ad relay between CMs: every update a CM accepts from a node reaches every other CM, so any
//! CM answers any query and a newly elected leader already knows the pool.
//!
//! Per peer, a [`RelayQueue`] holds the changes not yet sent, one per ad key (a newer change
//! to the same ad replaces the queued one: deduplication), bounded (when a peer is down the
//! oldest changes are dropped and counted; the digest exchange repairs them). A worker per
//! peer sends batches every `AERIE_COLLECTOR_RELAY_INTERVAL` or as soon as
//! `AERIE_COLLECTOR_RELAY_BATCH` changes are queued, reconnecting with backoff, and every
//! `AERIE_COLLECTOR_DIGEST_INTERVAL` exchanges a digest of (key, version) with the peer so the
//! two views converge after a partition (last writer wins, see [`Version`]). Relayed changes
//! are never relayed again. Peers are the Raft membership minus this CM.
use super::service::{unix_now, SharedTable};
use super::{AdKey, AdType, DigestEntry, DigestPage, RelayItem, Version};
use crate::raft::{NodeId, Raft};
use aerie_proto::collector::{self as pb, collector_client::CollectorClient};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Notify;
use tonic::transport::Channel;

/// The relay's knobs.
#[derive(Clone, Debug)]
pub struct RelayParams {
    /// `AERIE_COLLECTOR_RELAY_INTERVAL`: how long changes wait to be batched.
    pub interval: Duration,
    /// `AERIE_COLLECTOR_RELAY_BATCH`: a batch is sent at once when this many are queued.
    pub batch: usize,
    /// `AERIE_COLLECTOR_RELAY_QUEUE`: changes held per peer before the oldest are dropped.
    pub queue_limit: usize,
    /// `AERIE_COLLECTOR_DIGEST_INTERVAL`: how often each peer gets a digest.
    pub digest_interval: Duration,
}

impl Default for RelayParams {
    fn default() -> Self {
        RelayParams {
            interval: Duration::from_millis(100),
            batch: 1000,
            queue_limit: 200_000,
            digest_interval: Duration::from_secs(10),
        }
    }
}

impl RelayParams {
    /// Reads the knobs (defaults when unset); a bad value is an error naming the knob.
    pub fn from_config(c: &aerie_config::Config) -> Result<Self, String> {
        let d = RelayParams::default();
        let knobs = crate::knob::Knobs::with_env(Some(c), |_| None);
        let dur = |name: &str, fallback: Duration| -> Result<Duration, String> {
            knobs
                .duration(
                    name,
                    None,
                    Duration::from_secs(1),
                    fallback,
                    Duration::from_millis(1),
                    Duration::from_secs(3600),
                )
                .map_err(|e| e.to_string())
        };
        let count = |name: &str, fallback: usize| -> Result<usize, String> {
            knobs
                .count(name, None, fallback as u64, 1, 100_000_000)
                .map(|n| n as usize)
                .map_err(|e| e.to_string())
        };
        Ok(RelayParams {
            interval: dur("AERIE_COLLECTOR_RELAY_INTERVAL", d.interval)?,
            batch: count("AERIE_COLLECTOR_RELAY_BATCH", d.batch)?,
            queue_limit: count("AERIE_COLLECTOR_RELAY_QUEUE", d.queue_limit)?,
            digest_interval: dur("AERIE_COLLECTOR_DIGEST_INTERVAL", d.digest_interval)?,
        })
    }
}

/// The changes waiting for one peer: at most one per key (the newest), oldest first,
/// bounded.
#[derive(Debug, Default)]
pub struct RelayQueue {
    limit: usize,
    next: u64,
    /// Queue position -> key.
    order: BTreeMap<u64, AdKey>,
    /// Key -> (position, change).
    items: HashMap<AdKey, (u64, RelayItem)>,
}

impl RelayQueue {
    /// An empty queue that holds at most `limit` items (at least 1).
    pub fn new(limit: usize) -> Self {
        RelayQueue {
            limit: limit.max(1),
            ..RelayQueue::default()
        }
    }

    /// Items waiting.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether nothing waits.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Queues a change; a queued change for the same key is replaced when this one is at
    /// least as new (it keeps its place, so a busy ad cannot starve the others). Returns how
    /// many changes were dropped to stay within the limit.
    pub fn push(&mut self, item: RelayItem) -> usize {
        if let Some((_, queued)) = self.items.get_mut(&item.key) {
            if item.version >= queued.version {
                *queued = item;
            }
            return 0;
        }
        let pos = self.next;
        self.next += 1;
        self.order.insert(pos, item.key.clone());
        self.items.insert(item.key.clone(), (pos, item));
        let mut dropped = 0;
        while self.items.len() > self.limit {
            match self.order.pop_first() {
                Some((_, k)) => {
                    self.items.remove(&k);
                    dropped += 1;
                }
                None => break,
            }
        }
        dropped
    }

    /// Takes up to `n` changes, oldest first.
    pub fn take(&mut self, n: usize) -> Vec<RelayItem> {
        let mut out = Vec::with_capacity(n.min(self.items.len()));
        while out.len() < n {
            let Some((_, k)) = self.order.pop_first() else {
                break;
            };
            if let Some((_, item)) = self.items.remove(&k) {
                out.push(item);
            }
        }
        // A backlog (a peer down, a pool's first load) grows the map to the pool's size, and
        // a map never gives memory back by itself: shrink it once the backlog has drained.
        if self.items.capacity() > 4 * self.items.len().max(1024) {
            self.items.shrink_to(2 * self.items.len());
        }
        out
    }

    /// Puts back changes a failed send took, unless a newer change for the key was queued
    /// meanwhile. Returns how many were dropped to stay within the limit.
    pub fn requeue(&mut self, items: Vec<RelayItem>) -> usize {
        items.into_iter().map(|i| self.push(i)).sum()
    }
}

// ---- conversions between the table's types and the wire ----

/// An ad key as the relay sends it.
pub fn key_to_pb(k: &AdKey) -> pb::AdKey {
    pb::AdKey {
        ad_type: k.ad_type.as_str().to_string(),
        name: k.name.clone(),
        addr: k.addr.clone(),
    }
}

/// An ad key as the relay received it.
pub fn key_from_pb(k: &pb::AdKey) -> AdKey {
    AdKey::new(AdType::parse(&k.ad_type), k.name.clone(), k.addr.clone())
}

fn version_to_pb(v: Version) -> pb::AdVersion {
    pb::AdVersion {
        time: v.time,
        seq: v.seq,
        origin: v.origin,
    }
}

fn version_from_pb(v: Option<&pb::AdVersion>) -> Version {
    v.map(|v| Version {
        time: v.time,
        seq: v.seq,
        origin: v.origin,
    })
    .unwrap_or_default()
}

/// A relay item as the relay sends it at `now` (no text: an invalidation), with its age.
pub fn item_to_pb(i: &RelayItem, now: i64) -> pb::RelayedAd {
    pb::RelayedAd {
        key: Some(key_to_pb(&i.key)),
        version: Some(version_to_pb(i.version)),
        text: i.text.as_deref().unwrap_or_default().to_owned(),
        invalidate: i.text.is_none(),
        age_seconds: now.saturating_sub(i.heard).max(0),
    }
}

/// Seconds since this CM heard the oldest of `items` (0 for none): how far behind a peer is
/// once it has acknowledged them, the relay lag.
pub fn oldest_age(items: &[RelayItem], now: i64) -> i64 {
    items
        .iter()
        .map(|i| now.saturating_sub(i.heard).max(0))
        .max()
        .unwrap_or(0)
}

/// A digest entry as sent.
pub fn digest_to_pb(d: &DigestEntry) -> pb::DigestEntry {
    pb::DigestEntry {
        key: Some(key_to_pb(&d.key)),
        version: Some(version_to_pb(d.version)),
        deleted: d.deleted,
    }
}

/// A digest entry as received; `None` without a key.
pub fn digest_from_pb(d: &pb::DigestEntry) -> Option<DigestEntry> {
    Some(DigestEntry {
        key: key_from_pb(d.key.as_ref()?),
        version: version_from_pb(d.version.as_ref()),
        deleted: d.deleted,
    })
}

/// Applies relayed changes to the table (never relaying them again), a slice of ads per hold
/// of the write lock so readers never wait for a whole batch.
pub fn apply_relayed(table: &SharedTable, ads: &[pb::RelayedAd]) -> pb::RelayReply {
    let now = unix_now();
    let mut reply = pb::RelayReply::default();
    for slice in ads.chunks(super::service::ADS_PER_LOCK) {
        let mut t = table.write().unwrap_or_else(|p| p.into_inner());
        for a in slice {
            let v = version_from_pb(a.version.as_ref());
            if a.invalidate {
                let Some(k) = a.key.as_ref() else {
                    reply.rejected += 1;
                    continue;
                };
                if t.apply_relayed_invalidate(&key_from_pb(k), v, now) {
                    reply.applied += 1;
                } else {
                    reply.stale += 1;
                }
                continue;
            }
            match t.apply_relayed_aged(&a.text, v, a.age_seconds, now) {
                Ok(Some(_)) => reply.applied += 1,
                Ok(None) => reply.stale += 1,
                Err(e) => {
                    reply.rejected += 1;
                    tracing::warn!(origin = v.origin, error = %e, "relayed ad refused");
                }
            }
        }
    }
    for (what, n) in [
        ("applied", reply.applied),
        ("stale", reply.stale),
        ("rejected", reply.rejected),
    ] {
        metrics::counter!("aerie_collector_relay_received_total", "outcome" => what)
            .increment(n as u64);
    }
    reply
}

/// One peer's queue and the worker draining it.
struct Peer {
    addr: String,
    queue: Arc<Mutex<RelayQueue>>,
    wake: Arc<Notify>,
    task: tokio::task::JoinHandle<()>,
}

/// The relay of one CM: the peers' queues, kept in step with the Raft membership.
pub struct Relay {
    id: NodeId,
    table: SharedTable,
    params: RelayParams,
    peers: Mutex<HashMap<NodeId, Peer>>,
}

impl Relay {
    /// The relay of CM `id`, sending what `table` accepts to the other CMs.
    pub fn new(id: NodeId, table: SharedTable, params: RelayParams) -> Arc<Self> {
        Arc::new(Relay {
            id,
            table,
            params,
            peers: Mutex::new(HashMap::new()),
        })
    }

    /// Queues changes this CM accepted from nodes for every peer.
    pub fn publish(&self, items: &[RelayItem]) {
        if items.is_empty() {
            return;
        }
        let peers = self.peers.lock().unwrap_or_else(|p| p.into_inner());
        for (id, p) in peers.iter() {
            let dropped: usize = {
                let mut q = p.queue.lock().unwrap_or_else(|p| p.into_inner());
                let d = items.iter().map(|i| q.push(i.clone())).sum();
                if q.len() >= self.params.batch {
                    p.wake.notify_one();
                }
                d
            };
            if dropped > 0 {
                metrics::counter!("aerie_collector_relay_dropped_total", "peer" => id.to_string())
                    .increment(dropped as u64);
            }
        }
    }

    /// Starts or stops peer workers so they match `members` (id -> address), this CM excluded.
    pub fn set_peers(self: &Arc<Self>, members: &BTreeMap<NodeId, String>) {
        if members.keys().all(|id| *id == self.id) && !members.is_empty() {
            // A cluster of one: its table is the whole pool's.
            self.table
                .write()
                .unwrap_or_else(|p| p.into_inner())
                .mark_peer_synced();
        }
        let mut peers = self.peers.lock().unwrap_or_else(|p| p.into_inner());
        peers.retain(|id, p| {
            let keep = members.get(id) == Some(&p.addr);
            if !keep {
                p.task.abort();
                tracing::info!(peer = id, "relay peer removed");
            }
            keep
        });
        for (id, addr) in members {
            if *id == self.id || peers.contains_key(id) {
                continue;
            }
            let queue = Arc::new(Mutex::new(RelayQueue::new(self.params.queue_limit)));
            let wake = Arc::new(Notify::new());
            let task = tokio::spawn(peer_worker(
                self.clone(),
                *id,
                addr.clone(),
                queue.clone(),
                wake.clone(),
            ));
            tracing::info!(peer = id, addr = %addr, "relay peer added");
            peers.insert(
                *id,
                Peer {
                    addr: addr.clone(),
                    queue,
                    wake,
                    task,
                },
            );
        }
    }

    /// Follows the Raft membership until the Raft instance stops.
    pub fn spawn_membership_watch(self: &Arc<Self>, raft: Raft) -> tokio::task::JoinHandle<()> {
        let relay = self.clone();
        tokio::spawn(async move {
            let mut rx = raft.metrics();
            let mut last = BTreeMap::new();
            loop {
                let members: BTreeMap<NodeId, String> = {
                    let m = rx.borrow_and_update();
                    m.membership_config
                        .membership()
                        .nodes()
                        .map(|(id, n)| (*id, n.addr.clone()))
                        .collect()
                };
                if members != last {
                    relay.set_peers(&members);
                    last = members;
                }
                if rx.changed().await.is_err() {
                    break;
                }
            }
        })
    }

    /// Stops every peer worker.
    pub fn shutdown(&self) {
        let mut peers = self.peers.lock().unwrap_or_else(|p| p.into_inner());
        for (_, p) in peers.drain() {
            p.task.abort();
        }
    }
}

fn client(addr: &str) -> Result<CollectorClient<Channel>, String> {
    let ch = aerie_security::transport::endpoint(addr, aerie_security::Role::Cm)
        .map_err(|e| format!("peer {addr}: {e}"))?
        .connect_timeout(Duration::from_secs(1))
        .timeout(Duration::from_secs(10))
        .connect_lazy();
    Ok(CollectorClient::new(ch)
        .max_decoding_message_size(aerie_security::transport::MAX_POOL_REPLY)
        .max_encoding_message_size(aerie_security::transport::MAX_POOL_REPLY))
}

/// Sends one peer its queued changes in batches and exchanges digests with it.
async fn peer_worker(
    relay: Arc<Relay>,
    peer: NodeId,
    addr: String,
    queue: Arc<Mutex<RelayQueue>>,
    wake: Arc<Notify>,
) {
    let label = peer.to_string();
    let mut c = match client(&addr) {
        Ok(c) => c,
        Err(e) => {
            tracing::warn!(peer, error = %e, "relay peer unusable");
            return;
        }
    };
    let p = relay.params.clone();
    let mut backoff = p.interval;
    // The first digest at once: a restarted CM's table is empty, and its peers hold the pool.
    let mut next_digest = tokio::time::Instant::now();
    loop {
        tokio::select! {
            _ = tokio::time::sleep(p.interval) => {},
            _ = wake.notified() => {},
        }
        let mut ok = true;
        let mut sent_any = false;
        loop {
            let items = queue
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .take(p.batch);
            if items.is_empty() {
                break;
            }
            let n = items.len();
            let sent_at = unix_now();
            let batch = pb::RelayBatch {
                from_id: relay.id,
                ads: items.iter().map(|i| item_to_pb(i, sent_at)).collect(),
            };
            match c.relay(batch).await {
                Ok(_) => {
                    sent_any = true;
                    metrics::gauge!("aerie_collector_relay_lag_seconds", "peer" => label.clone())
                        .set(oldest_age(&items, unix_now()) as f64);
                    metrics::counter!("aerie_collector_relay_sent_total", "peer" => label.clone())
                        .increment(n as u64);
                    metrics::counter!("aerie_collector_relay_batches_total", "peer" => label.clone())
                        .increment(1);
                }
                Err(e) => {
                    let dropped = queue
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .requeue(items);
                    metrics::counter!("aerie_collector_relay_errors_total", "peer" => label.clone())
                        .increment(1);
                    if dropped > 0 {
                        metrics::counter!("aerie_collector_relay_dropped_total", "peer" => label.clone())
                            .increment(dropped as u64);
                    }
                    tracing::debug!(peer, error = %e.message(), backoff_ms = backoff.as_millis() as u64, "relay send failed");
                    ok = false;
                    break;
                }
            }
        }
        let waiting = queue.lock().unwrap_or_else(|p| p.into_inner()).len();
        metrics::gauge!("aerie_collector_relay_queue_ads", "peer" => label.clone())
            .set(waiting as f64);
        if ok && !sent_any && waiting == 0 {
            // Nothing to relay: the peer is not behind (rather than keeping an old batch's lag).
            metrics::gauge!("aerie_collector_relay_lag_seconds", "peer" => label.clone()).set(0.0);
        }
        if ok && tokio::time::Instant::now() >= next_digest {
            next_digest = tokio::time::Instant::now() + p.digest_interval;
            match exchange_digest(&relay, &mut c).await {
                Ok((pulled, pushed)) => {
                    relay
                        .table
                        .write()
                        .unwrap_or_else(|p| p.into_inner())
                        .mark_peer_synced();
                    metrics::counter!("aerie_collector_relay_digests_total", "peer" => label.clone())
                        .increment(1);
                    metrics::counter!("aerie_collector_relay_repaired_total", "direction" => "pulled")
                        .increment(pulled as u64);
                    metrics::counter!("aerie_collector_relay_repaired_total", "direction" => "pushed")
                        .increment(pushed as u64);
                    if pulled + pushed > 0 {
                        tracing::info!(peer, pulled, pushed, "digest exchange repaired ads");
                    }
                }
                Err(e) => {
                    ok = false;
                    tracing::debug!(peer, error = %e, "digest exchange failed");
                }
            }
        }
        if ok {
            backoff = p.interval;
        } else {
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(Duration::from_secs(5));
        }
    }
}

/// Digest entries per request page: about 1.5 MB of keys and versions, well under the
/// message limit, so a pool of any size is compared in several requests.
pub const DIGEST_PAGE_ENTRIES: usize = 20_000;

/// Ad text per digest reply before it is cut (the peer asks again for the rest).
pub const DIGEST_REPLY_BYTES: usize = 4 << 20;
// A reply's ads, keys and framing must stay under what a peer accepts in one message.
const _: () = assert!(DIGEST_REPLY_BYTES * 3 / 2 < aerie_security::transport::MAX_MESSAGE);

/// Sends this table's digest to a peer, a page of keys at a time, stores what the peer holds
/// newer, and relays what it wants. Returns (ads pulled, ads pushed).
async fn exchange_digest(
    relay: &Relay,
    c: &mut CollectorClient<Channel>,
) -> Result<(usize, usize), String> {
    let digest: Vec<DigestEntry> = relay
        .table
        .read()
        .unwrap_or_else(|p| p.into_inner())
        .digest();
    let (mut pulled, mut pushed) = (0, 0);
    let mut after: Option<AdKey> = None;
    loop {
        let (request, page_end) =
            digest_page(relay.id, &digest, after.as_ref(), DIGEST_PAGE_ENTRIES);
        let reply = c
            .digest(request)
            .await
            .map_err(|e| e.message().to_string())?
            .into_inner();
        let table = relay.table.clone();
        let newer = reply.newer;
        pulled +=
            tokio::task::spawn_blocking(move || apply_relayed(&table, &newer).applied as usize)
                .await
                .map_err(|e| format!("applying the pulled ads failed: {e}"))?;
        let wanted: Vec<pb::RelayedAd> = {
            let t = relay.table.read().unwrap_or_else(|p| p.into_inner());
            reply
                .wanted
                .iter()
                .filter_map(|k| t.relay_item(&key_from_pb(k)))
                .map(|i| item_to_pb(&i, unix_now()))
                .collect()
        };
        pushed += wanted.len();
        for chunk in wanted.chunks(relay.params.batch.max(1)) {
            c.relay(pb::RelayBatch {
                from_id: relay.id,
                ads: chunk.to_vec(),
            })
            .await
            .map_err(|e| e.message().to_string())?;
        }
        match next_page(
            after.as_ref(),
            reply.covered.as_ref().map(key_from_pb),
            page_end,
        )? {
            Some(k) => after = Some(k),
            None => break,
        }
    }
    Ok((pulled, pushed))
}

/// Where the next digest page starts, after a reply to the page that started after `after`
/// and ended at `page_end`: a reply cut at its cap is complete up to `covered`, otherwise
/// the whole page was answered. `None`: the digest is done.
pub(crate) fn next_page(
    after: Option<&AdKey>,
    covered: Option<AdKey>,
    page_end: Option<AdKey>,
) -> Result<Option<AdKey>, String> {
    match covered {
        Some(k) if after.is_none_or(|a| &k > a) && page_end.as_ref().is_none_or(|e| &k <= e) => {
            Ok(Some(k))
        }
        Some(k) => Err(format!(
            "the peer's digest reply covers up to {k:?}, outside the page it was asked"
        )),
        None => Ok(page_end),
    }
}

/// The request for the page of `digest` (sorted by key) after `after`: at most `entries`
/// entries, and the page's last key when more follow (`None`: the page runs to the end of
/// the key space).
pub(crate) fn digest_page(
    from_id: NodeId,
    digest: &[DigestEntry],
    after: Option<&AdKey>,
    entries: usize,
) -> (pb::DigestRequest, Option<AdKey>) {
    let start = after.map_or(0, |a| digest.partition_point(|d| &d.key <= a));
    let rest = &digest[start..];
    let page = &rest[..rest.len().min(entries.max(1))];
    let upto = (page.len() < rest.len()).then(|| page[page.len() - 1].key.clone());
    let request = pb::DigestRequest {
        from_id,
        entries: page.iter().map(digest_to_pb).collect(),
        after: after.map(key_to_pb),
        upto: upto.as_ref().map(key_to_pb),
    };
    (request, upto)
}

/// Answers one page of a peer's digest from this table, cut at [`DIGEST_REPLY_BYTES`].
pub fn answer_digest(table: &SharedTable, req: &pb::DigestRequest) -> pb::DigestReply {
    answer_digest_capped(table, req, DIGEST_REPLY_BYTES)
}

/// [`answer_digest`] with the reply's cap given (tests use small ones).
pub fn answer_digest_capped(
    table: &SharedTable,
    req: &pb::DigestRequest,
    max_bytes: usize,
) -> pb::DigestReply {
    let theirs: Vec<DigestEntry> = req.entries.iter().filter_map(digest_from_pb).collect();
    let page = DigestPage {
        after: req.after.as_ref().map(key_from_pb),
        upto: req.upto.as_ref().map(key_from_pb),
    };
    let diff = table
        .read()
        .unwrap_or_else(|p| p.into_inner())
        .diff_digest_page(&theirs, &page, max_bytes);
    let now = unix_now();
    pb::DigestReply {
        newer: diff.newer.iter().map(|i| item_to_pb(i, now)).collect(),
        wanted: diff.wanted.iter().map(key_to_pb).collect(),
        covered: diff.covered.as_ref().map(key_to_pb),
    }
}
