//! `cmctl drain` end to end (issue 14.5, the CM side): the request is committed through Raft,
//! the leader sends it to the machine's execute node (found through its slot ads'
//! `MyAddress`) until the slots advertise its `DrainingRequestId`, and `cmctl drain -cancel`
//! makes the leader cancel it there.
//!
//! The execute node here is a stand-in `Execute` gRPC service in the test that records the
//! calls and advertises its slot ad as a real node would; the real node's own handling of a
//! drain is tested with the node.
use aerie_core::admin::PolicyQuery;
use aerie_proto::collector as cpb;
use aerie_proto::execute::{self as pb, execute_server};
use aerie_tests::*;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tonic::{Request, Response, Status};

const CM: &str = env!("CARGO_BIN_EXE_aerie-cm-node");
const CMCTL: &str = env!("CARGO_BIN_EXE_aerie-cmctl");

#[derive(Debug, Clone, PartialEq)]
enum Call {
    Drain(pb::DrainRequest),
    Cancel(String),
}

#[derive(Clone, Default)]
struct Node {
    calls: Arc<Mutex<Vec<Call>>>,
}

#[tonic::async_trait]
impl execute_server::Execute for Node {
    async fn activate_claim(
        &self,
        _: Request<pb::ActivateRequest>,
    ) -> Result<Response<pb::ActivateReply>, Status> {
        Err(Status::unimplemented("not in this test"))
    }
    async fn keep_alive(
        &self,
        _: Request<pb::KeepAliveRequest>,
    ) -> Result<Response<pb::KeepAliveReply>, Status> {
        Err(Status::unimplemented("not in this test"))
    }
    async fn deactivate_claim(
        &self,
        _: Request<pb::DeactivateRequest>,
    ) -> Result<Response<pb::DeactivateReply>, Status> {
        Err(Status::unimplemented("not in this test"))
    }
    async fn drain(
        &self,
        r: Request<pb::DrainRequest>,
    ) -> Result<Response<pb::DrainReply>, Status> {
        let r = r.into_inner();
        let id = r.request_id.clone();
        self.calls.lock().unwrap().push(Call::Drain(r));
        Ok(Response::new(pb::DrainReply {
            ok: true,
            error: String::new(),
            request_id: id,
        }))
    }
    async fn cancel_drain(
        &self,
        r: Request<pb::CancelDrainRequest>,
    ) -> Result<Response<pb::CancelDrainReply>, Status> {
        self.calls
            .lock()
            .unwrap()
            .push(Call::Cancel(r.into_inner().request_id));
        Ok(Response::new(pb::CancelDrainReply {
            ok: true,
            error: String::new(),
        }))
    }
}

fn slot_ad(addr: &str, draining: Option<&str>) -> cpb::Ad {
    let drain = draining
        .map(|id| format!("Draining = true\nDrainingRequestId = \"{id}\"\n"))
        .unwrap_or_default();
    cpb::Ad {
        text: format!(
            "MyType = \"Machine\"\nName = \"slot1@exec7\"\nMachine = \"exec7\"\n\
             MyAddress = \"<{addr}>\"\nState = \"Unclaimed\"\nActivity = \"Idle\"\n\
             Cpus = 1\nMemory = 1024\n{drain}"
        ),
    }
}

async fn advertise(cm: &str, ad: cpb::Ad) {
    eventually("advertise the slot", Duration::from_secs(20), || {
        let ad = ad.clone();
        async move {
            let r = collector_client(cm)
                .advertise(cpb::AdBatch { ads: vec![ad] })
                .await?;
            Ok((r.into_inner().accepted == 1).then_some(()))
        }
    })
    .await
    .unwrap_or_else(|e| panic!("{e}"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_drain_reaches_the_machine_through_the_leader_and_a_cancel_follows() {
    let c = Cluster::start(daemon_bin(CM), 3, &[]).expect("start cluster");
    wait_leader(&c.running(), Duration::from_secs(30))
        .await
        .expect("leader");
    let cms: Vec<String> = c.running().into_iter().map(|(_, a)| a).collect();

    let node = Node::default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let svc = execute_server::ExecuteServer::new(node.clone());
    tokio::spawn(
        aerie_security::testing::server()
            .add_service(svc)
            .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener)),
    );
    // The slot ad reaches every CM by the relay; the leader finds the node through it.
    for cm in &cms {
        advertise(cm, slot_ad(&addr, None)).await;
    }

    let (code, out, err) = run_cmctl(
        CMCTL,
        &cms,
        &["drain", "-quick", "-reason", "kernel update", "exec7"],
        None,
    );
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(out.trim(), "Sent request to drain exec7");
    let drains = query_retry(&cms[0], PolicyQuery, Duration::from_secs(10))
        .await
        .expect("policy")
        .drains;
    let id = drains["exec7"].request_id.clone();
    assert!(!id.is_empty());

    let sent = eventually("the node gets the drain", Duration::from_secs(30), || {
        let calls = node.calls.clone();
        async move {
            let got = calls.lock().unwrap().clone();
            Ok(got.into_iter().find_map(|c| match c {
                Call::Drain(d) => Some(d),
                Call::Cancel(_) => None,
            }))
        }
    })
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(sent.request_id, id);
    assert_eq!(sent.how, pb::DrainHow::Quick as i32);
    assert_eq!(sent.reason, "kernel update");

    // The node advertises that it carries the drain out: the leader stops sending it.
    for cm in &cms {
        advertise(cm, slot_ad(&addr, Some(&id))).await;
    }
    tokio::time::sleep(Duration::from_secs(4)).await;
    let before = node.calls.lock().unwrap().len();
    tokio::time::sleep(Duration::from_secs(7)).await;
    assert_eq!(
        node.calls.lock().unwrap().len(),
        before,
        "the leader kept sending a drain the node advertises: {:?}",
        node.calls.lock().unwrap()
    );

    let (code, out, err) = run_cmctl(CMCTL, &cms, &["drain", "-cancel", "exec7"], None);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(out.trim(), "Sent request to cancel draining on exec7");
    eventually("the node gets the cancel", Duration::from_secs(30), || {
        let calls = node.calls.clone();
        let id = id.clone();
        async move {
            let got = calls.lock().unwrap().clone();
            Ok(got.contains(&Call::Cancel(id)).then_some(()))
        }
    })
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    // A machine without a drain request: cancel says so and fails.
    let (code, _, err) = run_cmctl(CMCTL, &cms, &["drain", "-cancel", "exec7"], None);
    assert_eq!(code, 1);
    assert!(err.contains("no drain request for exec7"), "{err}");
}
