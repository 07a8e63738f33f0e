//! Starting and stopping an access point: the spool, the Unix socket (mode 0666), the TCP
//! services (the users' `Schedd` among them, with mutual TLS), the advertiser, the
//! keep-alive and periodic-policy loops, the metrics.
use super::args::AccessPointArgs;
use super::daemon::Schedd;
use super::service::{AccessPointService, ScheddService, ShadowService};
use aerie_proto::execute::shadow_server::ShadowServer;
use aerie_proto::negotiation::access_point_server::AccessPointServer;
use aerie_proto::schedd::schedd_server::ScheddServer;
use anyhow::Context;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinHandle;

/// A started access point.
pub struct Running {
    /// The daemon.
    pub schedd: Arc<Schedd>,
    /// Where its TCP services listen.
    pub tcp: std::net::SocketAddr,
    tasks: Vec<JoinHandle<()>>,
    cms: Vec<String>,
}

impl Running {
    /// Stops every task; invalidates the ads at the CMs (best effort); waits (up to 5 s) for
    /// the connections still open to let go of the queue, so the spool can be opened again.
    pub async fn stop(self) {
        for t in &self.tasks {
            t.abort();
        }
        if !self.cms.is_empty() {
            crate::advertise::invalidate_all(self.schedd.as_ref(), &self.cms).await;
        }
        for _ in 0..100 {
            if Arc::strong_count(&self.schedd) == 1 {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        tracing::warn!("connections still hold the job queue after 5 s");
    }
}

fn every(period: Duration) -> tokio::time::Interval {
    let mut t = tokio::time::interval(period);
    t.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    t
}

/// Starts an access point and returns once it serves.
pub async fn start(args: &AccessPointArgs) -> anyhow::Result<Running> {
    let tcp = tokio::net::TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("cannot listen on {}", args.listen))?;
    let bound = tcp.local_addr()?;
    let settings = args.settings(bound)?;
    if let Some(m) = args.metrics_listen {
        super::metrics::install(m)?;
    }
    let schedd = Schedd::open(&args.spool, settings)?;
    schedd.end_orphaned_runs().await;
    if let Ok(m) = std::fs::symlink_metadata(&args.socket) {
        if !m.file_type().is_socket() {
            anyhow::bail!("{} exists and is not a socket", args.socket.display());
        }
        std::fs::remove_file(&args.socket)
            .with_context(|| format!("cannot remove the old socket {}", args.socket.display()))?;
    }
    let uds = tokio::net::UnixListener::bind(&args.socket)
        .with_context(|| format!("cannot listen on {}", args.socket.display()))?;
    std::fs::set_permissions(&args.socket, std::fs::Permissions::from_mode(0o666))
        .with_context(|| format!("cannot make {} mode 0666", args.socket.display()))?;
    let mut tasks = Vec::new();
    // Submissions carry input files (not streamed yet); queue queries may list the whole queue.
    let (take, give) = (
        crate::execute::service::MAX_TRANSFER_MESSAGE,
        aerie_security::transport::MAX_POOL_REPLY,
    );
    let s = schedd.clone();
    tasks.push(tokio::spawn(async move {
        let r = aerie_security::transport::local_server()
            .add_service(
                ScheddServer::new(ScheddService(s))
                    .max_decoding_message_size(take)
                    .max_encoding_message_size(give),
            )
            .serve_with_incoming(tokio_stream::wrappers::UnixListenerStream::new(uds))
            .await;
        if let Err(e) = r {
            tracing::error!(error = %e, "the Unix socket service stopped");
        }
    }));
    let s = schedd.clone();
    let mut tcp_server = aerie_security::transport::server()?;
    tasks.push(tokio::spawn(async move {
        let r = tcp_server
            .add_service(
                AccessPointServer::new(AccessPointService(s.clone()))
                    .max_encoding_message_size(give),
            )
            .add_service(
                ShadowServer::new(ShadowService(s.clone())).max_decoding_message_size(take),
            )
            // Users with a token or an administrator's certificate (cmctl --schedd HOST:PORT).
            .add_service(
                ScheddServer::new(ScheddService(s))
                    .max_decoding_message_size(take)
                    .max_encoding_message_size(give),
            )
            .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(tcp))
            .await;
        if let Err(e) = r {
            tracing::error!(error = %e, "the TCP services stopped");
        }
    }));
    let s = schedd.clone();
    tasks.push(tokio::spawn(async move {
        let mut t = every(s.settings.alive_interval);
        t.tick().await;
        loop {
            t.tick().await;
            s.keep_alive_once().await;
        }
    }));
    let s = schedd.clone();
    tasks.push(tokio::spawn(async move {
        let mut t = every(s.settings.periodic_interval);
        t.tick().await;
        loop {
            t.tick().await;
            s.periodic_once().await;
        }
    }));
    // Tokens: checked with the pool key when this access point holds it (super::who), the
    // revoked ones fetched from the CMs.
    match aerie_security::transport::pool_token_key() {
        Ok(Some(key)) => {
            let v = Arc::new(aerie_security::token::KeyAndRevocations::new(key));
            if aerie_security::layer::install_verifier(v.clone()) && !args.cms.is_empty() {
                tasks.push(tokio::spawn(super::revocations::run(v, args.cms.clone())));
            }
        }
        Ok(None) => tracing::info!(
            "no token-signing.key in the credentials: the TCP Schedd service takes certificates only"
        ),
        Err(e) => tracing::warn!(error = %e, "cannot read the token key; the TCP Schedd service takes certificates only"),
    }
    if !args.cms.is_empty() {
        let (s, cms, i) = (
            schedd.clone(),
            args.cms.clone(),
            Duration::from_secs(args.update_interval.max(1)),
        );
        tasks.push(tokio::spawn(crate::advertise::run(s, cms, i)));
    }
    tracing::info!(tcp = %bound, socket = %args.socket.display(), name = %schedd.settings.name, "access point serving");
    Ok(Running {
        schedd,
        tcp: bound,
        tasks,
        cms: args.cms.clone(),
    })
}

/// `aerie-node access-point`: serves until SIGINT or SIGTERM.
pub async fn run(args: AccessPointArgs) -> anyhow::Result<()> {
    let running = start(&args).await?;
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
    tracing::info!("stopping");
    running.stop().await;
    Ok(())
}
