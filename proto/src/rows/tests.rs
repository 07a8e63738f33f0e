use super::*;
use crate::schedd::QueryReply;

/// What the text path delivers for `ad` cut to `names`: the attributes as old syntax prints
/// and reads them back.
fn by_text(ad: &ClassAd, names: &[&str]) -> ClassAd {
    let back = classad::parse_ad(&ad.to_old_syntax()).unwrap();
    let mut out = ClassAd::new();
    for n in names {
        if let Some(e) = back.lookup(n) {
            out.insert(n, e.clone());
        }
    }
    out
}

fn rows(ads: &[ClassAd], projection: &[&str]) -> QueryReply {
    let p: Vec<String> = projection.iter().map(|s| s.to_string()).collect();
    let mut w = RowWriter::new(&p);
    for a in ads {
        w.push(a);
    }
    w.finish()
}

#[test]
fn every_kind_of_value_reads_back_as_the_text_path_reads_it() {
    let ad = classad::parse_ad(
        "I = -42\nR = 0.1\nLong = 3.141592653589793238\nHuge = 1.0E300\nS = \"say \\\"hi\\\" \\\\ there\"\n\
         B = true\nU = undefined\nE = error\nL = { 1, \"a\" }\nRss = 5000\n\
         MemoryUsage = ((Rss + 1023) / 1024)\nDeep = MemoryUsage * 2\nLoop = Loop + 1",
    )
    .unwrap();
    let projection = [
        "I", "R", "Long", "Huge", "S", "B", "U", "E", "L", "Deep", "Loop", "Gone",
    ];
    let reply = rows(std::slice::from_ref(&ad), &projection);
    let got = read_ads(&reply).unwrap();
    assert_eq!(got.len(), 1);
    let want = by_text(
        &ad,
        &[
            "I",
            "R",
            "Long",
            "Huge",
            "S",
            "B",
            "U",
            "E",
            "L",
            "Deep",
            "Loop",
            "MemoryUsage",
            "Rss",
        ],
    );
    assert_eq!(got[0], want, "columns {:?}", reply.columns);
    // The referred attributes follow the projection; a missing one has no cell.
    assert_eq!(&reply.columns[..12], &projection.map(String::from));
    assert_eq!(reply.columns.len(), 14, "{:?}", reply.columns);
    assert_eq!(got[0].eval_attr("Deep").as_int(), Some(10));
    // Integers, strings and booleans go typed, not as text.
    let kinds: Vec<&cell::Value> = reply.rows[0]
        .cells
        .iter()
        .filter_map(|c| c.value.as_ref())
        .collect();
    assert!(matches!(kinds[0], cell::Value::Int(-42)), "{kinds:?}");
    let said = ad.eval_attr("S");
    assert!(matches!(kinds[4], cell::Value::Str(s) if Some(s.as_str()) == said.as_str()));
    assert!(matches!(kinds[5], cell::Value::Bool(true)));
}

#[test]
fn a_projection_names_each_attribute_once_and_jobs_share_equal_cells() {
    let ads: Vec<ClassAd> = (0..3)
        .map(|p| {
            classad::parse_ad(&format!(
                "ClusterId = 5\nProcId = {p}\nOwner = \"bob\"\nM = (Rss + {p})\nRss = 1"
            ))
            .unwrap()
        })
        .collect();
    let reply = rows(
        &ads,
        &["ClusterId", "procid", "ProcId", "CLUSTERID", "Owner", "M"],
    );
    assert_eq!(reply.columns, ["ClusterId", "procid", "Owner", "M", "rss"]);
    let got = read_ads(&reply).unwrap();
    for (g, a) in got.iter().zip(&ads) {
        assert_eq!(g.eval_attr("ProcId"), a.eval_attr("ProcId"));
        assert_eq!(g.eval_attr("M"), a.eval_attr("M"));
        assert_eq!(g.len(), 5);
    }
}

#[test]
fn an_answer_in_ads_is_parsed() {
    let reply = QueryReply {
        ads: vec!["A = 1\nB = \"x\"\n".into(), "A = 2\n".into()],
        ..QueryReply::default()
    };
    let got = read_ads(&reply).unwrap();
    assert_eq!(got.len(), 2);
    assert_eq!(got[1].eval_attr("A").as_int(), Some(2));
}

#[test]
fn a_bad_row_is_named() {
    let mut reply = rows(&[classad::parse_ad("A = 1").unwrap()], &["A"]);
    reply.rows[0].cells[0].column = 7;
    let e = read_ads(&reply).err().unwrap();
    assert!(e.contains("row 0") && e.contains("column 7"), "{e}");
    let mut reply = rows(&[classad::parse_ad("A = B + 1").unwrap()], &["A"]);
    reply.rows[0].cells[0].value = Some(cell::Value::Expr("(1 +".into()));
    let e = read_ads(&reply).err().unwrap();
    assert!(e.contains("row 0") && e.contains("attribute A"), "{e}");
}
