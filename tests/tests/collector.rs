//! The collector of a real `aerie-cm` process: slot ads advertised over gRPC come back from
//! queries (constraint, projection, limit), bad ads are refused one by one with a reason,
//! identical updates are recognised, invalidation removes an ad, and an ad's own
//! `ClassAdLifetime` makes it expire through the daemon's sweep. `cmctl status -long`, `-af`
//! and a constraint print the text the CM renders (`Collector.QueryText`) exactly as they
//! printed the ads of `Query`, and no private attribute.
use aerie_proto::collector::{self as pb, collector_client::CollectorClient};
use aerie_tests::*;
use std::time::Duration;
use tonic::transport::Channel;

const BIN: &str = env!("CARGO_BIN_EXE_aerie-cm-node");
const CMCTL: &str = env!("CARGO_BIN_EXE_aerie-cmctl");

async fn client(addr: &str) -> CollectorClient<Channel> {
    collector_client(addr)
}

fn slot(i: usize, extra: &str) -> pb::Ad {
    let state = if i.is_multiple_of(2) {
        "Unclaimed"
    } else {
        "Claimed"
    };
    pb::Ad {
        text: format!(
            "MyType = \"Machine\"\nTargetType = \"Job\"\nName = \"slot{i}@node{}\"\n\
             Machine = \"node{}\"\nState = \"{state}\"\nMemory = {}\nCpus = 1\n{extra}",
            i / 4,
            i / 4,
            1024 * (1 + i % 4)
        ),
    }
}

async fn query(
    c: &mut CollectorClient<Channel>,
    ad_type: &str,
    constraint: &str,
    projection: &[&str],
) -> Vec<String> {
    c.query(pb::QueryRequest {
        ad_type: ad_type.into(),
        constraint: constraint.into(),
        projection: projection.iter().map(|s| s.to_string()).collect(),
        absent: false,
        limit: 0,
    })
    .await
    .expect("query")
    .into_inner()
    .ads
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slot_ads_advertised_over_grpc_are_queried_back() {
    let c = Cluster::start(daemon_bin(BIN), 1, &[]).expect("start cluster");
    wait_leader(&c.running(), Duration::from_secs(20))
        .await
        .expect("leader");
    let addr = c.addr(1);
    let mut cl = client(&addr).await;

    // 40 slots, one ad without MyType in the middle, one that does not parse.
    let mut ads: Vec<pb::Ad> = (0..40).map(|i| slot(i, "")).collect();
    ads.insert(
        20,
        pb::Ad {
            text: "Name = \"broken@nowhere\"\nMemory = 1\n".into(),
        },
    );
    ads.push(pb::Ad {
        text: "MyType = \"Machine\"\nName = \"bad@x\"\nMemory = (1 +\n".into(),
    });
    let s = cl
        .advertise(pb::AdBatch { ads: ads.clone() })
        .await
        .unwrap_or_else(|e| panic!("advertise: {e}\n{}", c.log(1)))
        .into_inner();
    assert_eq!((s.accepted, s.rejected), (40, 2), "{s:?}");
    assert_eq!(s.results.len(), 42);
    assert!(!s.results[20].ok);
    assert_eq!(
        s.results[20].error,
        "ad \"broken@nowhere\", attribute MyType: missing (every ad needs a MyType)"
    );
    assert!(
        s.results[41]
            .error
            .starts_with("ad \"bad@x\": does not parse: line 3"),
        "{}",
        s.results[41].error
    );
    assert!(s.results[0].ok && s.results[0].outcome == "new");

    // All 40 come back; a constraint and a projection select and trim.
    assert_eq!(query(&mut cl, "Machine", "", &[]).await.len(), 40);
    let big_idle = query(
        &mut cl,
        "Machine",
        "State == \"Unclaimed\" && Memory >= 3072",
        &["Name", "Memory"],
    )
    .await;
    // Unclaimed = even i; Memory = 1024 * (1 + i % 4) >= 3072 -> i % 4 == 2: 10 slots.
    assert_eq!(big_idle.len(), 10, "{big_idle:?}");
    assert_eq!(big_idle[0], "Name = \"slot10@node2\"\nMemory = 3072\n");
    assert!(big_idle.iter().all(|a| a.lines().count() == 2));
    // Other types are kept apart; "Any" sees everything.
    assert!(query(&mut cl, "Submitter", "", &[]).await.is_empty());
    assert_eq!(query(&mut cl, "Any", "", &[]).await.len(), 40);
    // A limit, and a bad constraint is an error naming it.
    let limited = cl
        .query(pb::QueryRequest {
            ad_type: "Machine".into(),
            limit: 5,
            ..Default::default()
        })
        .await
        .expect("query")
        .into_inner();
    assert_eq!(limited.ads.len(), 5);
    let e = cl
        .query(pb::QueryRequest {
            ad_type: "Machine".into(),
            constraint: "Memory >".into(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), tonic::Code::InvalidArgument);
    assert!(e.message().contains("Memory >"), "{}", e.message());

    // The same ads again are recognised as unchanged; one changed ad is "changed".
    let mut again: Vec<pb::Ad> = (0..40).map(|i| slot(i, "")).collect();
    again[3] = slot(3, "Activity = \"Busy\"\n");
    let s = cl
        .advertise(pb::AdBatch { ads: again })
        .await
        .expect("advertise")
        .into_inner();
    let unchanged = s
        .results
        .iter()
        .filter(|r| r.outcome == "unchanged")
        .count();
    assert_eq!(unchanged, 39, "{s:?}");
    assert_eq!(s.results[3].outcome, "changed");

    // Invalidation removes one ad.
    let r = cl
        .invalidate(pb::InvalidateRequest {
            ad_type: "Machine".into(),
            name: "slot0@node0".into(),
            ..Default::default()
        })
        .await
        .expect("invalidate")
        .into_inner();
    assert!(r.found);
    assert_eq!(query(&mut cl, "Machine", "", &[]).await.len(), 39);

    // An ad with ClassAdLifetime = 1 is swept by the daemon within a few seconds.
    cl.advertise(pb::AdBatch {
        ads: vec![slot(100, "ClassAdLifetime = 1\n")],
    })
    .await
    .expect("advertise");
    assert_eq!(
        query(&mut cl, "Machine", "Name == \"slot100@node25\"", &["Name"])
            .await
            .len(),
        1
    );
    eventually("short-lived ad expires", Duration::from_secs(10), || {
        let mut cl = cl.clone();
        async move {
            let n = query(&mut cl, "Machine", "", &[]).await.len();
            Ok((n == 39).then_some(()))
        }
    })
    .await
    .expect("expired");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn advertise_stream_answers_each_batch_in_order_and_survives_bad_ads() {
    use tonic::codegen::tokio_stream::{self, StreamExt};
    let c = Cluster::start(daemon_bin(BIN), 1, &[]).expect("start cluster");
    wait_leader(&c.running(), Duration::from_secs(20))
        .await
        .expect("leader");
    let mut cl = client(&c.addr(1)).await;
    let batches = vec![
        pb::AdBatch {
            ads: (0..10).map(|i| slot(i, "")).collect(),
        },
        // A bad ad in the middle of the stream: refused, the stream goes on.
        pb::AdBatch {
            ads: vec![pb::Ad {
                text: "MyType = \"Machine\"\n".into(),
            }],
        },
        pb::AdBatch {
            ads: (5..15).map(|i| slot(i, "")).collect(),
        },
    ];
    let mut replies = cl
        .advertise_stream(tokio_stream::iter(batches))
        .await
        .unwrap_or_else(|e| panic!("advertise_stream: {e}\n{}", c.log(1)))
        .into_inner();
    let mut got = Vec::new();
    while let Some(r) = replies.next().await {
        let s = r.expect("summary");
        got.push((s.accepted, s.rejected));
        if got.len() == 2 {
            assert_eq!(
                s.results[0].error,
                "ad \"<no Name>\", attribute Name: missing (every ad needs a Name)"
            );
        }
        if got.len() == 3 {
            let outcomes: Vec<&str> = s.results.iter().map(|r| r.outcome.as_str()).collect();
            assert_eq!(&outcomes[..5], &["unchanged"; 5]);
            assert_eq!(&outcomes[5..], &["new"; 5]);
        }
    }
    assert_eq!(got, vec![(10, 0), (0, 1), (10, 0)]);
    assert_eq!(query(&mut cl, "Machine", "", &[]).await.len(), 15);
}

/// What `cmctl status -long` printed from `Query`'s ads before the CM rendered the text: each
/// ad parsed, its old-syntax lines sorted by name (case-insensitively), a blank line after.
fn long_from_ads(ads: &[String]) -> String {
    let mut out = String::new();
    for text in ads {
        let ad = classad::parse_old_ads(text).expect("ad parses").remove(0);
        let again = ad.to_old_syntax();
        let mut lines: Vec<&str> = again.lines().collect();
        lines.sort_by_key(|l| l.split(" = ").next().unwrap_or("").to_ascii_lowercase());
        lines
            .into_iter()
            .for_each(|l| out.push_str(&format!("{l}\n")));
        out.push('\n');
    }
    out
}

/// What `cmctl status -af ATTRS` printed from `Query`'s projected ads.
fn af_from_ads(ads: &[String], attrs: &[&str]) -> String {
    let mut out = String::new();
    for text in ads {
        let ad = classad::parse_old_ads(text)
            .expect("ad parses")
            .pop()
            .unwrap_or_default();
        let vals: Vec<String> = attrs
            .iter()
            .map(|n| aerie_core::print::value_text(ad.eval_attr(n)))
            .collect();
        out.push_str(&format!("{}\n", vals.join(" ")));
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cmctl_status_prints_the_cm_s_text_as_it_printed_the_ads() {
    const SECRET: &str = "cl41m-1d-s3cr3t";
    let c = Cluster::start(daemon_bin(BIN), 1, &[]).expect("start cluster");
    wait_leader(&c.running(), Duration::from_secs(20))
        .await
        .expect("leader");
    let addr = c.addr(1);
    let mut cl = client(&addr).await;
    let extra = format!(
        "LoadAvg = 0.25\nRequirements = START && Cpus > 0\nStart = true\n\
         ClaimId = \"<10.0.0.1:9618>#{SECRET}\"\nCapability = \"{SECRET}\"\n"
    );
    let ads: Vec<pb::Ad> = (0..30).map(|i| slot(i, &extra)).collect();
    let s = cl
        .advertise(pb::AdBatch { ads })
        .await
        .expect("advertise")
        .into_inner();
    assert_eq!(s.accepted, 30, "{s:?}");
    let cms = [addr.clone()];
    let claimed = "State == \"Claimed\"";
    let cases: [(&[&str], &str, &[&str]); 4] = [
        (&["-long"], "", &[]),
        (&["-af", "Name"], "", &["Name"]),
        (
            &[
                "-af",
                "Name",
                "State",
                "LoadAvg",
                "Requirements",
                "ClaimId",
                "LastHeardFrom",
            ],
            "",
            &[
                "Name",
                "State",
                "LoadAvg",
                "Requirements",
                "ClaimId",
                "LastHeardFrom",
            ],
        ),
        (&["-af", "Name", "-constraint", claimed], claimed, &["Name"]),
    ];
    for (args, constraint, attrs) in cases {
        let mut line = vec!["status"];
        line.extend(args);
        let (code, out, err) = run_cmctl(CMCTL, &cms, &line, None);
        assert_eq!(code, 0, "cmctl {line:?}: {err}");
        let ads = query(&mut cl, "Machine", constraint, attrs).await;
        let want = if attrs.is_empty() {
            long_from_ads(&ads)
        } else {
            af_from_ads(&ads, attrs)
        };
        assert_eq!(out, want, "cmctl {line:?}");
        assert!(
            !out.contains(SECRET),
            "cmctl {line:?} shows a private attribute:\n{out}"
        );
        let lines = out
            .lines()
            .filter(|l| l.starts_with("Name = ") || !args[0].ends_with("long"));
        let n = if constraint.is_empty() { 30 } else { 15 };
        assert_eq!(lines.count(), n, "cmctl {line:?}:\n{out}");
    }
}
