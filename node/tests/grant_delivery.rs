//! Grant delivery survives the leader's deadline (issue 13.4): the leader drops its
//! `DeliverGrants` call when its delivery deadline passes, and a job it granted must not be
//! left `Claiming` forever, nor a slot claimed that no job owns.
use aerie_node::access_point::{AccessPoint, JobState};
use aerie_node::args::RuntimeDist;
use aerie_node::claims_log::ClaimsLog;
use aerie_node::pool::AdContext;
use aerie_node::sim::{Sim, SimConfig, State, Stats};
use aerie_node::startd::Startd;
use aerie_proto::negotiation as pb;
use rand::SeedableRng;
use std::collections::BTreeSet;
use std::time::Duration;

fn sim_with_one_idle_job() -> std::sync::Arc<Sim> {
    let mut ap = AccessPoint::new(&["alice".to_string()], &[], "pool", Vec::new(), 1);
    ap.add_job(0);
    let state = State {
        startd: Startd::new(1, "127.0.0.1:1", 0),
        ap,
        dirty: BTreeSet::new(),
        removed: Vec::new(),
        rng: rand::rngs::StdRng::seed_from_u64(1),
        stats: Stats::default(),
    };
    Sim::new(
        state,
        AdContext {
            my_address: "<127.0.0.1:1>".into(),
            domain: "pool".into(),
            schedd_name: "ap.pool".into(),
        },
        "127.0.0.1:1".into(),
        ClaimsLog::none(),
        SimConfig {
            runtime: RuntimeDist::Fixed(1.0),
            jobs_forever: false,
            dump_claim_ids: None,
        },
    )
}

fn job_state(sim: &Sim) -> JobState {
    sim.lock().ap.jobs().next().expect("the job").state.clone()
}

/// A startd that takes connections and never answers, the way a hung or partitioned
/// execute node looks to the access point.
async fn silent_startd() -> String {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap().to_string();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((s, _)) = l.accept().await {
            held.push(s);
        }
    });
    addr
}

#[tokio::test(start_paused = true)]
async fn a_grant_cut_off_by_the_leaders_deadline_leaves_no_job_claiming() {
    let sim = sim_with_one_idle_job();
    let job = sim.lock().ap.jobs().next().unwrap().id;
    let startd = silent_startd().await;
    let batch = pb::GrantBatch {
        term: 3,
        cycle: 1,
        leader_id: 1,
        grants: vec![pb::Grant {
            job: aerie_node::access_point::job_id_string(job),
            submitter: String::new(),
            slot: "slot1@hung".into(),
            startd_addr: format!("<{startd}>"),
            claim_id: "<hung>#1".into(),
            weight: 1.0,
            ..Default::default()
        }],
        ..Default::default()
    };
    // The leader's deadline: its call is dropped when it passes, whatever the handler does.
    let reply = tokio::time::timeout(Duration::from_secs(5), sim.deliver(batch)).await;
    let reply = reply.expect("the access point answers before the leader's deadline");
    assert!(reply.results[0].accepted, "{:?}", reply.results);
    assert_eq!(job_state(&sim), JobState::Claiming);
    // The claim attempt is bounded; when it gives up the job is idle again, to be matched in
    // a later cycle.
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert_eq!(job_state(&sim), JobState::Idle);
    assert_eq!(sim.lock().stats.claims, 0);
}
