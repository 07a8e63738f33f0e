//! Credentials for tests: one throw-away pool CA per test process.
//!
//! Every test that starts daemons or talks to them calls [`test_pool`] first: it makes a CA
//! and certificates in a directory of its own (named after the process, so tests running in
//! parallel never share one; directories of processes that are gone are removed), points
//! `AERIE_CREDENTIALS` at it so every daemon the test spawns inherits it, and installs the
//! `harness` certificate, which holds every role, as the test process's own (it plays stand-in
//! access points and execute nodes as well as the admin). With `AERIE_INSECURE=1` set, it
//! makes nothing and installs the plaintext transport instead (for A/B benchmarks).
use crate::identity::Role;
use crate::pki::{self, Holder};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The name of the test process's own all-roles certificate.
pub const HARNESS: &str = "harness";

/// Names tests give their daemons (`--name`), each issued execute and access-point roles
/// (and `sim`, the simulator's, the admin role as well).
const NODE_NAMES: &[&str] = &[
    "exec1",
    "exec2",
    "exec3",
    "ap",
    "ap1",
    "sim",
    "exec1.test",
    "node1.test",
    "localhost",
];

fn holders() -> Vec<Holder> {
    let mut out = pki::default_holders(9, &[]);
    out.push(Holder {
        name: HARNESS.into(),
        roles: Role::ALL.to_vec(),
    });
    let host = nix::unistd::gethostname()
        .ok()
        .and_then(|h| h.into_string().ok());
    for n in NODE_NAMES.iter().map(|s| s.to_string()).chain(host) {
        if !out.iter().any(|h| h.name == n) {
            // The simulator stands in for many machines and access points: only an admin
            // certificate may send other daemons' ads (the collector's binding).
            let mut roles = vec![Role::Execute, Role::AccessPoint];
            if n == "sim" {
                roles.push(Role::Admin);
            }
            out.push(Holder { name: n, roles });
        }
    }
    out
}

/// Removes test pools left by processes that no longer run.
fn sweep(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("aerie-test-pki-"))
            .and_then(|p| p.parse::<i32>().ok())
        else {
            continue;
        };
        let alive = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok();
        if !alive {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

/// This test process's pool credentials (made on first call).
pub fn test_pool() -> &'static Path {
    static POOL: OnceLock<PathBuf> = OnceLock::new();
    POOL.get_or_init(|| {
        let parent = std::env::temp_dir();
        // `AERIE_INSECURE=1` in the test's environment runs everything plaintext (benchmarks
        // measure what TLS costs this way); the daemons inherit the variable.
        if std::env::var("AERIE_INSECURE").is_ok_and(|v| v == "1" || v == "true") {
            crate::install(crate::Transport::Insecure, crate::Policy::defaults());
            return parent.join("aerie-test-pki-insecure");
        }
        sweep(&parent);
        let dir = parent.join(format!("aerie-test-pki-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        pki::init(&dir, "test", &holders(), 90).expect("make the test pool's credentials");
        std::env::set_var("AERIE_CREDENTIALS", &dir);
        std::env::remove_var("AERIE_CREDENTIAL_NAME");
        std::env::remove_var("AERIE_INSECURE");
        let t = crate::Transport::load(&dir, HARNESS, crate::transport::now_unix())
            .expect("load the harness certificate");
        crate::install(t, crate::Policy::defaults());
        dir
    })
}

/// A server builder for a stand-in daemon in a test (the harness certificate, default policy).
pub fn server() -> tonic::transport::Server<
    tower::layer::util::Stack<crate::layer::AuthorizeLayer, tower::layer::util::Identity>,
> {
    test_pool();
    crate::transport::server().expect("the test pool's server configuration")
}

/// An endpoint to a `role` server at `addr`, as the harness.
pub fn endpoint(addr: &str, role: Role) -> tonic::transport::Endpoint {
    test_pool();
    crate::transport::endpoint(addr, role).expect("the test pool's client configuration")
}
