//! The compiled matchmaking path (`matches`, `rank`, `requirements_value`, `rank_value`) must
//! give exactly what the interpreter gives, which the differential suite holds to the
//! reference. Here every generated differential case (of both corpora) becomes the
//! `Requirements` (and `Rank`) of its MY ad, then of its TARGET ad, and both paths must return
//! identical values.
mod common;

use classad::{ClassAd, Value};
use common::*;
use serde_json::Value as Json;

fn ad(case: &Json, field: &str) -> Option<ClassAd> {
    match case.get(field).and_then(Json::as_str) {
        None => Some(ClassAd::new()),
        Some(t) => parse_ad_text(t).ok(),
    }
}

/// Interpreter's value of `ad.<attr>` in a match against `other`, as `matches`/`rank` define
/// it (None when the ad has no such attribute).
fn interpreted(ad: &ClassAd, other: &ClassAd, attr: &str) -> Option<Value> {
    ad.lookup(attr)
        .map(|e| ad.eval_expr_with(&e.clone(), Some(other)))
}

fn same(a: &Option<Value>, b: &Option<Value>) -> bool {
    match (a, b) {
        (Some(x), Some(y)) => x == y,
        (None, None) => true,
        _ => false,
    }
}

#[test]
fn compiled_matcher_agrees_with_interpreter() {
    let count = std::env::var("AERIE_DIFF_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let list_count = std::env::var("AERIE_DIFF_LIST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    // Both corpora: random expressions, and lists and nested ads.
    let mut rows = generated_cases(1, count);
    rows.extend(generated_corpus("lists", 1, list_count));
    let mut checked = 0;
    let mut bad = Vec::new();
    for row in &rows {
        let (Some(my), Some(target)) = (ad(row, "my"), ad(row, "target")) else {
            continue;
        };
        let Some(text) = row["expr"].as_str() else {
            continue;
        };
        let Ok(expr) = classad::parse_expr(text) else {
            continue;
        };
        for (holder, other) in [(&my, &target), (&target, &my)] {
            let mut holder = holder.clone();
            holder.insert("Requirements", expr.clone());
            holder.insert("Rank", expr.clone());
            let want = interpreted(&holder, other, "Requirements");
            let got = classad::matching::requirements_value(&holder, other);
            let rank_got = classad::matching::rank_value(&holder, other);
            checked += 1;
            if !same(&want, &got) || !same(&want, &rank_got) {
                bad.push(format!(
                    "expr {text}\n  holder {holder}\n  other {other}\n  interpreter {want:?}\n  compiled {got:?} / rank {rank_got:?}"
                ));
            }
            // The boolean API agrees with the value.
            assert_eq!(
                classad::matches(&holder, other),
                want.as_ref().is_some_and(Value::is_true),
                "matches() for {text}"
            );
        }
    }
    assert!(
        checked > count + list_count,
        "only {checked} cases could be checked"
    );
    assert!(
        bad.is_empty(),
        "{} of {checked} cases differ between the compiled and interpreted paths; first ones:\n{}",
        bad.len(),
        bad.iter().take(10).cloned().collect::<Vec<_>>().join("\n")
    );
}
