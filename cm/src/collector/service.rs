//! The gRPC `Collector` service over one shared [`AdTable`], and the expiry task.
//!
//! The table sits behind a `RwLock`: updates and sweeps take it briefly for writing, queries
//! for reading. Time comes from the system clock here (Unix seconds), and only here, so the
//! table itself stays deterministic.
use super::binding::Sender;
use super::relay::{self, Relay};
use super::text::{render_chunks, render_threads, TextFormat};
use super::{address_host, AdTable, AdType, Query, RelayItem, Update};
use aerie_proto::collector::{self as pb, collector_server};
use aerie_security::rate::Limiter;
use std::sync::{Arc, RwLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The table shared by the service and the expiry task.
pub type SharedTable = Arc<RwLock<AdTable>>;

/// How often the daemon sweeps expired ads. Short, so an ad's `ClassAdLifetime` of a few
/// seconds is honoured closely; a sweep over 100k ads costs about a millisecond.
pub const SWEEP_INTERVAL: Duration = Duration::from_secs(2);

/// Now, in Unix seconds.
pub fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

#[derive(Clone)]
/// The `Collector` gRPC service of one CM: ad updates in, queries out, relay and digests
/// between CMs.
pub struct CollectorService {
    /// This CM's ad table.
    pub table: SharedTable,
    /// Hands accepted updates to the other CMs (none in a lone CM or in tests).
    pub relay: Option<Arc<Relay>>,
    /// `AERIE_COLLECTOR_MAX_UPDATE_RATE`: ads per second one `AdvertiseStream` may send.
    pub max_update_rate: f64,
    /// True once this CM has been out of touch with a leader holding a quorum for longer
    /// than `AERIE_COLLECTOR_CUTOFF_TIMEOUT` ([`crate::raft::contact`]): its ad streams are
    /// closed and new ones refused, so nodes move to a CM of the majority. None: never.
    pub cut_off: Option<crate::raft::contact::CutOff>,
    /// `AERIE_COLLECTOR_MAX_UPDATE_RATE_PER_IDENTITY`: ads (and invalidations) per second one
    /// authenticated identity may send over all its connections together.
    pub identity_limit: Arc<Limiter>,
    /// The newest Raft term this CM knows, told to every node in its advertise summaries so
    /// nodes can refuse claims carrying a forged term (none: 0, unknown).
    pub current_term: Option<Arc<dyn Fn() -> u64 + Send + Sync>>,
}

/// Default of `AERIE_COLLECTOR_CUTOFF_TIMEOUT`: several elections' worth, so an ordinary
/// failover never moves a node, and far below an ad's lifetime, so a cut-off CM's nodes
/// reach the majority before their slots could be taken for absent.
pub const DEFAULT_CUTOFF_TIMEOUT: Duration = Duration::from_secs(15);

/// Reads `AERIE_COLLECTOR_CUTOFF_TIMEOUT` (a duration; bare numbers are seconds), from the
/// environment variable of that name or the configuration.
pub fn cutoff_timeout(c: Option<&aerie_config::Config>) -> Result<Duration, String> {
    crate::knob::Knobs::new(c)
        .duration(
            "AERIE_COLLECTOR_CUTOFF_TIMEOUT",
            Some("AERIE_COLLECTOR_CUTOFF_TIMEOUT"),
            Duration::from_secs(1),
            DEFAULT_CUTOFF_TIMEOUT,
            Duration::from_secs(1),
            Duration::from_secs(3600),
        )
        .map_err(|e| e.to_string())
}

/// The status a cut-off CM ends or refuses an ad stream with (nodes move to the next CM).
fn cut_off_status() -> tonic::Status {
    tonic::Status::unavailable(
        "this CM is out of touch with a leader holding a quorum (cut off from the majority); \
         advertise to another CM",
    )
}

/// Default of `AERIE_COLLECTOR_MAX_UPDATE_RATE`: generous, a whole large pool's worth of
/// updates a second through one connection (a node sends a few ads a minute).
pub const DEFAULT_MAX_UPDATE_RATE: f64 = 100_000.0;

/// Reads `AERIE_COLLECTOR_MAX_UPDATE_RATE` (ads per second per stream; default when unset).
pub fn max_update_rate(c: &aerie_config::Config) -> Result<f64, String> {
    crate::knob::Knobs::with_env(Some(c), |_| None)
        .number(
            "AERIE_COLLECTOR_MAX_UPDATE_RATE",
            None,
            DEFAULT_MAX_UPDATE_RATE,
            0.001,
            1e9,
        )
        .map_err(|e| e.to_string())
}

/// Default of `AERIE_COLLECTOR_MAX_UPDATE_RATE_PER_IDENTITY`: as generous as the per-stream
/// limit, so one node's (or one simulator's) whole pool fits, while a caller opening many
/// streams gains nothing.
pub const DEFAULT_MAX_UPDATE_RATE_PER_IDENTITY: f64 = DEFAULT_MAX_UPDATE_RATE;

/// The knob naming the per-identity update rate.
pub const IDENTITY_RATE_KNOB: &str = "AERIE_COLLECTOR_MAX_UPDATE_RATE_PER_IDENTITY";

/// Reads `AERIE_COLLECTOR_MAX_UPDATE_RATE_PER_IDENTITY` (ads per second per identity, from
/// the environment variable of that name or the configuration; default when unset).
pub fn max_update_rate_per_identity(c: Option<&aerie_config::Config>) -> Result<f64, String> {
    crate::knob::Knobs::new(c)
        .number(
            IDENTITY_RATE_KNOB,
            Some(IDENTITY_RATE_KNOB),
            DEFAULT_MAX_UPDATE_RATE_PER_IDENTITY,
            0.001,
            1e9,
        )
        .map_err(|e| e.to_string())
}

/// The per-identity bucket of ads: `rate` a second, bursts of one second's worth.
pub fn identity_limiter(rate: f64) -> Arc<Limiter> {
    Arc::new(Limiter::new(IDENTITY_RATE_KNOB, "ads", rate, rate))
}

/// A token bucket per stream: `rate` ads a second, bursts up to one second's worth.
pub struct RateLimit {
    rate: f64,
    tokens: f64,
    last: std::time::Instant,
}

impl RateLimit {
    /// A bucket allowing `rate` updates per second, full to start with.
    pub fn new(rate: f64) -> Self {
        RateLimit {
            rate,
            tokens: rate,
            last: std::time::Instant::now(),
        }
    }

    /// Takes one token at `now`; false when the bucket is empty.
    pub fn allow(&mut self, now: std::time::Instant) -> bool {
        let dt = now.saturating_duration_since(self.last).as_secs_f64();
        self.last = now;
        self.tokens = (self.tokens + dt * self.rate).min(self.rate.max(1.0));
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

impl CollectorService {
    /// A service over `table`, relaying nothing, at the default update rate.
    pub fn new(table: SharedTable) -> Self {
        CollectorService {
            table,
            relay: None,
            max_update_rate: DEFAULT_MAX_UPDATE_RATE,
            cut_off: None,
            identity_limit: identity_limiter(DEFAULT_MAX_UPDATE_RATE_PER_IDENTITY),
            current_term: None,
        }
    }

    /// Relays accepted updates and invalidations through `relay`.
    pub fn with_relay(mut self, relay: Arc<Relay>) -> Self {
        self.relay = Some(relay);
        self
    }

    /// The tonic server for this service. It takes whole-pool messages because a peer CM's
    /// `Digest` request lists every ad it holds in one message (not paginated yet); a node's
    /// ad batch is held to [`aerie_security::transport::MAX_MESSAGE`] by
    /// [`check_batch_size`] instead, and only CMs may call `Digest` and `Relay` (the
    /// authorization layer refuses anyone else before a message is read).
    pub fn into_server(self) -> collector_server::CollectorServer<Self> {
        collector_server::CollectorServer::new(self)
            .max_decoding_message_size(aerie_security::transport::MAX_POOL_REPLY)
            .max_encoding_message_size(aerie_security::transport::MAX_POOL_REPLY)
    }
}

/// Sweeps expired ads every `every` until the returned task is dropped or aborted.
pub fn spawn_expiry(table: SharedTable, every: Duration) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            // The ad counts are the metrics census's (`crate::metrics::census`).
            let report = {
                let mut t = table.write().unwrap_or_else(|p| p.into_inner());
                t.expire(unix_now())
            };
            metrics::counter!("aerie_collector_expired_total", "to" => "absent")
                .increment(report.made_absent.len() as u64);
            metrics::counter!("aerie_collector_expired_total", "to" => "removed")
                .increment(report.removed.len() as u64);
            if !report.made_absent.is_empty() || !report.removed.is_empty() {
                tracing::info!(
                    absent = report.made_absent.len(),
                    removed = report.removed.len(),
                    "collector expiry sweep"
                );
            }
        }
    })
}

fn outcome_name(u: Update) -> &'static str {
    match u {
        Update::New => "new",
        Update::Changed => "changed",
        Update::Unchanged => "unchanged",
        Update::ReplacedAbsent => "replaced_absent",
    }
}

/// How many ads are judged and stored under one hold of the table's write lock: a batch of
/// thousands of changed ads is parsed in slices, so queries and the negotiation snapshot wait
/// for one slice (about a millisecond), not for the whole batch (issue 13.7).
pub(crate) const ADS_PER_LOCK: usize = 128;

/// [`apply_batch`] on a blocking thread: parsing a batch is CPU work that must not hold one of
/// the async workers that also carry Raft's heartbeats (issue 13.7).
async fn apply_batch_blocking(
    table: SharedTable,
    relay: Option<Arc<Relay>>,
    batch: pb::AdBatch,
    limit: Option<Arc<std::sync::Mutex<RateLimit>>>,
    from: Advertiser,
) -> Result<pb::AdvertiseSummary, tonic::Status> {
    check_batch_size(&batch, &from.who)?;
    tokio::task::spawn_blocking(move || {
        let mut guard = limit
            .as_ref()
            .map(|l| l.lock().unwrap_or_else(|p| p.into_inner()));
        apply_batch(
            &table,
            relay.as_deref(),
            &batch,
            guard.as_deref_mut(),
            &from,
        )
    })
    .await
    .map_err(|e| tonic::Status::internal(format!("ingesting the batch failed: {e}")))
}

/// Who sent a batch: the ads it may send and the bucket it draws on.
#[derive(Clone)]
pub(crate) struct Advertiser {
    /// What the sender's identity binds it to.
    pub sender: Sender,
    /// The caller's principal (`exec1@execute`), the key of its bucket.
    pub who: String,
    /// The per-identity bucket.
    pub limit: Arc<Limiter>,
}

impl Advertiser {
    /// The sender of `request`, per its authenticated caller.
    fn of<T>(request: &tonic::Request<T>, limit: &Arc<Limiter>) -> Advertiser {
        let peer = aerie_security::layer::peer_of(request);
        Advertiser {
            sender: Sender::of(&peer.caller, peer.addr),
            who: peer.caller.to_string(),
            limit: limit.clone(),
        }
    }
}

/// Refuses an ad batch larger than [`aerie_security::transport::MAX_MESSAGE`]: no node sends
/// one (`aerie-node` sends at most 2000 ads a batch), and the collector's server takes larger
/// messages only for its peers' digests.
#[allow(clippy::result_large_err)]
pub(crate) fn check_batch_size(batch: &pb::AdBatch, who: &str) -> Result<(), tonic::Status> {
    let size: usize = batch.ads.iter().map(|a| a.text.len()).sum();
    let max = aerie_security::transport::MAX_MESSAGE;
    if size > max {
        return Err(tonic::Status::resource_exhausted(format!(
            "an ad batch of {size} bytes from {who} is over the limit of {max} bytes a message; \
             send it in smaller batches"
        )));
    }
    Ok(())
}

/// Judges and stores every ad of a batch, [`ADS_PER_LOCK`] ads per hold of the write lock;
/// each gets its own verdict. Ads beyond the stream's rate limit (when one is given) are
/// refused with the reason. Accepted ads are handed to the relay.
fn apply_batch(
    table: &SharedTable,
    relay: Option<&Relay>,
    batch: &pb::AdBatch,
    mut limit: Option<&mut RateLimit>,
    from: &Advertiser,
) -> pb::AdvertiseSummary {
    let now = unix_now();
    let mut summary = pb::AdvertiseSummary::default();
    let mut relayed: Vec<RelayItem> = Vec::new();
    let mut throttled = 0u64;
    let clock = std::time::Instant::now();
    for slice in batch.ads.chunks(ADS_PER_LOCK) {
        let mut t = table.write().unwrap_or_else(|p| p.into_inner());
        for ad in slice {
            if let Some(l) = limit.as_deref_mut() {
                if !l.allow(clock) {
                    throttled += 1;
                    summary.rejected += 1;
                    summary.results.push(pb::AdResult {
                        ok: false,
                        outcome: String::new(),
                        error: format!(
                        "update rate above AERIE_COLLECTOR_MAX_UPDATE_RATE ({} ads per second on \
                         this connection); send it again later",
                        l.rate
                    ),
                    });
                    continue;
                }
            }
            if let Err(e) = from.limit.take(&from.who, clock) {
                throttled += 1;
                summary.rejected += 1;
                summary.results.push(pb::AdResult {
                    ok: false,
                    outcome: String::new(),
                    error: e.to_string(),
                });
                continue;
            }
            match t.advertise_text_as(&ad.text, now, &from.sender) {
                Ok((key, u)) => {
                    summary.accepted += 1;
                    if relay.is_some() {
                        if let Some(v) = t.version_of(&key) {
                            relayed.push(RelayItem {
                                key,
                                version: v,
                                heard: now,
                                text: Some(ad.text.as_str().into()),
                            });
                        }
                    }
                    summary.results.push(pb::AdResult {
                        ok: true,
                        outcome: outcome_name(u).into(),
                        error: String::new(),
                    });
                }
                Err(e) => {
                    summary.rejected += 1;
                    summary.results.push(pb::AdResult {
                        ok: false,
                        outcome: String::new(),
                        error: e.to_string(),
                    });
                }
            }
        }
    }
    if let Some(r) = relay {
        r.publish(&relayed);
    }
    for (outcome, n) in [
        ("accepted", summary.accepted),
        ("rejected", summary.rejected),
    ] {
        metrics::counter!("aerie_collector_updates_total", "outcome" => outcome)
            .increment(n as u64);
    }
    if throttled > 0 {
        metrics::counter!("aerie_collector_throttled_total").increment(throttled);
    }
    summary
}

/// Maps a request's ad type to the table's: empty or `Any` means every type.
fn requested_type(s: &str) -> Option<AdType> {
    let s = s.trim();
    if s.is_empty() || s.eq_ignore_ascii_case("any") {
        None
    } else {
        Some(AdType::parse(s))
    }
}

/// Ads per message of `QueryStream`: about 1.5 MB of slot ads, small enough for the client
/// to print the first ones at once.
pub const QUERY_CHUNK: usize = 1000;

/// A request's constraint, parsed; `None` when empty (every ad).
#[allow(clippy::result_large_err)]
fn parse_constraint(text: &str) -> Result<Option<classad::Expr>, tonic::Status> {
    if text.trim().is_empty() {
        return Ok(None);
    }
    classad::parse_expr(text).map(Some).map_err(|e| {
        tonic::Status::invalid_argument(format!("constraint {text:?} does not parse: {e}"))
    })
}

/// The table's query for a request (its constraint parsed).
#[allow(clippy::result_large_err)]
fn query_of(r: pb::QueryRequest) -> Result<Query, tonic::Status> {
    Ok(Query {
        ad_type: requested_type(&r.ad_type),
        constraint: parse_constraint(&r.constraint)?,
        projection: r.projection,
        absent: r.absent,
        limit: r.limit as usize,
    })
}

/// A server stream of what `produce` sends from a blocking thread (writing ads out is CPU
/// work), at most two messages ahead of the client; it ends when `produce` returns.
fn blocking_stream<T: Send + 'static>(
    produce: impl FnOnce(tokio::sync::mpsc::Sender<Result<T, tonic::Status>>) + Send + 'static,
) -> std::pin::Pin<Box<dyn futures::Stream<Item = Result<T, tonic::Status>> + Send>> {
    let (tx, rx) = tokio::sync::mpsc::channel(2);
    tokio::task::spawn_blocking(move || produce(tx));
    Box::pin(futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    }))
}

/// What a `QueryText` request asks to render; refused without a format, or `-af` without
/// attributes.
#[allow(clippy::result_large_err)]
fn text_format(r: &pb::QueryTextRequest) -> Result<TextFormat, tonic::Status> {
    let projection = r
        .query
        .as_ref()
        .map(|q| q.projection.clone())
        .unwrap_or_default();
    match pb::QueryFormat::try_from(r.format) {
        Ok(pb::QueryFormat::Long) => Ok(TextFormat::Long),
        Ok(pb::QueryFormat::Autoformat) if !projection.is_empty() => {
            Ok(TextFormat::Autoformat(projection))
        }
        Ok(pb::QueryFormat::Autoformat) => Err(tonic::Status::invalid_argument(
            "QueryText: the autoformat (-af) text needs the attributes in query.projection",
        )),
        _ => Err(tonic::Status::invalid_argument(format!(
            "QueryText: format {} is not one this CM renders (LONG or AUTOFORMAT)",
            r.format
        ))),
    }
}

/// `f` over the table under its read lock, on a blocking thread (evaluating a constraint over
/// the pool is CPU work that must not hold an async worker, issue 13.7); a constraint that
/// cost more than the query budget is refused, naming it.
async fn read_table<T: Send + 'static>(
    table: &SharedTable,
    constraint: &str,
    f: impl FnOnce(&AdTable) -> Result<T, classad::EvalLimit> + Send + 'static,
) -> Result<T, tonic::Status> {
    let table = table.clone();
    tokio::task::spawn_blocking(move || f(&table.read().unwrap_or_else(|p| p.into_inner())))
        .await
        .map_err(|e| tonic::Status::internal(format!("the query failed: {e}")))?
        .map_err(|e| too_expensive(constraint, e))
}

/// The refusal of a constraint that cost more than the query budget.
fn too_expensive(constraint: &str, e: classad::EvalLimit) -> tonic::Status {
    tonic::Status::invalid_argument(format!(
        "constraint {constraint:?} is too expensive to evaluate over this pool: {e}"
    ))
}

/// A group of [`AdTable::totals`] on the wire: each key value by its type.
fn totals_row(r: super::TotalsRow) -> pb::TotalsRow {
    use classad::Value;
    use pb::totals_value::Value as V;
    let key = r
        .key
        .into_iter()
        .map(|v| pb::TotalsValue {
            value: match v {
                Value::Undefined => None,
                Value::Str(s) => Some(V::Str(s.to_string())),
                Value::Int(i) => Some(V::Int(i)),
                Value::Real(x) => Some(V::Real(x)),
                Value::Bool(b) => Some(V::Boolean(b)),
                other => Some(V::Other(other.to_string())),
            },
        })
        .collect();
    pb::TotalsRow {
        key,
        count: r.count,
        sums: r.sums,
    }
}

#[tonic::async_trait]
impl collector_server::Collector for CollectorService {
    async fn advertise(
        &self,
        request: tonic::Request<pb::AdBatch>,
    ) -> Result<tonic::Response<pb::AdvertiseSummary>, tonic::Status> {
        let from = Advertiser::of(&request, &self.identity_limit);
        let mut summary = apply_batch_blocking(
            self.table.clone(),
            self.relay.clone(),
            request.into_inner(),
            None,
            from,
        )
        .await?;
        summary.term = self.current_term.as_ref().map_or(0, |t| t());
        // A batch refused whole for the caller's budget is the caller's error, not the ads'.
        if summary.accepted == 0 && summary.rejected > 0 {
            let over = format!("({IDENTITY_RATE_KNOB})");
            if summary.results.iter().all(|r| r.error.contains(&over)) {
                return Err(tonic::Status::resource_exhausted(
                    summary.results[0].error.clone(),
                ));
            }
        }
        Ok(tonic::Response::new(summary))
    }

    type AdvertiseStreamStream = std::pin::Pin<
        Box<dyn futures::Stream<Item = Result<pb::AdvertiseSummary, tonic::Status>> + Send>,
    >;

    // tonic::Status is tonic's error type; boxing it is not ours to choose.
    #[allow(clippy::result_large_err)]
    async fn advertise_stream(
        &self,
        request: tonic::Request<tonic::Streaming<pb::AdBatch>>,
    ) -> Result<tonic::Response<Self::AdvertiseStreamStream>, tonic::Status> {
        use futures::StreamExt;
        let table = self.table.clone();
        let relay = self.relay.clone();
        let limit = Arc::new(std::sync::Mutex::new(RateLimit::new(self.max_update_rate)));
        let from = Advertiser::of(&request, &self.identity_limit);
        let term = self.current_term.clone();
        let out = request.into_inner().then(move |batch| {
            let (table, relay, limit) = (table.clone(), relay.clone(), limit.clone());
            let (from, term) = (from.clone(), term.clone());
            async move {
                let mut s = apply_batch_blocking(table, relay, batch?, Some(limit), from).await?;
                s.term = term.as_ref().map_or(0, |t| t());
                Ok(s)
            }
        });
        let Some(cut) = self.cut_off.clone() else {
            return Ok(tonic::Response::new(Box::pin(out)));
        };
        if *cut.borrow() {
            return Err(cut_off_status());
        }
        // The stream's summaries until the CM is cut off; then one error ends it.
        let out = futures::stream::unfold(Some(Box::pin(out)), move |s| {
            let mut cut = cut.clone();
            async move {
                let mut s = s?;
                tokio::select! {
                    item = s.next() => item.map(|i| (i, Some(s))),
                    _ = cut.wait_for(|c| *c) => Some((Err(cut_off_status()), None)),
                }
            }
        });
        Ok(tonic::Response::new(Box::pin(out)))
    }

    async fn invalidate(
        &self,
        request: tonic::Request<pb::InvalidateRequest>,
    ) -> Result<tonic::Response<pb::InvalidateReply>, tonic::Status> {
        let from = Advertiser::of(&request, &self.identity_limit);
        from.limit
            .take(&from.who, std::time::Instant::now())
            .map_err(|e| e.status())?;
        let r = request.into_inner();
        let Some(t) = requested_type(&r.ad_type) else {
            return Err(tonic::Status::invalid_argument(
                "Invalidate needs an ad type (MyType of the ad), not empty or Any",
            ));
        };
        let removed = self
            .table
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .invalidate_name_as(&t, &r.name, address_host(&r.addr), unix_now(), &from.sender)
            .map_err(|e| {
                metrics::counter!("aerie_collector_updates_total", "outcome" => "not_owned")
                    .increment(1);
                tonic::Status::permission_denied(format!("Invalidate refused: {e}"))
            })?;
        if let Some(relay) = &self.relay {
            relay.publish(&removed);
        }
        Ok(tonic::Response::new(pb::InvalidateReply {
            found: !removed.is_empty(),
        }))
    }

    type QueryStreamStream = std::pin::Pin<
        Box<dyn futures::Stream<Item = Result<pb::QueryReply, tonic::Status>> + Send>,
    >;

    async fn query_stream(
        &self,
        request: tonic::Request<pb::QueryRequest>,
    ) -> Result<tonic::Response<Self::QueryStreamStream>, tonic::Status> {
        let r = request.into_inner();
        let r_constraint = r.constraint.clone();
        let q = query_of(r)?;
        // The matching ads are taken under the read lock (they share their attributes with
        // the table, so this copies little); writing them out as text happens after the lock
        // is released, one chunk at a time, as the client takes them.
        let ads = read_table(&self.table, &r_constraint, move |t| {
            t.try_query(&q, super::table::QUERY_EVAL_BUDGET)
        })
        .await?;
        let out = blocking_stream(move |tx| {
            for chunk in ads.chunks(QUERY_CHUNK) {
                let reply = pb::QueryReply {
                    ads: chunk.iter().map(|a| a.to_old_syntax()).collect(),
                };
                if tx.blocking_send(Ok(reply)).is_err() {
                    break; // the client went away
                }
            }
        });
        Ok(tonic::Response::new(out))
    }

    type QueryTextStream = std::pin::Pin<
        Box<dyn futures::Stream<Item = Result<pb::QueryTextChunk, tonic::Status>> + Send>,
    >;

    async fn query_text(
        &self,
        request: tonic::Request<pb::QueryTextRequest>,
    ) -> Result<tonic::Response<Self::QueryTextStream>, tonic::Status> {
        let r = request.into_inner();
        let format = text_format(&r)?;
        let query = r.query.unwrap_or_default();
        let r_constraint = query.constraint.clone();
        let q = query_of(query)?;
        // Under the read lock only the matching ads are taken (a reference count each);
        // rendering them is CPU work on blocking threads, after the lock is released, a wave
        // of chunks over the cores at a time, as the client takes them.
        let ads = read_table(&self.table, &r_constraint, move |t| {
            t.try_query_shown(&q, super::table::QUERY_EVAL_BUDGET, render_threads())
        })
        .await?;
        let out = blocking_stream(move |tx| {
            let sent = render_chunks(&ads, &format, render_threads(), |text| {
                let chunk = pb::QueryTextChunk {
                    text: text.into_bytes(),
                };
                tx.blocking_send(Ok(chunk)).is_ok() // false: the client went away
            });
            if let Err(e) = sent {
                tracing::error!(error = %e, "QueryText");
                let _ = tx.blocking_send(Err(tonic::Status::internal(e)));
            }
        });
        Ok(tonic::Response::new(out))
    }

    async fn query(
        &self,
        request: tonic::Request<pb::QueryRequest>,
    ) -> Result<tonic::Response<pb::QueryReply>, tonic::Status> {
        let r = request.into_inner();
        let r_constraint = r.constraint.clone();
        let q = query_of(r)?;
        // Evaluating constraints over the pool and printing the ads is CPU work: on a blocking
        // thread, so a large query does not hold an async worker (issue 13.7).
        let ads = read_table(&self.table, &r_constraint, move |t| {
            let ads = t.try_query(&q, super::table::QUERY_EVAL_BUDGET)?;
            Ok(ads.iter().map(|a| a.to_old_syntax()).collect())
        })
        .await?;
        Ok(tonic::Response::new(pb::QueryReply { ads }))
    }

    async fn totals(
        &self,
        request: tonic::Request<pb::TotalsRequest>,
    ) -> Result<tonic::Response<pb::TotalsReply>, tonic::Status> {
        let r = request.into_inner();
        let q = Query {
            ad_type: requested_type(&r.ad_type),
            constraint: parse_constraint(&r.constraint)?,
            projection: Vec::new(),
            absent: r.absent,
            limit: 0,
        };
        // Counting evaluates attributes over the whole pool: on a blocking thread, under the
        // read lock, as a query is.
        let (group_by, sum) = (r.group_by, r.sum);
        let rows = read_table(&self.table, &r.constraint, move |t| {
            t.totals(&q, &group_by, &sum, super::table::QUERY_EVAL_BUDGET)
        })
        .await?;
        Ok(tonic::Response::new(pb::TotalsReply {
            rows: rows.into_iter().map(totals_row).collect(),
        }))
    }

    async fn relay(
        &self,
        request: tonic::Request<pb::RelayBatch>,
    ) -> Result<tonic::Response<pb::RelayReply>, tonic::Status> {
        let b = request.into_inner();
        let table = self.table.clone();
        let from = b.from_id;
        // Parsing relayed ads is CPU work: on a blocking thread (issue 13.7).
        let reply = tokio::task::spawn_blocking(move || relay::apply_relayed(&table, &b.ads))
            .await
            .map_err(|e| {
                tonic::Status::internal(format!("applying the relay batch failed: {e}"))
            })?;
        tracing::trace!(
            from,
            applied = reply.applied,
            stale = reply.stale,
            "relay batch"
        );
        Ok(tonic::Response::new(reply))
    }

    async fn digest(
        &self,
        request: tonic::Request<pb::DigestRequest>,
    ) -> Result<tonic::Response<pb::DigestReply>, tonic::Status> {
        Ok(tonic::Response::new(relay::answer_digest(
            &self.table,
            &request.into_inner(),
        )))
    }
}
