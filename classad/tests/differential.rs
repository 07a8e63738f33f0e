//! Differential conformance against HTCondor's own libclassad (the reference), through
//! tests/reference/classad_gen.py:
//!
//! - `generated_cases_agree`: 100,000 seeded random expressions over two random ads
//!   (AERIE_DIFF_CASES / AERIE_DIFF_SEED to run more or others), evaluated by both engines;
//! - `generated_list_cases_agree`: 20,000 seeded cases of lists and nested ads whose elements
//!   refer to attributes, in every position (the generator's `--corpus lists`;
//!   AERIE_DIFF_LIST_CASES / AERIE_DIFF_LIST_SEED);
//! - `hand_written_cases_agree`: every line of tests/cases/*.txt, judged by the reference;
//! - `unparse_agrees`: our Display of parsed expressions vs the reference's unparser;
//! - `old_syntax_ads_agree`: old-syntax (`condor_status -long`) ad parsing.
//!
//! The reference judges: a disagreement is our bug unless a test in pinned.rs says why we
//! deliberately differ, or tests/known_differences.txt pins it (reference's result, ours and the
//! cause; those cases are excluded from the generic comparison and asserted to still differ
//! exactly as recorded, see common/known.rs). Without the reference every test here fails and says how to install it
//! (`scripts/reference.sh classad`).
mod common;

use common::known::{case_key, dump_new, known_differences, result_only};
use common::*;
use serde_json::{json, Value as Json};
use std::collections::{HashMap, HashSet};
use std::path::Path;

/// How many disagreements a failure prints (AERIE_DIFF_SHOW to see more).
fn shown() -> usize {
    env_num("AERIE_DIFF_SHOW", 30) as usize
}

fn env_num(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(v) => v
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{name}={v:?} is not a number")),
        Err(_) => default,
    }
}

#[test]
fn reference_is_installed() {
    // Fails (with how to install it) when the venv is missing.
    let py = reference_python();
    let out = std::process::Command::new(&py)
        .args([
            "-c",
            "import htcondor2, classad2; print(classad2.ExprTree('1 + 1').eval())",
        ])
        .output()
        .expect("running the reference python");
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).trim() == "2",
        "the reference libclassad at {} does not work: {}; run `scripts/reference.sh classad`",
        py.display(),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn generated_cases_agree() {
    check_generated(
        "general",
        "generated",
        env_num("AERIE_DIFF_SEED", 1),
        env_num("AERIE_DIFF_CASES", 100_000) as usize,
        100_000,
    );
}

/// The list and nested-ad corpus (the generator's `--corpus lists`): lists and nested ads whose
/// elements refer to attributes, call functions, subscript and select, in every position
/// (AERIE_DIFF_LIST_CASES / AERIE_DIFF_LIST_SEED to run more or others).
#[test]
fn generated_list_cases_agree() {
    check_generated(
        "lists",
        "lists",
        env_num("AERIE_DIFF_LIST_SEED", 1),
        env_num("AERIE_DIFF_LIST_CASES", 20_000) as usize,
        20_000,
    );
}

/// Generated cases of `corpus` against the reference; known differences are those of `suite`
/// (checked for staleness with seed 1 and the default count).
fn check_generated(corpus: &str, suite: &str, seed: u64, count: usize, default_count: usize) {
    let rows = generated_corpus(corpus, seed, count);
    assert_eq!(
        rows.len(),
        count,
        "the generator wrote {} rows, wanted {count}",
        rows.len()
    );
    let (ok, skipped, bad) = compare_all(&rows);
    // Known differences: excluded from the generic comparison, asserted to still be as recorded.
    let known = known_differences(suite);
    let known_keys: HashSet<_> = known.iter().map(|k| k.key()).collect();
    let mut problems = Vec::new();
    let mut found = HashSet::new();
    for row in &rows {
        let key = case_key(row);
        if !known_keys.contains(&key) || !found.insert(key.clone()) {
            continue;
        }
        for k in known.iter().filter(|k| k.key() == key) {
            problems.extend(k.check_result(&result_only(row), &eval_case(row)));
        }
    }
    if seed == 1 && count == default_count {
        problems.extend(
            known
                .iter()
                .filter(|k| !found.contains(&k.key()))
                .map(|k| k.stale()),
        );
    }
    let bad: Vec<_> = bad
        .into_iter()
        .filter(|(row, _)| !known_keys.contains(&case_key(row)))
        .collect();
    dump_new(
        suite,
        &bad.iter()
            .map(|(row, ours)| (row.clone(), result_only(row), ours.clone()))
            .collect::<Vec<_>>(),
    );
    let judged = count - skipped;
    eprintln!(
        "{corpus} corpus (seed {seed}): {ok} agree, {} disagree, {} known differences (pinned), \
         {skipped} not judged: {:.3}% of {judged} judged cases agree",
        bad.len(),
        found.len(),
        100.0 * ok as f64 / judged.max(1) as f64
    );
    assert!(
        problems.is_empty(),
        "known differences (tests/known_differences.txt) are not as recorded:\n{}",
        problems.join("\n")
    );
    assert!(
        bad.is_empty(),
        "{}",
        report(
            &format!("{corpus} corpus (seed {seed})"),
            count,
            skipped,
            &bad,
            shown()
        )
    );
}

/// One hand-written case: where it comes from and the {expr, my, target} to evaluate.
struct HandCase {
    origin: String,
    case: Json,
}

/// Reads tests/cases/*.txt. Format, line by line:
///   `# ...` comment; blank lines are ignored;
///   `@my AD` / `@target AD` set the ad (new syntax, one line) for the following cases;
///   `@my-old` / `@target-old` take the following lines, up to `@end`, as an old-syntax ad;
///   `@clear` empties both ads; any other line is one expression.
fn hand_written_cases() -> Vec<HandCase> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cases");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "txt"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).expect("reading a cases file");
        let name = file
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let (mut my, mut target) = (String::new(), String::new());
        let mut lines = text.lines().enumerate();
        while let Some((n, raw)) = lines.next() {
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            if let Some(rest) = line
                .strip_prefix("@my-old")
                .or(line.strip_prefix("@target-old"))
            {
                assert!(
                    rest.trim().is_empty(),
                    "{name}:{}: text after {line}",
                    n + 1
                );
                let mut ad = String::new();
                for (_, l) in lines.by_ref() {
                    if l.trim() == "@end" {
                        break;
                    }
                    ad.push_str(l);
                    ad.push('\n');
                }
                if line.starts_with("@my") {
                    my = ad;
                } else {
                    target = ad;
                }
            } else if let Some(ad) = line.strip_prefix("@my ") {
                my = ad.trim().to_string();
            } else if let Some(ad) = line.strip_prefix("@target ") {
                target = ad.trim().to_string();
            } else if line == "@clear" {
                my.clear();
                target.clear();
            } else if line.starts_with('@') {
                panic!("{name}:{}: unknown directive {line}", n + 1);
            } else {
                out.push(HandCase {
                    origin: format!("{name}:{}", n + 1),
                    case: json!({"expr": line, "my": my, "target": target}),
                });
            }
        }
    }
    out
}

#[test]
fn hand_written_cases_agree() {
    let cases = hand_written_cases();
    assert!(
        cases.len() > 500,
        "only {} hand-written cases found",
        cases.len()
    );
    let input: Vec<Json> = cases.iter().map(|c| c.case.clone()).collect();
    let rows = run_script(&["--eval"], &input);
    assert_eq!(rows.len(), cases.len());
    let mut bad = Vec::new();
    let mut skipped = 0;
    let known = known_differences("hand-written");
    let mut known_seen = HashSet::new();
    let mut problems = Vec::new();
    for (c, row) in cases.iter().zip(&rows) {
        let key = case_key(&c.case);
        if let Some(k) = known.iter().find(|k| k.key() == key) {
            known_seen.insert(key);
            problems.extend(k.check_result(&result_only(row), &eval_case(&c.case)));
            continue;
        }
        if reference_could_not_judge(row) {
            skipped += 1;
            eprintln!(
                "{}: the reference could not judge {}: {}",
                c.origin, c.case["expr"], row
            );
            continue;
        }
        let ours = eval_case(&c.case);
        if !agree(row, &ours) {
            let mut row = row.clone();
            row["expr"] = json!(format!(
                "{}    [{}]",
                c.case["expr"].as_str().unwrap_or(""),
                c.origin
            ));
            dump_new(
                "hand-written",
                &[(c.case.clone(), result_only(&row), ours.clone())],
            );
            bad.push((row, ours));
        }
    }
    problems.extend(
        known
            .iter()
            .filter(|k| !known_seen.contains(&k.key()))
            .map(|k| k.stale()),
    );
    eprintln!(
        "hand-written: {} agree, {} disagree, {} known differences (pinned), {skipped} not judged",
        cases.len() - bad.len() - skipped - known_seen.len(),
        bad.len(),
        known_seen.len()
    );
    assert!(
        problems.is_empty(),
        "known differences (tests/known_differences.txt) are not as recorded:\n{}",
        problems.join("\n")
    );
    assert!(
        bad.is_empty(),
        "{}",
        report("hand-written cases", cases.len(), skipped, &bad, shown())
    );
}

#[test]
fn unparse_agrees() {
    // Expressions: the hand-written ones and the first 20,000 generated ones.
    let mut exprs: Vec<String> = hand_written_cases()
        .iter()
        .map(|c| c.case["expr"].as_str().unwrap_or("").to_string())
        .collect();
    let n = env_num("AERIE_DIFF_UNPARSE", 20_000) as usize;
    exprs.extend((0..n as u64).map(generated_expr).collect::<Vec<_>>());
    let input: Vec<Json> = exprs.iter().map(|e| json!({"expr": e})).collect();
    let rows = run_script(&["--unparse"], &input);
    let known = known_differences("unparse");
    let known_map: HashMap<&str, &common::known::Known> =
        known.iter().map(|k| (k.expr.as_str(), k)).collect();
    let mut known_seen = HashSet::new();
    let mut problems = Vec::new();
    let mut bad = Vec::new();
    for (e, row) in exprs.iter().zip(&rows) {
        let ours = classad::parse_expr(e).map(|x| x.to_string());
        if let Some(k) = known_map.get(e.as_str()) {
            if known_seen.insert(e.clone()) {
                let reference = row.get("unparse").cloned().unwrap_or(Json::Null);
                let ours = ours.as_ref().map_or(Json::Null, |o| json!(o));
                problems.extend(k.check_text(&reference, &ours));
            }
            continue;
        }
        let agree = match (row.get("unparse").and_then(Json::as_str), &ours) {
            (Some(r), Ok(o)) => r == o,
            (None, Err(_)) => true,
            _ => false,
        };
        if !agree {
            dump_new(
                "unparse",
                &[(
                    json!({"expr": e}),
                    row.get("unparse").cloned().unwrap_or(Json::Null),
                    ours.as_ref().map_or(Json::Null, |o| json!(o)),
                )],
            );
            bad.push(format!(
                "expr:      {e}\nreference: {}\nours:      {}\n",
                row.get("unparse")
                    .map_or("parse error".into(), |u| u.to_string()),
                match &ours {
                    Ok(o) => format!("{o:?}"),
                    Err(err) => format!("parse error: {err}"),
                }
            ));
        }
    }
    eprintln!(
        "unparse: {} agree, {} disagree, {} known differences (pinned)",
        exprs.len() - bad.len() - known_seen.len(),
        bad.len(),
        known_seen.len()
    );
    if n == 20_000 {
        problems.extend(
            known
                .iter()
                .filter(|k| !known_seen.contains(&k.expr))
                .map(|k| k.stale()),
        );
    }
    assert!(
        problems.is_empty(),
        "known differences (tests/known_differences.txt) are not as recorded:\n{}",
        problems.join("\n")
    );
    assert!(
        bad.is_empty(),
        "unparse: {} of {} expressions disagree with the reference's unparser:\n\n{}",
        bad.len(),
        exprs.len(),
        bad.iter()
            .take(shown())
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// Expression text of generated case `i` (seed 1), without evaluating it.
fn generated_expr(i: u64) -> String {
    // The cached evaluated cases are the cheapest source; fall back to generating.
    thread_local! {
        static ROWS: Vec<Json> = generated_cases(1, env_num("AERIE_DIFF_CASES", 100_000) as usize);
    }
    ROWS.with(|rows| {
        rows.get(i as usize)
            .and_then(|r| r["expr"].as_str())
            .unwrap_or("1")
            .to_string()
    })
}

#[test]
fn old_syntax_ads_agree() {
    let mut texts: Vec<String> = Vec::new();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cases/old-ads");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    files.sort();
    for f in files {
        texts.push(std::fs::read_to_string(&f).expect("reading an old-syntax ad file"));
    }
    // Old-syntax ads of the generated cases.
    for i in 0..20_000u64 {
        let (my, target) = generated_ads(i);
        for t in [my, target] {
            if !t.trim_start().starts_with('[') && !t.is_empty() {
                texts.push(t);
            }
        }
    }
    let input: Vec<Json> = texts.iter().map(|t| json!({"text": t})).collect();
    let rows = run_script(&["--old-ads"], &input);
    let mut bad = Vec::new();
    for (t, row) in texts.iter().zip(&rows) {
        let ours: Result<Vec<Json>, String> = classad::parse_old_ads(t)
            .map(|ads| {
                ads.iter()
                    .map(|ad| {
                        Json::Object(
                            ad.iter()
                                .map(|(k, e)| (k.to_string(), json!(e.to_string())))
                                .collect(),
                        )
                    })
                    .collect()
            })
            .map_err(|e| e.to_string());
        let agree = match (row.get("ads").and_then(Json::as_array), &ours) {
            (Some(r), Ok(o)) => r == o,
            (None, Err(_)) => true,
            _ => false,
        };
        if !agree {
            bad.push(format!(
                "text:      {}\nreference: {}\nours:      {:?}\n",
                t.replace('\n', "\\n"),
                row.get("ads")
                    .map_or("parse error".into(), |u| u.to_string()),
                ours.map(|o| Json::Array(o).to_string())
            ));
        }
    }
    assert!(
        bad.is_empty(),
        "old syntax: {} of {} ad texts disagree with the reference:\n\n{}",
        bad.len(),
        texts.len(),
        bad.iter()
            .take(shown())
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

fn generated_ads(i: u64) -> (String, String) {
    thread_local! {
        static ROWS: Vec<Json> = generated_cases(1, env_num("AERIE_DIFF_CASES", 100_000) as usize);
    }
    ROWS.with(|rows| {
        let r = rows.get(i as usize);
        let f = |k: &str| r.and_then(|r| r[k].as_str()).unwrap_or("").to_string();
        (f("my"), f("target"))
    })
}
