//! Helpers shared by the negotiator's test files: ads from attribute lists, a ledger of
//! priorities, and one call of `negotiate` at a fixed time.
#![allow(dead_code)]
use aerie_core::accountant::{Accountant, AccountantCommand, AccountantParams};
use aerie_core::negotiator::{negotiate, NegotiationInput, NegotiatorConfig, Outcome};
use classad::ClassAd;

/// An ad from `(name, expression)` pairs.
pub fn ad(pairs: &[(&str, &str)]) -> ClassAd {
    let mut a = ClassAd::new();
    for (k, v) in pairs {
        a.insert_expr_str(k, v)
            .unwrap_or_else(|e| panic!("{k} = {v}: {e}"));
    }
    a
}

/// An accountant with the given real priorities, all factors 1.
pub fn ledger(prios: &[(&str, f64)]) -> Accountant {
    let mut a = Accountant::new(AccountantParams::default());
    for (n, p) in prios {
        a.apply(&AccountantCommand::SetFactor {
            name: n.to_string(),
            value: 1.0,
        })
        .unwrap();
        a.apply(&AccountantCommand::SetPriority {
            name: n.to_string(),
            value: *p,
        })
        .unwrap();
    }
    a
}

/// One negotiation cycle at a fixed time.
pub fn run(
    slots: Vec<ClassAd>,
    jobs: Vec<ClassAd>,
    acct: &Accountant,
    cfg: &NegotiatorConfig,
) -> Outcome {
    negotiate(&NegotiationInput { slots, jobs }, acct, cfg, 1_700_000_000)
}

/// An idle job of `owner` (submitter `owner@d`) that matches anything, with `extra`
/// attributes added or replaced.
pub fn job(owner: &str, cluster: i64, proc: i64, extra: &[(&str, &str)]) -> ClassAd {
    let mut a = ad(&[
        ("MyType", "\"Job\""),
        ("Owner", &format!("\"{owner}\"")),
        ("User", &format!("\"{owner}@d\"")),
        ("ClusterId", &cluster.to_string()),
        ("ProcId", &proc.to_string()),
        ("JobStatus", "1"),
        ("QDate", &(1000 + cluster * 10 + proc).to_string()),
        ("Requirements", "true"),
        ("RequestCpus", "1"),
        ("RequestMemory", "1"),
        ("RequestDisk", "1"),
    ]);
    for (k, v) in extra {
        a.insert_expr_str(k, v).unwrap();
    }
    a
}
