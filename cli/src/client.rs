//! The admin API client `cmctl` uses: a list of CM addresses, failover between them, and
//! errors an admin can act on.
//!
//! Addresses come from `--cms host:port,...` or the `AERIE_CMS` environment variable. Each
//! call tries the CMs in order (the last one that answered first); a CM that cannot be reached
//! within the connect timeout is skipped. Writes and linearizable reads are forwarded to the
//! leader by the CM itself; if a CM answers "not leader" with the leader's address instead,
//! the client follows it.
use aerie_core::admin::{AdminQuery, ErrorKind, Query, ERROR_KIND_METADATA};
use aerie_core::state::{Command, CommandResult, Request};
use aerie_proto::admin::{self as pb, admin_client::AdminClient};
use aerie_proto::collector::collector_client::CollectorClient;
use aerie_security::transport::AuthChannel as Channel;
use anyhow::{anyhow, bail, Context};
use std::time::{Duration, Instant};

/// How to reach the CMs, shared by every subcommand that talks to them.
#[derive(Debug, Clone, clap::Args)]
pub struct ConnectArgs {
    /// CM addresses, host:port[,host:port...] (default: $AERIE_CMS).
    #[arg(long, env = "AERIE_CMS", value_delimiter = ',', global = true)]
    pub cms: Vec<String>,
    /// How long a request may take, retries through an election included (seconds).
    #[arg(long, default_value_t = 10.0, global = true)]
    pub timeout: f64,
}

impl ConnectArgs {
    /// The CM addresses given, trimmed; an error when there are none.
    pub fn addrs(&self) -> anyhow::Result<Vec<String>> {
        let addrs: Vec<String> = self
            .cms
            .iter()
            .map(|a| a.trim().to_string())
            .filter(|a| !a.is_empty())
            .collect();
        if addrs.is_empty() {
            bail!("no central managers given: use --cms host:port[,host:port...] or set AERIE_CMS");
        }
        Ok(addrs)
    }
}

/// A committed write.
#[derive(Debug, Clone)]
pub struct Written {
    /// The log index the command was committed at.
    pub log_index: u64,
    /// What the command answered, for the commands that answer something.
    pub result: Option<CommandResult>,
}

/// A failover-capable admin client.
pub struct Client {
    addrs: Vec<String>,
    timeout: Duration,
    /// Index of the CM that answered last (tried first next time).
    preferred: usize,
    rt: tokio::runtime::Runtime,
}

/// How long to wait between rounds over the CMs.
const RETRY_PAUSE: Duration = Duration::from_millis(200);

/// The longest one attempt against one CM may take (a CM waits at most its admin timeout, 5 s
/// by default, for a quorum).
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(6);

/// Outcome of one attempt against one CM.
enum Attempt<T> {
    Done(T),
    /// Could not talk to this CM; try the next.
    Unreachable(String),
    /// The CM answered that the cluster cannot serve it right now (no quorum, the leader
    /// gone): try again until the deadline.
    Retry(String),
    /// This CM says another is the leader.
    Redirect(String),
}

impl Client {
    pub fn new(args: &ConnectArgs) -> anyhow::Result<Self> {
        let addrs = args.addrs()?;
        if !(args.timeout > 0.0 && args.timeout.is_finite()) {
            bail!(
                "bad value for --timeout: {} (seconds, above 0)",
                args.timeout
            );
        }
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("cannot start the async runtime")?;
        Ok(Client {
            addrs,
            timeout: Duration::from_secs_f64(args.timeout),
            preferred: 0,
            rt,
        })
    }

    pub fn addrs(&self) -> &[String] {
        &self.addrs
    }

    /// The CM that answered last (the first one given, before any has).
    pub fn answered(&self) -> &str {
        &self.addrs[self.preferred]
    }

    /// A lazy channel to the CM at `addr` (it connects on first use, within 2 s).
    fn channel(&self, addr: &str) -> anyhow::Result<Channel> {
        // tonic's lazy channel spawns its worker on the current runtime.
        let _guard = self.rt.enter();
        // Mutual TLS with the caller's credentials (AERIE_CREDENTIALS, certificate
        // AERIE_CREDENTIAL_NAME, default `admin`), checking the server holds a CM certificate.
        // Or, with a token and no certificate (AERIE_TOKEN), TLS checking the CM with the pool
        // CA and the token on every call.
        Ok(aerie_security::transport::with_token(
            aerie_security::transport::endpoint(addr, aerie_security::Role::Cm)
                .map_err(|e| anyhow!("CM {addr}: {e}"))?
                .connect_timeout(Duration::from_secs(2))
                .tcp_nodelay(true)
                .connect_lazy(),
        ))
    }

    fn connect(&self, addr: &str) -> anyhow::Result<AdminClient<Channel>> {
        Ok(AdminClient::new(self.channel(addr)?)
            .max_decoding_message_size(aerie_security::transport::MAX_POOL_REPLY))
    }

    /// Runs `f` against the collector of one CM after another (the last one that answered
    /// first) until one answers, and returns its answer and address. Every CM holds the whole
    /// pool and relays what it accepts to the others, so any one will do: a CM that cannot be
    /// reached or does not answer within `--timeout` is skipped; any other error is the CM's
    /// verdict and final.
    pub fn collector<T, F, Fut>(&mut self, what: &str, mut f: F) -> anyhow::Result<(T, String)>
    where
        F: FnMut(CollectorClient<Channel>) -> Fut,
        Fut: std::future::Future<Output = Result<T, tonic::Status>>,
    {
        let n = self.addrs.len();
        let mut unreachable = Vec::new();
        for i in 0..n {
            let idx = (self.preferred + i) % n;
            let addr = self.addrs[idx].clone();
            let client =
                CollectorClient::new(self.channel(&addr)?).max_decoding_message_size(512 << 20);
            let call = f(client);
            let answer = self
                .rt
                .block_on(async { tokio::time::timeout(self.timeout, call).await });
            let status = match answer {
                Ok(Ok(v)) => {
                    self.preferred = idx;
                    return Ok((v, addr));
                }
                Ok(Err(s)) => s,
                Err(_) => tonic::Status::deadline_exceeded(format!(
                    "no answer within {:.1} s",
                    self.timeout.as_secs_f64()
                )),
            };
            let text = status_text(&status);
            match status_attempt::<()>(status) {
                Ok(_) => unreachable.push(format!("{addr}: {text}")),
                Err(e) => bail!("{what}: {addr}: {e}"),
            }
        }
        bail!(
            "{what}: no CM answered ({} of {n} unreachable): {}",
            unreachable.len(),
            unreachable.join("; ")
        )
    }

    /// Runs `f` against the CMs with failover and leader redirects.
    fn call<T, F, Fut>(&mut self, what: &str, f: F) -> anyhow::Result<T>
    where
        F: Fn(AdminClient<Channel>, Duration) -> Fut,
        Fut: std::future::Future<Output = Result<Attempt<T>, anyhow::Error>>,
    {
        // Until the deadline, rounds over every CM: through an election the leader is gone
        // for a second or two, and the request goes through once another leads.
        let deadline = Instant::now() + self.timeout;
        let n = self.addrs.len();
        let mut redirects = 0;
        loop {
            let mut order: Vec<String> = (0..n)
                .map(|i| self.addrs[(self.preferred + i) % n].clone())
                .collect();
            let mut unreachable = Vec::new();
            let mut retry = None;
            let mut i = 0;
            while i < order.len() {
                let addr = order[i].clone();
                i += 1;
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    break;
                }
                let client = self.connect(&addr)?;
                // One CM does not get the whole deadline: if it hangs, the others get a turn.
                match self.rt.block_on(f(client, left.min(ATTEMPT_TIMEOUT)))? {
                    Attempt::Done(v) => {
                        if let Some(p) = self.addrs.iter().position(|a| *a == addr) {
                            self.preferred = p;
                        }
                        return Ok(v);
                    }
                    Attempt::Unreachable(e) => unreachable.push(format!("{addr}: {e}")),
                    Attempt::Retry(e) => retry = Some(format!("{addr}: {e}")),
                    Attempt::Redirect(leader) => {
                        redirects += 1;
                        if redirects > 10 {
                            bail!("{what}: too many leader redirects (last to {leader})");
                        }
                        order.insert(i, leader);
                    }
                }
            }
            if Instant::now() + RETRY_PAUSE >= deadline {
                if let Some(e) = retry {
                    bail!("{what}: {e}");
                }
                bail!(
                    "{what}: {} of {} CMs unreachable: {}",
                    unreachable.len(),
                    n,
                    unreachable.join("; ")
                );
            }
            std::thread::sleep(RETRY_PAUSE);
        }
    }

    /// Submits a state-machine command; the CM forwards it to the leader.
    pub fn write(&mut self, cmd: Command) -> anyhow::Result<pb::WriteReply> {
        let json = serde_json::to_string(&Request::new(cmd)).context("encoding the command")?;
        self.call("write", move |mut c, timeout| {
            let json = json.clone();
            async move {
                let mut req = tonic::Request::new(pb::WriteRequest {
                    command_json: json,
                    forwarded: false,
                });
                req.set_timeout(timeout);
                match c.write(req).await {
                    Ok(r) => Ok(redirect_or_done(r.into_inner(), |r| {
                        (r.redirect, r.leader.as_ref())
                    })),
                    Err(s) => status_attempt(s),
                }
            }
        })
    }

    /// A write that must succeed: refused commands become errors. Returns the log index it
    /// was committed at and what the command answered.
    pub fn write_ok(&mut self, cmd: Command) -> anyhow::Result<Written> {
        let r = self.write(cmd)?;
        if !r.ok {
            bail!("{}", r.error);
        }
        let result = if r.result_json.is_empty() {
            None
        } else {
            Some(
                serde_json::from_str(&r.result_json)
                    .with_context(|| format!("decoding the CM's answer {:?}", r.result_json))?,
            )
        };
        Ok(Written {
            log_index: r.log_index,
            result,
        })
    }

    /// Runs a read query and decodes its typed answer; `stale` answers from the first
    /// reachable CM without a quorum check.
    pub fn query<Q: AdminQuery>(&mut self, q: Q, stale: bool) -> anyhow::Result<Q::Answer> {
        let query: Query = q.into();
        let name = query.name();
        let json = serde_json::to_string(&query).context("encoding the query")?;
        let r = self.call("query", move |mut c, timeout| {
            let req = pb::QueryRequest {
                query_json: json.clone(),
                stale,
                forwarded: false,
            };
            async move {
                let mut req = tonic::Request::new(req);
                req.set_timeout(timeout);
                match c.query(req).await {
                    Ok(r) => Ok(Attempt::Done(r.into_inner())),
                    Err(s) => status_attempt(s),
                }
            }
        })?;
        serde_json::from_str(&r.answer_json)
            .with_context(|| format!("decoding the CM's {name} answer"))
    }

    /// The status of one CM (no failover: the caller asks each).
    pub fn status_of(&self, addr: &str) -> anyhow::Result<pb::StatusReply> {
        let mut c = self.connect(addr)?;
        let timeout = self.timeout.min(Duration::from_secs(3));
        self.rt.block_on(async move {
            let mut req = tonic::Request::new(pb::StatusRequest {});
            req.set_timeout(timeout);
            match tokio::time::timeout(timeout, c.status(req)).await {
                Err(_) => bail!("no answer within {:.1} s", timeout.as_secs_f64()),
                Ok(Err(s)) => bail!("{}", status_text(&s)),
                Ok(Ok(r)) => Ok(r.into_inner()),
            }
        })
    }

    pub fn add_member(
        &mut self,
        addr: &str,
        id: u64,
        learner_only: bool,
    ) -> anyhow::Result<pb::MemberReply> {
        let addr = addr.to_string();
        self.call("cluster add", move |mut c, timeout| {
            let req = pb::AddMemberRequest {
                addr: addr.clone(),
                id,
                forwarded: false,
                learner_only,
            };
            async move {
                let mut req = tonic::Request::new(req);
                req.set_timeout(timeout.max(Duration::from_secs(70)));
                member_attempt(c.add_member(req).await)
            }
        })
    }

    pub fn remove_member(&mut self, id: u64) -> anyhow::Result<pb::MemberReply> {
        self.call("cluster remove", move |mut c, timeout| async move {
            let mut req = tonic::Request::new(pb::RemoveMemberRequest {
                id,
                forwarded: false,
            });
            req.set_timeout(timeout.max(Duration::from_secs(20)));
            member_attempt(c.remove_member(req).await)
        })
    }

    /// Asks the CM at `addr` to re-read its file and propose its policy (no failover: the
    /// file is that CM's).
    pub fn reconfig(&self, addr: &str) -> anyhow::Result<pb::ReconfigReply> {
        let mut c = self.connect(addr)?;
        let timeout = self.timeout;
        self.rt.block_on(async move {
            let mut req = tonic::Request::new(pb::ReconfigRequest {});
            req.set_timeout(timeout);
            match tokio::time::timeout(timeout, c.reconfig(req)).await {
                Err(_) => bail!("{addr}: no answer within {:.1} s", timeout.as_secs_f64()),
                Ok(Err(s)) => bail!("{addr}: {}", status_text(&s)),
                Ok(Ok(r)) => Ok(r.into_inner()),
            }
        })
    }

    pub fn snapshot(&self, addr: &str) -> anyhow::Result<u64> {
        let mut c = self.connect(addr)?;
        self.rt.block_on(async move {
            let r = c
                .trigger_snapshot(pb::SnapshotRequest {})
                .await
                .map_err(|s| anyhow!("{addr}: {}", status_text(&s)))?;
            Ok(r.into_inner().index)
        })
    }
}

/// A reply that names the leader to resend to (`redirect`) is followed; any other is final.
fn redirect_or_done<T>(
    r: T,
    redirect: impl Fn(&T) -> (bool, Option<&pb::LeaderHint>),
) -> Attempt<T> {
    if let (true, Some(l)) = redirect(&r) {
        if !l.addr.is_empty() {
            return Attempt::Redirect(l.addr.clone());
        }
    }
    Attempt::Done(r)
}

fn member_attempt(
    r: Result<tonic::Response<pb::MemberReply>, tonic::Status>,
) -> anyhow::Result<Attempt<pb::MemberReply>> {
    match r {
        Ok(r) => Ok(redirect_or_done(r.into_inner(), |r| {
            (r.redirect, r.leader.as_ref())
        })),
        Err(s) => status_attempt(s),
    }
}

/// The kind of error a CM said it answered with, if the status came from a CM at all.
fn error_kind(s: &tonic::Status) -> Option<ErrorKind> {
    s.metadata()
        .get(ERROR_KIND_METADATA)
        .and_then(|v| v.to_str().ok())
        .and_then(ErrorKind::parse)
}

/// Transport-level failures move on to the next CM; a CM's answer that the cluster cannot
/// serve the request now is retried; any other answer from a CM is final.
fn status_attempt<T>(s: tonic::Status) -> anyhow::Result<Attempt<T>> {
    let text = status_text(&s);
    match error_kind(&s) {
        Some(ErrorKind::NoQuorum | ErrorKind::LeaderUnavailable) => {
            return Ok(Attempt::Retry(text))
        }
        Some(_) => return Err(anyhow!(text)),
        None => {}
    }
    match s.code() {
        // No answer in time is a CM's deadline (tonic's server answers Cancelled when the
        // request's own timeout passes), not a verdict.
        tonic::Code::Unavailable
        | tonic::Code::DeadlineExceeded
        | tonic::Code::Cancelled
        | tonic::Code::Unknown => Ok(Attempt::Unreachable(text)),
        _ => Err(anyhow!(text)),
    }
}

fn status_text(s: &tonic::Status) -> String {
    let m = s.message();
    if s.code() == tonic::Code::Unavailable && error_kind(s).is_none() {
        // tonic's connection errors are terse ("transport error"); say what it means.
        format!("not reachable ({m})")
    } else if matches!(
        s.code(),
        tonic::Code::DeadlineExceeded | tonic::Code::Cancelled
    ) {
        format!("no answer in time ({m})")
    } else {
        m.to_string()
    }
}
