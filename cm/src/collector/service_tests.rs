//! The `Collector` service's query answers over a table of known ads: `QueryStream` in chunks
//! of [`QUERY_CHUNK`] ads in `Query`'s order, and `Totals` rows with their key values typed.
use super::service::{CollectorService, QUERY_CHUNK};
use super::{AdTable, CollectorParams};
use aerie_proto::collector::{self as pb, collector_server::Collector};
use futures::StreamExt;
use std::sync::{Arc, RwLock};

const T0: i64 = 1_700_000_000;

fn service(slots: usize) -> CollectorService {
    let mut t = AdTable::new(CollectorParams::default());
    for i in 0..slots {
        let state = if i % 3 == 0 { "Claimed" } else { "Unclaimed" };
        t.advertise_text(
            &format!(
                "MyType = \"Machine\"\nName = \"slot{i}@h\"\nArch = \"X86_64\"\n\
                 OpSys = \"LINUX\"\nState = \"{state}\"\nCpus = {}\n",
                i % 4
            ),
            T0,
        )
        .unwrap();
    }
    CollectorService::new(Arc::new(RwLock::new(t)))
}

fn machines() -> pb::QueryRequest {
    pb::QueryRequest {
        ad_type: "Machine".into(),
        ..Default::default()
    }
}

#[tokio::test]
async fn query_stream_sends_query_s_ads_in_chunks() {
    let svc = service(2 * QUERY_CHUNK + 5);
    let whole = svc
        .query(tonic::Request::new(machines()))
        .await
        .unwrap()
        .into_inner()
        .ads;
    let chunks: Vec<pb::QueryReply> = svc
        .query_stream(tonic::Request::new(machines()))
        .await
        .unwrap()
        .into_inner()
        .map(|r| r.unwrap())
        .collect()
        .await;
    let sizes: Vec<usize> = chunks.iter().map(|c| c.ads.len()).collect();
    assert_eq!(sizes, vec![QUERY_CHUNK, QUERY_CHUNK, 5]);
    let streamed: Vec<String> = chunks.into_iter().flat_map(|c| c.ads).collect();
    assert_eq!(streamed, whole);
    // A bad constraint is refused before any chunk.
    let bad = pb::QueryRequest {
        constraint: "State ==".into(),
        ..machines()
    };
    assert!(svc.query_stream(tonic::Request::new(bad)).await.is_err());
}

#[tokio::test]
async fn totals_answers_typed_keys_and_sums() {
    let svc = service(9);
    let rows = svc
        .totals(tonic::Request::new(pb::TotalsRequest {
            ad_type: "Machine".into(),
            constraint: String::new(),
            absent: false,
            group_by: vec!["State".into(), "NoSuchAttr".into()],
            sum: vec!["Cpus".into()],
        }))
        .await
        .unwrap()
        .into_inner()
        .rows;
    let str_of = |r: &pb::TotalsRow| match &r.key[0].value {
        Some(pb::totals_value::Value::Str(s)) => s.clone(),
        other => panic!("State should come as a string, not {other:?}"),
    };
    let mut got: Vec<(String, u64, Vec<i64>, bool)> = rows
        .iter()
        .map(|r| (str_of(r), r.count, r.sums.clone(), r.key[1].value.is_none()))
        .collect();
    got.sort();
    // Slots 0, 3, 6 are Claimed (Cpus 0, 3, 2); the other six Unclaimed (Cpus 1+2+0+1+3+0).
    assert_eq!(
        got,
        vec![
            ("Claimed".into(), 3, vec![5], true),
            ("Unclaimed".into(), 6, vec![7], true),
        ]
    );
}

/// A request as the authorization layer passes it on: with the caller's [`Peer`].
fn as_caller<T>(msg: T, name: &str, roles: &[aerie_security::Role]) -> tonic::Request<T> {
    let mut r = tonic::Request::new(msg);
    r.extensions_mut().insert(aerie_security::identity::Peer {
        caller: aerie_security::Caller::Daemon(aerie_security::Identity {
            name: name.into(),
            roles: roles.to_vec(),
        }),
        addr: Some("127.0.0.1".parse().unwrap()),
    });
    r
}

/// A batch of one slot ad per machine named.
fn slots_of(machines: &[&str]) -> pb::AdBatch {
    pb::AdBatch {
        ads: machines.iter().map(|m| slot_of(m)).collect(),
    }
}

/// What `Advertise` answers `name` (an execute node) sending `batch`.
async fn advertise_as(
    svc: &CollectorService,
    batch: &pb::AdBatch,
    name: &str,
) -> Result<pb::AdvertiseSummary, tonic::Status> {
    let r = as_caller(batch.clone(), name, &[aerie_security::Role::Execute]);
    svc.advertise(r).await.map(|r| r.into_inner())
}

fn slot_of(machine: &str) -> pb::Ad {
    pb::Ad {
        text: format!(
            "MyType = \"Machine\"\nName = \"slot1@{machine}\"\nMachine = \"{machine}\"\n\
             MyAddress = \"<127.0.0.1:9618>\"\n"
        ),
    }
}

#[tokio::test]
async fn a_startd_advertises_and_invalidates_only_its_own_machine() {
    use aerie_security::Role;
    let svc = service(0);
    let batch = slots_of(&["m1", "m2"]);
    let s = advertise_as(&svc, &batch, "m1").await.unwrap();
    assert_eq!((s.accepted, s.rejected), (1, 1));
    assert!(s.results[0].ok);
    assert!(s.results[1].error.contains("Machine"), "{:?}", s.results[1]);
    // The same text word for word (the table's fast path) is refused too.
    let admin = svc
        .advertise(as_caller(batch.clone(), "root", &[Role::Admin]))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(admin.accepted, 2);
    let again = advertise_as(&svc, &batch, "m1").await.unwrap();
    assert_eq!((again.accepted, again.rejected), (1, 1));
    // m1 cannot invalidate m2's slot, and m2's slot stays.
    let inv = |name: &str| pb::InvalidateRequest {
        ad_type: "Machine".into(),
        name: name.into(),
        addr: String::new(),
    };
    let e = svc
        .invalidate(as_caller(inv("slot1@m2"), "m1", &[Role::Execute]))
        .await
        .unwrap_err();
    assert_eq!(e.code(), tonic::Code::PermissionDenied);
    assert!(
        e.message().contains("m2") && e.message().contains("m1@execute"),
        "{e:?}"
    );
    let found = svc
        .invalidate(as_caller(inv("slot1@m2"), "m2", &[Role::Execute]))
        .await
        .unwrap()
        .into_inner()
        .found;
    assert!(found);
}

#[tokio::test]
async fn an_identity_over_its_budget_is_refused_naming_the_knob_and_itself() {
    let mut svc = service(0);
    svc.identity_limit = super::service::identity_limiter(0.01);
    let batch = slots_of(&["m1", "m1", "m1"]);
    let s = advertise_as(&svc, &batch, "m1").await.unwrap();
    assert_eq!((s.accepted, s.rejected), (1, 2));
    let e = advertise_as(&svc, &batch, "m1").await.unwrap_err();
    assert_eq!(e.code(), tonic::Code::ResourceExhausted);
    let m = e.message();
    assert!(
        m.contains("AERIE_COLLECTOR_MAX_UPDATE_RATE_PER_IDENTITY") && m.contains("m1@execute"),
        "{m}"
    );
    // Another identity has its own budget.
    let other = advertise_as(&svc, &slots_of(&["m2"]), "m2").await.unwrap();
    assert_eq!(other.accepted, 1);
}
