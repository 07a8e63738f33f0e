//! `cmctl eval`: evaluate ClassAd expressions the way admins use `classad_eval`.
//!
//! Plain mode prints one unparsed value per expression. `--jsonl` mode is the machine
//! interface the differential harness speaks: one JSON object per input line, in order, with
//! the typed encoding described in issue 2 (see [`encode`]).
use anyhow::Context;
use classad::ClassAd;
use serde_json::{json, Value as Json};
use std::io::{BufRead, Write};
use std::path::PathBuf;

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
    let value = my.eval_expr_with(&expr, target.as_ref());
    classad::json::encode(&my, target.as_ref(), expr_text, &value)
}
