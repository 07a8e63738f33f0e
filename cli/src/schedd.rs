//! The client of an access point's job queue (`proto/proto/schedd.proto`, service `Schedd`),
//! which `cmctl submit`, `q`, `rm`, `hold`, `release`, `prio`, `vacate-job`, `qedit` and
//! `history` use, as HTCondor's tools talk to their schedd (`src/condor_utils/dc_schedd.cpp`,
//! `src/condor_q.V6/queue.cpp`, `src/condor_tools/tool.cpp`).
//!
//! The access point serves users on a Unix socket: the caller's identity is the Unix account
//! on the other end of the connection, so the requests carry none. Which socket: `-name PATH`
//! (or `--socket PATH`), else `$AERIE_AP_SOCKET`, else `$AERIE_RUN_DIR/ap.sock`
//! ([`socket_path`]).
use aerie_proto::schedd::{self as pb, schedd_client::ScheddClient};
use anyhow::{anyhow, bail, Context};
use hyper_util::rt::TokioIo;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tonic::transport::{Channel, Endpoint, Uri};

/// The environment variable naming the access point's socket.
pub const SOCKET_ENV: &str = "AERIE_AP_SOCKET";
/// The run directory `scripts/run.sh` writes; the socket is `ap.sock` in it.
pub const RUN_DIR_ENV: &str = "AERIE_RUN_DIR";

/// The socket of the access point to talk to: the one given on the command line, else
/// `$AERIE_AP_SOCKET`, else `$AERIE_RUN_DIR/ap.sock`; `env` reads the environment.
pub fn socket_path(
    given: Option<&str>,
    env: impl Fn(&str) -> Option<String>,
) -> anyhow::Result<PathBuf> {
    let nonempty = |v: Option<String>| v.filter(|s| !s.is_empty());
    if let Some(p) = nonempty(given.map(str::to_string)) {
        return Ok(PathBuf::from(p));
    }
    if let Some(p) = nonempty(env(SOCKET_ENV)) {
        return Ok(PathBuf::from(p));
    }
    if let Some(d) = nonempty(env(RUN_DIR_ENV)) {
        return Ok(Path::new(&d).join("ap.sock"));
    }
    bail!(
        "no access point given: use -name SOCKET (or --socket SOCKET), or set {SOCKET_ENV} or \
         {RUN_DIR_ENV} (`. $AERIE_RUN_DIR/env` after scripts/run.sh)"
    )
}

/// Takes `-name PATH`, `--name PATH`, `-socket PATH` or `--socket PATH` out of a condor-style
/// argument list; returns the path (the last one given) and the other arguments.
pub fn take_socket_arg(args: &[String]) -> anyhow::Result<(Option<String>, Vec<String>)> {
    let mut socket = None;
    let mut rest = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        if matches!(a.as_str(), "-name" | "--name" | "-socket" | "--socket") {
            let Some(p) = args.get(i + 1) else {
                bail!("{a} needs the path of the access point's socket");
            };
            socket = Some(p.clone());
            i += 2;
        } else if let Some(p) = a.strip_prefix("--socket=") {
            socket = Some(p.to_string());
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
    path: PathBuf,
    client: ScheddClient<Channel>,
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
    /// Connects to the access point on the socket at `path`.
    pub fn connect(path: &Path) -> anyhow::Result<Schedd> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("cannot start the async runtime")?;
        let channel = rt.block_on(uds_channel(path.to_path_buf())).map_err(|e| {
            anyhow!(
                "cannot reach the access point at {}: {}",
                path.display(),
                source_text(&e)
            )
        })?;
        Ok(Schedd {
            path: path.to_path_buf(),
            client: ScheddClient::new(channel).max_decoding_message_size(1 << 30),
            rt,
        })
    }

    fn call<T, F, Fut>(&mut self, what: &str, f: F) -> anyhow::Result<T>
    where
        F: FnOnce(ScheddClient<Channel>) -> Fut,
        Fut: std::future::Future<Output = Result<tonic::Response<T>, tonic::Status>>,
    {
        let fut = f(self.client.clone());
        match self
            .rt
            .block_on(async { tokio::time::timeout(CALL_TIMEOUT, fut).await })
        {
            Ok(Ok(r)) => Ok(r.into_inner()),
            Ok(Err(s)) => Err(anyhow!("{}", status_text(&s)))
                .with_context(|| format!("{what} at {}", self.path.display())),
            Err(_) => bail!(
                "{what} at {}: no answer within {} s",
                self.path.display(),
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

    /// Reads job ads from the queue or the history (`Query`), parsed.
    pub fn query(&mut self, req: pb::QueryRequest) -> anyhow::Result<Vec<classad::ClassAd>> {
        let r = self.call("query", |mut c| async move { c.query(req).await })?;
        let mut ads = Vec::with_capacity(r.ads.len());
        for (i, t) in r.ads.iter().enumerate() {
            let mut parsed = classad::parse_old_ads(t).map_err(|e| {
                anyhow!(
                    "job ad {i} from the access point at {} does not parse: {e}",
                    self.path.display()
                )
            })?;
            if let Some(a) = parsed.pop() {
                ads.push(a);
            }
        }
        Ok(ads)
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
            socket_path(Some("/x.sock"), env(&both)).unwrap(),
            PathBuf::from("/x.sock")
        );
        assert_eq!(
            socket_path(None, env(&both)).unwrap(),
            PathBuf::from("/a/ap.sock")
        );
        assert_eq!(
            socket_path(None, env(&[(RUN_DIR_ENV, "/run/aerie")])).unwrap(),
            PathBuf::from("/run/aerie/ap.sock")
        );
        let err = socket_path(None, env(&[])).unwrap_err().to_string();
        assert!(err.contains(SOCKET_ENV), "{err}");
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
    }
}
