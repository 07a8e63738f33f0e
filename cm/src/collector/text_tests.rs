//! The text the CM renders for `QueryText` is what `cmctl` printed from `Query`'s ads (the
//! ads unparsed, parsed again on the client, `-long` sorting their lines, `-af` evaluating in
//! the projected ad), with no private attribute, chunked at whole ads in the table's order.
use super::service::CollectorService;
use super::text::{render_ad, render_chunks, TextFormat};
use super::{AdTable, CollectorParams, Query};
use aerie_proto::collector::{self as pb, collector_server::Collector};
use futures::StreamExt;
use std::sync::{Arc, RwLock};

const T0: i64 = 1_700_000_000;
const SECRET: &str = "s3cr3t-claim";

/// Slot ads with literals, an expression, a real, a list and private attributes.
fn table(slots: usize) -> AdTable {
    let mut t = AdTable::new(CollectorParams::default());
    for i in 0..slots {
        let state = if i % 2 == 0 { "Claimed" } else { "Unclaimed" };
        t.advertise_text(
            &format!(
                "MyType = \"Machine\"\nName = \"slot{i}@h{}\"\nState = \"{state}\"\n\
                 Cpus = {}\nLoadAvg = {}.25\nStart = true\nRequirements = START && Cpus > 0\n\
                 zeta = {{ 1, \"a\" }}\nAlpha = \"q\\\"uote\"\nDisk = -{i}\n\
                 ClaimId = \"<10.0.0.1:9618>#{SECRET}\"\nCapability = \"{SECRET}\"\n",
                i / 4,
                1 + i % 4,
                i % 3
            ),
            T0 + i as i64,
        )
        .unwrap();
    }
    t
}

/// What `cmctl status -long` printed from `Query`'s answer before the CM rendered it.
fn long_as_cmctl_printed(ads: &[String]) -> String {
    let mut out = String::new();
    for text in ads {
        let ad = classad::parse_old_ads(text).unwrap().remove(0);
        let again = ad.to_old_syntax();
        let mut lines: Vec<&str> = again.lines().collect();
        lines.sort_by_key(|l| l.split(" = ").next().unwrap_or("").to_ascii_lowercase());
        for l in lines {
            out.push_str(l);
            out.push('\n');
        }
        out.push('\n');
    }
    out
}

/// What `cmctl status -af ATTRS` printed from `Query`'s projected answer.
fn af_as_cmctl_printed(ads: &[String], attrs: &[String]) -> String {
    let mut out = String::new();
    for text in ads {
        let ad = classad::parse_old_ads(text)
            .unwrap()
            .pop()
            .unwrap_or_default();
        let vals: Vec<String> = attrs
            .iter()
            .map(|n| aerie_core::print::value_text(ad.eval_attr(n)))
            .collect();
        out.push_str(&vals.join(" "));
        out.push('\n');
    }
    out
}

fn rendered(t: &AdTable, q: &Query, format: &TextFormat) -> String {
    let mut out = String::new();
    for s in t.try_query_shown(q, u64::MAX, 1).unwrap() {
        render_ad(&mut out, &s, format);
    }
    out
}

fn old_syntax(t: &AdTable, q: &Query) -> Vec<String> {
    t.query(q).iter().map(|a| a.to_old_syntax()).collect()
}

#[test]
fn long_is_what_cmctl_printed_from_the_ads() {
    let t = table(6);
    let q = Query::default();
    let text = rendered(&t, &q, &TextFormat::Long);
    assert_eq!(text, long_as_cmctl_printed(&old_syntax(&t, &q)));
    assert!(text.contains("LastHeardFrom = 1700000005\n"), "{text}");
    assert!(
        text.starts_with("Alpha = \"q\\\"uote\"\nCpus = 1\n"),
        "{text}"
    );
}

#[test]
fn autoformat_is_what_cmctl_printed_from_the_projected_ads() {
    let t = table(6);
    for attrs in [
        vec!["Name"],
        vec!["Name", "State", "LoadAvg", "Cpus"],
        // An expression is evaluated in the projected ad (START is not in it), a negative
        // number is not a literal, a list, an attribute no ad has, and the collector's own.
        vec![
            "Requirements",
            "Disk",
            "zeta",
            "NoSuchAttr",
            "LastHeardFrom",
        ],
        vec!["Requirements", "Start", "Cpus"],
    ] {
        let attrs: Vec<String> = attrs.into_iter().map(String::from).collect();
        let q = Query {
            projection: attrs.clone(),
            ..Query::default()
        };
        let text = rendered(&t, &q, &TextFormat::Autoformat(attrs.clone()));
        assert_eq!(
            text,
            af_as_cmctl_printed(&old_syntax(&t, &q), &attrs),
            "{attrs:?}"
        );
        assert_eq!(text.lines().count(), 6);
    }
}

#[test]
fn a_constraint_selects_the_ads_rendered_in_the_table_s_order() {
    let t = table(8);
    let q = Query {
        constraint: Some(classad::parse_expr("State == \"Claimed\"").unwrap()),
        projection: vec!["Name".into()],
        ..Query::default()
    };
    let text = rendered(&t, &q, &TextFormat::Autoformat(q.projection.clone()));
    assert_eq!(
        text,
        af_as_cmctl_printed(&old_syntax(&t, &q), &q.projection)
    );
    assert_eq!(text.lines().count(), 4);
}

#[test]
fn a_constraint_over_a_large_pool_matches_alike_on_several_threads() {
    let t = table(5000);
    let q = Query {
        constraint: Some(classad::parse_expr("State == \"Claimed\" && Cpus > 1").unwrap()),
        ..Query::default()
    };
    let names = |threads| -> Vec<String> {
        let shown = t.try_query_shown(&q, u64::MAX, threads).unwrap();
        shown
            .iter()
            .map(|s| s.ad.eval_attr("Name").to_string())
            .collect()
    };
    let one = names(1);
    assert_eq!(one.len(), 1250);
    for threads in [2, 3, 8] {
        assert_eq!(names(threads), one, "{threads} threads");
    }
    // Over its budget the query is refused, in parallel as alone.
    for threads in [1, 2] {
        assert!(t.try_query_shown(&q, 1000, threads).is_err(), "{threads}");
    }
}

#[test]
fn private_attributes_are_never_rendered() {
    let t = table(3);
    let attrs: Vec<String> = ["ClaimId", "Capability", "Name"].map(String::from).to_vec();
    let q = Query {
        projection: attrs.clone(),
        ..Query::default()
    };
    let af = rendered(&t, &q, &TextFormat::Autoformat(attrs));
    assert_eq!(
        af.lines().next(),
        Some("undefined undefined slot0@h0"),
        "{af}"
    );
    let long = rendered(&t, &Query::default(), &TextFormat::Long);
    for text in [&af, &long] {
        assert!(!text.contains(SECRET), "{text}");
    }
    assert!(!long.to_ascii_lowercase().contains("claimid"), "{long}");
}

#[test]
fn chunks_are_whole_ads_in_order_whatever_the_threads() {
    let t = table(1203);
    let ads = t.try_query_shown(&Query::default(), u64::MAX, 1).unwrap();
    let format = TextFormat::Long;
    let whole = rendered(&t, &Query::default(), &format);
    for threads in [1, 2, 3] {
        let mut chunks = Vec::new();
        render_chunks(&ads, &format, threads, |c| {
            chunks.push(c);
            true
        })
        .unwrap();
        let per = format.ads_per_chunk();
        let sizes: Vec<usize> = chunks.iter().map(|c| c.matches("\n\n").count()).collect();
        assert_eq!(sizes, vec![per, per, 1203 - 2 * per], "{threads} threads");
        assert_eq!(chunks.concat(), whole, "{threads} threads");
    }
    // A client that goes away stops the rendering.
    let mut sent = 0;
    render_chunks(&ads, &format, 2, |_| {
        sent += 1;
        false
    })
    .unwrap();
    assert_eq!(sent, 1);
}

fn text_request(format: pb::QueryFormat, projection: &[&str]) -> pb::QueryTextRequest {
    pb::QueryTextRequest {
        query: Some(pb::QueryRequest {
            ad_type: "Machine".into(),
            projection: projection.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        }),
        format: format.into(),
    }
}

#[tokio::test]
async fn query_text_streams_the_rendered_text_and_refuses_what_it_cannot_render() {
    let t = table(700);
    let whole = rendered(&t, &Query::default(), &TextFormat::Long);
    let svc = CollectorService::new(Arc::new(RwLock::new(t)));
    let chunks: Vec<pb::QueryTextChunk> = svc
        .query_text(tonic::Request::new(text_request(
            pb::QueryFormat::Long,
            &[],
        )))
        .await
        .unwrap()
        .into_inner()
        .map(|r| r.unwrap())
        .collect()
        .await;
    assert_eq!(chunks.len(), 2);
    let text: Vec<u8> = chunks.into_iter().flat_map(|c| c.text).collect();
    assert_eq!(String::from_utf8(text).unwrap(), whole);
    for bad in [
        text_request(pb::QueryFormat::Autoformat, &[]),
        text_request(pb::QueryFormat::Unspecified, &["Name"]),
        pb::QueryTextRequest {
            format: 7,
            ..text_request(pb::QueryFormat::Long, &[])
        },
    ] {
        let e = svc
            .query_text(tonic::Request::new(bad))
            .await
            .err()
            .unwrap();
        assert_eq!(e.code(), tonic::Code::InvalidArgument, "{e}");
    }
    let mut bad = text_request(pb::QueryFormat::Long, &[]);
    bad.query.as_mut().unwrap().constraint = "State ==".into();
    assert!(svc.query_text(tonic::Request::new(bad)).await.is_err());
}
