//! Grant delivery survives the leader's deadline (issue 13.4): the leader drops its
//! `DeliverGrants` call when its delivery deadline passes, and a job it granted must not be
//! left `Claiming` forever, nor a slot claimed that no job owns.
use aerie_node::access_point::{AccessPoint, JobState};
use aerie_node::args::RuntimeDist;
use aerie_node::claims_log::ClaimsLog;
use aerie_node::pool::AdContext;
use aerie_node::schedd::daemon::{Schedd, Settings};
use aerie_node::schedd::queue::{SubmitPolicy, Who};
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

/// Calls to the startds in plaintext: this test process has no pool credentials, and the
/// transport is chosen once per process, so every test says so before its first call.
fn plaintext() {
    std::env::set_var("AERIE_INSECURE", "1");
}

/// A startd that takes connections and never answers, the way a hung or partitioned
/// execute node looks to the access point.
async fn silent_startd() -> String {
    reporting_silent_startd(0, None).await
}

/// [`silent_startd`], sending `id` to `seen` on each connection.
async fn reporting_silent_startd(
    id: usize,
    seen: Option<tokio::sync::mpsc::UnboundedSender<usize>>,
) -> String {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap().to_string();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((s, _)) = l.accept().await {
            held.push(s);
            if let Some(seen) = &seen {
                let _ = seen.send(id);
            }
        }
    });
    addr
}

#[tokio::test(start_paused = true)]
async fn a_grant_cut_off_by_the_leaders_deadline_leaves_no_job_claiming() {
    plaintext();
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

/// An access point's settings for the tests.
fn settings() -> Settings {
    Settings {
        name: "ap.test".into(),
        domain: "pool.test".into(),
        super_users: Vec::new(),
        policy: SubmitPolicy {
            domain: "pool.test".into(),
            group_names: Vec::new(),
            nice_user_group: "nice-user".into(),
            only_user: None,
            assign_group: None,
        },
        claim_worklife: 1200,
        alive_interval: Duration::from_secs(300),
        periodic_interval: Duration::from_secs(60),
        my_address: "<127.0.0.1:1>".into(),
    }
}

/// The claims of one grant batch are in flight together at the real access point: a
/// cycle's claims used to run one after the other, each a round trip (and a new connection)
/// before the next began, which bounded the jobs started per second by the claim latency,
/// and a startd slow to answer held up every claim behind it.
#[tokio::test]
async fn the_claims_of_a_batch_are_in_flight_together() {
    plaintext();
    let dir = tempfile::tempdir().unwrap();
    let schedd = Schedd::open(dir.path(), settings()).unwrap();
    let who = Who {
        name: "alice".into(),
        is_super: false,
    };
    let c = schedd.new_cluster(&who).unwrap();
    let ads: Vec<String> = (0..2)
        .map(|p| format!("ClusterId = {c}\nProcId = {p}\nCmd = \"/bin/true\"\nIwd = \"/tmp\""))
        .collect();
    schedd.submit(&who, c, &ads).unwrap();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let mut grants = Vec::new();
    for p in 0..2 {
        grants.push(pb::Grant {
            job: format!("{c}.{p}"),
            submitter: "alice@pool.test".into(),
            slot: format!("slot1@exec{p}"),
            startd_addr: reporting_silent_startd(p, Some(tx.clone())).await,
            claim_id: format!("claim{p}"),
            ..Default::default()
        });
    }
    let reply = schedd.deliver(pb::GrantBatch {
        term: 1,
        cycle: 1,
        grants,
        ..Default::default()
    });
    assert!(reply.results.iter().all(|r| r.accepted), "{reply:?}");
    // Neither startd ever answers, and a claim waits up to 30 s for its answer: both are
    // contacted long before the first claim could give up.
    let mut seen = BTreeSet::new();
    tokio::time::timeout(Duration::from_secs(20), async {
        while seen.len() < 2 {
            seen.insert(rx.recv().await.unwrap());
        }
    })
    .await
    .unwrap_or_else(|_| panic!("only startds {seen:?} were contacted"));
}
