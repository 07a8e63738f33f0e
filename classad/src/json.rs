//! Evaluated values as JSON, in the encoding `cmctl eval --jsonl` prints and the differential
//! harness compares against HTCondor's libclassad: `{"type": T, "value": V}` with T one of
//! `undefined`, `error`, `boolean`, `integer`, `real`, `string`, `list`, `classad`, `abstime`,
//! `reltime`. One encoder for both, so what the harness checks is what admins get.
use crate::{ClassAd, Value};
use serde_json::{json, Map, Value as Json};

/// How deep lists and ads are encoded; deeper ones (e.g. a self-containing list) encode as
/// `"depth-limit"`. The reference side of the harness stops at the same depth.
pub const ENCODE_DEPTH_LIMIT: usize = 12;

/// Parses and evaluates `expr_text` in the match context (MY = `my`, TARGET = `target`) and
/// encodes the result; text that does not parse gives `{"type": "parse_error", "message"}`.
pub fn evaluate(expr_text: &str, my: &ClassAd, target: Option<&ClassAd>) -> Json {
    match crate::parse_expr(expr_text) {
        Ok(e) => encode(my, target, expr_text, &my.eval_expr_with(&e, target)),
        Err(e) => json!({"type": "parse_error", "message": e.to_string()}),
    }
}

/// Encodes `v`, the value of the expression text `path` in the match context (MY = `my`,
/// TARGET = `target`). A ClassAd's attributes are each evaluated in their ad, in the same
/// context, as the expression `(path).name`; a list's elements as `(path)[i]`.
pub fn encode(my: &ClassAd, target: Option<&ClassAd>, path: &str, v: &Value) -> Json {
    encode_at(my, target, path, v, 0)
}

fn encode_at(my: &ClassAd, target: Option<&ClassAd>, path: &str, v: &Value, depth: usize) -> Json {
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
            if depth >= ENCODE_DEPTH_LIMIT {
                return typed("list", Json::from("depth-limit"));
            }
            let elems = items
                .iter()
                .enumerate()
                .map(|(i, item)| encode_at(my, target, &format!("({path})[{i}]"), item, depth + 1))
                .collect();
            typed("list", Json::Array(elems))
        }
        Value::Ad(ad) => {
            if depth >= ENCODE_DEPTH_LIMIT {
                return typed("classad", Json::from("depth-limit"));
            }
            let mut attrs = Map::new();
            for (name, _) in ad.iter() {
                let sub = member(path, name);
                let value =
                    crate::parse_expr(&sub).map_or(Value::Error, |e| my.eval_expr_with(&e, target));
                attrs.insert(
                    name.to_string(),
                    encode_at(my, target, &sub, &value, depth + 1),
                );
            }
            typed("classad", Json::Object(attrs))
        }
    }
}

fn typed(t: &str, v: Json) -> Json {
    json!({"type": t, "value": v})
}

/// A real as JSON: a number, or "inf"/"-inf"/"nan" where JSON has none.
fn real(r: f64) -> Json {
    if r.is_nan() {
        Json::from("nan")
    } else if r.is_infinite() {
        Json::from(if r > 0.0 { "inf" } else { "-inf" })
    } else {
        serde_json::Number::from_f64(r).map_or(Json::Null, Json::Number)
    }
}

/// A ClassAd string literal for `s` (to build `(E)["name"]`).
fn quote(s: &str) -> String {
    let mut q = String::with_capacity(s.len() + 2);
    q.push('"');
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

/// `(path).name`: the attribute `name` of the ad `path` evaluates to. Selection, not a
/// subscript: libclassad's `ad["name"]` returns nested ads without their enclosing scope, so
/// `.name` is what "evaluated in its ad" means; names that are not plain identifiers (or are
/// keywords) fall back to `["name"]`.
fn member(path: &str, name: &str) -> String {
    const RESERVED: [&str; 9] = [
        "true",
        "false",
        "undefined",
        "error",
        "is",
        "isnt",
        "my",
        "target",
        "parent",
    ];
    let mut chars = name.chars();
    let ident = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !RESERVED.iter().any(|r| r.eq_ignore_ascii_case(name));
    if ident {
        format!("({path}).{name}")
    } else {
        format!("({path})[{}]", quote(name))
    }
}
