//! Known differences from the reference (tests/known_differences.txt): cases where Aerie and
//! libclassad disagree for a cause we understand but have not fixed yet. The differential tests
//! exclude exactly these cases from the generic comparison and instead ASSERT that the reference
//! still gives the recorded result and that we still give ours, so the list can neither grow
//! silently (a new disagreement fails the generic comparison) nor go stale (a fix that makes us
//! agree fails here and says to remove the entry).
//!
//! File format, line by line: `#` comments and blank lines are ignored; `@cause TEXT` gives the
//! one-line reason for the entries that follow it (entries are grouped by cause); any other line
//! is one JSON object: {"suite": "generated" | "lists" | "hand-written" | "unparse", "expr", "my",
//! "target" (exactly as generated or written), "reference", "ours"}. For "unparse", "reference"
//! and "ours" are the unparsed text (null = parse error); otherwise they are typed results
//! ({"type", "value"}) compared as the generic comparison does.
use super::agree;
use serde_json::{json, Value as Json};
use std::path::Path;

/// One pinned difference.
pub struct Known {
    /// Line in known_differences.txt, for messages.
    pub line: usize,
    pub suite: String,
    pub cause: String,
    pub expr: String,
    pub my: String,
    pub target: String,
    pub reference: Json,
    pub ours: Json,
}

pub fn known_file() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/known_differences.txt")
}

/// The entries of `suite`.
pub fn known_differences(suite: &str) -> Vec<Known> {
    let file = known_file();
    let text = std::fs::read_to_string(&file)
        .unwrap_or_else(|e| panic!("reading {}: {e}", file.display()));
    let mut cause = String::new();
    let mut out = Vec::new();
    for (n, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(c) = line.strip_prefix("@cause ") {
            cause = c.trim().to_string();
            continue;
        }
        let j: Json = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("known_differences.txt:{}: not a JSON entry: {e}", n + 1));
        let s = |k: &str| j.get(k).and_then(Json::as_str).unwrap_or("").to_string();
        assert!(
            !cause.is_empty(),
            "known_differences.txt:{}: entry before any @cause line",
            n + 1
        );
        let entry = Known {
            line: n + 1,
            suite: s("suite"),
            cause: cause.clone(),
            expr: s("expr"),
            my: s("my"),
            target: s("target"),
            reference: j.get("reference").cloned().unwrap_or(Json::Null),
            ours: j.get("ours").cloned().unwrap_or(Json::Null),
        };
        assert!(
            ["generated", "lists", "hand-written", "unparse"].contains(&entry.suite.as_str()),
            "known_differences.txt:{}: unknown suite {:?}",
            n + 1,
            entry.suite
        );
        if entry.suite == suite {
            out.push(entry);
        }
    }
    out
}

/// (expr, my, target) of a case or reference row.
pub fn case_key(case: &Json) -> (String, String, String) {
    let s = |k: &str| case.get(k).and_then(Json::as_str).unwrap_or("").to_string();
    (s("expr"), s("my"), s("target"))
}

impl Known {
    pub fn key(&self) -> (String, String, String) {
        (self.expr.clone(), self.my.clone(), self.target.clone())
    }

    fn place(&self) -> String {
        format!(
            "known_differences.txt:{} ({}; expr {:?})",
            self.line, self.cause, self.expr
        )
    }

    /// Checks a typed-result entry against the reference's and our current results; returns
    /// what is wrong (empty when the difference is still exactly as recorded).
    pub fn check_result(&self, reference: &Json, ours: &Json) -> Vec<String> {
        let mut problems = Vec::new();
        if agree(reference, ours) {
            problems.push(format!(
                "{}: we AGREE with the reference now ({reference}): remove the entry",
                self.place()
            ));
            return problems;
        }
        if !agree(&self.reference, reference) {
            problems.push(format!(
                "{}: the reference now gives {reference}, the entry records {}",
                self.place(),
                self.reference
            ));
        }
        if !agree(&self.ours, ours) {
            problems.push(format!(
                "{}: we now give {ours}, the entry records {} (reference {reference}): update \
                 or remove the entry",
                self.place(),
                self.ours
            ));
        }
        problems
    }

    /// Same for an unparse entry (texts; null = parse error).
    pub fn check_text(&self, reference: &Json, ours: &Json) -> Vec<String> {
        let mut problems = Vec::new();
        if reference == ours {
            problems.push(format!(
                "{}: our unparse AGREES with the reference now ({reference}): remove the entry",
                self.place()
            ));
        } else {
            if &self.reference != reference {
                problems.push(format!(
                    "{}: the reference now unparses to {reference}, the entry records {}",
                    self.place(),
                    self.reference
                ));
            }
            if &self.ours != ours {
                problems.push(format!(
                    "{}: we now unparse to {ours}, the entry records {}",
                    self.place(),
                    self.ours
                ));
            }
        }
        problems
    }

    /// "This entry no longer occurs in the suite."
    pub fn stale(&self) -> String {
        format!(
            "{}: no such case in the {} suite any more: remove the entry",
            self.place(),
            self.suite
        )
    }
}

/// With AERIE_DIFF_DUMP_KNOWN=FILE, appends entries for the given disagreements to FILE (to
/// triage them into known_differences.txt under a cause; never used by CI).
pub fn dump_new(suite: &str, items: &[(Json, Json, Json)]) {
    let Some(path) = std::env::var_os("AERIE_DIFF_DUMP_KNOWN") else {
        return;
    };
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .expect("opening AERIE_DIFF_DUMP_KNOWN");
    for (case, reference, ours) in items {
        let (expr, my, target) = case_key(case);
        let j = json!({"suite": suite, "expr": expr, "my": my, "target": target,
                       "reference": reference, "ours": ours});
        writeln!(f, "{j}").expect("writing AERIE_DIFF_DUMP_KNOWN");
    }
}

/// Result fields of a reference row (without the case).
pub fn result_only(row: &Json) -> Json {
    let mut j = row.clone();
    if let Some(o) = j.as_object_mut() {
        o.remove("expr");
        o.remove("my");
        o.remove("target");
    }
    j
}
