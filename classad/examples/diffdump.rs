//! Developer tool: read the differential harness's cached generated cases (JSON lines with the
//! reference's result) and print every case where this crate disagrees, for triage.
//! usage: cargo run -p classad --example diffdump -- FILE.jsonl [MAX]
use classad::{ClassAd, Expr, Value};
use serde_json::{json, Map, Value as Json};

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

fn real(r: f64) -> Json {
    if r.is_nan() {
        Json::from("nan")
    } else if r.is_infinite() {
        Json::from(if r > 0.0 { "inf" } else { "-inf" })
    } else {
        serde_json::Number::from_f64(r).map_or(Json::Null, Json::Number)
    }
}

fn quote(s: &str) -> String {
    let mut q = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => q.push_str("\\\""),
            '\\' => q.push_str("\\\\"),
            '\n' => q.push_str("\\n"),
            '\t' => q.push_str("\\t"),
            c => q.push(c),
        }
    }
    q.push('"');
    q
}

fn enc(my: &ClassAd, t: &ClassAd, path: &str, v: &Value, depth: usize) -> Json {
    let typed = |ty: &str, v: Json| json!({"type": ty, "value": v});
    match v {
        Value::Undefined => typed("undefined", Json::Null),
        Value::Error => typed("error", Json::Null),
        Value::Bool(b) => typed("boolean", Json::from(*b)),
        Value::Int(i) => typed("integer", Json::from(*i)),
        Value::Real(r) => typed("real", real(*r)),
        Value::Str(s) => typed("string", Json::from(&**s)),
        Value::AbsTime { secs, .. } => typed("abstime", Json::from(*secs)),
        Value::RelTime(r) => typed("reltime", real(*r)),
        Value::List(items) => {
            if depth >= 4 {
                return typed("list", Json::from("depth-limit"));
            }
            typed(
                "list",
                Json::Array(
                    items
                        .iter()
                        .enumerate()
                        .map(|(i, x)| enc(my, t, &format!("({path})[{i}]"), x, depth + 1))
                        .collect(),
                ),
            )
        }
        Value::Ad(ad) => {
            if depth >= 4 {
                return typed("classad", Json::from("depth-limit"));
            }
            let mut m = Map::new();
            for (name, _) in ad.iter() {
                let sub = format!("({path})[{}]", quote(name));
                let value = classad::parse_expr(&sub)
                    .map_or(Value::Error, |e| my.eval_expr_with(&e, Some(t)));
                m.insert(name.to_string(), enc(my, t, &sub, &value, depth + 1));
            }
            typed("classad", Json::Object(m))
        }
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
                    enc(&my, &tg, row["expr"].as_str().unwrap_or(""), &v, 0)
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
