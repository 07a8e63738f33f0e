//! Who is asking over TCP: the caller the authorization layer authenticated (a token's
//! identity or a pool certificate) as the queue's [`Who`], the owner of the jobs it submits
//! and the one whose jobs it may change.
//!
//! On the Unix socket the kernel names the caller (SO_PEERCRED, [`super::daemon::who_is`]).
//! Over TCP (mutual TLS, like every other service) the caller is what the layer found
//! (`aerie_security::layer`): a person or script with a token (`alice@pool.example`), or an
//! administrator's certificate. HTCondor's schedd sets a job's `Owner` from the
//! authenticated user's name without its domain (`Sock::setFullyQualifiedUser` splits
//! `user@domain`, src/condor_io/sock.cpp; `Owner` is checked against it in
//! src/condor_schedd.V6/qmgmt.cpp `OwnerCheck2`, and `QUEUE_SUPER_USERS` through
//! `isQueueSuperUser`), so `alice@pool.example` submits and owns jobs as `alice`, the same
//! account a login as alice on the access point would own them as. The owner and
//! administrator rules stay those of the socket: a caller changes only its own jobs unless it
//! is a queue super user (named in `QUEUE_SUPER_USERS`, by user name or full identity) or
//! holds an administrator's certificate.
//!
//! How the access point checks tokens: itself, with the pool's `token-signing.key` in its
//! credentials directory (`aerie-cm security init` writes it next to every certificate; copy
//! it to the access points that should take tokens), the way HTCondor's schedd checks IDTOKENS
//! with the pool signing key in its own `SEC_PASSWORD_DIRECTORY` rather than asking the
//! collector; and it refuses the tokens the CMs list as revoked, fetched every 30 s
//! ([`super::revocations`]). Asking a CM on every call instead would make every `cmctl q`
//! at an access point wait on a CM round trip and fail while the CMs are away, and would need
//! a verification RPC on the CMs; the price of checking locally is that the access point
//! holds the pool key (it could sign tokens: keep it only on access points you trust as
//! much as a CM) and that a revocation reaches it within 30 s. Without the key the TCP
//! service takes certificates only and says so to a token holder.
//!
//! Pure: the caller and the super-user list in, the answer out.
use super::queue::Who;
use aerie_security::{Caller, Role};

/// The queue's [`Who`] for a TCP `caller`, or why it may own no jobs. `super_users` is
/// `QUEUE_SUPER_USERS`.
pub fn who_of(caller: &Caller, super_users: &[String]) -> Result<Who, String> {
    let listed = |name: &str| super_users.iter().any(|s| s == name);
    match caller {
        Caller::User { identity, .. } => {
            let user = owner_name(identity)?;
            Ok(Who {
                is_super: listed(user) || listed(identity),
                name: user.to_string(),
            })
        }
        Caller::Daemon(id) if id.is(Role::Admin) => Ok(Who {
            name: owner_name(&id.name)?.to_string(),
            is_super: true,
        }),
        Caller::Daemon(id) => Err(format!(
            "{id} is a daemon's certificate: daemons own no jobs (use a token, an \
             administrator's certificate, or the access point's Unix socket)"
        )),
        Caller::LocalUser(name) => Ok(Who {
            name: owner_name(name)?.to_string(),
            is_super: name == "root" || listed(name),
        }),
        Caller::Anonymous => Err(
            "an unauthenticated caller owns no jobs: this access point runs --insecure; \
             use its Unix socket"
                .into(),
        ),
    }
}

/// The user part of `user@domain` (all of a name without `@`), as a job's `Owner`: letters,
/// digits, `.`, `_` and `-`, not starting with `-` or `.`, so it is a Unix account name and
/// no path or expression.
pub fn owner_name(identity: &str) -> Result<&str, String> {
    let user = identity.split_once('@').map_or(identity, |(u, _)| u);
    let ok = !user.is_empty()
        && !user.starts_with(['-', '.'])
        && user
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if ok {
        Ok(user)
    } else {
        Err(format!(
            "identity {identity:?}: its user part {user:?} is not an account name (letters, \
             digits, '.', '_', '-')"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aerie_security::{Identity, Level};

    fn token(identity: &str) -> Caller {
        Caller::User {
            identity: identity.into(),
            scopes: vec![Level::Read, Level::Write],
        }
    }

    fn cert(name: &str, roles: &[Role]) -> Caller {
        Caller::Daemon(Identity {
            name: name.into(),
            roles: roles.to_vec(),
        })
    }

    /// Every kind of caller against the default super users: the owner it gets, whether it
    /// may act on others' jobs, or the words of its refusal.
    #[test]
    fn every_caller_maps_to_an_owner_or_is_refused() {
        let supers = vec![
            "root".to_string(),
            "condor".into(),
            "ops@pool.example".into(),
        ];
        let ok = |name: &str, is_super: bool| {
            Ok::<Who, &str>(Who {
                name: name.into(),
                is_super,
            })
        };
        let cases: Vec<(Caller, Result<Who, &str>)> = vec![
            (token("alice@pool.example"), ok("alice", false)),
            (token("alice"), ok("alice", false)),
            (token("condor@pool.example"), ok("condor", true)),
            (token("ops@pool.example"), ok("ops", true)),
            (token("ops@elsewhere.example"), ok("ops", false)),
            (token("@pool.example"), Err("not an account name")),
            (token("../etc@pool"), Err("not an account name")),
            (token("-rf@pool"), Err("not an account name")),
            (token("a b@pool"), Err("not an account name")),
            (cert("root", &[Role::Admin]), ok("root", true)),
            (cert("ops", &[Role::Admin, Role::Cm]), ok("ops", true)),
            (cert("exec1", &[Role::Execute]), Err("daemons own no jobs")),
            (cert("cm1", &[Role::Cm]), Err("daemons own no jobs")),
            (
                cert("ap1", &[Role::AccessPoint]),
                Err("daemons own no jobs"),
            ),
            (Caller::LocalUser("bob".into()), ok("bob", false)),
            (Caller::LocalUser("root".into()), ok("root", true)),
            (Caller::Anonymous, Err("owns no jobs")),
        ];
        for (caller, want) in cases {
            let got = who_of(&caller, &supers);
            match (&got, want) {
                (Ok(g), Ok(w)) => assert_eq!(g, &w, "{caller}"),
                (Err(e), Err(words)) => assert!(e.contains(words), "{caller}: {e}"),
                _ => panic!("{caller}: got {got:?}"),
            }
        }
    }
}
