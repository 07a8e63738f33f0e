//! `cmctl eval` through the built binary: plain mode (values as classad_eval prints them) and
//! the `--jsonl` machine interface with its typed encoding (issue 2).
use serde_json::{json, Value as Json};
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

fn cmctl(args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_cmctl"))
        .arg("eval")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("running cmctl");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin.as_bytes())
        .expect("writing stdin");
    child.wait_with_output().expect("cmctl output")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn jsonl(input: &[Json]) -> Vec<Json> {
    let text: String = input.iter().map(|j| format!("{j}\n")).collect();
    let out = cmctl(&["--jsonl"], &text);
    assert!(
        out.status.success(),
        "cmctl eval --jsonl failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad output line {l:?}: {e}")))
        .collect()
}

fn one(expr: &str) -> Json {
    jsonl(&[json!({ "expr": expr })]).remove(0)
}

fn temp_file(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("cmctl-eval-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let p = dir.join(name);
    std::fs::write(&p, text).expect("writing a temp file");
    p
}

#[test]
fn prints_values_like_classad_eval() {
    let out = cmctl(
        &[
            "1 + 2",
            "\"a\" ",
            "strcat(\"x\", 1)",
            "1.0 / 4",
            "{1, \"b\"}",
            "undefined",
        ],
        "",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        stdout(&out),
        "3\n\"a\"\n\"x1\"\n2.500000000000000E-01\n{ 1,\"b\" }\nundefined\n"
    );
}

#[test]
fn evaluates_in_a_match_context_from_files() {
    let my = temp_file(
        "slot.ad",
        "Cpus = 4\nMemory = 8192\nRequirements = TARGET.RequestCpus <= MY.Cpus\n",
    );
    let target = temp_file("job.ad", "[ RequestCpus = 2; Owner = \"alice\" ]");
    let out = cmctl(
        &[
            "--my",
            my.to_str().expect("utf-8 path"),
            "--target",
            target.to_str().expect("utf-8 path"),
            "MY.Cpus >= TARGET.RequestCpus",
            "Requirements",
            "TARGET.Owner",
            "Memory / 1024",
        ],
        "",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(stdout(&out), "true\ntrue\n\"alice\"\n8\n");
}

#[test]
fn parse_error_names_the_expression_and_position() {
    let out = cmctl(&["1 + 1", "(1 +"], "");
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stdout(&out), "2\n");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("expression 2") && err.contains("line 1, column"),
        "stderr: {err}"
    );
}

#[test]
fn missing_ad_file_is_a_clear_error() {
    let out = cmctl(&["--my", "/nonexistent/slot.ad", "1"], "");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/slot.ad"));
}

#[test]
fn jsonl_encodes_every_type() {
    assert_eq!(
        one("undefined"),
        json!({"type": "undefined", "value": null})
    );
    assert_eq!(one("1 / 0"), json!({"type": "error", "value": null}));
    assert_eq!(one("1 < 2"), json!({"type": "boolean", "value": true}));
    assert_eq!(
        one("9223372036854775807"),
        json!({"type": "integer", "value": 9223372036854775807i64})
    );
    assert_eq!(one("1.5 * 2"), json!({"type": "real", "value": 3.0}));
    assert_eq!(one("-1.0 / 0"), json!({"type": "real", "value": "-inf"}));
    assert_eq!(one("0.0 / 0"), json!({"type": "real", "value": "nan"}));
    assert_eq!(
        one("strcat(\"a\", \"\\\"\")"),
        json!({"type": "string", "value": "a\""})
    );
    assert_eq!(
        one("{1, \"x\", {true}}"),
        json!({"type": "list", "value": [
            {"type": "integer", "value": 1},
            {"type": "string", "value": "x"},
            {"type": "list", "value": [{"type": "boolean", "value": true}]}
        ]})
    );
    assert_eq!(
        one("[a = 1; b = a + 1; c = [d = b]]"),
        json!({"type": "classad", "value": {
            "a": {"type": "integer", "value": 1},
            "b": {"type": "integer", "value": 2},
            "c": {"type": "classad", "value": {"d": {"type": "integer", "value": 2}}}
        }})
    );
    assert_eq!(
        one("absTime(\"2020-01-01T00:00:00+01:00\")"),
        json!({"type": "abstime", "value": 1577833200})
    );
    assert_eq!(
        one("relTime(90)"),
        json!({"type": "reltime", "value": 90.0})
    );
}

#[test]
fn jsonl_keeps_order_and_goes_on_after_a_parse_error() {
    let out = jsonl(&[
        json!({"expr": "1"}),
        json!({"expr": "(1 +"}),
        json!({"expr": "MY.a + TARGET.b", "my": "[ a = 1 ]", "target": "b = 2\n"}),
        json!({"expr": "1", "my": "[ a = ]"}),
        json!({"expr": "TARGET.x", "target": "x = \"old\"\ny = 1\n"}),
    ]);
    assert_eq!(out.len(), 5);
    assert_eq!(out[0], json!({"type": "integer", "value": 1}));
    assert_eq!(out[1]["type"], "parse_error");
    assert!(
        out[1]["message"]
            .as_str()
            .is_some_and(|m| m.contains("column")),
        "{}",
        out[1]
    );
    assert_eq!(out[2], json!({"type": "integer", "value": 3}));
    assert_eq!(out[3]["type"], "parse_error");
    assert!(
        out[3]["message"].as_str().is_some_and(|m| m.contains("my")),
        "{}",
        out[3]
    );
    assert_eq!(out[4], json!({"type": "string", "value": "old"}));
}

#[test]
fn jsonl_bad_input_lines_give_parse_errors() {
    let out = cmctl(
        &["--jsonl"],
        "not json\n{\"my\": \"[]\"}\n{\"expr\": \"2\"}\n",
    );
    assert!(out.status.success());
    let lines: Vec<Json> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON output"))
        .collect();
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[0]["type"], "parse_error");
    assert_eq!(lines[1]["type"], "parse_error");
    assert_eq!(lines[2], json!({"type": "integer", "value": 2}));
}

/// The same cases through the reference oracle (tests/reference/classad_gen.py --eval) give
/// the same encoding, so that cmctl eval --jsonl can stand in for the Rust side of the
/// differential harness.
#[test]
fn jsonl_agrees_with_the_reference_encoding() {
    let dir = std::env::var_os("AERIE_REFERENCE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/var/lib/aerie-reference"));
    let py = dir.join("venv/bin/python");
    assert!(
        py.exists(),
        "the reference libclassad is not installed ({} is missing): run `scripts/reference.sh classad`",
        py.display()
    );
    let cases = vec![
        json!({"expr": "[a = 1; b = {a, 2.5, \"s\"}; c = absTime(0); d = relTime(5)]"}),
        json!({"expr": "MY.Cpus * 2 + TARGET.x", "my": "[ Cpus = 4 ]", "target": "x = 0.5\n"}),
        json!({"expr": "{undefined, error, true, 0.0 / 0, -1.0 / 0}"}),
        json!({"expr": "splitUserName(\"alice@example.com\")"}),
        json!({"expr": "1 +"}),
    ];
    let script =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/reference/classad_gen.py");
    let mut child = Command::new(&py)
        .arg(&script)
        .arg("--eval")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("running the reference script");
    let text: String = cases.iter().map(|j| format!("{j}\n")).collect();
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(text.as_bytes())
        .expect("writing");
    let out = child.wait_with_output().expect("reference output");
    assert!(out.status.success());
    let reference: Vec<Json> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON"))
        .collect();
    let ours = jsonl(&cases);
    for ((case, r), o) in cases.iter().zip(&reference).zip(&ours) {
        assert_eq!(
            r["type"], o["type"],
            "type of {case}: reference {r}, ours {o}"
        );
        if r["type"] != "parse_error" {
            assert_eq!(
                r["value"], o["value"],
                "value of {case}: reference {r}, ours {o}"
            );
        }
    }
}
