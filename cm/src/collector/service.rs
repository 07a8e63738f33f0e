//! The gRPC `Collector` service over one shared [`AdTable`], and the expiry task.
//!
//! The table sits behind a `RwLock`: updates and sweeps take it briefly for writing, queries
//! for reading. Time comes from the system clock here (Unix seconds), and only here, so the
//! table itself stays deterministic.
use super::{AdTable, AdType, Query, Update};
use aerie_proto::collector::{self as pb, collector_server};
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
pub struct CollectorService {
    pub table: SharedTable,
}

impl CollectorService {
    pub fn new(table: SharedTable) -> Self {
        CollectorService { table }
    }

    pub fn into_server(self) -> collector_server::CollectorServer<Self> {
        collector_server::CollectorServer::new(self)
            .max_decoding_message_size(256 << 20)
            .max_encoding_message_size(256 << 20)
    }
}

/// Sweeps expired ads every `every` until the returned task is dropped or aborted.
pub fn spawn_expiry(table: SharedTable, every: Duration) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let (report, ads, absent) = {
                let mut t = table.write().unwrap_or_else(|p| p.into_inner());
                let r = t.expire(unix_now());
                (r, t.len(), t.absent_count())
            };
            metrics::gauge!("aerie_collector_ads").set(ads as f64);
            metrics::gauge!("aerie_collector_absent_ads").set(absent as f64);
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

/// Judges and stores every ad of a batch under one write lock; each gets its own verdict.
fn apply_batch(table: &SharedTable, batch: &pb::AdBatch) -> pb::AdvertiseSummary {
    let now = unix_now();
    let mut summary = pb::AdvertiseSummary::default();
    let mut t = table.write().unwrap_or_else(|p| p.into_inner());
    for ad in &batch.ads {
        match t.advertise_text(&ad.text, now) {
            Ok((_, u)) => {
                summary.accepted += 1;
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
    drop(t);
    for (outcome, n) in [
        ("accepted", summary.accepted),
        ("rejected", summary.rejected),
    ] {
        metrics::counter!("aerie_collector_updates_total", "outcome" => outcome)
            .increment(n as u64);
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

#[tonic::async_trait]
impl collector_server::Collector for CollectorService {
    async fn advertise(
        &self,
        request: tonic::Request<pb::AdBatch>,
    ) -> Result<tonic::Response<pb::AdvertiseSummary>, tonic::Status> {
        Ok(tonic::Response::new(apply_batch(
            &self.table,
            &request.into_inner(),
        )))
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
        let out = request
            .into_inner()
            .map(move |batch| batch.map(|b| apply_batch(&table, &b)));
        Ok(tonic::Response::new(Box::pin(out)))
    }

    async fn invalidate(
        &self,
        request: tonic::Request<pb::InvalidateRequest>,
    ) -> Result<tonic::Response<pb::InvalidateReply>, tonic::Status> {
        let r = request.into_inner();
        let Some(t) = requested_type(&r.ad_type) else {
            return Err(tonic::Status::invalid_argument(
                "Invalidate needs an ad type (MyType of the ad), not empty or Any",
            ));
        };
        let found = self
            .table
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .invalidate(&t, &r.name, unix_now());
        Ok(tonic::Response::new(pb::InvalidateReply { found }))
    }

    async fn query(
        &self,
        request: tonic::Request<pb::QueryRequest>,
    ) -> Result<tonic::Response<pb::QueryReply>, tonic::Status> {
        let r = request.into_inner();
        let constraint = if r.constraint.trim().is_empty() {
            None
        } else {
            Some(classad::parse_expr(&r.constraint).map_err(|e| {
                tonic::Status::invalid_argument(format!(
                    "constraint {:?} does not parse: {e}",
                    r.constraint
                ))
            })?)
        };
        let q = Query {
            ad_type: requested_type(&r.ad_type),
            constraint,
            projection: r.projection,
            absent: r.absent,
            limit: r.limit as usize,
        };
        let ads = self
            .table
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .query(&q);
        Ok(tonic::Response::new(pb::QueryReply {
            ads: ads.iter().map(|a| a.to_old_syntax()).collect(),
        }))
    }
}
