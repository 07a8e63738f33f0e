//! `cmctl eval`: evaluate ClassAd expressions the way admins use `classad_eval`.
//!
//! Plain mode prints one unparsed value per expression. `--jsonl` mode is the machine
//! interface the differential harness speaks: one JSON object per input line, in order, with
//! the typed encoding described in issue 2 (see [`encode`]).
use anyhow::Context;
use classad::{ClassAd, Expr, Value};
use serde_json::{json, Map, Value as Json};
use std::io::{BufRead, Write};
use std::path::PathBuf;

/// Nesting depth past which lists and ads are written as `"depth-limit"` instead of their
/// contents (an ad can contain itself through references; the reference harness uses the same
/// limit).
const ENCODE_DEPTH_LIMIT: usize = 12;

/// Command-line arguments of `cmctl eval`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The ad MY refers to (new `[ ... ]` or old `Name = expr` lines syntax).
    #[arg(long, value_name = "FILE")]
    my: Option<PathBuf>,
    /// The ad TARGET refers to (new or old syntax).
    #[arg(long, value_name = "FILE")]
    target: Option<PathBuf>,
    /// Read {"expr", "my", "target"} JSON lines from standard input and write one typed JSON
    /// result per line.
    #[arg(long)]
    jsonl: bool,
    /// Expressions to evaluate.
    #[arg(value_name = "EXPR")]
    exprs: Vec<String>,
}

/// Runs the command; returns the process exit code.
pub fn run(args: Args) -> anyhow::Result<i32> {
    if args.jsonl {
        if !args.exprs.is_empty() || args.my.is_some() || args.target.is_some() {
            anyhow::bail!(
                "--jsonl reads everything from standard input; give no EXPR, --my or --target"
            );
        }
        let stdin = std::io::stdin();
        let stdout = std::io::stdout();
        run_jsonl(stdin.lock(), &mut stdout.lock())?;
        return Ok(0);
    }
    if args.exprs.is_empty() {
        anyhow::bail!("give at least one EXPR to evaluate (or --jsonl)");
    }
    let my = match &args.my {
        Some(p) => read_ad_file(p)?,
        None => ClassAd::new(),
    };
    let target = match &args.target {
        Some(p) => Some(read_ad_file(p)?),
        None => None,
    };
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let mut code = 0;
    for (i, text) in args.exprs.iter().enumerate() {
        match classad::parse_expr(text) {
            Ok(expr) => {
                let v = my.eval_expr_with(&expr, target.as_ref());
                writeln!(out, "{v}")?;
            }
            Err(err) => {
                eprintln!("cmctl eval: expression {} ({text:?}): {err}", i + 1);
                code = 1;
            }
        }
    }
    Ok(code)
}

fn read_ad_file(path: &PathBuf) -> anyhow::Result<ClassAd> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    parse_ad_text(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
}

/// Parses an ad in either syntax: new (`[ ... ]`) when the text starts with `[`, else old
/// (`Name = expr` lines; the first ad if there are several, an empty ad if there is none).
pub fn parse_ad_text(text: &str) -> Result<ClassAd, classad::ParseError> {
    if text.trim_start().starts_with('[') {
        classad::parse_ad(text)
    } else {
        Ok(classad::parse_old_ads(text)?
            .into_iter()
            .next()
            .unwrap_or_default())
    }
}

/// The `--jsonl` loop: every input line gives exactly one output line, in order.
pub fn run_jsonl(input: impl BufRead, out: &mut impl Write) -> anyhow::Result<()> {
    for (n, line) in input.lines().enumerate() {
        let line = line.context("reading standard input")?;
        if line.trim().is_empty() {
            continue;
        }
        let result = eval_json_line(&line, n + 1);
        serde_json::to_writer(&mut *out, &result)?;
        out.write_all(b"\n")?;
    }
    out.flush()?;
    Ok(())
}

fn parse_error(message: String) -> Json {
    json!({"type": "parse_error", "message": message})
}

/// One `--jsonl` input line to its result object.
pub fn eval_json_line(line: &str, line_no: usize) -> Json {
    let input: Json = match serde_json::from_str(line) {
        Ok(v) => v,
        Err(e) => return parse_error(format!("input line {line_no}: not JSON: {e}")),
    };
    let Some(expr_text) = input.get("expr").and_then(Json::as_str) else {
        return parse_error(format!("input line {line_no}: no \"expr\" string"));
    };
    let ad = |field: &str| -> Result<Option<ClassAd>, String> {
        match input.get(field) {
            None | Some(Json::Null) => Ok(None),
            Some(Json::String(text)) => parse_ad_text(text)
                .map(Some)
                .map_err(|e| format!("input line {line_no}: {field} ad: {e}")),
            Some(_) => Err(format!(
                "input line {line_no}: \"{field}\" must be a string"
            )),
        }
    };
    let my = match ad("my") {
        Ok(a) => a.unwrap_or_default(),
        Err(e) => return parse_error(e),
    };
    let target = match ad("target") {
        Ok(a) => a,
        Err(e) => return parse_error(e),
    };
    let expr = match classad::parse_expr(expr_text) {
        Ok(e) => e,
        Err(e) => return parse_error(format!("input line {line_no}: expr: {e}")),
    };
    let ctx = EvalContext {
        my: &my,
        target: target.as_ref(),
    };
    let v = ctx.eval(&expr);
    encode(&ctx, expr_text, &v, 0)
}

/// The match context an expression is evaluated in.
struct EvalContext<'a> {
    my: &'a ClassAd,
    target: Option<&'a ClassAd>,
}

impl EvalContext<'_> {
    fn eval(&self, e: &Expr) -> Value {
        self.my.eval_expr_with(e, self.target)
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

/// Encodes `v`, the value of the expression text `path`. A ClassAd's attributes are each
/// evaluated in their ad, in the same match context, as the expression `(path).name`.
fn encode(ctx: &EvalContext, path: &str, v: &Value, depth: usize) -> Json {
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
                .map(|(i, item)| encode(ctx, &format!("({path})[{i}]"), item, depth + 1))
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
                let value = match classad::parse_expr(&sub) {
                    Ok(e) => ctx.eval(&e),
                    Err(_) => Value::Error,
                };
                attrs.insert(name.to_string(), encode(ctx, &sub, &value, depth + 1));
            }
            typed("classad", Json::Object(attrs))
        }
    }
}
