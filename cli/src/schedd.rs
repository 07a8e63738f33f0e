//! The client of an access point's job queue (`proto/proto/schedd.proto`, service `Schedd`),
//! which `cmctl submit`, `q`, `rm`, `hold`, `release`, `prio`, `vacate-job`, `qedit` and
//! `history` use, as HTCondor's tools talk to their schedd (`src/condor_utils/dc_schedd.cpp`,
//! `src/condor_q.V6/queue.cpp`, `src/condor_tools/tool.cpp`).
//!
//! Two ways in ([`Target`]): the access point's Unix socket, where the caller's identity is
//! the Unix account on the other end of the connection, so the requests carry none; or its
//! TCP port with mutual TLS, where the caller is the token (`AERIE_TOKEN`,
//! `AERIE_TOKEN_FILE`) or the certificate (`AERIE_CREDENTIALS`) cmctl presents, as it does to
//! a CM, and the token's `user@domain` owns the jobs as `user`. Which: `-name PATH` (or
//! `--socket PATH`), `--schedd HOST:PORT` (or HTCondor's `-addr "<HOST:PORT>"`, or `-name
//! HOST:PORT`), else `$AERIE_SCHEDD` (HOST:PORT), else `$AERIE_AP_SOCKET`, else
//! `$AERIE_RUN_DIR/ap.sock` ([`target`]).
use aerie_proto::schedd::{self as pb, schedd_client::ScheddClient};
use aerie_security::transport::AuthChannel;
use anyhow::{anyhow, bail, Context};
use hyper_util::rt::TokioIo;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tonic::transport::{Channel, Endpoint, Uri};

/// The environment variable naming the access point's socket.
pub const SOCKET_ENV: &str = "AERIE_AP_SOCKET";
/// The environment variable naming the access point's TCP address (`HOST:PORT`).
pub const SCHEDD_ENV: &str = "AERIE_SCHEDD";
/// The run directory `scripts/run.sh` writes; the socket is `ap.sock` in it.
pub const RUN_DIR_ENV: &str = "AERIE_RUN_DIR";

/// Where to reach an access point.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// Its Unix socket.
    Socket(PathBuf),
    /// Its TCP services (`HOST:PORT`), with mutual TLS.
    Tcp(String),
}

impl Target {
    /// A `HOST:PORT` (or HTCondor's sinful `<HOST:PORT>`) is a TCP address; anything else a
    /// socket path (write `./name:1` for a socket whose name looks like an address).
    pub fn parse(s: &str) -> Target {
        let bare = s.trim().trim_start_matches('<').trim_end_matches('>');
        let tcp = !bare.contains('/')
            && bare.rsplit_once(':').is_some_and(|(host, port)| {
                !host.is_empty() && !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit())
            });
        if tcp {
            Target::Tcp(bare.to_string())
        } else {
            Target::Socket(PathBuf::from(s))
        }
    }
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Target::Socket(p) => write!(f, "{}", p.display()),
            Target::Tcp(a) => f.write_str(a),
        }
    }
}

/// The access point to talk to: the one given on the command line, else `$AERIE_SCHEDD`,
/// else `$AERIE_AP_SOCKET`, else `$AERIE_RUN_DIR/ap.sock`; `env` reads the environment.
pub fn target(given: Option<&str>, env: impl Fn(&str) -> Option<String>) -> anyhow::Result<Target> {
    let nonempty = |v: Option<String>| v.filter(|s| !s.is_empty());
    if let Some(p) = nonempty(given.map(str::to_string)) {
        return Ok(Target::parse(&p));
    }
    if let Some(a) = nonempty(env(SCHEDD_ENV)) {
        return match Target::parse(&a) {
            Target::Tcp(a) => Ok(Target::Tcp(a)),
            Target::Socket(_) => bail!("{SCHEDD_ENV}={a:?} is not HOST:PORT"),
        };
    }
    if let Some(p) = nonempty(env(SOCKET_ENV)) {
        return Ok(Target::Socket(PathBuf::from(p)));
    }
    if let Some(d) = nonempty(env(RUN_DIR_ENV)) {
        return Ok(Target::Socket(Path::new(&d).join("ap.sock")));
    }
    bail!(
        "no access point given: use -name SOCKET (or --socket SOCKET) or --schedd HOST:PORT, \
         or set {SCHEDD_ENV}, {SOCKET_ENV} or {RUN_DIR_ENV} (`. $AERIE_RUN_DIR/env` after \
         scripts/run.sh)"
    )
}

/// Takes `-name X`, `--name X`, `-socket PATH`, `--socket PATH`, `--schedd HOST:PORT` or
/// `-addr HOST:PORT` out of a condor-style argument list; returns the access point (the last
/// one given; read with [`target`]) and the other arguments.
pub fn take_socket_arg(args: &[String]) -> anyhow::Result<(Option<String>, Vec<String>)> {
    let mut socket = None;
    let mut rest = Vec::new();
    let mut i = 0;
    let tcp_only = |flag: &str, v: &str| match Target::parse(v) {
        Target::Tcp(_) => Ok(v.to_string()),
        Target::Socket(_) => Err(anyhow!("{flag} {v:?}: not HOST:PORT")),
    };
    while i < args.len() {
        let a = &args[i];
        if matches!(
            a.as_str(),
            "-name" | "--name" | "-socket" | "--socket" | "-schedd" | "--schedd" | "-addr"
        ) {
            let Some(p) = args.get(i + 1) else {
                bail!("{a} needs the access point's socket path or HOST:PORT");
            };
            socket = Some(match a.as_str() {
                "-schedd" | "--schedd" | "-addr" => tcp_only(a, p)?,
                _ => p.clone(),
            });
            i += 2;
        } else if let Some(p) = a.strip_prefix("--socket=") {
            socket = Some(p.to_string());
            i += 1;
        } else if let Some(p) = a.strip_prefix("--schedd=") {
            socket = Some(tcp_only("--schedd", p)?);
            i += 1;
        } else {
            rest.push(a.clone());
            i += 1;
        }
    }
    Ok((socket, rest))
}

/// How long one call may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// A connection to one access point.
pub struct Schedd {
    at: Target,
    client: ScheddClient<AuthChannel>,
    rt: tokio::runtime::Runtime,
}

/// A channel to the gRPC server listening on the Unix socket at `path` (tonic's `uds`
/// example: the URI is a placeholder, the connector dials the socket).
pub async fn uds_channel(path: PathBuf) -> Result<Channel, tonic::transport::Error> {
    Endpoint::from_static("http://access-point")
        .connect_timeout(Duration::from_secs(5))
        .connect_with_connector(tower::service_fn(move |_: Uri| {
            let path = path.clone();
            async move {
                Ok::<_, std::io::Error>(TokioIo::new(tokio::net::UnixStream::connect(path).await?))
            }
        }))
        .await
}

impl Schedd {
    /// Connects to the access point at `at`: its socket, or its TCP port with this process's
    /// certificate or token (mutual TLS, checking the server holds an access point's
    /// certificate).
    pub fn open(at: &Target) -> anyhow::Result<Schedd> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("cannot start the async runtime")?;
        let channel = match at {
            Target::Socket(path) => rt
                .block_on(uds_channel(path.clone()))
                .map_err(|e| source_text(&e)),
            Target::Tcp(addr) => {
                aerie_security::transport::endpoint(addr, aerie_security::Role::AccessPoint)
                    .map_err(|e| e.to_string())
                    .and_then(|ep| {
                        rt.block_on(
                            ep.connect_timeout(Duration::from_secs(5))
                                .tcp_nodelay(true)
                                .connect(),
                        )
                        .map_err(|e| source_text(&e))
                    })
            }
        }
        .map_err(|e| anyhow!("cannot reach the access point at {at}: {e}"))?;
        Ok(Schedd {
            at: at.clone(),
            client: ScheddClient::new(aerie_security::transport::with_token(channel))
                .max_decoding_message_size(1 << 30),
            rt,
        })
    }

    fn call<T, F, Fut>(&mut self, what: &str, f: F) -> anyhow::Result<T>
    where
        F: FnOnce(ScheddClient<AuthChannel>) -> Fut,
        Fut: std::future::Future<Output = Result<tonic::Response<T>, tonic::Status>>,
    {
        let fut = f(self.client.clone());
        match self
            .rt
            .block_on(async { tokio::time::timeout(CALL_TIMEOUT, fut).await })
        {
            Ok(Ok(r)) => Ok(r.into_inner()),
            Ok(Err(s)) => Err(anyhow!("{}", status_text(&s)))
                .with_context(|| format!("{what} at {}", self.at)),
            Err(_) => bail!(
                "{what} at {}: no answer within {} s",
                self.at,
                CALL_TIMEOUT.as_secs()
            ),
        }
    }

    /// Reserves a cluster id (`NewCluster`).
    pub fn new_cluster(&mut self) -> anyhow::Result<i64> {
        let r = self.call("new cluster", |mut c| async move {
            c.new_cluster(pb::NewClusterRequest {}).await
        })?;
        Ok(r.cluster)
    }

    /// Queues the jobs of a reserved cluster (`Submit`), all or none.
    pub fn submit(&mut self, cluster: i64, ads: Vec<String>) -> anyhow::Result<pb::SubmitReply> {
        self.call("submit", |mut c| async move {
            c.submit(pb::SubmitRequest { cluster, ads }).await
        })
    }

    /// Reads job ads from the queue or the history (`Query`): parsed from their text, or,
    /// when the request asked for rows (`rows` with a projection) and the access point knows
    /// them, built from the rows' typed values without parsing ([`aerie_proto::rows`]).
    pub fn query(&mut self, req: pb::QueryRequest) -> anyhow::Result<Vec<classad::ClassAd>> {
        Ok(self.query_counted(req)?.0)
    }

    /// [`Schedd::query`], with the queue's jobs per status when the request asked for them
    /// (`count_queue`) and the access point counts them (older ones do not).
    pub fn query_counted(
        &mut self,
        req: pb::QueryRequest,
    ) -> anyhow::Result<(Vec<classad::ClassAd>, Option<pb::StatusCounts>)> {
        let r = self.call("query", |mut c| async move { c.query(req).await })?;
        let ads = aerie_proto::rows::read_ads(&r)
            .map_err(|e| anyhow!("the answer of the access point at {}: {e}", self.at))?;
        Ok((ads, r.queue_counts))
    }

    /// Acts on jobs (`Act`).
    pub fn act(&mut self, req: pb::ActRequest) -> anyhow::Result<pb::ActReply> {
        self.call("act", |mut c| async move { c.act(req).await })
    }
}

/// A transport error with its causes (tonic's own text is terse).
fn source_text(e: &(dyn std::error::Error + 'static)) -> String {
    let mut parts = vec![e.to_string()];
    let mut src = e.source();
    while let Some(s) = src {
        // hyper and tonic repeat their cause in their own text.
        let text = s.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        src = s.source();
    }
    parts.join(": ")
}

/// A gRPC status as a user reads it: the access point's message, or what the code means.
fn status_text(s: &tonic::Status) -> String {
    match s.code() {
        tonic::Code::Unavailable => format!("not reachable ({})", s.message()),
        tonic::Code::PermissionDenied => format!("permission denied: {}", s.message()),
        _ => s.message().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn the_socket_comes_from_the_option_then_the_environment() {
        let both = [(SOCKET_ENV, "/a/ap.sock"), (RUN_DIR_ENV, "/run/aerie")];
        assert_eq!(
            target(Some("/x.sock"), env(&both)).unwrap(),
            Target::Socket("/x.sock".into())
        );
        assert_eq!(
            target(None, env(&both)).unwrap(),
            Target::Socket("/a/ap.sock".into())
        );
        assert_eq!(
            target(None, env(&[(RUN_DIR_ENV, "/run/aerie")])).unwrap(),
            Target::Socket("/run/aerie/ap.sock".into())
        );
        let err = target(None, env(&[])).unwrap_err().to_string();
        assert!(err.contains(SOCKET_ENV), "{err}");
    }

    #[test]
    fn a_tcp_address_comes_from_the_option_or_aerie_schedd() {
        let all = [
            (SCHEDD_ENV, "ap1.example:7200"),
            (SOCKET_ENV, "/a/ap.sock"),
            (RUN_DIR_ENV, "/run/aerie"),
        ];
        assert_eq!(
            target(None, env(&all)).unwrap(),
            Target::Tcp("ap1.example:7200".into())
        );
        assert_eq!(
            target(Some("/x.sock"), env(&all)).unwrap(),
            Target::Socket("/x.sock".into())
        );
        assert_eq!(
            target(Some("<10.0.0.5:7200>"), env(&[])).unwrap(),
            Target::Tcp("10.0.0.5:7200".into())
        );
        let e = target(None, env(&[(SCHEDD_ENV, "/not/an/addr")]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("not HOST:PORT"), "{e}");
        // What is a socket and what an address.
        for (s, tcp) in [
            ("localhost:7200", true),
            ("[::1]:7200", true),
            ("ap.sock", false),
            ("./x:1", false),
            ("/run/a:1", false),
            ("host:", false),
            (":7200", false),
            ("host:72a", false),
        ] {
            assert_eq!(matches!(Target::parse(s), Target::Tcp(_)), tcp, "{s}");
        }
    }

    #[test]
    fn socket_options_are_taken_out_of_the_arguments() {
        let args: Vec<String> = ["-nobatch", "-name", "/s", "12.0"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let (s, rest) = take_socket_arg(&args).unwrap();
        assert_eq!(s.as_deref(), Some("/s"));
        assert_eq!(rest, vec!["-nobatch".to_string(), "12.0".to_string()]);
        assert!(take_socket_arg(&["--socket".to_string()]).is_err());
        let strs = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let (s, rest) = take_socket_arg(&strs(&["--schedd", "ap:7200", "12.0"])).unwrap();
        assert_eq!((s.as_deref(), rest), (Some("ap:7200"), strs(&["12.0"])));
        let (s, _) = take_socket_arg(&strs(&["-addr", "<10.0.0.5:7200>"])).unwrap();
        assert_eq!(s.as_deref(), Some("<10.0.0.5:7200>"));
        let (s, _) = take_socket_arg(&strs(&["--schedd=ap:1"])).unwrap();
        assert_eq!(s.as_deref(), Some("ap:1"));
        let e = take_socket_arg(&strs(&["--schedd", "/s.sock"])).unwrap_err();
        assert!(e.to_string().contains("not HOST:PORT"), "{e}");
    }
}
