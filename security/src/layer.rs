//! The authorization layer in front of every gRPC server: one check per RPC, from the one
//! table in [`crate::methods`].
//!
//! For each request it finds the caller (the peer certificate's identity on a TLS
//! connection, or the holder of the bearer token a client without a certificate presents
//! ([`crate::token`]), the Unix user on a local socket, nobody on an insecure listener), looks the
//! method up, and either refuses it (`PERMISSION_DENIED` naming the caller, the level and the
//! list that decided; `UNAUTHENTICATED` for an unreadable certificate) or passes it on with a
//! [`Peer`] in the request's extensions, where handlers read it (`tonic::Request::extensions`)
//! for the checks that depend on the message (which ads a startd may send).
// tonic::Status is the error every gRPC path speaks; boxing it here would only be unboxed again.
#![allow(clippy::result_large_err)]
use crate::authz::{Level, Policy};
use crate::identity::{Caller, Identity, Peer, Role};
use crate::methods::{access, Access};
use crate::token::TokenVerifier;
use std::collections::HashMap;
use std::future::Future;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::{Arc, OnceLock, RwLock};
use std::task::{Context, Poll};
use tonic::transport::server::{TcpConnectInfo, TlsConnectInfo, UdsConnectInfo};

/// Decides whether `caller` may call `path`.
pub fn authorize(
    policy: &Policy,
    path: &str,
    caller: &Caller,
    addr: Option<IpAddr>,
) -> Result<(), tonic::Status> {
    let Some(rule) = access(path) else {
        return Err(tonic::Status::unimplemented(format!(
            "{path}: no such method (or it has no access rule)"
        )));
    };
    let denied = |e: crate::authz::Denied| tonic::Status::permission_denied(format!("{path}: {e}"));
    let peer = || {
        if *caller == Caller::Anonymous {
            return Ok(());
        }
        if !caller.is(Role::Cm) {
            return Err(tonic::Status::permission_denied(format!(
                "{path}: only central managers may call this; {caller} is not one"
            )));
        }
        policy.check(caller, addr, Level::Daemon).map_err(denied)
    };
    match rule {
        Access::Level(l) => policy.check(caller, addr, l).map_err(denied),
        Access::Peer => peer(),
        Access::LevelOrPeer(l) => match policy.check(caller, addr, l) {
            Ok(()) => Ok(()),
            Err(e) if caller.is(Role::Cm) => peer().map_err(|_| denied(e)),
            Err(e) => Err(denied(e)),
        },
        Access::Advertise => policy
            .check(caller, addr, Level::AdvertiseStartd)
            .or_else(|_| policy.check(caller, addr, Level::AdvertiseSchedd))
            .map_err(|_| {
                tonic::Status::permission_denied(format!(
                    "{path}: {caller} is authorized at neither ADVERTISE_STARTD nor \
                     ADVERTISE_SCHEDD"
                ))
            }),
    }
}

static VERIFIER: OnceLock<Arc<dyn TokenVerifier>> = OnceLock::new();

/// Sets how this process checks bearer tokens (a CM installs one that also checks the
/// replicated revocation list); once, later calls are ignored and return false. Without one,
/// tokens are checked with `token-signing.key` in the credentials directory, if there is one.
pub fn install_verifier(v: Arc<dyn TokenVerifier>) -> bool {
    VERIFIER.set(v).is_ok()
}

fn verifier() -> Option<Arc<dyn TokenVerifier>> {
    VERIFIER
        .get()
        .cloned()
        .or_else(crate::transport::pool_key_verifier)
}

/// The caller a bearer token names (a client that presented no certificate), checked by
/// `verifier` at `now`: `UNAUTHENTICATED` saying why when there is no token or it is not
/// valid (expired, revoked, bad signature).
pub fn token_caller(
    headers: &http::HeaderMap,
    verifier: Option<&dyn TokenVerifier>,
    now: i64,
) -> Result<Caller, tonic::Status> {
    let Some(value) = headers.get(http::header::AUTHORIZATION) else {
        return Err(tonic::Status::unauthenticated(
            "no client certificate and no token: present a pool certificate (mutual TLS) or \
             `authorization: Bearer <token>` (cmctl reads AERIE_TOKEN or AERIE_TOKEN_FILE)",
        ));
    };
    let token = value
        .to_str()
        .ok()
        .and_then(|v| v.strip_prefix("Bearer "))
        .ok_or_else(|| {
            tonic::Status::unauthenticated("authorization metadata is not `Bearer <token>`")
        })?;
    let v = verifier.ok_or_else(|| {
        tonic::Status::unauthenticated(
            "this daemon cannot check tokens (no token-signing.key in its credentials); \
             connect with a certificate or to a CM",
        )
    })?;
    let claims = v
        .verify(token, now)
        .map_err(|e| tonic::Status::unauthenticated(e.to_string()))?;
    let scopes = claims
        .levels()
        .map_err(|e| tonic::Status::unauthenticated(e.to_string()))?;
    Ok(Caller::User {
        identity: claims.sub,
        scopes,
    })
}

/// How many peer certificates' identities [`peer_identity`] keeps (a pool's daemons and
/// admins; past this the memo starts over).
const IDENTITY_MEMO: usize = 4096;

/// The identity in a peer's certificate (DER), read once per certificate: every RPC of a
/// connection presents the same certificate (tonic hands each request the connection's
/// certificates), and parsing X.509 per RPC costs more than the lookup. A memo of a pure
/// function of the bytes, so it can never answer differently than parsing; the TLS handshake
/// has already checked the certificate.
pub fn peer_identity(der: &[u8]) -> Result<Identity, String> {
    static MEMO: OnceLock<RwLock<HashMap<Vec<u8>, Identity>>> = OnceLock::new();
    let memo = MEMO.get_or_init(Default::default);
    if let Some(id) = memo.read().unwrap_or_else(|p| p.into_inner()).get(der) {
        return Ok(id.clone());
    }
    let id = Identity::from_der(der)?;
    let mut m = memo.write().unwrap_or_else(|p| p.into_inner());
    if m.len() >= IDENTITY_MEMO {
        m.clear();
    }
    m.insert(der.to_vec(), id.clone());
    Ok(id)
}

/// The caller of a request, from what the server recorded about its connection and, for a
/// TLS client without a certificate, its bearer token.
pub fn caller_of(ext: &http::Extensions, headers: &http::HeaderMap) -> Result<Peer, tonic::Status> {
    if let Some(tls) = ext.get::<TlsConnectInfo<TcpConnectInfo>>() {
        let addr = tls.get_ref().remote_addr().map(|a| a.ip());
        let first = tls.peer_certs().and_then(|c| c.first().cloned());
        let Some(first) = first else {
            let caller =
                token_caller(headers, verifier().as_deref(), crate::transport::now_unix())?;
            return Ok(Peer { caller, addr });
        };
        let id = peer_identity(&first).map_err(tonic::Status::unauthenticated)?;
        return Ok(Peer {
            caller: Caller::Daemon(id),
            addr,
        });
    }
    if let Some(uds) = ext.get::<UdsConnectInfo>() {
        let Some(cred) = uds.peer_cred else {
            return Err(tonic::Status::unauthenticated(
                "the local socket did not give the caller's credentials",
            ));
        };
        let uid = nix::unistd::Uid::from_raw(cred.uid());
        let name = match nix::unistd::User::from_uid(uid) {
            Ok(Some(u)) => u.name,
            _ => format!("uid{}", cred.uid()),
        };
        return Ok(Peer {
            caller: Caller::LocalUser(name),
            addr: None,
        });
    }
    let addr = ext
        .get::<TcpConnectInfo>()
        .and_then(|t| t.remote_addr())
        .map(|a| a.ip());
    Ok(Peer {
        caller: Caller::Anonymous,
        addr,
    })
}

/// The layer: `Server::builder().layer(Authorize::layer(policy))`.
#[derive(Clone)]
pub struct AuthorizeLayer {
    policy: Arc<Policy>,
}

impl AuthorizeLayer {
    /// A layer enforcing `policy`.
    pub fn new(policy: Arc<Policy>) -> Self {
        AuthorizeLayer { policy }
    }
}

impl<S> tower::Layer<S> for AuthorizeLayer {
    type Service = Authorize<S>;
    fn layer(&self, inner: S) -> Authorize<S> {
        Authorize {
            inner,
            policy: self.policy.clone(),
        }
    }
}

/// The service [`AuthorizeLayer`] wraps each server in.
#[derive(Clone)]
pub struct Authorize<S> {
    inner: S,
    policy: Arc<Policy>,
}

type BoxFuture<T, E> = Pin<Box<dyn Future<Output = Result<T, E>> + Send>>;

impl<S, B> tower::Service<http::Request<B>> for Authorize<S>
where
    S: tower::Service<http::Request<B>, Response = http::Response<tonic::body::BoxBody>>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
    B: Send + 'static,
{
    type Response = http::Response<tonic::body::BoxBody>;
    type Error = S::Error;
    type Future = BoxFuture<Self::Response, Self::Error>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: http::Request<B>) -> Self::Future {
        let decision = caller_of(req.extensions(), req.headers()).and_then(|peer| {
            authorize(&self.policy, req.uri().path(), &peer.caller, peer.addr).map(|()| peer)
        });
        match decision {
            Ok(peer) => {
                req.extensions_mut().insert(peer);
                // The clone is ready only if polled; use the one that was (tower's pattern).
                let clone = self.inner.clone();
                let mut inner = std::mem::replace(&mut self.inner, clone);
                Box::pin(inner.call(req))
            }
            Err(status) => {
                tracing::warn!(method = %req.uri().path(), error = %status.message(),
                               "refused an RPC");
                Box::pin(async move { Ok(status.into_http()) })
            }
        }
    }
}

/// The authorized caller of a request (set by the layer); `Anonymous` when no layer ran.
pub fn peer_of<T>(req: &tonic::Request<T>) -> Peer {
    req.extensions().get::<Peer>().cloned().unwrap_or(Peer {
        caller: Caller::Anonymous,
        addr: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::methods::METHODS;

    fn daemon(name: &str, roles: &[Role]) -> Caller {
        Caller::Daemon(Identity {
            name: name.into(),
            roles: roles.to_vec(),
        })
    }

    /// Every RPC against every kind of caller, under the default policy: the whole table of
    /// who may do what, so a changed rule shows up as a changed row.
    #[test]
    fn every_rpc_against_every_caller() {
        let p = Policy::defaults();
        let callers = [
            ("cm", daemon("cm1", &[Role::Cm])),
            ("execute", daemon("exec1", &[Role::Execute])),
            ("ap", daemon("ap1", &[Role::AccessPoint])),
            ("admin", daemon("root", &[Role::Admin])),
            ("local", Caller::LocalUser("alice".into())),
        ];
        // For each method: which of cm, execute, ap, admin, local may call it.
        let expect = |path: &str| -> [bool; 5] {
            let svc = path.split('/').nth(1).unwrap();
            let method = path.rsplit('/').next().unwrap();
            match (svc, method) {
                ("aerie.raft.Raft", _) => [true, false, false, false, false],
                ("aerie.collector.Collector", "Relay" | "Digest") => {
                    [true, false, false, false, false]
                }
                ("aerie.admin.Admin", "Status" | "Query") => [true, true, true, true, true],
                ("aerie.admin.Admin", _) => [true, false, false, true, false],
                ("aerie.collector.Collector", "Advertise" | "AdvertiseStream" | "Invalidate") => {
                    [false, true, true, true, false]
                }
                ("aerie.collector.Collector", _) => [true, true, true, true, true],
                ("aerie.negotiation.AccessPoint", _) => [true, false, false, false, false],
                (
                    "aerie.negotiation.Startd" | "aerie.execute.Execute" | "aerie.execute.Shadow",
                    _,
                ) => [true, true, true, false, false],
                ("aerie.schedd.Schedd", _) => [true, true, true, true, true],
                _ => panic!("{path} has no expectation in this test"),
            }
        };
        for m in METHODS {
            let want = expect(m.path);
            for (i, (who, c)) in callers.iter().enumerate() {
                let got = authorize(&p, m.path, c, None).is_ok();
                assert_eq!(got, want[i], "{who} calling {}", m.path);
            }
        }
        let e = authorize(&p, "/aerie.raft.Raft/Nope", &callers[0].1, None).unwrap_err();
        assert_eq!(e.code(), tonic::Code::Unimplemented);
    }

    #[test]
    fn a_peer_certificate_is_read_once_and_answers_as_parsed() {
        let dir = tempfile::tempdir().unwrap();
        let hs = [
            crate::pki::Holder::parse("exec7=execute").unwrap(),
            crate::pki::Holder::parse("cm7=cm").unwrap(),
        ];
        crate::pki::init(dir.path(), "t", &hs, 30).unwrap();
        let der = |n: &str| {
            let pem = std::fs::read_to_string(dir.path().join(format!("{n}.crt"))).unwrap();
            x509_parser::pem::parse_x509_pem(pem.as_bytes())
                .unwrap()
                .1
                .contents
        };
        for n in ["exec7", "cm7", "exec7", "cm7"] {
            let d = der(n);
            assert_eq!(peer_identity(&d), Identity::from_der(&d));
            assert_eq!(peer_identity(&d).unwrap().name, n);
        }
        let junk = b"not a certificate".to_vec();
        assert!(peer_identity(&junk).is_err());
        assert!(
            peer_identity(&junk).is_err(),
            "errors are not remembered as identities"
        );
    }

    #[test]
    fn refusals_say_who_what_and_which_list() {
        let p = Policy::defaults();
        let e = authorize(
            &p,
            "/aerie.admin.Admin/Write",
            &daemon("exec1", &[Role::Execute]),
            Some("10.1.2.3".parse().unwrap()),
        )
        .unwrap_err();
        assert_eq!(e.code(), tonic::Code::PermissionDenied);
        let m = e.message();
        for part in [
            "Admin/Write",
            "exec1@execute",
            "10.1.2.3",
            "ADMINISTRATOR",
            "*@admin",
        ] {
            assert!(m.contains(part), "{m:?} lacks {part}");
        }
        let e = authorize(
            &p,
            "/aerie.raft.Raft/Vote",
            &daemon("x", &[Role::Admin]),
            None,
        )
        .unwrap_err();
        assert!(
            e.message().contains("only central managers"),
            "{}",
            e.message()
        );
    }

    #[test]
    fn token_callers_are_refused_saying_why() {
        use crate::token::{Claims, SigningKey};
        let key = SigningKey::new(vec![7; 32], "pool");
        let claims = Claims {
            sub: "alice@pool.example".into(),
            iss: "pool".into(),
            iat: 0,
            exp: 100,
            jti: "j".into(),
            scope: Some("condor:/READ".into()),
        };
        let mut h = http::HeaderMap::new();
        let e = token_caller(&h, Some(&key), 50).unwrap_err();
        assert_eq!(e.code(), tonic::Code::Unauthenticated);
        assert!(e.message().contains("no token"), "{}", e.message());
        let bearer = format!("Bearer {}", key.sign(&claims));
        h.insert(http::header::AUTHORIZATION, bearer.parse().unwrap());
        assert_eq!(
            token_caller(&h, Some(&key), 50).unwrap(),
            Caller::User {
                identity: "alice@pool.example".into(),
                scopes: vec![Level::Read]
            }
        );
        let e = token_caller(&h, Some(&key), 150).unwrap_err();
        assert!(e.message().contains("expired"), "{}", e.message());
        let e = token_caller(&h, None, 50).unwrap_err();
        assert!(
            e.message().contains("cannot check tokens"),
            "{}",
            e.message()
        );
        // A READ token reaches queries but not writes.
        let p = Policy::defaults();
        let c = token_caller(&h, Some(&key), 50).unwrap();
        assert!(authorize(&p, "/aerie.admin.Admin/Query", &c, None).is_ok());
        let e = authorize(&p, "/aerie.admin.Admin/Write", &c, None).unwrap_err();
        assert_eq!(e.code(), tonic::Code::PermissionDenied);
        assert!(
            e.message().contains("condor:/ADMINISTRATOR"),
            "{}",
            e.message()
        );
    }
}
