//! Shared machinery of the differential tests: finding the reference libclassad, running the
//! generator/oracle script (tests/reference/classad_gen.py), encoding our values in the same
//! JSON shape, and comparing.
#![allow(dead_code)]

pub mod known;

use classad::ClassAd;
use serde_json::{json, Map, Value as Json};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The reference Python (HTCondor's libclassad in a venv); panics with how to install it.
pub fn reference_python() -> PathBuf {
    let dir = std::env::var_os("AERIE_REFERENCE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/var/lib/aerie-reference"));
    let py = dir.join("venv/bin/python");
    if !py.exists() {
        panic!(
            "the reference libclassad is not installed ({} is missing): run \
             `scripts/reference.sh classad` (CI installs it; set AERIE_REFERENCE_DIR if it lives \
             elsewhere)",
            py.display()
        );
    }
    py
}

/// tests/reference/classad_gen.py in the workspace.
pub fn generator_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/reference/classad_gen.py")
}

/// Runs the script with `args`, feeding `input` lines on stdin; returns its JSON lines.
pub fn run_script(args: &[&str], input: &[Json]) -> Vec<Json> {
    let py = reference_python();
    let mut child = Command::new(&py)
        .arg(generator_script())
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", py.display()));
    let mut stdin = child.stdin.take().expect("stdin is piped");
    let text: String = input.iter().map(|j| format!("{j}\n")).collect();
    let writer = std::thread::spawn(move || {
        stdin
            .write_all(text.as_bytes())
            .expect("writing to the reference script");
    });
    let out = child.wait_with_output().expect("reference script output");
    writer.join().expect("writer thread");
    assert!(
        out.status.success(),
        "reference script failed: {:?}",
        out.status
    );
    parse_lines(&String::from_utf8_lossy(&out.stdout))
}

pub fn parse_lines(text: &str) -> Vec<Json> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad JSON line {l:?}: {e}")))
        .collect()
}

/// FNV-1a, to key the cache on the generator's exact text.
pub fn fnv64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf29ce484222325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x100000001b3);
    }
    h
}

/// Generated cases of the general corpus with the reference's results (see
/// [`generated_corpus`]).
pub fn generated_cases(seed: u64, count: usize) -> Vec<Json> {
    generated_corpus("general", seed, count)
}

/// Generated cases of `corpus` (the generator's `--corpus`: "general", random expressions, or
/// "lists", lists and nested ads) with the reference's results, cached in the temp dir by
/// generator hash, corpus, seed and count (generating 100,000 general cases takes the
/// reference ~30 s; reading the cache, ~1 s).
pub fn generated_corpus(corpus: &str, seed: u64, count: usize) -> Vec<Json> {
    // Tests run in parallel threads and, under nextest, in parallel processes: an exclusive
    // lock on a file beside the cache makes exactly one of them generate it while the others
    // wait, then read it (the generator also writes under a name of its own before renaming).
    static GENERATING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _guard = GENERATING.lock().unwrap_or_else(|p| p.into_inner());
    let script = std::fs::read(generator_script()).expect("reading classad_gen.py");
    let dir = std::env::temp_dir().join("aerie-classad-diff");
    std::fs::create_dir_all(&dir).expect("creating the cache dir");
    let tag = if corpus == "general" {
        String::new()
    } else {
        format!("{corpus}-")
    };
    let file = dir.join(format!(
        "gen-{:016x}-{tag}{seed}-{count}.jsonl",
        fnv64(&script)
    ));
    let lock = std::fs::File::create(file.with_extension("lock")).expect("creating the cache lock");
    lock.lock().expect("locking the cache");
    if !file.exists() {
        let py = reference_python();
        let status = Command::new(&py)
            .arg(generator_script())
            .args([
                "--corpus",
                corpus,
                "--seed",
                &seed.to_string(),
                "--count",
                &count.to_string(),
                "--out",
            ])
            .arg(&file)
            .status()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", py.display()));
        assert!(status.success(), "classad_gen.py failed: {status:?}");
    }
    parse_lines(&std::fs::read_to_string(&file).expect("reading the cached cases"))
}

/// Parses ad text in either syntax, as cmctl eval does.
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

/// Our result for one {"expr","my","target"} case, in the reference's encoding.
pub fn eval_case(case: &Json) -> Json {
    let ad = |field: &str| match case.get(field).and_then(Json::as_str) {
        None => Ok(ClassAd::new()),
        Some(t) => parse_ad_text(t),
    };
    let (my, target) = match (ad("my"), ad("target")) {
        (Ok(m), Ok(t)) => (m, t),
        (Err(e), _) | (_, Err(e)) => {
            return json!({"type": "ad_parse_error", "message": e.to_string()})
        }
    };
    let text = case["expr"].as_str().unwrap_or_default();
    let expr = match classad::parse_expr(text) {
        Ok(e) => e,
        Err(e) => return json!({"type": "parse_error", "message": e.to_string()}),
    };
    let value = my.eval_expr_with(&expr, Some(&target));
    classad::json::encode(&my, Some(&target), text, &value)
}

/// Reals agree to 1e-12 relative (NaN with NaN, infinities by sign).
pub fn reals_agree(a: &Json, b: &Json) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => x == y || (x - y).abs() <= 1e-12 * x.abs().max(y.abs()),
        _ => a == b, // "inf", "-inf", "nan"
    }
}

/// Same type and value: integers, strings, booleans and times exactly, reals and reltimes to
/// 1e-12 relative, lists elementwise, ads by attribute name (case-insensitively, as ClassAd
/// names are) and value.
pub fn agree(reference: &Json, ours: &Json) -> bool {
    let (rt, ot) = (reference["type"].as_str(), ours["type"].as_str());
    if rt != ot {
        return false;
    }
    let (rv, ov) = (&reference["value"], &ours["value"]);
    match rt {
        Some("real") | Some("reltime") => reals_agree(rv, ov),
        Some("parse_error") | Some("ad_parse_error") => true,
        Some("list") => match (rv.as_array(), ov.as_array()) {
            (Some(a), Some(b)) => a.len() == b.len() && a.iter().zip(b).all(|(x, y)| agree(x, y)),
            _ => rv == ov,
        },
        Some("classad") => match (rv.as_object(), ov.as_object()) {
            (Some(a), Some(b)) => {
                let lower = |m: &Map<String, Json>| -> BTreeMap<String, Json> {
                    m.iter()
                        .map(|(k, v)| (k.to_lowercase(), v.clone()))
                        .collect()
                };
                let (a, b) = (lower(a), lower(b));
                a.len() == b.len() && a.iter().all(|(k, x)| b.get(k).is_some_and(|y| agree(x, y)))
            }
            _ => rv == ov,
        },
        _ => rv == ov,
    }
}

/// Types of rows the reference could not judge.
pub fn reference_could_not_judge(row: &Json) -> bool {
    matches!(
        row["type"].as_str(),
        Some("reference_crash") | Some("reference_timeout") | Some("reference_exception")
    )
}

/// Function names and operators in an expression text, to count disagreements by feature.
pub fn features(expr: &str) -> Vec<String> {
    let mut out = Vec::new();
    let chars: Vec<char> = expr.chars().collect();
    let mut i = 0;
    let mut in_str = false;
    while i < chars.len() {
        let c = chars[i];
        if in_str {
            if c == '\\' {
                i += 1;
            } else if c == '"' {
                in_str = false;
            }
            i += 1;
            continue;
        }
        if c == '"' {
            in_str = true;
            i += 1;
            continue;
        }
        if c.is_ascii_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            let mut j = i;
            while j < chars.len() && chars[j] == ' ' {
                j += 1;
            }
            let lw = word.to_lowercase();
            if j < chars.len() && chars[j] == '(' {
                out.push(format!("{lw}()"));
            } else if lw == "is" || lw == "isnt" {
                out.push(lw);
            }
            continue;
        }
        for op in [
            ">>>", "=?=", "=!=", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "?:", "*", "/",
            "%", "+", "-", "<", ">", "&", "^", "|", "!", "~", "?", "[",
        ] {
            if chars[i..].iter().take(op.len()).copied().eq(op.chars()) {
                out.push(if op == "[" {
                    "subscript".into()
                } else {
                    op.to_string()
                });
                i += op.len() - 1;
                break;
            }
        }
        i += 1;
    }
    out.sort();
    out.dedup();
    out
}

/// One disagreement, printable.
pub fn describe(case: &Json, reference: &Json, ours: &Json) -> String {
    let mut s = format!("expr:      {}\n", case["expr"].as_str().unwrap_or_default());
    for f in ["my", "target"] {
        if let Some(t) = case.get(f).and_then(Json::as_str) {
            if !t.is_empty() {
                s.push_str(&format!("{f:<10} {}\n", t.replace('\n', "\\n")));
            }
        }
    }
    let strip = |j: &Json| {
        let mut j = j.clone();
        if let Some(o) = j.as_object_mut() {
            o.remove("expr");
            o.remove("my");
            o.remove("target");
        }
        j
    };
    s.push_str(&format!(
        "reference: {}\nours:      {}\n",
        strip(reference),
        strip(ours)
    ));
    s
}

/// Cases agreed, cases skipped, and the disagreeing (case, reference row) pairs.
type Tally = (usize, usize, Vec<(Json, Json)>);

/// Compares (case, reference row) pairs in parallel; returns (agreed, skipped, disagreements).
pub fn compare_all(rows: &[Json]) -> Tally {
    let threads = std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .min(4);
    let chunk = rows.len().div_ceil(threads).max(1);
    let results: Vec<Tally> = std::thread::scope(|s| {
        let handles: Vec<_> = rows
            .chunks(chunk)
            .map(|part| {
                s.spawn(move || {
                    let (mut ok, mut skipped, mut bad) = (0, 0, Vec::new());
                    for row in part {
                        if reference_could_not_judge(row) {
                            skipped += 1;
                            continue;
                        }
                        let ours = eval_case(row);
                        if agree(row, &ours) {
                            ok += 1;
                        } else {
                            bad.push((row.clone(), ours));
                        }
                    }
                    (ok, skipped, bad)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("comparison thread panicked"))
            .collect()
    });
    let mut total = (0, 0, Vec::new());
    for (ok, skipped, bad) in results {
        total.0 += ok;
        total.1 += skipped;
        total.2.extend(bad);
    }
    total
}

/// A failure report: the first `shown` disagreements and a count by function/operator.
pub fn report(
    title: &str,
    total: usize,
    skipped: usize,
    bad: &[(Json, Json)],
    shown: usize,
) -> String {
    let mut s = format!(
        "{title}: {} of {total} cases disagree with the reference ({skipped} the reference could \
         not judge)\n\n",
        bad.len()
    );
    for (row, ours) in bad.iter().take(shown) {
        s.push_str(&describe(row, row, ours));
        s.push('\n');
    }
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for (row, _) in bad {
        for f in features(row["expr"].as_str().unwrap_or_default()) {
            *counts.entry(f).or_default() += 1;
        }
    }
    let mut counts: Vec<_> = counts.into_iter().collect();
    counts.sort_by_key(|c| std::cmp::Reverse(c.1));
    s.push_str("disagreements by function/operator (a case counts once for each it contains):\n");
    for (f, n) in counts {
        s.push_str(&format!("  {n:>7}  {f}\n"));
    }
    s
}
