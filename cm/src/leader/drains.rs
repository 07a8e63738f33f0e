//! The leader carries the replicated drain requests out: `cmctl drain` commits a request to
//! Raft (so it survives any CM's crash and every CM shows it), and the leader tells the
//! machine's execute node (`Execute.Drain`), and tells it again to stop when the request is
//! cancelled (`Execute.CancelDrain`).
//!
//! Why a reconciliation and not a one-shot call: HTCondor's condor_drain contacts the startd
//! once, directly, and a lost message is the admin's to notice. Here the replicated requests
//! are the wanted state and the slot ads the actual one: a machine whose slots do not
//! advertise the request's `DrainingRequestId` is sent the request (again), and a machine
//! whose slots advertise a drain the state no longer holds is told to cancel it. A new leader,
//! a restarted node or a lost RPC all converge by the next sweep. The comparison is pure
//! ([`plan`]); the loop only reads the state and the table and makes the calls.
use super::Leader;
use crate::collector::{AdType, Query};
use aerie_core::state::DrainRequest;
use aerie_proto::execute as pb;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::{Duration, Instant};

/// How often the leader compares the requests with the slot ads.
pub const SWEEP: Duration = Duration::from_secs(3);

/// One slot ad's part in a drain: its machine, its startd's address and the drain it
/// advertises carrying out.
#[derive(Debug, Clone, PartialEq)]
pub struct SlotDrain {
    /// `Machine`.
    pub machine: String,
    /// `MyAddress` ("<host:port>").
    pub addr: String,
    /// `DrainingRequestId`, when the slot is draining.
    pub request_id: Option<String>,
}

/// A call the leader makes.
#[derive(Debug, Clone, PartialEq)]
pub enum DrainCall {
    /// Send this request to the startd at `addr`.
    Drain {
        /// The startd's address.
        addr: String,
        /// The request.
        request: DrainRequest,
    },
    /// Tell the startd at `addr` to stop carrying out drain `request_id`.
    Cancel {
        /// The startd's address.
        addr: String,
        /// The machine (for logs).
        machine: String,
        /// The drain to stop.
        request_id: String,
    },
}

/// The calls that bring the machines in line with the requests. A request whose machine has
/// no slot ad waits (the machine may not be up yet); requests from before request ids (empty
/// `request_id`) cannot be matched to what a machine advertises and are sent only while no
/// slot of the machine is draining.
pub fn plan(drains: &BTreeMap<String, DrainRequest>, slots: &[SlotDrain]) -> Vec<DrainCall> {
    let mut by_machine: BTreeMap<&str, Vec<&SlotDrain>> = BTreeMap::new();
    for s in slots {
        by_machine.entry(s.machine.as_str()).or_default().push(s);
    }
    let mut calls = Vec::new();
    for (machine, slots) in &by_machine {
        let Some(addr) = slots.iter().map(|s| &s.addr).find(|a| !a.is_empty()) else {
            continue;
        };
        let advertised: BTreeSet<&str> = slots
            .iter()
            .filter_map(|s| s.request_id.as_deref())
            .collect();
        let wanted = drains.get(*machine);
        if let Some(d) = wanted {
            let carried = if d.request_id.is_empty() {
                !advertised.is_empty()
            } else {
                advertised.contains(d.request_id.as_str())
            };
            if !carried {
                calls.push(DrainCall::Drain {
                    addr: addr.clone(),
                    request: d.clone(),
                });
            }
        }
        for id in advertised {
            let still_wanted =
                wanted.is_some_and(|d| d.request_id == id || d.request_id.is_empty());
            if !still_wanted {
                calls.push(DrainCall::Cancel {
                    addr: addr.clone(),
                    machine: machine.to_string(),
                    request_id: id.to_string(),
                });
            }
        }
    }
    calls
}

/// The slot ads' drain parts, from the collector table.
fn slot_drains(l: &Leader) -> Vec<SlotDrain> {
    let q = Query {
        ad_type: Some(AdType::Machine),
        constraint: None,
        projection: vec![
            "Machine".into(),
            "MyAddress".into(),
            "DrainingRequestId".into(),
        ],
        absent: false,
        limit: 0,
    };
    let ads = l.table.read().unwrap_or_else(|p| p.into_inner()).query(&q);
    ads.iter()
        .filter_map(|ad| {
            let s = |a: &str| ad.eval_attr(a).as_str().map(str::to_string);
            Some(SlotDrain {
                machine: s("Machine")?,
                addr: s("MyAddress").unwrap_or_default(),
                request_id: s("DrainingRequestId").filter(|r| !r.is_empty()),
            })
        })
        .collect()
}

fn how(h: &str) -> pb::DrainHow {
    match h {
        "quick" => pb::DrainHow::Quick,
        "fast" => pb::DrainHow::Fast,
        _ => pb::DrainHow::Graceful,
    }
}

/// A node's answer (ok, error) or the RPC's failure, as one result.
fn answer(r: Result<(bool, String), tonic::Status>) -> Result<(), String> {
    match r {
        Ok((true, _)) => Ok(()),
        Ok((false, error)) => Err(error),
        Err(s) => Err(s.message().to_string()),
    }
}

/// Makes one call; the error as an operator reads it.
async fn call(c: &DrainCall) -> Result<(), String> {
    let addr = match c {
        DrainCall::Drain { addr, .. } | DrainCall::Cancel { addr, .. } => addr,
    };
    let bare = addr.trim().trim_start_matches('<').trim_end_matches('>');
    let bare = bare.split('?').next().unwrap_or(bare);
    let ch = crate::raft::network::lazy_channel(
        bare,
        aerie_security::Role::Execute,
        Duration::from_secs(2),
    )?;
    let mut client = pb::execute_client::ExecuteClient::new(ch);
    let deadline = Duration::from_secs(5);
    match c {
        DrainCall::Drain { request, .. } => {
            let mut req = tonic::Request::new(pb::DrainRequest {
                how: how(&request.how) as i32,
                reason: request.reason.clone(),
                start_expr: request.start_expr.clone(),
                check_expr: request.check_expr.clone(),
                request_id: request.request_id.clone(),
                resume_on_completion: request.resume_on_completion,
            });
            req.set_timeout(deadline);
            let r = client.drain(req).await;
            answer(r.map(|r| r.into_inner()).map(|r| (r.ok, r.error)))
        }
        DrainCall::Cancel { request_id, .. } => {
            let mut req = tonic::Request::new(pb::CancelDrainRequest {
                request_id: request_id.clone(),
            });
            req.set_timeout(deadline);
            let r = client.cancel_drain(req).await;
            answer(r.map(|r| r.into_inner()).map(|r| (r.ok, r.error)))
        }
    }
}

/// Runs the sweeps of `term` until this CM no longer leads it.
pub(super) async fn deliver_while_leading(l: &Leader, term: u64) {
    let mut tick = tokio::time::interval(SWEEP);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // One warning per machine and error a minute: a machine that refuses a drain (its -check
    // failed) is asked again every sweep, and its log should not be flooded.
    let mut warned: HashMap<(String, String), Instant> = HashMap::new();
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = l.leadership.wait_deposed(term) => return,
        }
        let drains = l
            .state
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .state
            .drains
            .clone();
        let calls = plan(&drains, &slot_drains(l));
        for c in calls {
            if !l.leadership.leads(term) {
                return;
            }
            let (kind, machine) = match &c {
                DrainCall::Drain { request, .. } => ("drain", request.machine.clone()),
                DrainCall::Cancel { machine, .. } => ("cancel", machine.clone()),
            };
            match call(&c).await {
                Ok(()) => {
                    metrics::counter!("aerie_drain_calls_total", "call" => kind, "result" => "ok")
                        .increment(1);
                    tracing::info!(call = kind, machine = %machine, "drain request sent to the machine");
                }
                Err(e) => {
                    metrics::counter!("aerie_drain_calls_total", "call" => kind, "result" => "error")
                        .increment(1);
                    let key = (machine.clone(), e.clone());
                    let now = Instant::now();
                    if warned
                        .get(&key)
                        .is_none_or(|t| now.duration_since(*t) > Duration::from_secs(60))
                    {
                        warned.insert(key, now);
                        tracing::warn!(call = kind, machine = %machine, error = %e, "the machine did not take the drain call; retrying every sweep");
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(machine: &str, id: &str) -> DrainRequest {
        DrainRequest {
            machine: machine.into(),
            how: "graceful".into(),
            reason: "kernel".into(),
            time: 1,
            request_id: id.into(),
            start_expr: String::new(),
            check_expr: String::new(),
            resume_on_completion: false,
        }
    }

    fn slot(machine: &str, id: Option<&str>) -> SlotDrain {
        SlotDrain {
            machine: machine.into(),
            addr: format!("<{machine}:9618>"),
            request_id: id.map(str::to_string),
        }
    }

    fn drains(rs: &[DrainRequest]) -> BTreeMap<String, DrainRequest> {
        rs.iter().map(|r| (r.machine.clone(), r.clone())).collect()
    }

    #[test]
    fn a_request_is_sent_until_the_machine_advertises_it() {
        let d = drains(&[req("n1", "7")]);
        let calls = plan(&d, &[slot("n1", None), slot("n1", None)]);
        assert_eq!(
            calls,
            [DrainCall::Drain {
                addr: "<n1:9618>".into(),
                request: req("n1", "7")
            }]
        );
        // One slot advertising it is enough: the node drains as a whole.
        assert!(plan(&d, &[slot("n1", Some("7")), slot("n1", None)]).is_empty());
    }

    #[test]
    fn a_cancelled_or_replaced_request_is_cancelled_at_the_machine() {
        let none = drains(&[]);
        assert_eq!(
            plan(&none, &[slot("n1", Some("7"))]),
            [DrainCall::Cancel {
                addr: "<n1:9618>".into(),
                machine: "n1".into(),
                request_id: "7".into()
            }]
        );
        // A newer request for the machine: the old one stops, the new one is sent.
        let newer = drains(&[req("n1", "8")]);
        let calls = plan(&newer, &[slot("n1", Some("7"))]);
        assert_eq!(calls.len(), 2, "{calls:?}");
        assert!(matches!(&calls[0], DrainCall::Drain { request, .. } if request.request_id == "8"));
        assert!(matches!(&calls[1], DrainCall::Cancel { request_id, .. } if request_id == "7"));
    }

    #[test]
    fn a_machine_without_ads_waits_and_others_are_left_alone() {
        let d = drains(&[req("gone", "1")]);
        assert!(plan(&d, &[slot("n2", None)]).is_empty());
    }

    #[test]
    fn a_request_without_an_id_counts_as_carried_by_any_drain() {
        let d = drains(&[req("n1", "")]);
        assert!(plan(&d, &[slot("n1", Some("startd-own"))]).is_empty());
        assert_eq!(plan(&d, &[slot("n1", None)]).len(), 1);
    }
}
