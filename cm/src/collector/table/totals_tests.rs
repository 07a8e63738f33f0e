//! [`AdTable::totals`] over a table of known ads: slot counts by Arch/OpSys/State as
//! `condor_status -total` needs them, submitter job sums, the constraint and absent ads.
use super::tests::{absent_params, params, T0};
use super::*;
use classad::{parse_expr, Value};

fn slot(name: &str, arch: &str, state: &str) -> String {
    format!(
        "MyType = \"Machine\"\nName = \"{name}\"\nMachine = \"h\"\nArch = \"{arch}\"\n\
         OpSys = \"LINUX\"\nState = \"{state}\"\nMemory = 1024\n"
    )
}

fn by_state() -> Vec<String> {
    ["Arch", "OpSys", "State"].map(String::from).to_vec()
}

fn s(v: &str) -> Value {
    Value::from(v)
}

/// The rows sorted by key, as (key texts, count, sums), for comparisons.
fn sorted(rows: Vec<TotalsRow>) -> Vec<(Vec<String>, u64, Vec<i64>)> {
    let mut v: Vec<_> = rows
        .into_iter()
        .map(|r| {
            (
                r.key.iter().map(|k| k.to_string()).collect(),
                r.count,
                r.sums,
            )
        })
        .collect();
    v.sort();
    v
}

fn machines() -> Query {
    Query {
        ad_type: Some(AdType::Machine),
        ..Query::default()
    }
}

#[test]
fn slots_are_counted_by_arch_opsys_and_state() {
    let mut t = AdTable::new(params());
    for (n, arch, st) in [
        ("slot1@a", "X86_64", "Claimed"),
        ("slot2@a", "X86_64", "Claimed"),
        ("slot3@a", "X86_64", "Unclaimed"),
        ("slot1@b", "aarch64", "Unclaimed"),
    ] {
        t.advertise_text(&slot(n, arch, st), T0).unwrap();
    }
    // A slot without Arch groups under undefined; a submitter is not a machine.
    t.advertise_text(
        "MyType = \"Machine\"\nName = \"slot1@c\"\nOpSys = \"LINUX\"\nState = \"Owner\"\n",
        T0,
    )
    .unwrap();
    t.advertise_text(
        "MyType = \"Submitter\"\nName = \"u@d\"\nRunningJobs = 3\n",
        T0,
    )
    .unwrap();
    let rows = t
        .totals(&machines(), &by_state(), &[], QUERY_EVAL_BUDGET)
        .unwrap();
    let claimed = rows
        .iter()
        .find(|r| r.key == vec![s("X86_64"), s("LINUX"), s("Claimed")])
        .expect("a Claimed X86_64 row");
    assert_eq!(claimed.count, 2);
    assert!(rows
        .iter()
        .any(|r| r.key == vec![Value::Undefined, s("LINUX"), s("Owner")] && r.count == 1));
    assert_eq!(rows.iter().map(|r| r.count).sum::<u64>(), 5);
    assert_eq!(rows.len(), 4);

    // The constraint selects, as it does for a query.
    let q = Query {
        constraint: Some(parse_expr("Arch == \"aarch64\"").unwrap()),
        ..machines()
    };
    assert_eq!(
        sorted(t.totals(&q, &by_state(), &[], QUERY_EVAL_BUDGET).unwrap()),
        vec![(
            vec![
                "\"aarch64\"".into(),
                "\"LINUX\"".into(),
                "\"Unclaimed\"".into()
            ],
            1,
            vec![]
        )]
    );
}

#[test]
fn submitters_jobs_are_summed_per_name() {
    let mut t = AdTable::new(params());
    for (name, addr, run, idle) in [
        ("alice@pool", "<10.0.0.1:9618>", 3, 10),
        ("alice@pool", "<10.0.0.2:9618>", 2, 1),
        ("bob@pool", "<10.0.0.1:9618>", 1, 0),
    ] {
        t.advertise_text(
            &format!(
                "MyType = \"Submitter\"\nName = \"{name}\"\nMyAddress = \"{addr}\"\n\
                 RunningJobs = {run}\nIdleJobs = {idle}\n"
            ),
            T0,
        )
        .unwrap();
    }
    let q = Query {
        ad_type: Some(AdType::parse("Submitter")),
        ..Query::default()
    };
    let sums = ["RunningJobs", "IdleJobs", "HeldJobs"].map(String::from);
    let rows = t
        .totals(&q, &["Name".to_string()], &sums, QUERY_EVAL_BUDGET)
        .unwrap();
    assert_eq!(
        sorted(rows),
        vec![
            (vec!["\"alice@pool\"".into()], 2, vec![5, 11, 0]),
            (vec!["\"bob@pool\"".into()], 1, vec![1, 0, 0]),
        ]
    );
}

#[test]
fn absent_slots_count_only_when_asked_for() {
    let mut t = AdTable::new(absent_params("True"));
    t.advertise_text(&slot("slot1@gone", "X86_64", "Unclaimed"), T0)
        .unwrap();
    t.expire(T0 + 901);
    t.advertise_text(&slot("slot1@here", "X86_64", "Unclaimed"), T0 + 901)
        .unwrap();
    let count = |q: &Query| {
        t.totals(q, &by_state(), &[], QUERY_EVAL_BUDGET)
            .unwrap()
            .iter()
            .map(|r| r.count)
            .sum::<u64>()
    };
    assert_eq!(count(&machines()), 1);
    assert_eq!(
        count(&Query {
            absent: true,
            ..machines()
        }),
        2
    );
}

#[test]
fn an_expensive_constraint_is_refused() {
    let mut t = AdTable::new(params());
    for i in 0..50 {
        t.advertise_text(&slot(&format!("slot{i}@a"), "X86_64", "Unclaimed"), T0)
            .unwrap();
    }
    let q = Query {
        constraint: Some(parse_expr("Memory > 0 && Arch == \"X86_64\"").unwrap()),
        ..machines()
    };
    assert!(t.totals(&q, &by_state(), &[], 10).is_err());
    assert_eq!(
        t.totals(&q, &by_state(), &[], QUERY_EVAL_BUDGET)
            .unwrap()
            .len(),
        1
    );
}
