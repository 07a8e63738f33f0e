//! Developer tool: read the differential harness's cached generated cases (JSON lines with the
//! reference's result) and print every case where this crate disagrees, for triage.
//! usage: cargo run -p classad --example diffdump -- FILE.jsonl [MAX]
use classad::{ClassAd, Expr};
use serde_json::{json, Value as Json};

fn parse_ad_text(text: &str) -> Result<ClassAd, classad::ParseError> {
    if text.trim_start().starts_with('[') {
        classad::parse_ad(text)
    } else {
        Ok(classad::parse_old_ads(text)?
            .into_iter()
            .next()
            .unwrap_or_default())
    }
}

fn agree(r: &Json, o: &Json) -> bool {
    let (rt, ot) = (r["type"].as_str(), o["type"].as_str());
    if rt != ot {
        return false;
    }
    let (rv, ov) = (&r["value"], &o["value"]);
    match rt {
        Some("real") | Some("reltime") => match (rv.as_f64(), ov.as_f64()) {
            (Some(x), Some(y)) => x == y || (x - y).abs() <= 1e-12 * x.abs().max(y.abs()),
            _ => rv == ov,
        },
        Some("parse_error") | Some("ad_parse_error") => true,
        Some("list") => match (rv.as_array(), ov.as_array()) {
            (Some(a), Some(b)) => a.len() == b.len() && a.iter().zip(b).all(|(x, y)| agree(x, y)),
            _ => rv == ov,
        },
        Some("classad") => match (rv.as_object(), ov.as_object()) {
            (Some(a), Some(b)) => {
                a.len() == b.len()
                    && a.iter().all(|(k, x)| {
                        b.iter()
                            .find(|(k2, _)| k2.eq_ignore_ascii_case(k))
                            .is_some_and(|(_, y)| agree(x, y))
                    })
            }
            _ => rv == ov,
        },
        _ => rv == ov,
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let text = std::fs::read_to_string(&args[1]).expect("read cases");
    let max: usize = args
        .get(2)
        .and_then(|s| s.parse().ok())
        .unwrap_or(usize::MAX);
    let (mut bad, mut total) = (0, 0);
    for line in text.lines() {
        let row: Json = serde_json::from_str(line).expect("json");
        if matches!(
            row["type"].as_str(),
            Some("reference_crash" | "reference_timeout" | "reference_exception")
        ) {
            continue;
        }
        total += 1;
        let my = parse_ad_text(row["my"].as_str().unwrap_or(""));
        let tg = parse_ad_text(row["target"].as_str().unwrap_or(""));
        let ours = match (my, tg) {
            (Ok(my), Ok(tg)) => match classad::parse_expr(row["expr"].as_str().unwrap_or("")) {
                Ok(e) => {
                    let e: Expr = e;
                    let v = my.eval_expr_with(&e, Some(&tg));
                    classad::json::encode(&my, Some(&tg), row["expr"].as_str().unwrap_or(""), &v)
                }
                Err(e) => json!({"type": "parse_error", "message": e.to_string()}),
            },
            (Err(e), _) | (_, Err(e)) => {
                json!({"type": "ad_parse_error", "message": e.to_string()})
            }
        };
        let mut reference = row.clone();
        if let Some(o) = reference.as_object_mut() {
            o.remove("expr");
            o.remove("my");
            o.remove("target");
        }
        if !agree(&reference, &ours) {
            bad += 1;
            if bad <= max {
                println!(
                    "EXPR {}\n  MY {}\n  TG {}\n  REF  {}\n  OURS {}",
                    row["expr"], row["my"], row["target"], reference, ours
                );
            }
        }
    }
    println!("{bad} of {total} disagree");
}
