//! Developer tool: evaluate one expression per stdin line and print `type value` in the
//! canonical form used to compare against the reference by hand (see classad/README notes).
use classad::printf::{Conversion, Spec};
use classad::Value;
use std::io::BufRead;

fn canon(v: &Value, out: &mut String) {
    match v {
        Value::Undefined => out.push_str("undefined"),
        Value::Error => out.push_str("error"),
        Value::Bool(b) => out.push_str(&format!("bool {}", b)),
        Value::Int(i) => out.push_str(&format!("int {}", i)),
        Value::Real(r) => out.push_str(&format!("real {}", canon_real(*r))),
        Value::Str(s) => out.push_str(&format!(
            "str {}",
            s.bytes().map(|b| format!("{:02x}", b)).collect::<String>()
        )),
        Value::List(l) => {
            out.push_str("list [");
            for (i, x) in l.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                canon(x, out);
            }
            out.push(']');
        }
        Value::Ad(_) => out.push_str("classad"),
        Value::AbsTime { secs, .. } => out.push_str(&format!("abstime {}", secs)),
        Value::RelTime(r) => out.push_str(&format!("reltime {}", canon_real(*r))),
    }
}

fn canon_real(r: f64) -> String {
    if r.is_nan() {
        "nan".into()
    } else if r.is_infinite() {
        if r > 0.0 {
            "inf".into()
        } else {
            "-inf".into()
        }
    } else {
        Spec::new(Conversion::Exponent, 15).format(r)
    }
}

fn main() {
    let my = std::env::var("MY")
        .ok()
        .map(|t| classad::parse_ad(&t).expect("MY parses"));
    let target = std::env::var("TARGET")
        .ok()
        .map(|t| classad::parse_ad(&t).expect("TARGET parses"));
    for line in std::io::stdin().lock().lines() {
        let line = line.unwrap();
        if line.is_empty() {
            continue;
        }
        match classad::parse_expr(&line) {
            Err(e) => println!("PARSE_ERROR {}", e),
            Ok(e) => {
                let v = match &my {
                    Some(m) => m.eval_expr_with(&e, target.as_ref()),
                    None => classad::eval(&e),
                };
                let mut s = String::new();
                canon(&v, &mut s);
                println!("{} | {}", s, e);
            }
        }
    }
}
