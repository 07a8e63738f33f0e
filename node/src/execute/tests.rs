//! The slot manager with time injected: claims and the term fence, leases, preemption,
//! partitionable slots and drains, step by step (the daemon is tested in `node/tests/execute.rs`).
use super::slots::{ClaimAnswer, Effect, JobEnd, SlotManager};
use crate::policy::{Cause, Policy, State};
use crate::startd::ad::MachineFacts;
use crate::startd::layout::SlotSpec;
use crate::startd::load::Connected;
use crate::startd::Resources;
use aerie_config::{Config, LoadOptions};
use aerie_proto::execute as xpb;
use aerie_proto::negotiation as npb;
use std::sync::Arc;

const M: &str = "node1.test";
const T0: i64 = 1_000;

fn res(cpus: f64) -> Resources {
    Resources {
        cpus,
        memory: 1024.0 * cpus,
        disk: 1000.0 * cpus,
    }
}

fn policy(config: &str) -> Policy {
    let cfg = Config::parse_str(config, "test", &LoadOptions::for_subsystem("STARTD")).unwrap();
    Policy::from_config(&cfg).unwrap()
}

fn manager(specs: &[SlotSpec], config: &str) -> SlotManager {
    let facts = MachineFacts {
        machine: M.into(),
        my_address: "<127.0.0.1:1>".into(),
        uid_domain: "test".into(),
        filesystem_domain: "test".into(),
        platform: crate::pool::simulated_platform(),
        total: res(2.0),
        detected: None,
    };
    let connected = Connected {
        console_slots: 0,
        keyboard_slots: 0,
        disconnected_idle: 0,
    };
    SlotManager::new(specs, policy(config), facts, connected, "t", Some(7), T0)
}

fn two_static(config: &str) -> SlotManager {
    let specs = [
        SlotSpec::plain(1, false, res(1.0)),
        SlotSpec::plain(2, false, res(1.0)),
    ];
    manager(&specs, config)
}

fn slot(n: u32) -> String {
    format!("slot{n}@{M}")
}

fn job_ad(extra: &str) -> String {
    format!("ClusterId = 1\nProcId = 0\nOwner = \"alice\"\nUser = \"alice@test\"\nCmd = \"/bin/true\"\nRequestCpus = 1\n{extra}")
}

fn claim_id(m: &SlotManager, name: &str) -> String {
    let ad = m.slot_ad(name).unwrap();
    ad.eval_attr("ClaimId").as_str().unwrap().to_string()
}

fn request(
    m: &SlotManager,
    name: &str,
    term: u64,
    extra: &str,
    preempts: bool,
) -> npb::ClaimRequest {
    npb::ClaimRequest {
        slot: name.into(),
        claim_id: claim_id(m, name),
        term,
        cycle: 1,
        job: "1.0".into(),
        submitter: "alice@test".into(),
        job_ad: job_ad(extra),
        carve_cpus: 1.0,
        carve_memory: 512.0,
        carve_disk: 100.0,
        preempts,
        signed: None,
    }
}

fn claim(m: &mut SlotManager, name: &str, extra: &str, now: i64) -> npb::ClaimReply {
    let req = request(m, name, 1, extra, false);
    match m.request_claim(&req, now) {
        ClaimAnswer::Now(r) if r.ok => r,
        other => panic!("claim of {name} not accepted: {other:?}"),
    }
}

fn activate(m: &mut SlotManager, c: &npb::ClaimReply, extra: &str, now: i64) {
    let ad = Arc::new(classad::parse_ad(&job_ad(extra)).unwrap());
    m.activate(&c.claimed_slot, &c.claim_id, ad, now).unwrap();
}

fn state(m: &SlotManager, name: &str) -> String {
    let s = m.state(name).unwrap();
    format!("{}/{}", s.state, s.activity)
}

#[test]
fn a_claim_needs_the_capability_and_a_term_no_older_than_seen_and_a_free_slot() {
    let mut m = two_static("");
    let s1 = slot(1);
    assert_eq!(state(&m, &s1), "Unclaimed/Idle");
    let mut forged = request(&m, &s1, 3, "", false);
    forged.claim_id = "forged".into();
    assert!(
        matches!(m.request_claim(&forged, T0), ClaimAnswer::Now(r) if r.error == "bad claim id")
    );
    let good = request(&m, &s1, 3, "", false);
    let ClaimAnswer::Now(r) = m.request_claim(&good, T0) else {
        panic!("pending")
    };
    assert!(r.ok, "{r:?}");
    assert_eq!(state(&m, &s1), "Claimed/Idle");
    let ClaimAnswer::Now(again) = m.request_claim(&good, T0) else {
        panic!("pending")
    };
    assert!(
        !again.ok && again.error.contains("already claimed"),
        "{again:?}"
    );
    let old = npb::ClaimRequest { term: 2, ..good };
    let ClaimAnswer::Now(stale) = m.request_claim(&old, T0) else {
        panic!("pending")
    };
    assert_eq!(stale.error, "stale term 2 < 3");
}

#[test]
fn a_forged_far_future_term_is_refused_and_does_not_move_the_fence() {
    let mut m = two_static("");
    let s1 = slot(1);
    m.cm_reported_term(7);
    // The right capability, a term no CM ever reported: refused, and the fence stays.
    let forged = request(&m, &s1, u64::MAX, "", false);
    let ClaimAnswer::Now(r) = m.request_claim(&forged, T0) else {
        panic!("pending")
    };
    assert!(!r.ok && r.error.contains("implausible term"), "{r:?}");
    assert_eq!(m.newest_term(), 7);
    let real = request(&m, &s1, 7, "", false);
    let ClaimAnswer::Now(r) = m.request_claim(&real, T0) else {
        panic!("pending")
    };
    assert!(r.ok, "the real grant still claims the slot: {r:?}");
}

#[test]
fn a_restarted_node_keeps_fencing_terms_older_than_it_saw() {
    let mut m = two_static("");
    m.restore_term(9);
    let s1 = slot(1);
    let old = request(&m, &s1, 8, "", false);
    let ClaimAnswer::Now(r) = m.request_claim(&old, T0) else {
        panic!("pending")
    };
    assert_eq!(r.error, "stale term 8 < 9");
    let ok = request(&m, &s1, 10, "", false);
    let ClaimAnswer::Now(r) = m.request_claim(&ok, T0) else {
        panic!("pending")
    };
    assert!(r.ok, "{r:?}");
    assert_eq!(m.newest_term(), 10);
}

#[test]
fn a_start_expression_false_for_the_job_refuses_the_claim_and_leaves_the_slot_unclaimed() {
    let mut m = two_static("START = Owner == \"bob\"\n");
    let req = request(&m, &slot(1), 1, "", false);
    let ClaimAnswer::Now(r) = m.request_claim(&req, T0) else {
        panic!("pending")
    };
    assert!(!r.ok && r.error.contains("START"), "{r:?}");
    assert_eq!(state(&m, &slot(1)), "Unclaimed/Idle");
    // The capability is unchanged: the slot was never claimed.
    assert_eq!(claim_id(&m, &slot(1)), req.claim_id);
}

#[test]
fn a_lease_that_passes_kills_the_job_and_drops_the_claim() {
    let mut m = two_static("");
    let c = claim(&mut m, &slot(1), "JobLeaseDuration = 10\n", T0);
    activate(&mut m, &c, "JobLeaseDuration = 10\n", T0);
    assert_eq!(state(&m, &slot(1)), "Claimed/Busy");
    assert_eq!(m.keep_alive(&slot(1), &c.claim_id, T0 + 5), Ok(10));
    m.tick(T0 + 14, 0.0, None);
    assert_eq!(
        state(&m, &slot(1)),
        "Claimed/Busy",
        "renewed at +5: lease to +15"
    );
    m.take_effects();
    m.tick(T0 + 15, 0.0, None);
    assert_eq!(state(&m, &slot(1)), "Preempting/Killing");
    assert!(m.take_effects().contains(&Effect::HardKill {
        claim_id: c.claim_id.clone()
    }));
    let end = m.job_exited(&slot(1), &c.claim_id, T0 + 16);
    assert_eq!(end, JobEnd::Evicted("claim lease expired".into()));
    assert!(m.take_effects().iter().any(|e| matches!(
        e,
        Effect::ClaimEnded {
            cause: Cause::LeaseExpired,
            ..
        }
    )));
    assert_eq!(state(&m, &slot(1)), "Unclaimed/Idle");
    assert_ne!(claim_id(&m, &slot(1)), c.claim_id);
    assert!(m.keep_alive(&slot(1), &c.claim_id, T0 + 17).is_err());
}

#[test]
fn a_preempting_claim_waits_for_the_job_to_be_vacated_then_takes_the_slot() {
    let mut m = two_static("");
    let c = claim(&mut m, &slot(1), "", T0);
    activate(
        &mut m,
        &c,
        "KillSig = \"SIGUSR1\"\nJobMaxVacateTime = 5\n",
        T0,
    );
    m.take_effects();
    let req = request(&m, &slot(1), 2, "", true);
    let ClaimAnswer::Pending(token) = m.request_claim(&req, T0 + 1) else {
        panic!("a busy slot answered a preempting claim at once")
    };
    assert_eq!(state(&m, &slot(1)), "Preempting/Vacating");
    assert!(m.take_effects().contains(&Effect::SoftKill {
        claim_id: c.claim_id.clone(),
        vacate_seconds: 5
    }));
    let end = m.job_exited(&slot(1), &c.claim_id, T0 + 2);
    assert_eq!(
        end,
        JobEnd::Evicted("preempted by a user with better priority".into())
    );
    let decided = m.take_effects().into_iter().find_map(|e| match e {
        Effect::ClaimDecided { pending, reply } if pending == token => Some(reply),
        _ => None,
    });
    let reply = decided.expect("the waiting claim was answered");
    assert!(reply.ok, "{reply:?}");
    assert_ne!(reply.claim_id, c.claim_id);
    assert_eq!(claim_id(&m, &slot(1)), reply.claim_id);
    assert_eq!(state(&m, &slot(1)), "Claimed/Idle");
    // The new claim is the slot's: it activates, the old one does not.
    let new = npb::ClaimReply { ..reply };
    activate(&mut m, &new, "", T0 + 3);
    assert!(m.keep_alive(&slot(1), &c.claim_id, T0 + 3).is_err());
}

#[test]
fn a_preempting_claim_on_a_dynamic_slot_takes_it_over_with_its_resources() {
    let mut m = manager(&[SlotSpec::plain(1, true, res(2.0))], "");
    let p = slot(1);
    let c = claim(&mut m, &p, "", T0);
    let d = c.claimed_slot.clone();
    activate(&mut m, &c, "JobMaxVacateTime = 5\n", T0);
    let cpus = |m: &SlotManager, n: &str| m.slot_ad(n).unwrap().eval_attr("Cpus").as_int();
    assert_eq!(cpus(&m, &p), Some(1));
    // Without preempts, a dynamic slot takes no claim.
    let plain = request(&m, &d, 2, "", false);
    assert!(matches!(m.request_claim(&plain, T0 + 1), ClaimAnswer::Now(r) if !r.ok));
    m.take_effects();
    let req = request(&m, &d, 2, "", true);
    let ClaimAnswer::Pending(token) = m.request_claim(&req, T0 + 1) else {
        panic!("a busy dynamic slot answered a preempting claim at once")
    };
    assert_eq!(state(&m, &d), "Preempting/Vacating");
    m.job_exited(&d, &c.claim_id, T0 + 2);
    let effects = m.take_effects();
    let reply = effects
        .iter()
        .find_map(|e| match e {
            Effect::ClaimDecided { pending, reply } if *pending == token => Some(reply.clone()),
            _ => None,
        })
        .expect("the waiting claim was answered");
    assert!(reply.ok, "{reply:?}");
    assert_eq!(reply.claimed_slot, d, "the same dynamic slot");
    assert_ne!(reply.claim_id, c.claim_id);
    assert_eq!(state(&m, &d), "Claimed/Idle");
    assert_eq!(
        (cpus(&m, &d), cpus(&m, &p)),
        (Some(1), Some(1)),
        "nothing returned to the partitionable slot"
    );
    let (_, removed) = m.take_changes();
    assert!(
        removed.is_empty(),
        "the dynamic slot was not invalidated: {removed:?}"
    );
    activate(&mut m, &reply, "", T0 + 3);
    assert_eq!(state(&m, &d), "Claimed/Busy");
}

#[test]
fn a_busy_slots_condor_load_is_its_jobs_measured_cpu_load() {
    let mut m = two_static("");
    let c = claim(&mut m, &slot(1), "", T0);
    activate(&mut m, &c, "", T0);
    let condor = |m: &SlotManager, n| {
        let ad = m.slot_ad(&slot(n)).unwrap();
        (
            ad.eval_attr("CondorLoadAvg").as_number(),
            ad.eval_attr("LoadAvg").as_number(),
        )
    };
    // Not measured (a simulated job): a busy slot counts as 1.0.
    m.tick(T0 + 1, 1.0, None);
    assert_eq!(condor(&m, 1).0, Some(1.0));
    // A job using two cores on a machine at load 2.5: the owner's share is 0.5, not 1.5.
    m.set_job_loads([(c.claim_id.clone(), 2.0)].into());
    m.tick(T0 + 2, 2.5, None);
    assert_eq!(condor(&m, 1), (Some(2.0), Some(2.0)));
    assert_eq!(condor(&m, 2).0, Some(0.0));
}

#[test]
fn a_partitionable_slot_carves_a_dynamic_slot_and_gets_it_back_on_release() {
    let mut m = manager(&[SlotSpec::plain(1, true, res(2.0))], "");
    let p = slot(1);
    let c = claim(&mut m, &p, "", T0);
    assert_eq!(c.claimed_slot, format!("slot1_1@{M}"));
    assert_eq!(state(&m, &c.claimed_slot), "Claimed/Idle");
    assert_eq!(state(&m, &p), "Unclaimed/Idle");
    let cpus = |m: &SlotManager| m.slot_ad(&p).unwrap().eval_attr("Cpus").as_int();
    assert_eq!(cpus(&m), Some(1));
    m.take_changes();
    m.release_claim(&c.claimed_slot, &c.claim_id, T0 + 1)
        .unwrap();
    assert!(m.state(&c.claimed_slot).is_none());
    assert_eq!(cpus(&m), Some(2));
    let (_, removed) = m.take_changes();
    assert_eq!(
        removed,
        vec![("Machine".to_string(), c.claimed_slot.clone())]
    );
}

#[test]
fn a_carve_readvertises_the_partitionable_slot_under_a_fresh_capability() {
    let mut m = manager(&[SlotSpec::plain(1, true, res(2.0))], "");
    let p = slot(1);
    let snapshot = request(&m, &p, 1, "", false);
    let first = m.request_claim(&snapshot, T0);
    assert!(
        matches!(first, ClaimAnswer::Now(ref r) if r.ok),
        "{first:?}"
    );
    assert_ne!(
        claim_id(&m, &p),
        snapshot.claim_id,
        "the ad shows the new ClaimId"
    );
    // The negotiator's second grant of the slot in the same cycle carries the snapshot's
    // capability: still good within the grace ...
    let second = m.request_claim(&snapshot, T0 + 1);
    assert!(
        matches!(second, ClaimAnswer::Now(ref r) if r.ok),
        "{second:?}"
    );
    // ... and not after it, though the machine has room again.
    let c = match first {
        ClaimAnswer::Now(r) => r,
        _ => unreachable!(),
    };
    m.release_claim(&c.claimed_slot, &c.claim_id, T0 + 2)
        .unwrap();
    let late = crate::startd::PSLOT_CLAIM_GRACE + T0 + 1;
    let ClaimAnswer::Now(r) = m.request_claim(&snapshot, late) else {
        panic!("pending")
    };
    assert_eq!(r.error, "bad claim id");
}

mod signed_grants {
    use super::*;
    use aerie_security::grant::{GrantClaims, GrantSigner, GrantVerifier};
    use aerie_security::pki::{self, Holder};
    use std::path::Path;

    fn read(dir: &Path, f: &str) -> String {
        std::fs::read_to_string(dir.join(f)).unwrap()
    }

    /// What `name` (a CM's or another holder's key) signs for `req`.
    fn signed_by(
        dir: &Path,
        name: &str,
        req: &npb::ClaimRequest,
        term: u64,
        now: i64,
    ) -> npb::SignedGrant {
        let s = GrantSigner::from_pem(
            &read(dir, &format!("{name}.crt")),
            &read(dir, &format!("{name}.key")),
        )
        .unwrap();
        let c = GrantClaims::new(&req.slot, &req.claim_id, term, "ap:1", &req.submitter, now);
        let g = s.sign(&c).unwrap();
        npb::SignedGrant {
            payload: g.payload,
            signature: g.signature,
            leader_cert: g.leader_cert,
            proof: g.proof,
        }
    }

    fn answer(m: &mut SlotManager, req: &npb::ClaimRequest, now: i64) -> npb::ClaimReply {
        match m.request_claim(req, now) {
            ClaimAnswer::Now(r) => r,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn with_credentials_only_a_grant_the_leader_signed_claims_and_moves_the_term() {
        let dir = tempfile::tempdir().unwrap();
        let holders = ["cm1=cm", "exec1=execute+access-point"].map(|h| Holder::parse(h).unwrap());
        pki::init(dir.path(), "test", &holders, 30).unwrap();
        let mut m = two_static("");
        m.require_signed_grants(GrantVerifier::from_pem(&read(dir.path(), pki::CA_CERT)).unwrap());
        let now = aerie_security::transport::now_unix();
        let s1 = slot(1);
        let mut req = request(&m, &s1, 3, "", false);
        let r = answer(&mut m, &req, now);
        assert!(!r.ok && r.error.contains("unsigned grant"), "{r:?}");
        // Signed with an execute node's (the access point's own) key.
        req.signed = Some(signed_by(dir.path(), "exec1", &req, 3, now));
        let r = answer(&mut m, &req, now);
        assert!(!r.ok && r.error.contains("not a central manager"), "{r:?}");
        // The leader signed term 3; the access point raised the claim's term to 5.
        req.signed = Some(signed_by(dir.path(), "cm1", &req, 3, now));
        let raised = npb::ClaimRequest {
            term: 5,
            ..req.clone()
        };
        let r = answer(&mut m, &raised, now);
        assert!(!r.ok && r.error.contains("signed in term 3"), "{r:?}");
        // A tampered signature.
        let mut tampered = req.clone();
        if let Some(sg) = tampered.signed.as_mut() {
            let last = sg.signature.len() - 1;
            sg.signature[last] ^= 1;
        }
        let r = answer(&mut m, &tampered, now);
        assert!(!r.ok && r.error.contains("signature invalid"), "{r:?}");
        assert_eq!(m.newest_term(), 0, "no refused grant moved the term");
        let r = answer(&mut m, &req, now);
        assert!(r.ok, "{r:?}");
        assert_eq!(m.newest_term(), 3);
    }
}

fn drain(how: xpb::DrainHow, check: &str) -> xpb::DrainRequest {
    xpb::DrainRequest {
        how: how as i32,
        reason: "maintenance".into(),
        check_expr: check.into(),
        ..Default::default()
    }
}

#[test]
fn a_graceful_drain_waits_for_the_job_and_cancel_gives_the_slots_back() {
    let mut m = two_static("MAXJOBRETIREMENTTIME = 600\nMachineMaxVacateTime = 5\n");
    let c = claim(&mut m, &slot(1), "", T0);
    activate(&mut m, &c, "", T0);
    let id = m
        .drain(&drain(xpb::DrainHow::Graceful, ""), T0 + 1)
        .unwrap();
    assert_eq!(state(&m, &slot(1)), "Claimed/Retiring");
    assert_eq!(state(&m, &slot(2)), "Drained/Retiring");
    let ad = m.slot_ad(&slot(1)).unwrap();
    assert_eq!(
        ad.eval_attr("DrainingRequestId").as_str(),
        Some(id.as_str())
    );
    assert_eq!(ad.eval_attr("DrainReason").as_str(), Some("maintenance"));
    assert!(m.drain(&drain(xpb::DrainHow::Fast, ""), T0 + 2).is_err());
    m.tick(T0 + 100, 0.0, None);
    assert_eq!(
        state(&m, &slot(1)),
        "Claimed/Retiring",
        "within its retirement"
    );
    assert_eq!(
        m.job_exited(&slot(1), &c.claim_id, T0 + 101),
        JobEnd::Completed
    );
    m.tick(T0 + 102, 0.0, None);
    assert_eq!(state(&m, &slot(1)), "Drained/Idle");
    assert_eq!(state(&m, &slot(2)), "Drained/Idle");
    let req = request(&m, &slot(2), 1, "", false);
    assert!(matches!(m.request_claim(&req, T0 + 103), ClaimAnswer::Now(r) if !r.ok));
    m.cancel_drain("", T0 + 104).unwrap();
    assert_eq!(state(&m, &slot(1)), "Unclaimed/Idle");
    assert_eq!(state(&m, &slot(2)), "Unclaimed/Idle");
    assert!(m.cancel_drain("", T0 + 105).is_err());
}

fn drain_start(how: xpb::DrainHow, start: &str) -> xpb::DrainRequest {
    xpb::DrainRequest {
        start_expr: start.into(),
        ..drain(how, "")
    }
}

#[test]
fn a_graceful_drain_with_start_backfills_a_drained_slot_until_the_original_job_ends() {
    let conf = "MAXJOBRETIREMENTTIME = 3600\nMachineMaxVacateTime = 5\n";
    let mut m = two_static(conf);
    let original = claim(&mut m, &slot(1), "", T0);
    activate(&mut m, &original, "", T0);
    m.drain(
        &drain_start(xpb::DrainHow::Graceful, "Owner == \"bob\""),
        T0 + 1,
    )
    .unwrap();
    assert_eq!(state(&m, &slot(2)), "Drained/Retiring");
    let start = |m: &SlotManager, n| {
        m.slot_ad(&slot(n))
            .unwrap()
            .lookup("Start")
            .map(|e| e.to_string())
    };
    assert_eq!(start(&m, 2).as_deref(), Some("Owner == \"bob\""));
    // Alice's job does not match the drain's START; bob's does.
    let req = request(&m, &slot(2), 1, "", false);
    assert!(matches!(m.request_claim(&req, T0 + 2), ClaimAnswer::Now(r) if !r.ok));
    let bob = "Owner = \"bob\"\nUser = \"bob@test\"\n";
    let backfill = claim(&mut m, &slot(2), bob, T0 + 3);
    activate(&mut m, &backfill, bob, T0 + 3);
    assert_eq!(state(&m, &slot(2)), "Claimed/Busy");
    let ad = m.slot_ad(&slot(2)).unwrap();
    assert_eq!(ad.eval_attr("AcceptedWhileDraining").as_bool(), Some(true));
    m.tick(T0 + 600, 0.0, None);
    assert_eq!(
        state(&m, &slot(2)),
        "Claimed/Busy",
        "runs beside the original job"
    );
    // The original job ends: the backfill job is vacated and START goes false.
    assert_eq!(
        m.job_exited(&slot(1), &original.claim_id, T0 + 601),
        JobEnd::Completed
    );
    m.take_effects();
    m.tick(T0 + 602, 0.0, None);
    assert_eq!(state(&m, &slot(2)), "Preempting/Vacating");
    assert!(m
        .take_effects()
        .iter()
        .any(|e| matches!(e, Effect::SoftKill { claim_id, .. } if *claim_id == backfill.claim_id)));
    assert_ne!(start(&m, 2).as_deref(), Some("Owner == \"bob\""));
}

#[test]
fn a_draining_partitionable_slot_carves_only_for_jobs_the_drain_start_takes() {
    let conf = "MAXJOBRETIREMENTTIME = 3600\n";
    let mut m = manager(&[SlotSpec::plain(1, true, res(2.0))], conf);
    let p = slot(1);
    let original = claim(&mut m, &p, "", T0);
    activate(&mut m, &original, "", T0);
    // A graceful drain without START carves nothing.
    m.drain(&drain_start(xpb::DrainHow::Graceful, ""), T0 + 1)
        .unwrap();
    let req = request(&m, &p, 1, "", false);
    assert!(matches!(m.request_claim(&req, T0 + 2), ClaimAnswer::Now(r) if !r.ok));
    m.cancel_drain("", T0 + 3).unwrap();
    m.drain(
        &drain_start(xpb::DrainHow::Graceful, "RequestCpus == 1"),
        T0 + 4,
    )
    .unwrap();
    let c = claim(&mut m, &p, "", T0 + 5);
    assert_eq!(c.claimed_slot, format!("slot1_2@{M}"));
    assert_eq!(state(&m, &c.claimed_slot), "Claimed/Idle");
    let ad = m.slot_ad(&c.claimed_slot).unwrap();
    assert_eq!(ad.eval_attr("AcceptedWhileDraining").as_bool(), Some(true));
}

#[test]
fn a_fast_drain_kills_the_job_and_a_failing_check_refuses_the_drain() {
    let mut m = two_static("");
    let c = claim(&mut m, &slot(1), "", T0);
    activate(&mut m, &c, "", T0);
    let e = m
        .drain(&drain(xpb::DrainHow::Fast, "Cpus > 4"), T0)
        .unwrap_err();
    assert!(e.contains("Cpus > 4"), "{e}");
    assert!(m.drain(&drain(xpb::DrainHow::Fast, "(("), T0).is_err());
    assert_eq!(m.state(&slot(1)).unwrap().state, State::Claimed);
    m.take_effects();
    m.drain(&drain(xpb::DrainHow::Fast, "Cpus == 1"), T0 + 1)
        .unwrap();
    assert_eq!(state(&m, &slot(1)), "Preempting/Killing");
    assert!(m.take_effects().contains(&Effect::HardKill {
        claim_id: c.claim_id.clone()
    }));
    let end = m.job_exited(&slot(1), &c.claim_id, T0 + 2);
    assert_eq!(end, JobEnd::Evicted("drained".into()));
}

#[test]
fn deactivation_vacates_with_the_jobs_vacate_time_and_keeps_the_claim() {
    let mut m = two_static("");
    let c = claim(&mut m, &slot(1), "", T0);
    activate(&mut m, &c, "JobMaxVacateTime = 7\n", T0);
    m.take_effects();
    m.deactivate(&slot(1), &c.claim_id, false, T0 + 1).unwrap();
    assert_eq!(
        m.take_effects(),
        vec![Effect::SoftKill {
            claim_id: c.claim_id.clone(),
            vacate_seconds: 7
        }]
    );
    let end = m.job_exited(&slot(1), &c.claim_id, T0 + 2);
    assert_eq!(
        end,
        JobEnd::Evicted("deactivated by the access point".into())
    );
    assert_eq!(state(&m, &slot(1)), "Claimed/Idle");
    assert!(
        m.deactivate(&slot(1), &c.claim_id, true, T0 + 3).is_err(),
        "no job to stop"
    );
}

#[test]
fn a_graceful_shutdown_vacates_each_job_as_an_eviction_and_takes_no_new_claim() {
    let mut m = two_static("");
    let c1 = claim(&mut m, &slot(1), "", T0);
    activate(&mut m, &c1, "JobMaxVacateTime = 5\n", T0);
    m.take_effects();
    m.shutdown(crate::policy::Shutdown::Graceful, T0 + 1);
    assert_eq!(state(&m, &slot(1)), "Preempting/Vacating");
    assert!(m.take_effects().contains(&Effect::SoftKill {
        claim_id: c1.claim_id.clone(),
        vacate_seconds: 5
    }));
    assert_eq!(state(&m, &slot(2)), "Unclaimed/Idle", "nothing to stop");
    let end = m.job_exited(&slot(1), &c1.claim_id, T0 + 2);
    assert_eq!(
        end,
        JobEnd::Evicted("the execute node is shutting down".into())
    );

    // Free again, but a node shutting down takes no new claim.
    let r = request(&m, &slot(1), 1, "", false);
    match m.request_claim(&r, T0 + 6) {
        ClaimAnswer::Now(reply) => {
            assert!(!reply.ok);
            assert_eq!(reply.error, "the execute node is shutting down");
        }
        ClaimAnswer::Pending(t) => panic!("pending {t}"),
    }
}

#[test]
fn a_fast_shutdown_kills_the_job_and_reports_it_evicted() {
    let mut m = two_static("");
    let c = claim(&mut m, &slot(2), "", T0);
    activate(&mut m, &c, "", T0);
    m.take_effects();
    m.shutdown(crate::policy::Shutdown::Fast, T0 + 1);
    assert!(m.take_effects().contains(&Effect::HardKill {
        claim_id: c.claim_id.clone()
    }));
    let end = m.job_exited(&slot(2), &c.claim_id, T0 + 2);
    assert_eq!(
        end,
        JobEnd::Evicted("the execute node is shutting down".into())
    );
}
