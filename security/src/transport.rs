//! Mutual TLS on every connection, set up the same way in every binary.
//!
//! A process loads its credentials once (`--credentials DIR --credential-name NAME`, or
//! `AERIE_CREDENTIALS`/`AERIE_CREDENTIAL_NAME`): the pool CA (`DIR/ca.crt`), its certificate
//! and key (`DIR/NAME.crt`, `DIR/NAME.key`). Every server it runs then requires a client
//! certificate from that CA, and every channel it opens presents its own and checks that the
//! server holds the role the client expects (`cm.aerie` for a CM), so a stolen node
//! certificate cannot pose as a CM. `--insecure` (plaintext, nobody authenticated) exists for
//! development only, warns at every start, and cannot talk to a secure peer: the TLS
//! handshake fails on both sides.
//!
//! Servers also accept a TLS client without a certificate (`client_auth_optional`): such a
//! client must present a bearer token ([`crate::token`]), which the authorization layer
//! checks. `cmctl` is such a client when it has a token (`AERIE_TOKEN`, the file named by
//! `AERIE_TOKEN_FILE`, or `~/.aerie/token`) and no certificate: it checks the server with the
//! pool CA only ([`Transport::Token`]) and sends the token with every call ([`Bearer`]).
use crate::authz::Policy;
use crate::identity::{Identity, Role};
use crate::layer::AuthorizeLayer;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use tonic::transport::{
    Certificate, ClientTlsConfig, Endpoint, Identity as TlsIdentity, Server, ServerTlsConfig,
};

/// Where tools look for credentials when `AERIE_CREDENTIALS` is unset.
pub const SYSTEM_CREDENTIALS: &str = "/etc/aerie/credentials";

/// Certificates expiring within this many days are warned about at every start.
pub const EXPIRY_WARNING_DAYS: i64 = 30;

/// Why a process cannot set up its transport.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct TransportError(pub String);

/// One process's credentials.
#[derive(Debug)]
pub struct Tls {
    ca_pem: String,
    cert_pem: String,
    key_pem: String,
    /// Who this process is.
    pub identity: Identity,
    /// When its certificate expires (Unix seconds), for the expiry metric and warnings.
    pub not_after: i64,
    /// Where the certificate was read from.
    pub cert_path: PathBuf,
}

/// How this process talks to its peers.
#[derive(Debug, Clone)]
pub enum Transport {
    /// Mutual TLS with the pool's credentials.
    Tls(Arc<Tls>),
    /// TLS checking the server with the pool CA, no client certificate: the caller presents a
    /// bearer token instead (a person or script, `cmctl` with `AERIE_TOKEN`).
    Token {
        /// The pool CA (PEM).
        ca_pem: String,
        /// The token sent with every call.
        token: String,
    },
    /// Plaintext, unauthenticated (development only).
    Insecure,
    /// Neither credentials nor `--insecure` were given: every use fails saying so.
    Unconfigured,
}

fn read(path: &Path) -> Result<String, TransportError> {
    std::fs::read_to_string(path).map_err(|e| {
        TransportError(format!(
            "cannot read {}: {e} (make the pool's credentials with `aerie-cm security init`)",
            path.display()
        ))
    })
}

impl Transport {
    /// Loads `DIR/ca.crt`, `DIR/NAME.crt` and `DIR/NAME.key`; refuses an expired certificate
    /// and warns about one expiring within [`EXPIRY_WARNING_DAYS`].
    pub fn load(dir: &Path, name: &str, now_unix: i64) -> Result<Transport, TransportError> {
        let cert_path = dir.join(format!("{name}.crt"));
        let ca_pem = read(&dir.join(crate::pki::CA_CERT))?;
        let cert_pem = read(&cert_path)?;
        let key_pem = read(&dir.join(format!("{name}.key")))?;
        let (_, pem) = x509_parser::pem::parse_x509_pem(cert_pem.as_bytes()).map_err(|e| {
            TransportError(format!(
                "{}: not a PEM certificate: {e}",
                cert_path.display()
            ))
        })?;
        let cert = pem.parse_x509().map_err(|e| {
            TransportError(format!(
                "{}: unreadable certificate: {e}",
                cert_path.display()
            ))
        })?;
        let not_after = cert.validity().not_after.timestamp();
        let identity = Identity::from_der(&pem.contents)
            .map_err(|e| TransportError(format!("{}: {e}", cert_path.display())))?;
        if not_after <= now_unix {
            return Err(TransportError(format!(
                "{}: certificate of {identity} expired {} s ago; issue a new one with \
                 `aerie-cm security issue`",
                cert_path.display(),
                now_unix - not_after
            )));
        }
        let days_left = (not_after - now_unix) / 86_400;
        if days_left < EXPIRY_WARNING_DAYS {
            tracing::warn!(certificate = %cert_path.display(), days_left,
                           "certificate expires soon; issue a new one with `aerie-cm security issue`");
        }
        Ok(Transport::Tls(Arc::new(Tls {
            ca_pem,
            cert_pem,
            key_pem,
            identity,
            not_after,
            cert_path,
        })))
    }

    fn unconfigured() -> TransportError {
        TransportError(
            "no credentials: give --credentials DIR (or AERIE_CREDENTIALS) made by \
             `aerie-cm security init`, or --insecure for development"
                .into(),
        )
    }

    /// A gRPC server builder: TLS requiring a pool client certificate, the per-connection
    /// limits ([`MAX_CONCURRENT_STREAMS`], [`MAX_REQUESTS_PER_CONNECTION`]), and the
    /// authorization layer enforcing `policy`.
    pub fn server(
        &self,
        policy: Arc<Policy>,
    ) -> Result<
        Server<tower::layer::util::Stack<AuthorizeLayer, tower::layer::util::Identity>>,
        TransportError,
    > {
        let builder = match self {
            Transport::Tls(t) => Server::builder()
                .tls_config(
                    ServerTlsConfig::new()
                        .identity(TlsIdentity::from_pem(&t.cert_pem, &t.key_pem))
                        .client_ca_root(Certificate::from_pem(&t.ca_pem))
                        // Token holders have no certificate; the layer then asks for a token.
                        .client_auth_optional(true),
                )
                .map_err(|e| TransportError(format!("TLS server configuration: {e}")))?,
            Transport::Insecure => Server::builder(),
            Transport::Token { .. } => {
                return Err(TransportError(
                    "a token identifies a client, not a server: a daemon needs a certificate"
                        .into(),
                ))
            }
            Transport::Unconfigured => return Err(Self::unconfigured()),
        };
        Ok(limited(builder).layer(AuthorizeLayer::new(policy)))
    }

    /// An endpoint for a server of `role` at `addr` (`host:port`, with or without a scheme).
    pub fn endpoint(&self, addr: &str, role: Role) -> Result<Endpoint, TransportError> {
        let bare = addr
            .trim()
            .trim_start_matches("http://")
            .trim_start_matches("https://");
        match self {
            Transport::Tls(t) => Endpoint::from_shared(format!("https://{bare}"))
                .map_err(|e| TransportError(format!("bad address {addr:?}: {e}")))?
                .tls_config(
                    ClientTlsConfig::new()
                        .ca_certificate(Certificate::from_pem(&t.ca_pem))
                        .identity(TlsIdentity::from_pem(&t.cert_pem, &t.key_pem))
                        .domain_name(role.server_name()),
                )
                .map_err(|e| TransportError(format!("TLS client configuration: {e}"))),
            Transport::Token { ca_pem, .. } => Endpoint::from_shared(format!("https://{bare}"))
                .map_err(|e| TransportError(format!("bad address {addr:?}: {e}")))?
                .tls_config(
                    ClientTlsConfig::new()
                        .ca_certificate(Certificate::from_pem(ca_pem))
                        .domain_name(role.server_name()),
                )
                .map_err(|e| TransportError(format!("TLS client configuration: {e}"))),
            Transport::Insecure => Endpoint::from_shared(format!("http://{bare}"))
                .map_err(|e| TransportError(format!("bad address {addr:?}: {e}"))),
            Transport::Unconfigured => Err(Self::unconfigured()),
        }
    }

    /// The signer of grants with this process's certificate and key (a leading CM's), when
    /// it has credentials ([`crate::grant`]).
    pub fn grant_signer(&self) -> Option<Result<crate::grant::GrantSigner, TransportError>> {
        match self {
            Transport::Tls(t) => Some(
                crate::grant::GrantSigner::from_pem(&t.cert_pem, &t.key_pem)
                    .map_err(|e| TransportError(format!("{}: {e}", t.cert_path.display()))),
            ),
            _ => None,
        }
    }

    /// The checker of signed grants against the pool CA, when this process has credentials
    /// (an execute node then takes only signed grants); `None` on an insecure transport.
    pub fn grant_verifier(&self) -> Option<Result<crate::grant::GrantVerifier, TransportError>> {
        match self {
            Transport::Tls(t) => {
                Some(crate::grant::GrantVerifier::from_pem(&t.ca_pem).map_err(TransportError))
            }
            _ => None,
        }
    }

    /// Who this process is, when it has credentials.
    pub fn identity(&self) -> Option<&Identity> {
        match self {
            Transport::Tls(t) => Some(&t.identity),
            _ => None,
        }
    }
}

/// The transport and policy this process installed.
struct Installed {
    transport: Transport,
    policy: Arc<Policy>,
}

static INSTALLED: OnceLock<Installed> = OnceLock::new();

/// Sets this process's transport and policy (once; later calls are ignored and return
/// false, so a test process can install its test credentials from every test).
pub fn install(transport: Transport, policy: Policy) -> bool {
    INSTALLED
        .set(Installed {
            transport,
            policy: Arc::new(policy),
        })
        .is_ok()
}

fn installed() -> &'static Installed {
    INSTALLED.get_or_init(|| Installed {
        transport: from_env(),
        policy: Arc::new(Policy::defaults()),
    })
}

/// The installed transport (or, if none was installed, the one the environment names).
pub fn transport() -> &'static Transport {
    &installed().transport
}

/// The installed authorization policy (defaults if none was installed).
pub fn policy() -> Arc<Policy> {
    installed().policy.clone()
}

/// A server builder with the installed transport and policy.
pub fn server() -> Result<
    Server<tower::layer::util::Stack<AuthorizeLayer, tower::layer::util::Identity>>,
    TransportError,
> {
    transport().server(policy())
}

/// A server builder for a local (Unix) socket: no TLS (the kernel names the caller, as
/// HTCondor's FS authentication does), the installed policy.
pub fn local_server(
) -> Server<tower::layer::util::Stack<AuthorizeLayer, tower::layer::util::Identity>> {
    limited(Server::builder()).layer(AuthorizeLayer::new(policy()))
}

/// The largest gRPC message a service takes or sends (8 MiB): far above one node's batch of
/// ads (`aerie-node` sends at most 2000 ads, about 3 MB, per message) or any single command,
/// and small enough that a client cannot make a daemon buffer hundreds of megabytes. The few
/// replies that carry a whole pool (collector and admin queries to clients, Raft snapshots)
/// use [`MAX_POOL_REPLY`] or stream.
pub const MAX_MESSAGE: usize = 8 << 20;

/// The largest reply carrying a whole pool's state to a client that asked for it (a
/// collector `Query` of every slot, an admin query of the whole replicated state, a Raft
/// snapshot between CMs): 256 MiB, received only, never accepted from a client.
pub const MAX_POOL_REPLY: usize = 256 << 20;

/// HTTP/2 streams (RPCs in flight) one connection may open at once; more are refused by the
/// HTTP/2 layer (`REFUSED_STREAM`). A daemon uses a handful (an ad stream, Raft, relay).
pub const MAX_CONCURRENT_STREAMS: u32 = 128;

/// Requests one connection may have served at once; further ones wait for a slot, so one
/// client cannot take every worker.
pub const MAX_REQUESTS_PER_CONNECTION: usize = 64;

/// The per-connection limits every server of this crate gets.
fn limited(b: Server) -> Server {
    b.max_concurrent_streams(Some(MAX_CONCURRENT_STREAMS))
        .concurrency_limit_per_connection(MAX_REQUESTS_PER_CONNECTION)
}

/// This process as a caller of its own services (a CM proposing a command it makes itself):
/// its certificate's identity, or `Anonymous` when insecure.
pub fn own_caller() -> crate::Caller {
    match transport() {
        Transport::Tls(t) => crate::Caller::Daemon(t.identity.clone()),
        _ => crate::Caller::Anonymous,
    }
}

/// An endpoint to a `role` server at `addr` with the installed transport.
pub fn endpoint(addr: &str, role: Role) -> Result<Endpoint, TransportError> {
    transport().endpoint(addr, role)
}

/// The pool's token signing key from this process's credentials directory
/// (`token-signing.key` next to its certificate), if it has one: CMs, and the access points
/// that take tokens.
pub fn pool_token_key() -> Result<Option<crate::token::SigningKey>, TransportError> {
    let Transport::Tls(t) = transport() else {
        return Ok(None);
    };
    let Some(dir) = t.cert_path.parent() else {
        return Ok(None);
    };
    if !dir.join(crate::token::SIGNING_KEY).exists() {
        return Ok(None);
    }
    crate::token::SigningKey::load(dir)
        .map(Some)
        .map_err(TransportError)
}

/// The verifier of bearer tokens when none was installed: the pool key in this process's
/// credentials directory, if it has one (CMs do).
pub(crate) fn pool_key_verifier() -> Option<Arc<dyn crate::token::TokenVerifier>> {
    static KEY: OnceLock<Option<Arc<crate::token::SigningKey>>> = OnceLock::new();
    KEY.get_or_init(|| match transport() {
        Transport::Tls(t) => t
            .cert_path
            .parent()
            .and_then(|d| crate::token::SigningKey::load(d).ok())
            .map(Arc::new),
        _ => None,
    })
    .clone()
    .map(|k| k as Arc<dyn crate::token::TokenVerifier>)
}

/// Adds this process's bearer token to every call when it connects with one
/// ([`Transport::Token`]); passes calls on unchanged otherwise.
#[derive(Debug, Clone, Default)]
pub struct Bearer;

impl tonic::service::Interceptor for Bearer {
    fn call(&mut self, mut req: tonic::Request<()>) -> Result<tonic::Request<()>, tonic::Status> {
        if let Transport::Token { token, .. } = transport() {
            let value = format!("Bearer {}", token.trim()).parse().map_err(|_| {
                tonic::Status::unauthenticated("the token holds characters metadata cannot carry")
            })?;
            req.metadata_mut().insert("authorization", value);
        }
        Ok(req)
    }
}

/// A channel that carries this process's token, if it has one.
pub type AuthChannel =
    tonic::service::interceptor::InterceptedService<tonic::transport::Channel, Bearer>;

/// Wraps `channel` so calls on it carry this process's token ([`Bearer`]).
pub fn with_token(channel: tonic::transport::Channel) -> AuthChannel {
    tonic::service::interceptor::InterceptedService::new(channel, Bearer)
}

/// The token a person or script gave: `AERIE_TOKEN`, else the file `AERIE_TOKEN_FILE` names,
/// else `~/.aerie/token`; `None` when there is none.
pub fn token_from_env() -> Result<Option<String>, TransportError> {
    if let Ok(t) = std::env::var("AERIE_TOKEN") {
        if !t.trim().is_empty() {
            return Ok(Some(t.trim().to_string()));
        }
    }
    let (path, named) = match std::env::var_os("AERIE_TOKEN_FILE") {
        Some(p) => (PathBuf::from(p), true),
        None => match std::env::var_os("HOME") {
            Some(h) => (PathBuf::from(h).join(".aerie/token"), false),
            None => return Ok(None),
        },
    };
    match std::fs::read_to_string(&path) {
        Ok(t) => Ok(Some(t.trim().to_string())),
        Err(e) if named || e.kind() != std::io::ErrorKind::NotFound => Err(TransportError(
            format!("cannot read the token file {}: {e}", path.display()),
        )),
        Err(_) => Ok(None),
    }
}

/// The transport of a token holder without a certificate: the token and the pool CA
/// (`DIR/ca.crt` of the credentials directory, else `~/.aerie/ca.crt`).
fn token_transport(dir: Option<&Path>, token: String) -> Result<Transport, TransportError> {
    let ca = match dir {
        Some(d) => d.join(crate::pki::CA_CERT),
        None => std::env::var_os("HOME")
            .map(|h| PathBuf::from(h).join(".aerie").join(crate::pki::CA_CERT))
            .ok_or_else(|| TransportError("a token needs the pool CA (ca.crt): set AERIE_CREDENTIALS to a directory holding it".into()))?,
    };
    Ok(Transport::Token {
        ca_pem: read(&ca)?,
        token,
    })
}

/// The clock as certificates and tokens count it (Unix seconds); the one place this crate and
/// its tools read it.
pub fn now_unix() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

fn from_env() -> Transport {
    let args = SecurityArgs {
        credentials: std::env::var_os("AERIE_CREDENTIALS")
            .map(PathBuf::from)
            .or_else(|| {
                let system = PathBuf::from(SYSTEM_CREDENTIALS);
                system.join(crate::pki::CA_CERT).exists().then_some(system)
            }),
        credential_name: std::env::var("AERIE_CREDENTIAL_NAME").ok(),
        insecure: std::env::var("AERIE_INSECURE").is_ok_and(|v| v == "1" || v == "true"),
    };
    // A token holder without a certificate connects with the token.
    let name = args.credential_name.as_deref().unwrap_or("admin");
    let has_cert = args
        .credentials
        .as_ref()
        .is_some_and(|d| d.join(format!("{name}.crt")).exists());
    let token = match token_from_env() {
        Ok(t) => t,
        Err(e) => {
            tracing::error!(error = %e, "no usable token");
            return Transport::Unconfigured;
        }
    };
    let chosen = match token {
        Some(t) if !has_cert && !args.insecure => token_transport(args.credentials.as_deref(), t),
        _ => args.transport("admin"),
    };
    match chosen {
        Ok(t) => t,
        Err(e) => {
            tracing::error!(error = %e, "no usable credentials");
            Transport::Unconfigured
        }
    }
}

/// The security flags every Aerie binary takes.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct SecurityArgs {
    /// The pool's credentials directory (ca.crt, NAME.crt, NAME.key), made by
    /// `aerie-cm security init`.
    #[arg(long, env = "AERIE_CREDENTIALS", global = true)]
    pub credentials: Option<PathBuf>,
    /// Whose certificate in the credentials directory this process uses (default: the
    /// daemon's own name, `admin` for cmctl).
    #[arg(long, env = "AERIE_CREDENTIAL_NAME", global = true)]
    pub credential_name: Option<String>,
    /// Plaintext and unauthenticated: for development on one machine only.
    #[arg(long, env = "AERIE_INSECURE", global = true,
          value_parser = clap::builder::BoolishValueParser::new(), num_args = 0..=1,
          default_missing_value = "true", default_value = "false")]
    pub insecure: bool,
}

impl SecurityArgs {
    /// The transport these flags ask for; `default_name` when no name is given.
    pub fn transport(&self, default_name: &str) -> Result<Transport, TransportError> {
        match (&self.credentials, self.insecure) {
            (Some(_), true) => Err(TransportError(
                "--insecure and --credentials contradict each other; give one".into(),
            )),
            (Some(dir), false) => Transport::load(
                dir,
                self.credential_name.as_deref().unwrap_or(default_name),
                now_unix(),
            ),
            (None, true) => Ok(Transport::Insecure),
            (None, false) => Err(Transport::unconfigured()),
        }
    }

    /// Loads the transport and installs it with `policy`; warns loudly when insecure.
    pub fn install(&self, default_name: &str, policy: Policy) -> Result<(), TransportError> {
        let t = self.transport(default_name)?;
        match &t {
            Transport::Insecure => tracing::warn!(
                "--insecure: plaintext gRPC, no authentication, every caller may do anything; \
                 for development only"
            ),
            Transport::Tls(tls) => tracing::info!(identity = %tls.identity,
                certificate = %tls.cert_path.display(), "mutual TLS"),
            Transport::Token { .. } | Transport::Unconfigured => {}
        }
        install(t, policy);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pki;

    fn now() -> i64 {
        super::now_unix()
    }

    #[test]
    fn expired_and_missing_credentials_are_refused_saying_what_to_do() {
        let dir = tempfile::tempdir().unwrap();
        pki::init(dir.path(), "t", &[pki::Holder::parse("old=cm").unwrap()], 0).unwrap();
        pki::issue(dir.path(), &pki::Holder::parse("new=cm").unwrap(), 10).unwrap();
        let e = Transport::load(dir.path(), "old", now() + 5).unwrap_err().0;
        assert!(e.contains("expired") && e.contains("security issue"), "{e}");
        assert!(Transport::load(dir.path(), "new", now()).is_ok());
        let e = Transport::load(dir.path(), "nobody", now()).unwrap_err().0;
        assert!(
            e.contains("nobody.crt") && e.contains("security init"),
            "{e}"
        );
        let args = SecurityArgs::default();
        let e = args.transport("cm1").unwrap_err().0;
        assert!(
            e.contains("--insecure") && e.contains("AERIE_CREDENTIALS"),
            "{e}"
        );
        let both = SecurityArgs {
            credentials: Some(dir.path().into()),
            insecure: true,
            ..Default::default()
        };
        assert!(both.transport("new").unwrap_err().0.contains("contradict"));
    }
}
