//! A real job through the real pool: one CM (`aerie-cm serve`, negotiating every second), an
//! access point (`aerie-node access-point`'s code, in this process) and a stand-in execute
//! node that advertises one slot and runs what it is activated with by echoing its input. The
//! job is submitted to the access point, advertised as demand, matched by the leader, claimed,
//! activated with its input file, and completes with its output back in its Iwd.
use aerie_node::schedd::args::AccessPointArgs;
use aerie_node::schedd::daemon::who_is;
use aerie_node::schedd::run::start;
use aerie_proto::collector as cpb;
use aerie_proto::execute as ex;
use aerie_proto::negotiation as pb;
use aerie_security::grant::{GrantError, Presented, SignedGrant};
use aerie_tests::{collector_client, daemon_bin, eventually, wait_leader, Cluster};
use std::os::unix::fs::MetadataExt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

const CM: &str = env!("CARGO_BIN_EXE_aerie-cm-node");
const WAIT: Duration = Duration::from_secs(30);

/// The stand-in execute node: accepts the claim, and for an activation reports the job
/// started, then exited 0 with stdout = its input file in upper case.
#[derive(Clone, Default)]
struct Node(Arc<Mutex<Vec<String>>>);

#[tonic::async_trait]
impl pb::startd_server::Startd for Node {
    async fn request_claim(
        &self,
        r: tonic::Request<pb::ClaimRequest>,
    ) -> Result<tonic::Response<pb::ClaimReply>, tonic::Status> {
        let r = r.into_inner();
        let checked = check_grant(&r);
        if let Ok(true) = checked {
            self.0
                .lock()
                .unwrap()
                .push(format!("signed grant {}", r.job));
        }
        if let Err(e) = checked {
            self.0
                .lock()
                .unwrap()
                .push(format!("refused {}: {e}", r.job));
            return Ok(tonic::Response::new(pb::ClaimReply {
                ok: false,
                error: e,
                ..Default::default()
            }));
        }
        self.0.lock().unwrap().push(format!("claim {}", r.job));
        Ok(tonic::Response::new(pb::ClaimReply {
            ok: true,
            error: String::new(),
            claimed_slot: r.slot,
            claim_id: r.claim_id,
        }))
    }
    async fn release_claim(
        &self,
        _: tonic::Request<pb::ReleaseRequest>,
    ) -> Result<tonic::Response<pb::ReleaseReply>, tonic::Status> {
        self.0.lock().unwrap().push("release".into());
        Ok(tonic::Response::new(pb::ReleaseReply {
            ok: true,
            error: String::new(),
        }))
    }
}

#[tonic::async_trait]
impl ex::execute_server::Execute for Node {
    async fn activate_claim(
        &self,
        r: tonic::Request<ex::ActivateRequest>,
    ) -> Result<tonic::Response<ex::ActivateReply>, tonic::Status> {
        let r = r.into_inner();
        self.0.lock().unwrap().push(format!("activate {}", r.job));
        let input = r
            .inputs
            .iter()
            .find(|f| f.name == "in.txt")
            .map(|f| f.data.clone());
        tokio::spawn(async move {
            let ch = aerie_security::testing::endpoint(
                &r.shadow_addr,
                aerie_security::Role::AccessPoint,
            )
            .connect()
            .await
            .unwrap();
            let mut shadow = ex::shadow_client::ShadowClient::new(ch);
            let event = |e| ex::JobEventRequest {
                job: r.job.clone(),
                slot: r.slot.clone(),
                claim_id: r.claim_id.clone(),
                time: 0,
                event: Some(e),
            };
            shadow
                .job_event(event(ex::job_event_request::Event::Started(true)))
                .await
                .unwrap();
            let exited = ex::Exited {
                exit_code: Some(0),
                outputs: vec![ex::File {
                    name: "job.out".into(),
                    data: input.unwrap_or_default().to_ascii_uppercase(),
                    ..Default::default()
                }],
                ..Default::default()
            };
            shadow
                .job_event(event(ex::job_event_request::Event::Exited(exited)))
                .await
                .unwrap();
        });
        Ok(tonic::Response::new(ex::ActivateReply {
            ok: true,
            ..Default::default()
        }))
    }
    async fn keep_alive(
        &self,
        _: tonic::Request<ex::KeepAliveRequest>,
    ) -> Result<tonic::Response<ex::KeepAliveReply>, tonic::Status> {
        Ok(tonic::Response::new(ex::KeepAliveReply {
            ok: true,
            error: String::new(),
            lease_seconds: 900,
        }))
    }
    async fn deactivate_claim(
        &self,
        _: tonic::Request<ex::DeactivateRequest>,
    ) -> Result<tonic::Response<ex::DeactivateReply>, tonic::Status> {
        Err(tonic::Status::unimplemented("deactivate"))
    }
    async fn drain(
        &self,
        _: tonic::Request<ex::DrainRequest>,
    ) -> Result<tonic::Response<ex::DrainReply>, tonic::Status> {
        Err(tonic::Status::unimplemented("drain"))
    }
    async fn cancel_drain(
        &self,
        _: tonic::Request<ex::CancelDrainRequest>,
    ) -> Result<tonic::Response<ex::CancelDrainReply>, tonic::Status> {
        Err(tonic::Status::unimplemented("cancel drain"))
    }
}

/// What a real execute node with credentials checks of the leader's grant the access point
/// forwarded (`aerie_security::grant`): the leader signed it, for this slot, capability and
/// term. The same grant with its signed term raised must then be refused. True when checked
/// (false on an insecure test pool, where the leader signs nothing).
fn check_grant(r: &pb::ClaimRequest) -> Result<bool, String> {
    let Some(v) = aerie_security::transport::transport().grant_verifier() else {
        return Ok(false);
    };
    let v = v.map_err(|e| e.to_string())?;
    let sg = r.signed.clone().ok_or("unsigned grant")?;
    let grant = SignedGrant {
        payload: sg.payload,
        signature: sg.signature,
        leader_cert: sg.leader_cert,
        proof: sg.proof,
    };
    let now = aerie_security::transport::now_unix();
    let presented = Presented {
        slot: &r.slot,
        claim_id: &r.claim_id,
        term: r.term,
    };
    let claims = v
        .verify(&grant, presented, now)
        .map_err(|e| e.to_string())?;
    let mut tampered = grant.clone();
    let raised = claims.term + 1;
    tampered.payload = String::from_utf8_lossy(&grant.payload)
        .replace(
            &format!("\"term\":{}", claims.term),
            &format!("\"term\":{raised}"),
        )
        .into_bytes();
    let forged = Presented {
        term: raised,
        ..presented
    };
    match v.verify(&tampered, forged, now) {
        Err(GrantError::BadSignature) => Ok(true),
        other => Err(format!("a tampered grant was not refused: {other:?}")),
    }
}

/// The stand-in node's one static slot ad, as the simulator's startd builds it.
fn slot_ad(addr: &str) -> String {
    let mut sd = aerie_node::startd::Startd::new(1, "e2e", 0);
    aerie_node::pool::build_slots(&mut sd, 1, 1, false, "exec", "pool.test");
    let slot = sd.slots().next().unwrap().clone();
    let machine = *sd.machine(&slot.machine).unwrap();
    let ctx = aerie_node::pool::AdContext {
        my_address: format!("<{addr}>"),
        domain: "pool.test".into(),
        schedd_name: "unused".into(),
    };
    aerie_node::pool::slot_ad(&slot, &machine, &ctx)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_submitted_job_is_matched_claimed_run_and_completed_with_its_output() {
    let cm = Cluster::start(
        daemon_bin(CM),
        1,
        &[
            ("AERIE_NEGOTIATOR_INTERVAL", "1"),
            ("AERIE_NEGOTIATOR_CYCLE_DELAY", "1"),
        ],
    )
    .expect("start aerie-cm");
    wait_leader(&cm.running(), WAIT)
        .await
        .unwrap_or_else(|e| panic!("leader: {e}\n{}", cm.log(1)));
    let cm_addr = cm.addr(1);

    // The execute node: its services, and its slot ad kept fresh in the collector.
    let node = Node::default();
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let node_addr = l.local_addr().unwrap().to_string();
    let n = node.clone();
    tokio::spawn(async move {
        aerie_security::testing::server()
            .add_service(pb::startd_server::StartdServer::new(n.clone()))
            .add_service(ex::execute_server::ExecuteServer::new(n))
            .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(l))
            .await
            .unwrap();
    });
    let ad = slot_ad(&node_addr);
    let collector = cm_addr.clone();
    let advertiser = tokio::spawn(async move {
        loop {
            let batch = cpb::AdBatch {
                ads: vec![cpb::Ad { text: ad.clone() }],
            };
            if let Err(e) = collector_client(&collector).advertise(batch).await {
                eprintln!("advertise: {e}");
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    });

    // The access point, advertising to the CM.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("run.sh"), "#!/bin/sh\ncat\n").unwrap();
    std::fs::write(dir.path().join("in.txt"), "hello pool\n").unwrap();
    let args = AccessPointArgs {
        cms: vec![cm_addr.clone()],
        spool: dir.path().join("spool"),
        socket: dir.path().join("schedd.sock"),
        listen: "127.0.0.1:0".parse().unwrap(),
        address: None,
        name: Some("ap.pool.test".into()),
        config: None,
        domain: Some("pool.test".into()),
        metrics_listen: None,
        update_interval: 1,
    };
    let ap = start(&args).await.unwrap();
    let me = who_is(std::fs::metadata(dir.path()).unwrap().uid(), &[]).unwrap();
    let cluster = ap.schedd.new_cluster(&me).unwrap();
    let job = format!(
        "ClusterId = {cluster}\nProcId = 0\nCmd = \"run.sh\"\nIwd = \"{}\"\nIn = \"in.txt\"\n\
         Out = \"job.out\"\nRequestCpus = 1\nRequestMemory = 128\nRequestDisk = 1024\n\
         Requirements = (TARGET.OpSys == \"LINUX\") && (TARGET.Cpus >= RequestCpus)\nJobUniverse = 5",
        dir.path().display()
    );
    ap.schedd
        .submit(&me, cluster, &[job])
        .map_err(|e| format!("{e:?}"))
        .unwrap();

    let history = eventually("the job to complete", WAIT, || {
        let s = ap.schedd.clone();
        async move {
            let history = aerie_proto::schedd::QueryRequest {
                history: true,
                ..Default::default()
            };
            let h = s.query(&history).map_err(anyhow::Error::msg)?.ads;
            Ok((!h.is_empty()).then_some(h))
        }
    })
    .await
    .unwrap_or_else(|e| panic!("{e}\nnode saw {:?}\n{}", node.0.lock().unwrap(), cm.log(1)));
    let done = classad::parse_ad(&history[0]).unwrap();
    assert_eq!(done.eval_attr("JobStatus").as_int(), Some(4));
    assert_eq!(done.eval_attr("ExitCode").as_int(), Some(0));
    assert_eq!(done.eval_attr("NumJobStarts").as_int(), Some(1));
    assert_eq!(
        std::fs::read_to_string(dir.path().join("job.out")).unwrap(),
        "HELLO POOL\n"
    );
    let mut seen = node.0.lock().unwrap().clone();
    let signed = format!("signed grant {cluster}.0");
    if std::env::var("AERIE_INSECURE").as_deref() != Ok("1") {
        assert_eq!(seen.first(), Some(&signed), "{seen:?}");
    }
    seen.retain(|l| *l != signed);
    assert_eq!(
        seen[..2],
        [
            format!("claim {cluster}.0"),
            format!("activate {cluster}.0")
        ]
    );
    advertiser.abort();
    ap.stop().await;
}
