//! `aerie-cm serve`: one central-manager node (Raft member, admin API, collector, metrics).
//!
//! Start a new 3-node cluster by giving every node `--bootstrap` and the same `--peers` list:
//! the cluster forms once every initial member answers and none holds a cluster yet (see
//! `raft::bootstrap`), so a CM restarted with an empty data directory rejoins instead of
//! forming a second cluster. A node started without `--bootstrap` waits to be added with
//! `cmctl cluster add`. Every peer message carries the cluster id (`--cluster-id`).
use crate::admin::AdminService;
use crate::raft::config::RaftKnobs;
use crate::raft::leadership::Leadership;
use crate::raft::network::{Network, PeerHealth};
use crate::raft::service::RaftService;
use crate::raft::{Node, NodeId, Raft};
use anyhow::{bail, Context};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// How often the metrics census recomputes the ledger, cycle and pool gauges.
const CENSUS_INTERVAL: Duration = Duration::from_secs(5);

/// Command-line arguments of `aerie-cm serve`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// This CM's Raft node id (a positive number, unique in the cluster).
    #[arg(long)]
    pub id: u64,
    /// Address of this CM's gRPC listener (Raft peers and the admin API), e.g. 10.0.0.1:9618.
    #[arg(long)]
    pub listen: SocketAddr,
    /// Address peers and clients should use to reach this CM, if not the listen address
    /// (e.g. listening on 0.0.0.0).
    #[arg(long)]
    pub advertise: Option<String>,
    /// Form a new cluster of `--peers` if this CM has never been part of one and no peer
    /// holds one yet (safe to keep on every start).
    #[arg(long, requires = "peers", conflicts_with = "join")]
    pub bootstrap: bool,
    /// The initial cluster for `--bootstrap`: id=host:port,... including this node.
    #[arg(long, value_delimiter = ',', requires = "bootstrap")]
    pub peers: Vec<String>,
    /// The cluster's name, carried on every peer message so two clusters never mix; given
    /// with `--bootstrap` (default: derived from `--peers`, the same on every initial member).
    /// A CM added later learns it from its peers.
    #[arg(long, env = "AERIE_CLUSTER_ID", requires = "bootstrap")]
    pub cluster_id: Option<String>,
    /// Wait to be added to an existing cluster (`cmctl cluster add`): the default without
    /// `--bootstrap`, kept for scripts that say it.
    #[arg(long)]
    pub join: bool,
    /// Where the Raft log, vote and snapshots are stored.
    #[arg(long)]
    pub data_dir: PathBuf,
    /// An extra listener serving only the admin API.
    #[arg(long)]
    pub admin_listen: Option<SocketAddr>,
    /// Serve Prometheus metrics over HTTP at this address (/metrics).
    #[arg(long)]
    pub metrics_listen: Option<SocketAddr>,
    /// HTCondor-syntax configuration file: Raft knobs (AERIE_HEARTBEAT_INTERVAL,
    /// AERIE_ELECTION_TIMEOUT, AERIE_SNAPSHOT_LOGS, AERIE_SNAPSHOT_KEEP_LOGS; the environment
    /// overrides them) and the accountant's parameters (PRIORITY_HALFLIFE, DEFAULT_PRIO_FACTOR,
    /// GROUP_NAMES, GROUP_PRIO_FACTOR_<g>...), which the leader commits when they change, and
    /// the collector's (CLASSAD_LIFETIME, ABSENT_REQUIREMENTS, ABSENT_EXPIRE_ADS_AFTER,
    /// EXPIRE_INVALIDATED_ADS, AERIE_COLLECTOR_MAX_AD_SIZE, AERIE_COLLECTOR_MAX_UPDATE_RATE,
    /// AERIE_COLLECTOR_RELAY_INTERVAL/_BATCH/_QUEUE, AERIE_COLLECTOR_DIGEST_INTERVAL).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Log lines as text (colour only on a terminal) or JSON (for log shippers); `AERIE_LOG`
    /// selects what is logged.
    #[arg(long, env = "AERIE_LOG_FORMAT", value_enum, default_value_t = aerie_log::LogFormat::Text)]
    pub log_format: aerie_log::LogFormat,
    /// How long an admin write or linearizable read waits for a quorum (ms, 100 to 600000).
    #[arg(long, env = "AERIE_ADMIN_TIMEOUT", default_value_t = 5000,
          value_parser = clap::value_parser!(u64).range(100..=600_000))]
    pub admin_timeout_ms: u64,
    /// Credentials (mutual TLS) or `--insecure`.
    #[command(flatten)]
    pub security: aerie_security::transport::SecurityArgs,
}

/// Parses `id=addr,...`.
pub fn parse_peers(peers: &[String]) -> anyhow::Result<BTreeMap<NodeId, Node>> {
    let mut out = BTreeMap::new();
    for p in peers.iter().map(|p| p.trim()).filter(|p| !p.is_empty()) {
        let Some((id, addr)) = p.split_once('=') else {
            bail!("--peers: {p:?} is not id=host:port");
        };
        let id: NodeId = id
            .trim()
            .parse()
            .with_context(|| format!("--peers: node id {id:?} in {p:?} is not a number"))?;
        if id == 0 {
            bail!("--peers: node id 0 is reserved (ids start at 1)");
        }
        if addr.trim().is_empty() {
            bail!("--peers: empty address for node {id}");
        }
        if out
            .insert(
                id,
                Node {
                    addr: addr.trim().to_string(),
                },
            )
            .is_some()
        {
            bail!("--peers: node id {id} appears twice");
        }
    }
    Ok(out)
}

/// Runs the daemon until SIGINT/SIGTERM; returns the process exit code.
pub fn run(args: Args) -> anyhow::Result<i32> {
    aerie_log::init("aerie_cm", args.log_format);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    rt.block_on(serve(args))
}

async fn serve(args: Args) -> anyhow::Result<i32> {
    if args.id == 0 {
        bail!("--id must be a positive number");
    }
    let peers = parse_peers(&args.peers)?;
    let advertise = args
        .advertise
        .clone()
        .unwrap_or_else(|| args.listen.to_string());
    if args.bootstrap {
        match peers.get(&args.id) {
            None => bail!("--peers does not list this node's id {}", args.id),
            Some(n) if n.addr != advertise => bail!(
                "--peers gives node {} the address {}, but it listens/advertises {advertise}",
                args.id,
                n.addr
            ),
            _ => {}
        }
    }
    let cfg = match &args.config {
        Some(path) => Some(
            aerie_config::Config::load(
                path,
                &aerie_config::LoadOptions::for_subsystem("NEGOTIATOR"),
            )
            .map_err(|e| anyhow::anyhow!("{e}"))
            .with_context(|| format!("reading configuration {}", path.display()))?,
        ),
        None => None,
    };
    let policy = aerie_security::Policy::from_config(cfg.as_ref())
        .map_err(|e| anyhow::anyhow!("authorization knobs: {e}"))?;
    args.security
        .install(&format!("cm{}", args.id), policy)
        .context("security")?;
    let knobs = RaftKnobs::read(&crate::knob::Knobs::new(cfg.as_ref()))?;
    let config = Arc::new(knobs.openraft_config()?);
    if let Some(m) = args.metrics_listen {
        crate::metrics::install(m)?;
    }
    if let aerie_security::Transport::Tls(t) = aerie_security::transport() {
        metrics::gauge!("aerie_tls_certificate_expiry_timestamp_seconds").set(t.not_after as f64);
    }
    let (log, sm, cluster) = crate::raft::store::open(&args.data_dir)?;
    let state = sm.shared();
    let health = PeerHealth::default();
    let network = Network {
        health: health.clone(),
        rpc_deadline: knobs.rpc_deadline(),
        cluster: cluster.clone(),
    };
    let raft = Raft::new(args.id, config, network, log, sm)
        .await
        .context("cannot start Raft")?;

    // The pool's token key: signs `cmctl token create`'s tokens and, with the replicated
    // revocation list, checks the tokens of callers without a certificate.
    let signing_key = args
        .security
        .credentials
        .as_deref()
        .and_then(|d| match aerie_security::token::SigningKey::load(d) {
            Ok(k) => Some(Arc::new(k)),
            Err(e) => {
                tracing::warn!(error = %e, "no token signing key: tokens are neither issued nor accepted here");
                None
            }
        });
    if let Some(k) = &signing_key {
        aerie_security::layer::install_verifier(Arc::new(crate::admin::tokens::StateVerifier {
            key: (**k).clone(),
            state: state.clone(),
        }));
    }
    let leadership = Leadership::new(raft.clone(), args.id);
    let file_policy = crate::policy::FilePolicy::new(args.config.clone(), cfg.as_ref())?;
    let admin = AdminService {
        id: args.id,
        addr: advertise.clone(),
        leadership: leadership.clone(),
        cluster: cluster.clone(),
        state,
        health,
        timeout: Duration::from_millis(args.admin_timeout_ms),
        file_policy: file_policy.clone(),
        signing_key: signing_key.clone(),
        write_limit: crate::limits::admin_write_limiter(cfg.as_ref())
            .map_err(anyhow::Error::msg)?,
    };
    // The collector: soft state on every node, relayed between CMs; absent ads via Raft.
    // A quorum's acknowledgement counts as fresh for a few election timeouts.
    let fresh = Duration::from_millis(knobs.election_max_ms.saturating_mul(3).max(1000));
    let mut collector = crate::collector::run::start(
        cfg.as_ref(),
        &leadership,
        &cluster,
        fresh,
        admin.state.clone(),
    )
    .map_err(|e| anyhow::anyhow!("collector configuration: {e}"))?;
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("cannot listen on {}", args.listen))?;
    let incoming = tonic::transport::server::TcpIncoming::from_listener(listener, true, None)
        .map_err(|e| anyhow::anyhow!("cannot use listener {}: {e}", args.listen))?;
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let heard = crate::raft::quick_election::Heard::default();
    let mut servers = Vec::new();
    {
        let mut stop = stop_rx.clone();
        let svc = aerie_security::transport::server()?
            .add_service(
                RaftService::new(raft.clone(), cluster.clone(), heard.clone()).into_server(),
            )
            .add_service(admin.clone().into_server())
            .add_service(collector.service.clone().into_server());
        servers.push(tokio::spawn(async move {
            svc.serve_with_incoming_shutdown(incoming, async move {
                let _ = stop.wait_for(|v| *v).await;
            })
            .await
        }));
    }
    if let Some(a) = args.admin_listen.filter(|a| *a != args.listen) {
        let mut stop = stop_rx.clone();
        let svc = aerie_security::transport::server()?.add_service(admin.clone().into_server());
        let l = tokio::net::TcpListener::bind(a)
            .await
            .with_context(|| format!("cannot listen on --admin-listen {a}"))?;
        let incoming = tonic::transport::server::TcpIncoming::from_listener(l, true, None)
            .map_err(|e| anyhow::anyhow!("cannot use listener {a}: {e}"))?;
        servers.push(tokio::spawn(async move {
            svc.serve_with_incoming_shutdown(incoming, async move {
                let _ = stop.wait_for(|v| *v).await;
            })
            .await
        }));
    }

    // Form the cluster exactly once (raft::bootstrap), without holding up the daemon.
    if args.bootstrap {
        let cluster_id = args
            .cluster_id
            .clone()
            .unwrap_or_else(|| crate::raft::bootstrap::default_cluster_id(&peers));
        let (raft, cluster, id) = (raft.clone(), cluster.clone(), args.id);
        tokio::spawn(async move {
            if let Err(e) =
                crate::raft::bootstrap::bootstrap(&raft, &cluster, id, peers, &cluster_id).await
            {
                tracing::error!(error = %e, "bootstrap failed");
            }
        });
    }

    // Metrics from openraft's watch channel.
    {
        let mut rx = raft.metrics();
        tokio::spawn(async move {
            let mut seen = crate::metrics::RaftSeen::default();
            loop {
                {
                    let m = rx.borrow_and_update().clone();
                    crate::metrics::observe_raft(&m, &mut seen);
                }
                if rx.changed().await.is_err() {
                    break;
                }
            }
        });
    }

    // What only the leader does (the loop runs on every CM and waits for leadership).
    let leader = crate::leader::spawn(crate::leader::Leader::new(
        leadership.clone(),
        advertise.clone(),
        admin.state.clone(),
        collector.service.table.clone(),
        cfg.as_ref(),
        file_policy,
        Duration::from_millis(knobs.election_min_ms),
    )?);

    tracing::info!(id = args.id, listen = %args.listen, "aerie-cm serving");
    // None of these may end while the CM runs: one that panics or returns stops the CM
    // loudly (exit code 1, for its service manager to restart it) rather than leaving a CM
    // that answers but never negotiates or expires ads.
    let mut watched: Vec<(&'static str, tokio::task::JoinHandle<()>)> =
        std::mem::take(&mut collector.tasks);
    watched.push(("leader duties", leader));
    if knobs.quick_election {
        watched.push((
            "quick election",
            crate::raft::quick_election::spawn(
                leadership,
                heard,
                Duration::from_millis(knobs.heartbeat_ms),
                Duration::from_millis(knobs.election_max_ms),
            ),
        ));
    }
    if args.metrics_listen.is_some() {
        watched.push((
            "metrics census",
            crate::metrics::spawn_census(
                admin.state.clone(),
                collector.service.table.clone(),
                CENSUS_INTERVAL,
            ),
        ));
    }
    let names: Vec<&'static str> = watched.iter().map(|(n, _)| *n).collect();
    let mut handles: Vec<_> = watched.into_iter().map(|(_, h)| h).collect();
    let mut exit = 0;
    tokio::select! {
        _ = wait_for_signal() => tracing::info!("shutting down"),
        (result, i, _) = futures::future::select_all(handles.iter_mut()) => {
            let why = match result {
                Err(e) if e.is_panic() => format!("panicked: {e}"),
                Err(e) => format!("stopped: {e}"),
                Ok(()) => "returned".to_string(),
            };
            tracing::error!(task = names[i], why = %why, "a task of the CM ended; the CM stops so that it can be restarted whole");
            exit = 1;
        }
    }
    let _ = stop_tx.send(true);
    for h in &handles {
        h.abort();
    }
    collector.stop();
    let _ = tokio::time::timeout(Duration::from_secs(5), raft.shutdown()).await;
    for s in servers {
        let _ = tokio::time::timeout(Duration::from_secs(2), s).await;
    }
    Ok(exit)
}

async fn wait_for_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = match signal(SignalKind::terminate()) {
        Ok(s) => s,
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
            return;
        }
    };
    tokio::select! {
        _ = term.recv() => {},
        _ = tokio::signal::ctrl_c() => {},
    }
}
