//! `aerie-node simulate`: builds the pool, serves the gRPC services, keeps the ads streaming
//! and prints a status line, until SIGINT/SIGTERM; then invalidates its ads and returns.
use crate::access_point::AccessPoint;
use crate::args::SimulateArgs;
use crate::claims_log::{now_ms, ClaimsLog, Event};
use crate::pool::{self, AdContext};
use crate::service::NodeService;
use crate::sim::{Sim, SimConfig, State, Stats};
use crate::startd::Startd;
use rand::SeedableRng;
use std::collections::BTreeSet;
use std::time::Duration;

/// Runs `aerie-node simulate` until SIGINT or SIGTERM: validates `args`, binds `--listen`,
/// builds the slots and queues the jobs, then serves the `AccessPoint` and `Startd` gRPC
/// services, streams the ads to the CMs and logs a status line. At a signal it stops
/// advertising and spends up to 5 s invalidating its ads, then returns `Ok`. An error if
/// the arguments are invalid, the address or the claims log cannot be opened, or the gRPC
/// server stops on its own.
pub async fn run(args: SimulateArgs) -> anyhow::Result<()> {
    args.validate()?;
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .map_err(|e| anyhow::anyhow!("cannot listen on {} (--listen): {e}", args.listen))?;
    let local = listener.local_addr()?;
    let listen = local.to_string();
    let ctx = AdContext {
        my_address: format!("<{listen}>"),
        domain: args.domain.clone(),
        schedd_name: format!("{}-ap.{}", args.prefix, args.domain),
    };

    let now = (now_ms() / 1000) as i64;
    let mut startd = Startd::new(args.seed, &listen, now);
    pool::build_slots(
        &mut startd,
        args.slots,
        args.machines,
        args.partitionable,
        &args.prefix,
        &args.domain,
    );
    let mut ap = AccessPoint::new(
        &args.user_names(),
        &args.groups,
        &args.domain,
        args.limits.clone(),
        args.seed,
    )
    .with_cluster_size(args.cluster_size);
    for _ in 0..args.jobs {
        ap.add_job(now);
    }
    let log = match &args.claims_log {
        Some(p) => ClaimsLog::open(p)?,
        None => ClaimsLog::none(),
    };
    log.write(&Event {
        event: "start".into(),
        time_ms: now_ms(),
        ..Default::default()
    });
    let state = State {
        startd,
        ap,
        dirty: BTreeSet::new(),
        removed: Vec::new(),
        rng: rand::rngs::StdRng::seed_from_u64(args.seed ^ 0x7u64),
        stats: Stats::default(),
    };
    let sim = Sim::new(
        state,
        ctx,
        listen.clone(),
        log,
        SimConfig {
            runtime: args.runtime,
            jobs_forever: args.jobs_forever,
            dump_claim_ids: args.dump_claim_ids.clone(),
        },
    );
    // With pool credentials the simulated startd takes only grants the leader signed, as a
    // real execute node does.
    if let Some(v) = aerie_security::transport::transport().grant_verifier() {
        sim.require_signed_grants(v?);
    }
    sim.dump_claim_ids_now();
    let (slots, submitters) = {
        let st = sim.lock();
        (st.startd.len(), st.ap.submitters().len())
    };
    tracing::info!(
        listen = %listen,
        slots,
        jobs = args.jobs,
        submitters,
        cms = %args.cms.join(","),
        "simulated pool up"
    );

    let svc = NodeService { sim: sim.clone() };
    let server = tokio::spawn(
        aerie_security::transport::server()?
            .add_service(svc.access_point())
            .add_service(svc.startd())
            .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener)),
    );
    let advertiser = tokio::spawn(crate::advertise::run(
        sim.clone(),
        args.cms.clone(),
        Duration::from_secs(args.update_interval),
    ));
    let status = tokio::spawn(status_lines(
        sim.clone(),
        Duration::from_secs(args.status_interval.max(1)),
    ));

    tokio::select! {
        _ = wait_for_signal() => {}
        r = server => {
            advertiser.abort();
            status.abort();
            return match r {
                Ok(Ok(())) => Err(anyhow::anyhow!("the gRPC server stopped")),
                Ok(Err(e)) => Err(anyhow::anyhow!("the gRPC server failed: {e}")),
                Err(e) => Err(anyhow::anyhow!("the gRPC server task failed: {e}")),
            };
        }
    }
    tracing::info!("signal received: invalidating ads and stopping");
    advertiser.abort();
    status.abort();
    let _ = tokio::time::timeout(
        Duration::from_secs(5),
        crate::advertise::invalidate_all(sim.as_ref(), &args.cms),
    )
    .await;
    Ok(())
}

/// One line every `every`: jobs idle and running, claims, releases, refusals.
async fn status_lines(sim: std::sync::Arc<Sim>, every: Duration) {
    let mut tick = tokio::time::interval(every);
    tick.tick().await;
    loop {
        tick.tick().await;
        let (idle, running, s) = sim.status();
        tracing::info!(
            idle,
            running,
            claims = s.claims,
            releases = s.releases,
            refusals = s.refusals,
            completed = s.completed,
            "pool status"
        );
    }
}

/// Waits for SIGTERM or SIGINT (Ctrl-C).
pub async fn wait_for_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = term.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
        }
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
