//! aerie-security: who may talk to an Aerie daemon, and what they may ask of it.
//!
//! HTCondor authenticates every connection (SSL, tokens, FS, ...) and then authorizes each
//! command by the *authorization level* it needs (`READ`, `WRITE`, `ADMINISTRATOR`,
//! `DAEMON`, `NEGOTIATOR`, `ADVERTISE_STARTD`, `ADVERTISE_SCHEDD`), matched against the
//! `ALLOW_<LEVEL>`/`DENY_<LEVEL>` lists (HTCondor's `src/condor_daemon_core.V6/
//! condor_ipverify.cpp`, `src/condor_utils/condor_perms.cpp`). Aerie does the same over gRPC:
//!
//! - [`pki`]: the pool's certificate authority and one certificate per daemon or admin,
//!   made by one command (`aerie-cm security init`), with the daemon's name and roles in it;
//! - [`transport`]: mutual TLS (rustls) on every listener and every channel, the same way in
//!   every binary; `--insecure` only for development;
//! - [`identity`]: the authenticated caller (a certificate's roles and name, a Unix user on a
//!   local socket, or nobody on an insecure listener);
//! - [`authz`]: levels, their implications and the `ALLOW_`/`DENY_` policy;
//! - [`token`]: HTCondor-style IDTOKENS (HS256 JWTs) for people and scripts without a
//!   certificate, limited to the levels of their scopes;
//! - [`methods`]: the one table of every RPC and the level it needs, enforced by
//!   [`layer::Authorize`] in front of every service;
//! - [`grant`]: grants signed by the leader with its CM key, checked by execute nodes
//!   before they believe a claim's Raft term;
//! - [`rate`]: what one identity may cost (a token bucket per principal), with the message
//!   size and per-connection stream limits in [`transport`].
#![warn(missing_docs)]

pub mod authz;
pub mod grant;
pub mod identity;
pub mod layer;
pub mod methods;
pub mod pki;
pub mod rate;
pub mod testing;
pub mod token;
pub mod transport;

pub use authz::{Level, Policy};
pub use identity::{Caller, Identity, Role};
pub use transport::{install, transport, Transport};
