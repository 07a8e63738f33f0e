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
