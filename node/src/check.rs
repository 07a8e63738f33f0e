//! `aerie-node check-claims`: audits claims logs. Each file is replayed in order:
//! * a claim of a slot must be followed by its release before the next claim of that slot
//!   (no slot is ever claimed twice at the same time);
//! * no claim is accepted with a term older than an earlier accepted claim's term on the
//!   same slot (for a dynamic slot, on its partitionable parent, where the fence is);
//! * a "start" event (a simulator started) frees every slot of that file, since a restarted
//!   simulator starts with fresh slots; the term fence carries over.
use crate::claims_log::Event;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

/// A broken rule: a slot claimed twice at once, a claim from an older term than one the slot
/// had accepted, or a release of a slot that was not claimed.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Violation {
    /// The claims log it was found in, as given on the command line.
    pub file: String,
    /// 1-based line number.
    pub line: usize,
    /// The slot the event names (for a term violation on a dynamic slot, the dynamic slot;
    /// the message names the partitionable slot the fence is on).
    pub slot: String,
    /// What was wrong, naming the jobs, terms and the earlier line involved.
    pub message: String,
}

/// Claims per submitter over all the files checked.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct SubmitterCount {
    /// Claims accepted for the submitter's jobs.
    pub claims: u64,
    /// Claims not yet released at the end of the log.
    pub running: u64,
}

/// What `check-claims` found in all the files it read; printed by [`render`] or as JSON.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Summary {
    /// Files checked.
    pub files: usize,
    /// `claim` events.
    pub claims: u64,
    /// `release` events.
    pub releases: u64,
    /// `refused` events by their short reason ("stale term", "already claimed", "job not
    /// idle"...), from the startd and the access point alike.
    pub refusals: BTreeMap<String, u64>,
    /// Claims and still-running claims by submitter name (the empty name for claim events
    /// that carry none).
    pub submitters: BTreeMap<String, SubmitterCount>,
    /// Every broken rule, in file and line order.
    pub violations: Vec<Violation>,
    /// Lines that are not events (named by file and line).
    pub malformed: Vec<String>,
}

impl Summary {
    /// No rule was broken and every line (but a cut-short last one) was an event:
    /// `check-claims` exits 0.
    pub fn ok(&self) -> bool {
        self.violations.is_empty() && self.malformed.is_empty()
    }
}

/// Checks every file; an unreadable file is an error naming it.
pub fn check_files(files: &[PathBuf]) -> anyhow::Result<Summary> {
    let mut s = Summary::default();
    for f in files {
        let text = std::fs::read_to_string(f)
            .map_err(|e| anyhow::anyhow!("cannot read claims log {}: {e}", f.display()))?;
        check_text(f, &text, &mut s);
    }
    Ok(s)
}

/// Replays one log's text into `s`.
pub fn check_text(file: &Path, text: &str, s: &mut Summary) {
    s.files += 1;
    let fname = file.display().to_string();
    // slot -> (job, submitter, line of the claim)
    let mut active: HashMap<String, (String, String, usize)> = HashMap::new();
    // fence slot -> (newest accepted term, line)
    let mut newest: HashMap<String, (u64, usize)> = HashMap::new();
    let lines: Vec<&str> = text.split('\n').collect();
    for (i, raw) in lines.iter().enumerate() {
        let line = i + 1;
        let raw = raw.trim();
        if raw.is_empty() {
            continue;
        }
        let e: Event = match serde_json::from_str(raw) {
            Ok(e) => e,
            Err(err) => {
                // A last line cut short by a kill is not the startd's fault.
                if i + 1 == lines.len() {
                    continue;
                }
                s.malformed
                    .push(format!("{fname}:{line}: not a claims log event: {err}"));
                continue;
            }
        };
        let slot = e.slot.clone().unwrap_or_default();
        let mut violate = |message: String| {
            s.violations.push(Violation {
                file: fname.clone(),
                line,
                slot: slot.clone(),
                message,
            })
        };
        match e.event.as_str() {
            "start" => active.clear(),
            "claim" => {
                s.claims += 1;
                let job = e.job.clone().unwrap_or_default();
                let sub = e.submitter.clone().unwrap_or_default();
                s.submitters.entry(sub.clone()).or_default().claims += 1;
                if let Some((other, _, at)) = active.get(&slot) {
                    violate(format!(
                        "slot {slot} claimed for job {job} while still claimed for job {other} \
                         (claim at line {at} not released)"
                    ));
                }
                let fence = e.parent.clone().unwrap_or_else(|| slot.clone());
                let term = e.term.unwrap_or(0);
                match newest.get(&fence) {
                    Some((t, at)) if term < *t => violate(format!(
                        "slot {fence} accepted a claim with term {term} after accepting term {t} \
                         at line {at}"
                    )),
                    _ => {
                        newest.insert(fence, (term, line));
                    }
                }
                active.insert(slot, (job, sub, line));
            }
            "release" => {
                s.releases += 1;
                if active.remove(&slot).is_none() {
                    violate(format!("slot {slot} released while not claimed"));
                }
            }
            "refused" => {
                let r = e.reason.clone().unwrap_or_else(|| "unknown".into());
                *s.refusals.entry(r).or_default() += 1;
            }
            other => s
                .malformed
                .push(format!("{fname}:{line}: unknown event {other:?}")),
        }
    }
    for (_, sub, _) in active.values() {
        s.submitters.entry(sub.clone()).or_default().running += 1;
    }
}

/// The human summary.
pub fn render(s: &Summary) -> String {
    let mut out = format!(
        "{} file(s): {} claims, {} releases, {} refusals\n",
        s.files,
        s.claims,
        s.releases,
        s.refusals.values().sum::<u64>()
    );
    for (r, n) in &s.refusals {
        out.push_str(&format!("  refused ({r}): {n}\n"));
    }
    for (name, c) in &s.submitters {
        out.push_str(&format!(
            "  submitter {name}: {} claims, {} running\n",
            c.claims, c.running
        ));
    }
    for m in &s.malformed {
        out.push_str(&format!("MALFORMED {m}\n"));
    }
    for v in &s.violations {
        out.push_str(&format!(
            "VIOLATION {}:{}: slot {}: {}\n",
            v.file, v.line, v.slot, v.message
        ));
    }
    out.push_str(if s.ok() { "OK\n" } else { "FAILED\n" });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(text: &str) -> Summary {
        let mut s = Summary::default();
        check_text(Path::new("t.log"), text, &mut s);
        s
    }

    const CLEAN: &str = r#"{"event":"start","time_ms":1}
{"event":"claim","slot":"slot1@m","job":"1.0","submitter":"a@d","term":1,"cycle":1,"time_ms":2}
{"event":"refused","slot":"slot1@m","job":"2.0","reason":"already claimed","time_ms":3}
{"event":"release","slot":"slot1@m","job":"1.0","submitter":"a@d","time_ms":4}
{"event":"claim","slot":"slot1@m","job":"2.0","submitter":"b@d","term":2,"cycle":1,"time_ms":5}
"#;

    #[test]
    fn a_clean_log_passes_and_is_summarised() {
        let s = run(CLEAN);
        assert!(s.ok(), "{}", render(&s));
        assert_eq!((s.claims, s.releases), (2, 1));
        assert_eq!(s.refusals.get("already claimed"), Some(&1));
        assert_eq!(
            s.submitters.get("b@d"),
            Some(&SubmitterCount {
                claims: 1,
                running: 1
            })
        );
        assert_eq!(s.submitters.get("a@d").map(|c| c.running), Some(0));
    }

    #[test]
    fn a_restart_frees_the_slots() {
        let s = run(
            r#"{"event":"claim","slot":"s1","job":"1.0","term":1,"time_ms":2}
{"event":"start","time_ms":3}
{"event":"claim","slot":"s1","job":"1.0","term":1,"time_ms":4}
"#,
        );
        assert!(s.ok(), "{}", render(&s));
    }

    #[test]
    fn a_cut_last_line_is_tolerated_but_garbage_inside_is_not() {
        let s = run(&format!("{CLEAN}{{\"event\":\"cla"));
        assert!(s.ok());
        let s = run(&format!("garbage\n{CLEAN}"));
        assert!(!s.ok());
        assert!(s.malformed[0].starts_with("t.log:1:"), "{:?}", s.malformed);
    }
}
