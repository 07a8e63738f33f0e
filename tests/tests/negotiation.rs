//! The leader-run negotiation between real `aerie-cm` processes and fake access points served
//! from this test process: the leader asks the access points for their jobs, delivers grants
//! carrying its term, the right slots and their private claim ids, commits the cycle record
//! and the accountant tick (seen on a follower), and publishes a Negotiator ad; after the
//! leader is killed the new leader's grants carry the newer term; operators' pause and
//! cycle-now go through any CM.
use aerie_core::admin::{NegotiatorQuery, UserprioQuery};
use aerie_core::state::Command;
use aerie_proto::collector::{self as cpb, collector_client::CollectorClient};
use aerie_proto::negotiation::{
    access_point_server::{AccessPoint, AccessPointServer},
    GrantBatch, GrantReply, GrantResult, RequestsReply, RequestsRequest,
};
use aerie_tests::*;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tonic::transport::Channel;

const BIN: &str = env!("CARGO_BIN_EXE_aerie-cm-node");

/// An access point that offers its idle jobs until they are granted, and records every
/// grant batch it receives.
#[derive(Clone, Default)]
struct FakeAp {
    /// (CLUSTER.PROC, job ad text) still idle.
    idle: Arc<Mutex<Vec<(String, String)>>>,
    batches: Arc<Mutex<Vec<GrantBatch>>>,
    asked: Arc<Mutex<Vec<RequestsRequest>>>,
    /// How long GetRequests takes to answer (a slow access point).
    delay: Arc<Mutex<Duration>>,
}

#[tonic::async_trait]
impl AccessPoint for FakeAp {
    async fn get_requests(
        &self,
        request: tonic::Request<RequestsRequest>,
    ) -> Result<tonic::Response<RequestsReply>, tonic::Status> {
        self.asked.lock().unwrap().push(request.into_inner());
        let delay = *self.delay.lock().unwrap();
        tokio::time::sleep(delay).await;
        let jobs = self
            .idle
            .lock()
            .unwrap()
            .iter()
            .map(|(_, t)| t.clone())
            .collect();
        // Whole job ads, as an access point from before resource requests answers: the
        // leader still reads them.
        Ok(tonic::Response::new(RequestsReply {
            jobs,
            requests: Vec::new(),
        }))
    }

    async fn deliver_grants(
        &self,
        request: tonic::Request<GrantBatch>,
    ) -> Result<tonic::Response<GrantReply>, tonic::Status> {
        let b = request.into_inner();
        let mut idle = self.idle.lock().unwrap();
        let results = b
            .grants
            .iter()
            .map(|g| {
                let before = idle.len();
                idle.retain(|(id, _)| *id != g.job);
                GrantResult {
                    accepted: idle.len() < before,
                    error: if idle.len() < before {
                        String::new()
                    } else {
                        format!("job {} is not idle", g.job)
                    },
                }
            })
            .collect();
        drop(idle);
        self.batches.lock().unwrap().push(b);
        Ok(tonic::Response::new(GrantReply { results }))
    }
}

impl FakeAp {
    fn with_jobs(user: &str, cluster: i64, n: i64) -> Self {
        let ap = FakeAp::default();
        {
            let mut idle = ap.idle.lock().unwrap();
            for p in 0..n {
                idle.push((format!("{cluster}.{p}"), job_ad(user, cluster, p)));
            }
        }
        ap
    }

    /// Serves on a free loopback port; returns the address.
    async fn serve(self) -> String {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind fake access point");
        let addr = l.local_addr().expect("local addr").to_string();
        let incoming =
            tonic::transport::server::TcpIncoming::from_listener(l, true, None).expect("incoming");
        tokio::spawn(
            aerie_security::testing::server()
                .add_service(AccessPointServer::new(self))
                .serve_with_incoming(incoming),
        );
        addr
    }

    fn grants(&self) -> Vec<GrantBatch> {
        self.batches.lock().unwrap().clone()
    }
}

fn job_ad(user: &str, cluster: i64, proc: i64) -> String {
    format!(
        "MyType = \"Job\"\nOwner = \"{user}\"\nUser = \"{user}@pool\"\nClusterId = {cluster}\n\
         ProcId = {proc}\nJobStatus = 1\nQDate = {}\nRequirements = true\nRequestCpus = 1\n\
         RequestMemory = 512\nRequestDisk = 1000\n",
        1000 + proc
    )
}

fn slot_ad(i: usize, extra: &str) -> cpb::Ad {
    cpb::Ad {
        text: format!(
            "MyType = \"Machine\"\nName = \"slot{i}@exec{i}\"\nMachine = \"exec{i}\"\n\
             State = \"Unclaimed\"\nActivity = \"Idle\"\nCpus = 1\nMemory = 2048\nDisk = 100000\n\
             SlotID = 1\nRequirements = true\nRank = 0\nMyAddress = \"<127.0.0.1:{}>\"\n\
             ClaimId = \"claim-of-slot{i}\"\n{extra}",
            7000 + i
        ),
    }
}

fn submitter_ad(name: &str, ap: &str) -> cpb::Ad {
    cpb::Ad {
        text: format!(
            "MyType = \"Submitter\"\nName = \"{name}\"\nScheddIpAddr = \"<{ap}?addrs=x>\"\n\
             IdleJobs = 2\n"
        ),
    }
}

fn collector(addr: &str) -> CollectorClient<Channel> {
    collector_client(addr)
}

/// Sends the ads to every CM (whichever leads reads its own collector), waiting for a CM
/// that is still starting.
async fn advertise_everywhere(c: &Cluster, ads: &[cpb::Ad]) {
    for (id, addr) in c.running() {
        let s = eventually(
            &format!("node {id} takes the ads"),
            Duration::from_secs(15),
            || {
                let addr = addr.clone();
                async move {
                    Ok(Some(
                        collector(&addr)
                            .advertise(cpb::AdBatch { ads: ads.to_vec() })
                            .await?
                            .into_inner(),
                    ))
                }
            },
        )
        .await
        .unwrap_or_else(|e| panic!("{e:#}\n{}", c.log(id)));
        assert_eq!(s.rejected, 0, "node {id}: {s:?}");
    }
}

/// The Negotiator ads a CM's collector holds, as text.
async fn negotiator_ads(addr: &str) -> anyhow::Result<Vec<String>> {
    Ok(collector(addr)
        .query(cpb::QueryRequest {
            ad_type: "Negotiator".into(),
            ..Default::default()
        })
        .await?
        .into_inner()
        .ads)
}

fn attr<'a>(ad: &'a str, name: &str) -> Option<&'a str> {
    ad.lines().find_map(|l| {
        let (k, v) = l.split_once(" = ")?;
        (k == name).then_some(v)
    })
}

/// The leader and its term once they hold still: right after bootstrap a second election
/// can follow the first (all three CMs start at once), which would change the term under the
/// test's feet.
async fn leader_and_term(c: &Cluster) -> (u64, u64) {
    let mut last = None;
    for _ in 0..20 {
        let leader = wait_leader(&c.running(), Duration::from_secs(20))
            .await
            .expect("leader");
        let term = status(&c.addr(leader)).await.expect("status").term;
        if last == Some((leader, term)) {
            return (leader, term);
        }
        last = Some((leader, term));
        tokio::time::sleep(Duration::from_millis(1500)).await;
    }
    panic!("no stable leader: last {last:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leader_negotiates_and_delivers_grants_with_term_and_claim_ids() {
    let mut c = Cluster::start(
        daemon_bin(BIN),
        3,
        &[
            ("AERIE_NEGOTIATOR_INTERVAL", "1"),
            ("AERIE_NEGOTIATOR_CYCLE_DELAY", "0"),
        ],
    )
    .expect("start cluster");
    let (leader, term) = leader_and_term(&c).await;

    // Two access points: alice's two jobs (and one broken ad) on one, bob's two on the other.
    let ap_a = FakeAp::with_jobs("alice", 1, 2);
    ap_a.idle.lock().unwrap().push((
        "1.9".into(),
        "ClusterId = 1\nProcId = 9\nRequirements = (1 +\n".into(),
    ));
    let ap_b = FakeAp::with_jobs("bob", 2, 2);
    let addr_a = ap_a.clone().serve().await;
    let addr_b = ap_b.clone().serve().await;

    // Four idle slots with private claim ids, one slot busy for carol (charged by the tick).
    let mut ads: Vec<cpb::Ad> = (0..4).map(|i| slot_ad(i, "")).collect();
    ads.push(slot_ad(
        4,
        "State = \"Claimed\"\nActivity = \"Busy\"\nRemoteUser = \"carol@pool\"\nSlotWeight = 1\n",
    ));
    ads.push(submitter_ad("alice@pool", &addr_a));
    ads.push(submitter_ad("bob@pool", &addr_b));
    advertise_everywhere(&c, &ads).await;

    // Both access points get their grants.
    for (ap, user) in [(&ap_a, "alice"), (&ap_b, "bob")] {
        let ap = ap.clone();
        eventually(
            &format!("{user}'s access point receives its grants"),
            Duration::from_secs(20),
            || {
                let ap = ap.clone();
                async move {
                    let n: usize = ap.grants().iter().map(|b| b.grants.len()).sum();
                    Ok((n >= 2).then_some(()))
                }
            },
        )
        .await
        .unwrap_or_else(|e| panic!("{e:#}\n{}", c.log(leader)));
    }
    let mut slots_granted = BTreeSet::new();
    for (ap, user, cluster) in [(&ap_a, "alice", 1), (&ap_b, "bob", 2)] {
        let batches = ap.grants();
        let grants: Vec<_> = batches.iter().flat_map(|b| b.grants.clone()).collect();
        assert_eq!(grants.len(), 2, "{user}: {batches:?}");
        for b in &batches {
            // The leader's term, or a later one if a loaded machine caused a re-election.
            assert!(
                b.term >= term,
                "grant from term {} before {term}: {b:?}",
                b.term
            );
            assert!(c.ids().contains(&b.leader_id), "{b:?}");
            assert!(b.cycle >= 1);
        }
        let jobs: BTreeSet<_> = grants.iter().map(|g| g.job.clone()).collect();
        assert_eq!(
            jobs,
            BTreeSet::from([format!("{cluster}.0"), format!("{cluster}.1")])
        );
        for g in &grants {
            assert_eq!(g.submitter, format!("{user}@pool"));
            // The idle slots only, each with its own private claim id and address.
            let i: usize = g
                .slot
                .strip_prefix("slot")
                .and_then(|s| s.split('@').next())
                .and_then(|s| s.parse().ok())
                .unwrap_or_else(|| panic!("unexpected slot {}", g.slot));
            assert!(i < 4, "granted the busy slot: {g:?}");
            assert_eq!(g.claim_id, format!("claim-of-slot{i}"));
            assert_eq!(g.startd_addr, format!("<127.0.0.1:{}>", 7000 + i));
            assert_eq!(g.weight, 1.0);
            assert!(!g.preempts);
            assert!(
                slots_granted.insert(g.slot.clone()),
                "slot granted twice: {}",
                g.slot
            );
        }
    }
    // Every access point was asked with the leader's term.
    assert!(ap_a.asked.lock().unwrap().iter().all(|r| r.term >= term));

    // The cycle record and the tick are replicated: a follower's own state shows them.
    let follower = c
        .ids()
        .into_iter()
        .find(|id| *id != leader)
        .expect("a follower");
    let faddr = c.addr(follower);
    let rec = eventually(
        "a follower holds the cycle record",
        Duration::from_secs(15),
        || {
            let faddr = faddr.clone();
            async move {
                let v = query(&faddr, NegotiatorQuery, true).await?;
                Ok(v.cycles.into_iter().find(|r| r.matches == 4))
            }
        },
    )
    .await
    .expect("cycle record");
    assert_eq!(rec.term, term);
    assert_eq!(rec.leader_id, leader);
    assert_eq!(rec.grants_accepted, 4);
    assert_eq!(rec.access_points, 2);
    assert_eq!(
        rec.matched_by_submitter,
        BTreeMap::from([("alice@pool".to_string(), 2), ("bob@pool".to_string(), 2)])
    );
    let v = query(&faddr, NegotiatorQuery, false)
        .await
        .expect("negotiator status");
    assert_eq!(v.leader.as_ref().map(|l| l.id), Some(leader), "{v:?}");
    assert!(!v.paused);
    let up = query(&faddr, UserprioQuery::default(), true)
        .await
        .expect("userprio");
    let carol = up
        .rows
        .iter()
        .find(|r| r.name == "carol@pool")
        .cloned()
        .unwrap_or_else(|| panic!("carol's usage not charged: {up:?}"));
    assert_eq!(carol.resources_used, 1.0, "{carol:?}");

    // The Negotiator ad, with HTCondor's cycle figures.
    let laddr = c.addr(leader);
    let ad = eventually(
        "the leader publishes a Negotiator ad",
        Duration::from_secs(10),
        || {
            let laddr = laddr.clone();
            async move {
                Ok(negotiator_ads(&laddr)
                    .await?
                    .into_iter()
                    .find(|a| attr(a, "LastNegotiationCycleTime0").is_some()))
            }
        },
    )
    .await
    .expect("negotiator ad");
    assert_eq!(
        attr(&ad, "Name"),
        Some(format!("\"negotiator@{laddr}\"").as_str()),
        "{ad}"
    );
    assert_eq!(attr(&ad, "AerieRaftTerm"), Some(term.to_string().as_str()));
    for a in [
        "LastNegotiationCycleEnd0",
        "LastNegotiationCycleDuration0",
        "LastNegotiationCycleMatches0",
        "LastNegotiationCycleNumIdleJobs0",
        "LastNegotiationCycleNumSchedulers0",
        "LastNegotiationCycleActiveSubmitterCount0",
    ] {
        assert!(attr(&ad, a).is_some(), "{a} missing from {ad}");
    }
    // Followers do not negotiate: only the leader's collector holds a Negotiator ad of its own.
    for id in c.ids().into_iter().filter(|id| *id != leader) {
        let own = format!("\"negotiator@{}\"", c.addr(id));
        let ads = negotiator_ads(&c.addr(id)).await.expect("query");
        assert!(
            ads.iter().all(|a| attr(a, "Name") != Some(own.as_str())),
            "follower {id} published a Negotiator ad"
        );
    }

    // kill -9 the leader: the new leader negotiates, and its grants carry its newer term.
    c.kill(leader);
    ap_a.idle
        .lock()
        .unwrap()
        .push(("1.2".into(), job_ad("alice", 1, 2)));
    let b = eventually(
        "the new leader delivers a grant",
        Duration::from_secs(20),
        || {
            let ap = ap_a.clone();
            async move {
                Ok(ap
                    .grants()
                    .into_iter()
                    .find(|b| b.grants.iter().any(|g| g.job == "1.2")))
            }
        },
    )
    .await
    .unwrap_or_else(|e| panic!("{e:#}"));
    assert!(b.term > term, "grant of term {} after term {term}", b.term);
    assert_ne!(b.leader_id, leader);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pause_stops_cycles_and_cycle_now_runs_one_through_any_cm() {
    // An hour between cycles: after the new leader's first one, only cycle-now runs one.
    let c = Cluster::start(
        daemon_bin(BIN),
        3,
        &[
            ("AERIE_NEGOTIATOR_INTERVAL", "3600"),
            ("AERIE_NEGOTIATOR_CYCLE_DELAY", "0"),
        ],
    )
    .expect("start cluster");
    let (leader, _term) = leader_and_term(&c).await;
    let laddr = c.addr(leader);
    let follower = c
        .ids()
        .into_iter()
        .find(|id| *id != leader)
        .expect("follower");
    let faddr = c.addr(follower);
    // Demand: a submitter whose access point has one job, and a slot for it.
    let ap = FakeAp::with_jobs("alice", 1, 1);
    let ap_addr = ap.clone().serve().await;
    advertise_everywhere(&c, &[slot_ad(0, ""), submitter_ad("alice@pool", &ap_addr)]).await;

    // The cycle records that served cycle-now request number `n` or later.
    let served = |addr: String, n: u64| async move {
        let v = query(&addr, NegotiatorQuery, false).await?;
        Ok::<_, anyhow::Error>(v.cycles.iter().filter(|r| r.requested >= n).count())
    };

    // cycle-now through a follower (forwarded to the leader) runs a cycle, which grants the job.
    let request = Command::RequestCycle;
    let r = write(&faddr, &request).await.expect("cycle-now");
    assert!(r.ok, "{r:?}");
    eventually("the requested cycle", Duration::from_secs(15), || {
        let a = faddr.clone();
        async move { Ok((served(a, 1).await? >= 1).then_some(())) }
    })
    .await
    .unwrap_or_else(|e| panic!("{e:#}\n{}", c.log(leader)));
    eventually("the job is granted", Duration::from_secs(10), || {
        let ap = ap.clone();
        async move { Ok((!ap.grants().is_empty()).then_some(())) }
    })
    .await
    .expect("grant");

    // Paused: the second cycle-now is seen (the Negotiator ad says so) but runs nothing.
    let pause = Command::SetNegotiatorPaused { paused: true };
    assert!(write(&faddr, &pause).await.expect("pause").ok);
    assert!(write(&faddr, &request).await.expect("cycle-now").ok);
    eventually(
        "the leader skips the requested cycle while paused",
        Duration::from_secs(15),
        || {
            let a = laddr.clone();
            async move {
                Ok(negotiator_ads(&a).await?.into_iter().find(|ad| {
                    attr(ad, "AerieNegotiatorPaused") == Some("true")
                        && attr(ad, "AerieCycleRequestsSeen") == Some("2")
                }))
            }
        },
    )
    .await
    .unwrap_or_else(|e| panic!("{e:#}\n{}", c.log(leader)));
    let v = query(&faddr, NegotiatorQuery, false).await.expect("status");
    assert!(v.paused);
    assert_eq!(served(faddr.clone(), 2).await.expect("records"), 0, "{v:?}");

    // Resumed: the next cycle-now runs.
    let resume = Command::SetNegotiatorPaused { paused: false };
    assert!(write(&laddr, &resume).await.expect("resume").ok);
    assert!(write(&laddr, &request).await.expect("cycle-now").ok);
    eventually("a cycle after resume", Duration::from_secs(15), || {
        let a = laddr.clone();
        async move { Ok((served(a, 3).await? >= 1).then_some(())) }
    })
    .await
    .unwrap_or_else(|e| panic!("{e:#}\n{}", c.log(leader)));
    let v = query(&laddr, NegotiatorQuery, false).await.expect("status");
    let nums: Vec<(u64, u64)> = v.cycles.iter().map(|r| (r.term, r.cycle)).collect();
    // (term, cycle) grows from record to record.
    assert!(nums.windows(2).all(|w| w[0] < w[1]), "{v:?}");
}

/// Issue 13.5, DESIGN invariant 2: a leader that loses its quorum while it negotiates (here:
/// both followers frozen while the access point takes its time to answer) delivers no grant,
/// because it confirms its leadership again right before delivery; once the followers are
/// back, the grants go out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_that_lost_its_quorum_mid_cycle_delivers_nothing() {
    let c = Cluster::start(
        daemon_bin(BIN),
        3,
        &[
            ("AERIE_NEGOTIATOR_INTERVAL", "1"),
            ("AERIE_NEGOTIATOR_CYCLE_DELAY", "0"),
            ("AERIE_NEGOTIATOR_AP_TIMEOUT", "3"),
        ],
    )
    .expect("start cluster");
    let (leader, _) = leader_and_term(&c).await;
    let followers: Vec<u64> = c.ids().into_iter().filter(|i| *i != leader).collect();
    let ap = FakeAp::with_jobs("alice", 1, 2);
    *ap.delay.lock().unwrap() = Duration::from_millis(1500);
    let ap_addr = ap.clone().serve().await;
    advertise_everywhere(
        &c,
        &[
            slot_ad(0, ""),
            slot_ad(1, ""),
            submitter_ad("alice@pool", &ap_addr),
        ],
    )
    .await;
    // The leader has asked for the jobs: freeze the followers while the answer is slow.
    eventually("the leader asks for jobs", Duration::from_secs(20), || {
        let ap = ap.clone();
        async move { Ok((!ap.asked.lock().unwrap().is_empty()).then_some(())) }
    })
    .await
    .unwrap_or_else(|e| panic!("{e:#}\n{}", c.log(leader)));
    for f in &followers {
        c.pause(*f);
    }
    *ap.delay.lock().unwrap() = Duration::ZERO;
    tokio::time::sleep(Duration::from_secs(8)).await;
    let sent_alone = ap.grants();
    for f in &followers {
        c.resume(*f);
    }
    assert!(
        sent_alone.is_empty(),
        "grants delivered without a quorum: {sent_alone:?}\n{}",
        c.log(leader)
    );
    eventually(
        "grants once the quorum is back",
        Duration::from_secs(30),
        || {
            let ap = ap.clone();
            async move { Ok((!ap.grants().is_empty()).then_some(())) }
        },
    )
    .await
    .unwrap_or_else(|e| panic!("{e:#}\n{}", c.log(leader)));
}

/// The longest confirmation among the leader's completed cycles, in ms (`phases_ms` of its
/// "negotiation cycle done" lines).
fn longest_confirm_ms(log: &str) -> u64 {
    log.lines()
        .filter(|l| l.contains("negotiation cycle done"))
        .filter_map(|l| {
            let rest = l.split("confirm=").nth(1)?;
            rest.split(|c: char| !c.is_ascii_digit())
                .next()?
                .parse()
                .ok()
        })
        .max()
        .unwrap_or(0)
}

/// A leader whose quorum answers its confirmation late (the other CM dead, the one live
/// follower frozen for 0.6 s, less than an election timeout) still leads: its cycle waits
/// for the quorum, within the access-point deadline, and completes. openraft gives a
/// confirmation one heartbeat interval; taking a round that missed it for a lost leadership
/// skipped the cycle (it cost a new leader its first cycle in the failover bench).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quorum_that_answers_late_delays_the_cycle_and_deposes_nobody() {
    let mut c = Cluster::start(
        daemon_bin(BIN),
        3,
        &[
            ("AERIE_NEGOTIATOR_INTERVAL", "1"),
            ("AERIE_NEGOTIATOR_CYCLE_DELAY", "0"),
        ],
    )
    .expect("start cluster");
    let (leader, _) = leader_and_term(&c).await;
    let followers: Vec<u64> = c.ids().into_iter().filter(|i| *i != leader).collect();
    let ap = FakeAp::with_jobs("alice", 1, 1);
    let ap_addr = ap.clone().serve().await;
    advertise_everywhere(&c, &[slot_ad(0, ""), submitter_ad("alice@pool", &ap_addr)]).await;
    eventually("cycles run", Duration::from_secs(20), || {
        let ap = ap.clone();
        async move { Ok((!ap.grants().is_empty()).then_some(())) }
    })
    .await
    .unwrap_or_else(|e| panic!("{e:#}\n{}", c.log(leader)));
    c.kill(followers[0]);
    // Cycles start every second: some start while the follower is frozen.
    for _ in 0..5 {
        c.pause(followers[1]);
        tokio::time::sleep(Duration::from_millis(600)).await;
        c.resume(followers[1]);
        tokio::time::sleep(Duration::from_millis(1000)).await;
    }
    let log = c.log(leader);
    assert!(
        !log.contains("lost leadership mid-cycle"),
        "a late quorum was taken for a lost leadership\n{log}"
    );
    assert!(
        longest_confirm_ms(&log) >= 200,
        "no cycle's confirmation overlapped a pause\n{log}"
    );
}
