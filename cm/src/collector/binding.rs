//! Which ads a caller may send: the identity in a daemon's certificate binds the ads it may
//! advertise and invalidate (issue 16, item 4).
//!
//! HTCondor authorizes `UPDATE_STARTD_AD` at `ADVERTISE_STARTD` and `UPDATE_SCHEDD_AD`/
//! `UPDATE_SUBMITTOR_AD` at `ADVERTISE_SCHEDD` (`src/condor_collector.V6/collector.cpp`,
//! `src/condor_daemon_core.V6/condor_ipverify.cpp`), and with `COLLECTOR_REQUIRE_REQUESTER`-
//! style checks ties what a daemon sends to who authenticated: a startd's ad is keyed by its
//! `Machine` and `Name` (`makeStartdAdHashKey`, `src/condor_utils/hashkey.cpp`). Aerie makes
//! that binding strict, because the level alone would let any startd overwrite or invalidate
//! another machine's slots (and forge their `RemoteUser`), and any access point advertise a
//! Submitter ad with its own address to receive another's grants:
//!
//! - a caller holding only `execute` (and/or `access-point`) roles is *bound* to its
//!   certificate's name: slot ads only when `Machine` and the machine part of `Name`
//!   (after the last `@`) are that name; Submitter ads only when `ScheddName` is; Scheduler
//!   ads only when `Name` is; and an access point's ads only with a `MyAddress` on the host it
//!   connects from (when the address is an IP literal; both loopback counts as the same host);
//! - an admin certificate (`cmctl advertise`, `condor_advertise`, the pool simulator, which
//!   stands in for many machines), a local-socket user and an insecure (development) caller
//!   are *unbound*: the authorization level alone decides. CMs do not advertise; they relay,
//!   on a peer-only method.
//!
//! Pure: the decision takes the ad and the peer's address, nothing else.
use super::AdType;
use aerie_security::identity::{Caller, Role};
use classad::ClassAd;
use std::net::IpAddr;

/// Whose ads a caller may send.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Sender {
    /// Any ad (admin, local user, insecure development caller).
    Unbound,
    /// Only ads of the daemon named `name`, of the kinds its roles allow.
    Bound {
        /// The certificate's holder name (`exec1.pool.example`).
        name: String,
        /// It holds `execute`: may send slot ads.
        execute: bool,
        /// It holds `access-point`: may send Submitter and Scheduler ads.
        access_point: bool,
        /// The address it connects from, when known.
        addr: Option<IpAddr>,
        /// The principal, for messages (`exec1@execute`).
        who: String,
    },
}

/// Why an ad was refused: the attribute at fault and the end of a sentence.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NotOwned {
    /// The attribute that does not match the caller (`Machine`, `ScheddName`, `MyType`...).
    pub attribute: String,
    /// What is wrong.
    pub reason: String,
}

impl Sender {
    /// The binding of an authenticated caller connecting from `addr`.
    pub fn of(caller: &Caller, addr: Option<IpAddr>) -> Sender {
        match caller {
            Caller::Daemon(id) if !id.is(Role::Admin) && !id.is(Role::Cm) => Sender::Bound {
                name: id.name.clone(),
                execute: id.is(Role::Execute),
                access_point: id.is(Role::AccessPoint),
                addr,
                who: caller.to_string(),
            },
            _ => Sender::Unbound,
        }
    }

    /// Whether the caller may send (or, with `check_addr` false, invalidate) `ad`.
    pub fn may_send(&self, ad: &ClassAd, check_addr: bool) -> Result<(), NotOwned> {
        let Sender::Bound {
            name,
            execute,
            access_point,
            addr,
            who,
        } = self
        else {
            return Ok(());
        };
        let str_attr = |a: &str| ad.eval_attr(a).as_str().map(str::to_string);
        let refuse = |attribute: &str, reason: String| NotOwned {
            attribute: attribute.into(),
            reason,
        };
        let must_be = |attribute: &str, value: Option<String>| -> Result<(), NotOwned> {
            match value {
                Some(v) if v.eq_ignore_ascii_case(name) => Ok(()),
                Some(v) => Err(refuse(
                    attribute,
                    format!("is {v:?}, but the sender {who} may only send its own ads ({name:?})"),
                )),
                None => Err(refuse(
                    attribute,
                    format!("missing; the sender {who} must name itself ({name:?}) in it"),
                )),
            }
        };
        let my_type = str_attr("MyType").unwrap_or_default();
        let t = AdType::parse(&my_type);
        let needs = |ok: bool, role: &str| {
            if ok {
                Ok(())
            } else {
                Err(refuse(
                    "MyType",
                    format!("{my_type:?} ads need the {role} role; the sender {who} lacks it"),
                ))
            }
        };
        match t {
            AdType::Machine => {
                needs(*execute, "execute")?;
                must_be("Machine", str_attr("Machine"))?;
                let machine_of_name = str_attr("Name")
                    .map(|n| n.rsplit_once('@').map_or(n.clone(), |(_, m)| m.to_string()));
                must_be("Name", machine_of_name)?;
                Ok(())
            }
            AdType::Submitter | AdType::Scheduler => {
                needs(*access_point, "access-point")?;
                // A Submitter ad names a user; its schedd is in ScheddName.
                let schedd = if t == AdType::Submitter {
                    "ScheddName"
                } else {
                    "Name"
                };
                must_be(schedd, str_attr(schedd))?;
                if check_addr {
                    own_address(str_attr("MyAddress"), *addr, who)?;
                }
                Ok(())
            }
            AdType::Negotiator | AdType::Collector => Err(refuse(
                "MyType",
                format!("{my_type:?} ads come from central managers only, not from {who}"),
            )),
            // A node's other daemon ads (Master, generic): its own machine's only.
            _ => match str_attr("Machine") {
                Some(m) => must_be("Machine", Some(m)),
                None => must_be(
                    "Name",
                    str_attr("Name")
                        .map(|n| n.rsplit_once('@').map_or(n.clone(), |(_, m)| m.to_string())),
                ),
            },
        }
    }
}

/// An access point's `MyAddress` must be on the host it connects from: grants go to that
/// address. Host names are not resolved here (pure); only IP literals are compared.
fn own_address(
    my_address: Option<String>,
    peer: Option<IpAddr>,
    who: &str,
) -> Result<(), NotOwned> {
    let (Some(a), Some(peer)) = (my_address, peer) else {
        return Ok(());
    };
    let Ok(ip) = super::address_host(&a).parse::<IpAddr>() else {
        return Ok(());
    };
    let (ip, peer) = (ip.to_canonical(), peer.to_canonical());
    if ip == peer || (ip.is_loopback() && peer.is_loopback()) {
        return Ok(());
    }
    Err(NotOwned {
        attribute: "MyAddress".into(),
        reason: format!(
            "is {a:?}, but the sender {who} connects from {peer}; an access point may only \
             advertise its own address"
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use aerie_security::identity::Identity;

    fn bound(name: &str, roles: &[Role], addr: &str) -> Sender {
        Sender::of(
            &Caller::Daemon(Identity {
                name: name.into(),
                roles: roles.to_vec(),
            }),
            Some(addr.parse().unwrap()),
        )
    }

    fn ad(text: &str) -> ClassAd {
        classad::parse_ad(text).unwrap()
    }

    fn slot(machine: &str, name: &str) -> ClassAd {
        ad(&format!(
            "[MyType = \"Machine\"; Name = \"{name}\"; Machine = \"{machine}\"; \
              MyAddress = \"<10.0.0.9:9618>\"]"
        ))
    }

    #[test]
    fn a_startd_sends_only_its_own_machines_slots() {
        let s = bound("exec1.pool.example", &[Role::Execute], "10.0.0.1");
        let own = slot("exec1.pool.example", "slot1@exec1.pool.example");
        assert_eq!(s.may_send(&own, true), Ok(()));
        let e = s
            .may_send(
                &slot("exec2.pool.example", "slot1@exec2.pool.example"),
                true,
            )
            .unwrap_err();
        assert_eq!(e.attribute, "Machine");
        assert!(
            e.reason.contains("exec2.pool.example") && e.reason.contains("exec1"),
            "{e:?}"
        );
        // The machine part of the name binds too (it is half of the ad's key).
        let e = s
            .may_send(
                &slot("exec1.pool.example", "slot1@exec2.pool.example"),
                true,
            )
            .unwrap_err();
        assert_eq!(e.attribute, "Name");
        // A startd advertises no Submitter ads.
        let sub =
            ad("[MyType = \"Submitter\"; Name = \"a@d\"; ScheddName = \"exec1.pool.example\"]");
        assert_eq!(s.may_send(&sub, true).unwrap_err().attribute, "MyType");
    }

    #[test]
    fn an_access_point_sends_only_its_own_submitters_at_its_own_address() {
        let s = bound("ap1", &[Role::AccessPoint], "10.0.0.2");
        let sub = |schedd: &str, addr: &str| {
            ad(&format!(
                "[MyType = \"Submitter\"; Name = \"alice@d\"; ScheddName = \"{schedd}\"; \
                  MyAddress = \"<{addr}:9618>\"]"
            ))
        };
        assert_eq!(s.may_send(&sub("ap1", "10.0.0.2"), true), Ok(()));
        assert_eq!(
            s.may_send(&sub("ap2", "10.0.0.2"), true)
                .unwrap_err()
                .attribute,
            "ScheddName"
        );
        let e = s.may_send(&sub("ap1", "10.9.9.9"), true).unwrap_err();
        assert_eq!(e.attribute, "MyAddress");
        assert!(e.reason.contains("10.0.0.2"), "{e:?}");
        // Invalidation checks the stored ad's owner, not the address it connects from today.
        assert_eq!(s.may_send(&sub("ap1", "10.9.9.9"), false), Ok(()));
        let schedd = ad("[MyType = \"Scheduler\"; Name = \"ap2\"; MyAddress = \"<10.0.0.2:1>\"]");
        assert_eq!(s.may_send(&schedd, true).unwrap_err().attribute, "Name");
        assert_eq!(
            s.may_send(&slot("ap1", "slot1@ap1"), true)
                .unwrap_err()
                .attribute,
            "MyType"
        );
        let loopback = bound("ap1", &[Role::AccessPoint], "127.0.0.1");
        assert_eq!(loopback.may_send(&sub("ap1", "127.0.0.2"), true), Ok(()));
    }

    #[test]
    fn admins_and_unauthenticated_development_callers_are_unbound() {
        let admin = bound("admin", &[Role::Admin], "10.0.0.3");
        assert_eq!(admin, Sender::Unbound);
        assert_eq!(Sender::of(&Caller::Anonymous, None), Sender::Unbound);
        assert_eq!(
            Sender::Unbound.may_send(&slot("x", "slot1@y"), true),
            Ok(())
        );
        // Case does not matter in host names.
        let s = bound("Exec1.Pool.Example", &[Role::Execute], "10.0.0.1");
        assert_eq!(
            s.may_send(
                &slot("exec1.pool.example", "slot1@exec1.pool.example"),
                true
            ),
            Ok(())
        );
        let neg = ad("[MyType = \"Negotiator\"; Name = \"Exec1.Pool.Example\"]");
        assert_eq!(s.may_send(&neg, true).unwrap_err().attribute, "MyType");
    }
}
