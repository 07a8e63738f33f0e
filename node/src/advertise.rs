//! Keeps the pool's ads in the collectors: one `Collector.AdvertiseStream` open to a CM of
//! the list; everything is sent when the stream opens, changed ads within ~100 ms of a
//! change, and everything again every update interval (so nothing reaches
//! `CLASSAD_LIFETIME`). When the stream fails the next CM of the list (round robin) gets a
//! fresh stream and the whole pool again, so no update is lost by the move.
//!
//! What is advertised comes from an [`AdSource`]: the simulator, an execute node's slots or
//! an access point's submitters, each behind one trait so the streaming and fail-over logic is
//! written once.
use aerie_proto::collector::{self as pb, collector_client::CollectorClient};
use futures::StreamExt;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tonic::transport::Channel;

/// The ads a daemon keeps in the collectors, and what changed since it last looked.
pub trait AdSource: Send + Sync + 'static {
    /// Every ad, in old ClassAd syntax (sent when a stream opens and every update interval).
    fn all_ads(&self) -> Vec<String>;
    /// The ads changed since the last call, and the (MyType, Name) of ads removed since.
    fn take_changes(&self) -> (Vec<String>, Vec<(String, String)>);
    /// Removals that could not be sent: to be sent with the next changes.
    fn requeue_removed(&self, removed: Vec<(String, String)>);
    /// (MyType, Name) of every ad (invalidated at exit).
    fn ad_keys(&self) -> Vec<(String, String)>;
    /// Notified when an ad changes.
    fn changed(&self) -> &tokio::sync::Notify;
    /// A CM reported its current Raft term in an advertise summary (0: it did not say).
    fn cm_term(&self, _term: u64) {}
}

/// Ads per message: keeps each message a few MB even for large pools.
const BATCH: usize = 2000;
/// How long to gather changes after the first one before sending.
const GATHER: Duration = Duration::from_millis(100);
/// A CM that takes no batch for this long is given up on.
const SEND_TIMEOUT: Duration = Duration::from_secs(30);

/// Queues one batch on the stream; fails when the stream is gone or stalled.
async fn send(tx: &mpsc::Sender<pb::AdBatch>, b: pb::AdBatch) -> anyhow::Result<()> {
    match tokio::time::timeout(SEND_TIMEOUT, tx.send(b)).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(_)) => anyhow::bail!("the ad stream is closed"),
        Err(_) => anyhow::bail!("the CM took no ads for {SEND_TIMEOUT:?}"),
    }
}

/// A lazy client with a deadline on unary calls.
pub fn client(addr: &str) -> anyhow::Result<CollectorClient<Channel>> {
    let ep =
        aerie_security::transport::endpoint(crate::sim::bare_addr(addr), aerie_security::Role::Cm)
            .map_err(|e| anyhow::anyhow!("CM {addr}: {e}"))?
            .connect_timeout(Duration::from_secs(2))
            // A CM that vanishes without closing the connection (partition, SIGSTOP) is noticed
            // by the keepalive, and the stream moves on.
            .http2_keep_alive_interval(Duration::from_secs(5))
            .keep_alive_timeout(Duration::from_secs(10))
            .keep_alive_while_idle(true);
    Ok(CollectorClient::new(ep.connect_lazy())
        .max_decoding_message_size(aerie_security::transport::MAX_MESSAGE)
        .max_encoding_message_size(aerie_security::transport::MAX_MESSAGE))
}

/// Streams ads to the CMs in `cms` until the task is aborted.
pub async fn run<S: AdSource>(sim: Arc<S>, cms: Vec<String>, interval: Duration) {
    let mut i = 0usize;
    let mut failures_in_a_row = 0u32;
    loop {
        let cm = &cms[i % cms.len()];
        let began = std::time::Instant::now();
        if let Err(e) = stream_to(&sim, cm, interval).await {
            tracing::warn!(cm = %cm, error = %format!("{e:#}"), "ad stream failed; moving to the next CM");
        }
        // A stream that lived a while was a success: start the back-off afresh.
        if began.elapsed() > Duration::from_secs(10) {
            failures_in_a_row = 0;
        }
        failures_in_a_row += 1;
        i += 1;
        // Every CM failed in turn: back off a little (up to 2 s) before going round again.
        let rounds = failures_in_a_row as usize / cms.len();
        let pause = Duration::from_millis(200 * (1u64 << rounds.min(3)));
        tokio::time::sleep(pause).await;
    }
}

fn batches(ads: Vec<String>) -> Vec<pb::AdBatch> {
    ads.chunks(BATCH)
        .map(|c| pb::AdBatch {
            ads: c.iter().map(|t| pb::Ad { text: t.clone() }).collect(),
        })
        .collect()
}

/// One stream's life: returns when the CM ends it or fails.
async fn stream_to<S: AdSource>(sim: &Arc<S>, cm: &str, interval: Duration) -> anyhow::Result<()> {
    let mut client = client(cm)?;
    let (tx, rx) = mpsc::channel::<pb::AdBatch>(64);
    let mut replies = client
        .advertise_stream(tokio_stream::wrappers::ReceiverStream::new(rx))
        .await
        .map_err(|s| anyhow::anyhow!("opening the ad stream to {cm}: {}", s.message()))?
        .into_inner();
    tracing::info!(cm = %cm, "ad stream open");
    // Summaries are read on their own task, so a large resend never waits on them.
    let cm_name = cm.to_string();
    let source = sim.clone();
    let mut reader = tokio::spawn(async move {
        loop {
            match replies.next().await {
                Some(Ok(summary)) => {
                    report(&cm_name, &summary);
                    if summary.term > 0 {
                        source.cm_term(summary.term);
                    }
                }
                Some(Err(s)) => return format!("{cm_name} ended the ad stream: {}", s.message()),
                None => return format!("{cm_name} closed the ad stream"),
            }
        }
    });
    let r = feed(sim, &mut client, &tx, interval, &mut reader).await;
    reader.abort();
    r
}

/// Sends the pool, then its changes and periodic resends, until the stream ends.
async fn feed<S: AdSource>(
    sim: &Arc<S>,
    client: &mut CollectorClient<Channel>,
    tx: &mpsc::Sender<pb::AdBatch>,
    interval: Duration,
    reader: &mut tokio::task::JoinHandle<String>,
) -> anyhow::Result<()> {
    // The whole pool first: this CM may never have heard of it (or we moved here).
    let (_, removed) = sim.take_changes();
    for b in batches(sim.all_ads()) {
        send(tx, b).await?;
    }
    invalidate(sim.as_ref(), client, removed).await?;
    let mut tick = tokio::time::interval(interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tick.tick().await; // the first tick is now: everything was just queued
    loop {
        tokio::select! {
            _ = sim.changed().notified() => {
                tokio::time::sleep(GATHER).await;
                let (ads, removed) = sim.take_changes();
                for b in batches(ads) {
                    send(tx, b).await?;
                }
                invalidate(sim.as_ref(), client, removed).await?;
            }
            _ = tick.tick() => {
                let (_, removed) = sim.take_changes();
                for b in batches(sim.all_ads()) {
                    send(tx, b).await?;
                }
                invalidate(sim.as_ref(), client, removed).await?;
            }
            why = &mut *reader => match why {
                Ok(why) => anyhow::bail!(why),
                Err(e) => anyhow::bail!("ad stream reader stopped: {e}"),
            },
        }
    }
}

/// Logs every refused ad of a summary (the error names the ad and the attribute).
fn report(cm: &str, s: &pb::AdvertiseSummary) {
    if s.rejected > 0 {
        for r in s.results.iter().filter(|r| !r.ok) {
            tracing::warn!(cm = %cm, error = %r.error, "collector rejected an ad");
        }
    }
    tracing::trace!(cm = %cm, accepted = s.accepted, rejected = s.rejected, "ad batch acknowledged");
}

/// Invalidates ads that no longer exist; on failure they are kept for the next stream.
async fn invalidate<S: AdSource>(
    sim: &S,
    client: &mut CollectorClient<Channel>,
    removed: Vec<(String, String)>,
) -> anyhow::Result<()> {
    for (k, (t, n)) in removed.iter().enumerate() {
        let mut req = tonic::Request::new(pb::InvalidateRequest {
            ad_type: t.clone(),
            name: n.clone(),
            ..Default::default()
        });
        req.set_timeout(Duration::from_secs(5));
        if let Err(s) = client.invalidate(req).await {
            sim.requeue_removed(removed[k..].to_vec());
            anyhow::bail!("invalidating {t} ad {n:?}: {}", s.message());
        }
    }
    Ok(())
}

/// Best effort at exit: invalidates every ad at the first CM that answers.
pub async fn invalidate_all<S: AdSource>(sim: &S, cms: &[String]) {
    let keys = sim.ad_keys();
    for cm in cms {
        let Ok(client) = client(cm) else { continue };
        let results: Vec<bool> = futures::stream::iter(keys.iter().cloned())
            .map(|(t, n)| {
                let mut c = client.clone();
                async move {
                    let mut req = tonic::Request::new(pb::InvalidateRequest {
                        ad_type: t,
                        name: n,
                        ..Default::default()
                    });
                    req.set_timeout(Duration::from_secs(2));
                    c.invalidate(req).await.is_ok()
                }
            })
            .buffer_unordered(64)
            .collect()
            .await;
        let ok = results.iter().filter(|r| **r).count();
        tracing::info!(cm = %cm, invalidated = ok, of = keys.len(), "ads invalidated at exit");
        if ok > 0 {
            return;
        }
    }
}
