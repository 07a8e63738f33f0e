//! `aerie-node execute`: reads the configuration, detects the machine and lays out its slots,
//! serves `Startd` and `Execute` on one gRPC server, streams the slot ads to the CMs, and runs
//! the startd's periodic evaluation every `POLLING_INTERVAL` (HTCondor's polling timer,
//! `ResMgr::eval_all` in `src/condor_startd.V6/ResMgr.cpp`), until SIGINT or SIGTERM; then it
//! stops its jobs so their access points hear they were evicted (`Node::shut_down`).
//!
//! [`Node`] is the thin shell around the pure [`SlotManager`]: every call into it goes through
//! [`Node::with_mgr`], which carries out the [`Effect`]s it asks for (signals to jobs, answers
//! to waiting claim requests) once the lock is released, and wakes the advertiser.
use super::args::ExecuteArgs;
use super::jobs::JobEntry;
use super::metrics;
use super::slots::{Effect, SlotManager};
use crate::policy::{Cause, Policy, Shutdown};
use crate::startd::ad::MachineFacts;
use crate::startd::layout;
use crate::startd::load::Connected;
use crate::startd::machine::{self, Machine};
use crate::starter::{cpu_load, LimitMethod, MemoryKnobs, RunAsPolicy};
use aerie_config::{Config, Context as CfgContext, LoadOptions};
use aerie_proto::negotiation as npb;
use anyhow::Context;
use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tokio::sync::{oneshot, Notify};

/// Seconds since the Unix epoch.
pub fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// How this node starts jobs.
#[derive(Clone, Debug)]
pub struct StarterSetup {
    /// `EXECUTE`.
    pub execute_dir: PathBuf,
    /// cgroup v2 or rlimits.
    pub limits: LimitMethod,
    /// What a job's memory is held to (`CGROUP_MEMORY_LIMIT_POLICY`, `STARTER_RLIMIT_AS`).
    pub memory: MemoryKnobs,
    /// The configuration (`STARTER_ALLOW_RUNAS_OWNER`, `SLOT<N>_USER`).
    pub config: Config,
    /// The program that runs the job guard (`aerie-node job-guard`, [`crate::starter::guard`]);
    /// `None` runs jobs unguarded.
    pub job_guard: Option<PathBuf>,
}

impl StarterSetup {
    /// Whose account runs a job on `slot` (checked at start, so it does not fail here).
    pub fn run_as(&self, slot: &str) -> RunAsPolicy {
        let local = slot.split('@').next().unwrap_or(slot);
        RunAsPolicy::from_knobs(local, |k| self.config.expanded(k).ok().flatten())
            .unwrap_or_default()
    }
}

/// The execute node: its slots, its running jobs, and what waits on them.
pub struct Node {
    mgr: Mutex<SlotManager>,
    pub(super) jobs: Mutex<HashMap<String, Arc<JobEntry>>>,
    pending: Mutex<HashMap<String, oneshot::Sender<npb::ClaimReply>>>,
    pub(super) starter: StarterSetup,
    pub(super) seq: AtomicU64,
    /// Job events queued for access points and not yet acknowledged or given up.
    pub(super) events_in_flight: Arc<AtomicUsize>,
    changed: Notify,
    dump_ads: Option<PathBuf>,
    /// Where the newest term seen is kept across restarts ([`crate::startd::term`]), and the
    /// value last written there.
    term_store: Option<(PathBuf, AtomicU64)>,
    /// When the node started: the origin of its jobs' CPU load samples.
    started: Instant,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Node {
    /// A node around `mgr`.
    pub fn new(mgr: SlotManager, starter: StarterSetup, dump_ads: Option<PathBuf>) -> Node {
        Node {
            mgr: Mutex::new(mgr),
            jobs: Mutex::new(HashMap::new()),
            pending: Mutex::new(HashMap::new()),
            starter,
            seq: AtomicU64::new(1),
            events_in_flight: Arc::new(AtomicUsize::new(0)),
            changed: Notify::new(),
            dump_ads,
            term_store: None,
            started: Instant::now(),
        }
    }

    /// Keeps the newest term seen in `state_dir` from now on, starting from what is there
    /// (every slot's term fence is raised to it).
    pub fn persist_terms_in(&mut self, state_dir: PathBuf) -> anyhow::Result<()> {
        let t = crate::startd::term::load(&state_dir).map_err(anyhow::Error::msg)?;
        lock(&self.mgr).restore_term(t);
        tracing::info!(term = t, "newest Raft term seen before this start");
        self.term_store = Some((state_dir, AtomicU64::new(t)));
        Ok(())
    }

    /// Runs `f` on the slot manager, then carries out the effects it asked for and wakes the
    /// advertiser if an ad changed.
    pub fn with_mgr<R>(&self, f: impl FnOnce(&mut SlotManager) -> R) -> R {
        let (r, effects, changed, newest) = {
            let mut m = lock(&self.mgr);
            let r = f(&mut m);
            (r, m.take_effects(), m.has_changes(), m.newest_term())
        };
        if let Some((dir, stored)) = &self.term_store {
            if stored.fetch_max(newest, Ordering::SeqCst) < newest {
                if let Err(e) = crate::startd::term::store(dir, newest) {
                    tracing::warn!(error = %e, term = newest, "cannot keep the newest term");
                }
            }
        }
        self.carry_out(effects);
        if changed {
            self.changed.notify_one();
            self.dump_ads();
        }
        r
    }

    /// Waits for the answer of a claim request that waits for a preemption; registered under
    /// the manager's lock (inside [`Node::with_mgr`]), so no answer can come before.
    pub fn wait_for_claim(&self, token: &str) -> oneshot::Receiver<npb::ClaimReply> {
        let (tx, rx) = oneshot::channel();
        lock(&self.pending).insert(token.to_string(), tx);
        rx
    }

    /// The running job of `claim_id`.
    pub(super) fn job(&self, claim_id: &str) -> Option<Arc<JobEntry>> {
        lock(&self.jobs).get(claim_id).cloned()
    }

    fn carry_out(&self, effects: Vec<Effect>) {
        let now = Instant::now();
        for e in effects {
            match e {
                Effect::Suspend { claim_id } => {
                    if let Some(j) = self.job(&claim_id) {
                        j.signal("suspend", |p| p.suspend());
                    }
                }
                Effect::Continue { claim_id } => {
                    if let Some(j) = self.job(&claim_id) {
                        j.signal("continue", |p| p.resume());
                    }
                }
                Effect::SoftKill {
                    claim_id,
                    vacate_seconds,
                } => {
                    if let Some(j) = self.job(&claim_id) {
                        j.soft_kill(now, vacate_seconds);
                    }
                }
                Effect::HardKill { claim_id } => {
                    if let Some(j) = self.job(&claim_id) {
                        j.hard_kill();
                    }
                }
                Effect::ClaimDecided { pending, reply } => {
                    metrics::claim(reply.ok);
                    let waiter = lock(&self.pending).remove(&pending);
                    let unheard = match waiter {
                        Some(tx) => tx.send(reply).err(),
                        None => Some(reply),
                    };
                    // The access point gave up waiting (it stopped, or the path to it broke):
                    // nobody holds the new claim, so it is released now rather than when its
                    // lease passes.
                    if let Some(r) = unheard.filter(|r| r.ok) {
                        tracing::info!(slot = %r.claimed_slot, claim = %r.claim_id, "the preempting claim's requester is gone; releasing the claim");
                        let released = self.with_mgr(|m| {
                            m.release_claim(&r.claimed_slot, &r.claim_id, unix_now())
                        });
                        if let Err(e) = released {
                            tracing::warn!(slot = %r.claimed_slot, error = %e, "releasing an unheard claim");
                        }
                    }
                }
                Effect::ClaimEnded {
                    slot,
                    claim_id,
                    cause,
                } => {
                    if cause == Cause::LeaseExpired {
                        tracing::warn!(slot = %slot, claim = %claim_id, "claim lease expired; claim dropped");
                        metrics::lease_expired();
                    }
                }
            }
        }
    }

    /// Hard-kills the jobs whose vacate time has passed.
    fn hard_kill_due(&self, now: Instant) {
        let jobs: Vec<Arc<JobEntry>> = lock(&self.jobs).values().cloned().collect();
        for j in jobs {
            if j.hard_kill_due(now) {
                tracing::info!(slot = %j.slot, job = %j.job, claim = %j.claim_id, "vacate time passed; killing the job");
                j.hard_kill();
            }
        }
    }

    /// One periodic evaluation at `now`.
    fn tick(&self, now: i64, console_devices: &[String], bad_utmp: bool) {
        let load = machine::read_load_avg().unwrap_or_else(|e| {
            tracing::warn!(error = %e, "no load average");
            0.0
        });
        let idle = machine::idle_times(&machine::read_idle(now, console_devices, bad_utmp, 0));
        // Each running job's CPU load, for its slot's CondorLoadAvg.
        let at = self.started.elapsed().as_secs_f64();
        let jobs: Vec<Arc<JobEntry>> = lock(&self.jobs).values().cloned().collect();
        let job_loads = if jobs.is_empty() {
            Default::default()
        } else {
            let groups = cpu_load::cpu_by_process_group().unwrap_or_else(|e| {
                tracing::warn!(error = %e, "cannot read the jobs' CPU time");
                Default::default()
            });
            jobs.iter()
                .filter_map(|j| j.cpu_load(at, &groups).map(|l| (j.claim_id.clone(), l)))
                .collect()
        };
        self.with_mgr(|m| {
            m.set_job_loads(job_loads);
            m.tick(now, load, Some(idle))
        });
        self.hard_kill_due(Instant::now());
        let counts = lock(&self.mgr).counts();
        metrics::set_slots(&counts);
        self.dump_ads();
    }

    /// Test-only: writes every slot ad (private `ClaimId` included) where `--dump-ads` says.
    fn dump_ads(&self) {
        let Some(path) = &self.dump_ads else {
            return;
        };
        let ads = lock(&self.mgr).ads();
        let text = match serde_json::to_string_pretty(&ads) {
            Ok(t) => t,
            Err(_) => return,
        };
        let tmp = path.with_extension("tmp");
        if let Err(e) = std::fs::write(&tmp, text).and_then(|_| std::fs::rename(&tmp, path)) {
            tracing::warn!(path = %path.display(), error = %e, "cannot write the slot ads");
        }
    }

    /// Kills every job (at exit).
    fn kill_all(&self) {
        let jobs: Vec<Arc<JobEntry>> = lock(&self.jobs).values().cloned().collect();
        for j in jobs {
            j.hard_kill();
        }
    }

    /// Stops every job before the node exits, so their access points hear of it (evicted: idle
    /// again) instead of waiting for the claims' leases: the claims are retired and vacated
    /// ([`Shutdown::Graceful`]); after `grace`, or at a second SIGTERM/SIGINT, the jobs left
    /// are killed ([`Shutdown::Fast`]). Then the job events still queued are given
    /// [`EVENT_FLUSH`] to reach their access points.
    async fn shut_down(&self, grace: Duration) {
        if lock(&self.jobs).is_empty() && self.events_in_flight.load(Ordering::SeqCst) == 0 {
            return;
        }
        tracing::info!(
            grace_s = grace.as_secs(),
            "stopping the jobs (SIGTERM again to kill them)"
        );
        self.with_mgr(|m| m.shutdown(Shutdown::Graceful, unix_now()));
        let no_jobs = || lock(&self.jobs).is_empty();
        tokio::select! {
            _ = wait_until(no_jobs, grace) => {}
            _ = crate::simulate::wait_for_signal() => {}
        }
        if !no_jobs() {
            tracing::warn!("killing the jobs left");
            self.with_mgr(|m| m.shutdown(Shutdown::Fast, unix_now()));
            wait_until(no_jobs, Duration::from_secs(5)).await;
        }
        let flushed = || self.events_in_flight.load(Ordering::SeqCst) == 0;
        if !wait_until(flushed, EVENT_FLUSH).await {
            tracing::warn!(
                events = self.events_in_flight.load(Ordering::SeqCst),
                "job events not delivered before exit; their access points will find the claims gone"
            );
        }
    }
}

impl crate::advertise::AdSource for Node {
    fn all_ads(&self) -> Vec<String> {
        lock(&self.mgr).all_ads()
    }
    fn take_changes(&self) -> (Vec<String>, Vec<(String, String)>) {
        lock(&self.mgr).take_changes()
    }
    fn requeue_removed(&self, removed: Vec<(String, String)>) {
        lock(&self.mgr).requeue_removed(removed)
    }
    fn ad_keys(&self) -> Vec<(String, String)> {
        lock(&self.mgr)
            .slot_names()
            .into_iter()
            .map(|n| ("Machine".to_string(), n))
            .collect()
    }
    fn changed(&self) -> &Notify {
        &self.changed
    }
    fn cm_term(&self, term: u64) {
        self.with_mgr(|m| m.cm_reported_term(term));
    }
}

/// How long a node shutting down waits for its last job events to reach their access points.
const EVENT_FLUSH: Duration = Duration::from_secs(5);

/// Polls `done` every 100 ms for up to `within`; whether it became true.
async fn wait_until(done: impl Fn() -> bool, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    while !done() {
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    true
}

fn load_config(path: Option<&Path>) -> anyhow::Result<Config> {
    match path {
        Some(p) => Config::load(p, &LoadOptions::for_subsystem("STARTD"))
            .map_err(|e| anyhow::anyhow!("{e}"))
            .with_context(|| format!("reading configuration {} (--config)", p.display())),
        None => Ok(Config::empty(CfgContext::subsystem("STARTD"))),
    }
}

fn make_dir(dir: &Path, flag: &str) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(dir)
        .with_context(|| format!("cannot create {} ({flag})", dir.display()))?;
    // Jobs run under their owners' accounts must reach their sandboxes inside.
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755))
        .with_context(|| format!("cannot set the mode of {} ({flag})", dir.display()))
}

/// The limit method: cgroup v2 under `/sys/fs/cgroup/BASE_CGROUP` when delegated, else rlimits.
fn limit_method(cfg: &Config) -> anyhow::Result<LimitMethod> {
    let base = cfg
        .expanded("BASE_CGROUP")
        .map_err(|e| anyhow::anyhow!("{e}"))?
        .filter(|b| !b.trim().is_empty())
        .map(|b| Path::new("/sys/fs/cgroup").join(b.trim().trim_start_matches('/')));
    Ok(LimitMethod::detect(base.as_deref()))
}

/// Runs `aerie-node execute` until SIGINT or SIGTERM; an error if the configuration, the
/// machine or the listen address is unusable, or the gRPC server stops on its own.
pub async fn run(args: ExecuteArgs) -> anyhow::Result<()> {
    args.validate()?;
    let cfg = load_config(args.config.as_deref())?;
    let err = |e: aerie_config::ConfigError| anyhow::anyhow!("{e}");
    make_dir(&args.state_dir, "--state-dir")?;
    let execute_dir = args.execute_dir(&cfg)?;
    let tick = super::args::polling_interval(&cfg)?;
    make_dir(&execute_dir, "--execute-dir")?;
    let readings = machine::read(&execute_dir).map_err(|e| anyhow::anyhow!("{e}"))?;
    let m = Machine::from_readings(&readings).map_err(|e| anyhow::anyhow!("{e}"))?;
    let lay = layout::layout(&cfg, &m).map_err(err)?;
    let policy = Policy::from_config(&cfg)?;
    RunAsPolicy::from_knobs("slot1", |k| cfg.expanded(k).ok().flatten())
        .map_err(|e| anyhow::anyhow!("configuration: {e}"))?;
    let update_interval = cfg.int_or("UPDATE_INTERVAL", 300).map_err(err)?.max(1) as u64;
    let console_devices = cfg.list("CONSOLE_DEVICES").map_err(err)?;
    let bad_utmp = cfg.bool_or("STARTD_HAS_BAD_UTMP", false).map_err(err)?;
    let connected = Connected::from_config(&cfg, 0).map_err(err)?;
    let limits = limit_method(&cfg)?;
    let memory = MemoryKnobs::from_knobs(|k| cfg.expanded(k).ok().flatten())
        .map_err(|e| anyhow::anyhow!("configuration: {e}"))?;
    // HTCondor's master gives a graceful shutdown this long before it goes fast.
    let grace = cfg
        .int_or("SHUTDOWN_GRACEFUL_TIMEOUT", 1800)
        .map_err(err)?
        .max(0) as u64;

    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("cannot listen on {} (--listen)", args.listen))?;
    let listen = listener.local_addr()?.to_string();
    let name = args
        .name
        .clone()
        .unwrap_or_else(|| readings.utsname.nodename.clone());
    let domain = |knob: &str| -> anyhow::Result<String> {
        Ok(cfg
            .expanded(knob)
            .map_err(err)?
            .filter(|v| !v.trim().is_empty())
            .unwrap_or_else(|| name.clone()))
    };
    let facts = MachineFacts {
        machine: name.clone(),
        my_address: format!("<{listen}>"),
        uid_domain: domain("UID_DOMAIN")?,
        filesystem_domain: domain("FILESYSTEM_DOMAIN")?,
        platform: m.platform.clone(),
        total: lay.total,
        detected: Some((m.cpus, m.memory_mib)),
    };
    let now = unix_now();
    let mut mgr = SlotManager::new(&lay.slots, policy, facts, connected, &listen, None, now);
    mgr.set_job_limits(limits.name());
    // With pool credentials, claims must carry a grant signed by the leader (issue 16.6);
    // in --insecure development mode unsigned grants pass the capability and term checks.
    if let Some(v) = aerie_security::transport::transport().grant_verifier() {
        mgr.require_signed_grants(v?);
    }
    let starter = StarterSetup {
        execute_dir: execute_dir.clone(),
        limits: limits.clone(),
        memory,
        config: cfg.clone(),
        // This very binary, whatever became of its file since it started.
        job_guard: Some(PathBuf::from("/proc/self/exe")),
    };
    let mut node = Node::new(mgr, starter, args.dump_ads.clone());
    node.persist_terms_in(args.state_dir.clone())?;
    let node = Arc::new(node);
    node.dump_ads();
    if let Some(addr) = args.metrics_listen {
        metrics::install(addr)?;
    }
    tracing::info!(
        listen = %listen,
        machine = %name,
        slots = lay.slots.len(),
        execute = %execute_dir.display(),
        limits = limits.name(),
        polling_interval_s = tick.as_secs(),
        cms = %args.cms.join(","),
        "execute node up"
    );
    println!("aerie-node execute: listening on {listen}");
    let _ = std::io::stdout().flush();

    let svc = super::service::ExecuteService { node: node.clone() };
    let server = tokio::spawn(
        aerie_security::transport::server()?
            .add_service(svc.startd())
            .add_service(svc.execute())
            .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener)),
    );
    let advertiser = (!args.cms.is_empty()).then(|| {
        tokio::spawn(crate::advertise::run(
            node.clone(),
            args.cms.clone(),
            Duration::from_secs(update_interval),
        ))
    });
    if advertiser.is_none() {
        tracing::warn!("no --cms: the slots are not advertised");
    }
    let ticker = {
        let node = node.clone();
        tokio::spawn(async move {
            let mut iv = tokio::time::interval(tick);
            iv.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                iv.tick().await;
                node.tick(unix_now(), &console_devices, bad_utmp);
            }
        })
    };
    let heartbeats = {
        let node = node.clone();
        tokio::spawn(async move {
            let mut iv = tokio::time::interval(super::jobs::GUARD_HEARTBEAT);
            iv.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                iv.tick().await;
                node.heartbeat_jobs(Instant::now());
            }
        })
    };

    let result = tokio::select! {
        _ = crate::simulate::wait_for_signal() => Ok(()),
        r = server => match r {
            Ok(Ok(())) => Err(anyhow::anyhow!("the gRPC server stopped")),
            Ok(Err(e)) => Err(anyhow::anyhow!("the gRPC server failed: {e}")),
            Err(e) => Err(anyhow::anyhow!("the gRPC server task failed: {e}")),
        },
    };
    if result.is_ok() {
        node.shut_down(Duration::from_secs(grace)).await;
    }
    tracing::info!("stopping: invalidating the ads");
    ticker.abort();
    heartbeats.abort();
    node.kill_all();
    if let Some(a) = advertiser {
        a.abort();
        let _ = tokio::time::timeout(
            Duration::from_secs(5),
            crate::advertise::invalidate_all(node.as_ref(), &args.cms),
        )
        .await;
    }
    result
}
