//! condor_status's formats, checked against the real condor_status 23.9.6 (the reference
//! chroot: `condor_status -ads FILE` on the same ads, outputs captured verbatim below).
use super::*;

fn ads(text: &str) -> Vec<ClassAd> {
    classad::parse_old_ads(text).expect("test ads parse")
}

/// The ads given to the real condor_status (in another order: the table sorts them).
const SLOTS: &str = r#"
MyType = "Machine"
Name = "slot2@exec-0.novalocal"
Machine = "exec-0.novalocal"
OpSys = "LINUX"
Arch = "X86_64"
State = "Claimed"
Activity = "Busy"
CondorLoadAvg = 1.0
Memory = 16384
EnteredCurrentActivity = 2000
LastHeardFrom = 100000

MyType = "Machine"
Name = "slot1@exec-0.novalocal"
Machine = "exec-0.novalocal"
OpSys = "LINUX"
Arch = "X86_64"
State = "Unclaimed"
Activity = "Idle"
Memory = 991
EnteredCurrentActivity = 1000
LastHeardFrom = 100000

MyType = "Machine"
Name = "slot1@a-much-longer-host-name.example.org"
Machine = "a-much-longer-host-name.example.org"
OpSys = "WINDOWS"
Arch = "X86_64"
State = "Backfill"
Activity = "Idle"
CondorLoadAvg = 0.25
Memory = 512
LastHeardFrom = 100000

MyType = "Machine"
Name = "slot1@d.example.org"
Machine = "d.example.org"
OpSys = "LINUX"
Arch = "X86_64"
State = "Drained"
Activity = "Idle"
Memory = 2048
EnteredCurrentActivity = 3000
LastHeardFrom = 100000

MyType = "Machine"
Name = "slot9@z.example.org"
Machine = "z.example.org"
OpSys = "LINUX"
Arch = "X86_64"
State = "Backfill"
Activity = "Busy"
Memory = 10
EnteredCurrentActivity = 99999
LastHeardFrom = 100000
"#;

const TOTALS: &str =
    "               Total Owner Claimed Unclaimed Matched Preempting  Drain Backfill BkIdle

  X86_64/LINUX     4     0       1         1       0          0      1        1      0
X86_64/WINDOWS     1     0       0         0       0          0      0        1      0

         Total     5     0       1         1       0          0      1        2      0
";

#[test]
fn default_slot_table_matches_condor_status() {
    // Captured verbatim: condor_status -ads on SLOTS.
    let expected = format!(
        "\
Name                                      OpSys      Arch   State     Activity LoadAv Mem    ActvtyTime

slot1@a-much-longer-host-name.example.org WINDOWS    X86_64 Backfill  Idle      0.250   512  1+03:46:40
slot1@d.example.org                       LINUX      X86_64 Drained   Idle     [????]  2048  1+02:56:40
slot1@exec-0.novalocal                    LINUX      X86_64 Unclaimed Idle     [????]   991  1+03:30:00
slot2@exec-0.novalocal                    LINUX      X86_64 Claimed   Busy      1.000 16384  1+03:13:20
slot9@z.example.org                       LINUX      X86_64 Backfill  Busy     [????]    10  0+00:00:01

{TOTALS}"
    );
    assert_eq!(slot_table(&ads(SLOTS)), expected);
    let all = ads(SLOTS);
    let refs: Vec<&ClassAd> = all.iter().collect();
    assert_eq!(slot_totals(&refs), TOTALS);
    // Captured: condor_status -total on the same ads.
    let total = parse(&["-total".to_string()]).unwrap();
    assert_eq!(render(&total, &all), format!("\n{TOTALS}"));
}

/// A `Collector.Totals` row as the CM sends it.
fn row(key: [Option<&str>; 3], count: u64) -> pb::TotalsRow {
    pb::TotalsRow {
        key: key
            .iter()
            .map(|k| pb::TotalsValue {
                value: k.map(|s| pb::totals_value::Value::Str(s.to_string())),
            })
            .collect(),
        count,
        sums: Vec::new(),
    }
}

#[test]
fn totals_counted_by_the_cm_print_as_condor_status_does() {
    // SLOTS as the CM counts them (groups in no particular order).
    let rows = [
        row([Some("X86_64"), Some("LINUX"), Some("Backfill")], 1),
        row([Some("X86_64"), Some("WINDOWS"), Some("Backfill")], 1),
        row([Some("X86_64"), Some("LINUX"), Some("Claimed")], 1),
        row([Some("X86_64"), Some("LINUX"), Some("Drained")], 1),
        row([Some("X86_64"), Some("LINUX"), Some("Unclaimed")], 1),
    ];
    assert_eq!(render_totals(&rows), format!("\n{TOTALS}"));
    assert_eq!(render_totals(&[]), "");
    // An undefined Arch and an unknown state count as the client would count the ads.
    let odd = ads("MyType = \"Machine\"\nName = \"s@a\"\nOpSys = \"LINUX\"\nState = \"Weird\"\n");
    let refs: Vec<&ClassAd> = odd.iter().collect();
    assert_eq!(
        render_totals(&[row([None, Some("LINUX"), Some("Weird")], 1)]),
        format!("\n{}", slot_totals(&refs))
    );
}

#[test]
fn short_names_load_from_condor_load_avg_and_no_last_heard_from() {
    let a = ads(
        "MyType = \"Machine\"\nName = \"s@a\"\nMachine = \"a\"\nOpSys = \"LINUX\"\n\
                 Arch = \"X86_64\"\nState = \"Unclaimed\"\nActivity = \"Idle\"\nLoadAvg = 0.25\n\
                 CondorLoadAvg = 0.5\nTotalLoadAvg = 0.75\nMemory = 10\nLastHeardFrom = 100\n\
                 EnteredCurrentActivity = 50\n",
    );
    let out = slot_table(&a);
    // Captured: condor_status 23.9.6 on the same ad.
    assert!(
        out.starts_with(
            "Name               OpSys      Arch   State     Activity LoadAv Mem   ActvtyTime\n\n\
         s@a                LINUX      X86_64 Unclaimed Idle      0.500   10  0+00:00:50\n\n"
        ),
        "{out}"
    );
    let mut b = a[0].clone();
    b.remove("LastHeardFrom");
    assert!(slot_table(&[b]).contains("  10           -\n"));
}

#[test]
fn empty_answers_print_nothing() {
    let p = parse(&[]).unwrap();
    assert_eq!(render(&p, &[]), "");
    let p = parse(&["-total".to_string()]).unwrap();
    assert_eq!(render(&p, &[]), "");
}

#[test]
fn options_parse_like_condor_status() {
    let args = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let p = parse(&args(&[
        "-af",
        "Name",
        "Memory",
        "-const",
        "Memory > 1",
        "-absent",
    ]))
    .unwrap();
    assert_eq!(
        p.format,
        Format::Autoformat(vec!["Name".into(), "Memory".into()])
    );
    assert_eq!(constraint(&p), "(Memory > 1) && (Absent =?= true)");
    assert_eq!(parse(&args(&["-submitters"])).unwrap().ad_type, "Submitter");
    assert_eq!(
        parse(&args(&["-schedd", "-l"])).unwrap().format,
        Format::Long
    );
    assert_eq!(
        parse(&args(&["-negotiator"])).unwrap().ad_type,
        "Negotiator"
    );
    assert_eq!(parse(&args(&["-total"])).unwrap().format, Format::Total);
    let e = parse(&args(&["-constraint", "Memory >"]))
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("-constraint \"Memory >\""), "{e}");
    assert!(parse(&args(&["-bogus"])).is_err());
    let p = parse(&args(&["slot1@a"])).unwrap();
    assert_eq!(
        constraint(&p),
        "(Name == \"slot1@a\" || Machine == \"slot1@a\")"
    );
}

const VALUES: &str = "MyType = \"Machine\"\nName = \"s@a\"\nA = 1.0\nB = 0.1\nC = 1e20\n\
                      D = 123456.789\nE = true\nF = {1, \"x\"}\nG = Memory + 1\nMemory = 3\n\
                      H = \"q\\\"uote\"\n";

#[test]
fn autoformat_matches_condor_status() {
    let attrs: Vec<String> = "A B C D E F G H Nope"
        .split(' ')
        .map(String::from)
        .collect();
    // Captured: condor_status -af A B C D E F G H (plus an undefined attribute).
    assert_eq!(
        autoformat(&ads(VALUES), &attrs),
        "1.0 0.1 1E+20 123456.789 true { 1,\"x\" } 4 q\"uote undefined\n"
    );
}

#[test]
fn json_matches_condor_status() {
    // Captured: condor_status -json on the same ad.
    let expected = r#"[
{
  "A": 1.0,
  "B": 0.1,
  "C": 1E+20,
  "D": 123456.789,
  "E": true,
  "F": [
    1,
    "x"
  ],
  "G": "\/Expr(Memory + 1)\/",
  "H": "q\"uote",
  "Memory": 3,
  "MyType": "Machine",
  "Name": "s@a"
}
]
"#;
    assert_eq!(json(&ads(VALUES)), expected);
    let two = json(&ads("Name = \"a\"\n\nName = \"b\"\n"));
    assert_eq!(
        two,
        "[\n{\n  \"Name\": \"a\"\n}\n,\n{\n  \"Name\": \"b\"\n}\n]\n"
    );
}

#[test]
fn long_sorts_attributes_and_ends_each_ad_with_a_blank_line() {
    let out = long(&ads("Name = \"s@b\"\nMyType = \"Machine\"\nMemory = 10\n"));
    assert_eq!(out, "Memory = 10\nMyType = \"Machine\"\nName = \"s@b\"\n\n");
}

#[test]
fn submitter_and_schedd_tables_match_condor_status() {
    let subs = ads("MyType = \"Submitter\"\nName = \"bob@cs.wisc.edu\"\nMachine = \"ap2.cs.wisc.edu\"\n\
                    RunningJobs = 0\nIdleJobs = 2\nHeldJobs = 0\n\n\
                    MyType = \"Submitter\"\nName = \"alice@cs.wisc.edu\"\nMachine = \"ap1.cs.wisc.edu\"\n\
                    RunningJobs = 3\nIdleJobs = 10\nHeldJobs = 1\n");
    // Captured verbatim: condor_status -submitters.
    let expected = "\
Name              Machine         RunningJobs   IdleJobs   HeldJobs

alice@cs.wisc.edu ap1.cs.wisc.edu           3         10          1
bob@cs.wisc.edu   ap2.cs.wisc.edu           0          2          0

                  RunningJobs   IdleJobs   HeldJobs

alice@cs.wisc.edu           3         10          1
  bob@cs.wisc.edu           0          2          0

            Total           3         12          1
";
    assert_eq!(jobs_table(&subs, false), expected);
    let schedd = ads(
        "MyType = \"Scheduler\"\nName = \"ap1.cs.wisc.edu\"\nMachine = \"ap1.cs.wisc.edu\"\n\
                      TotalRunningJobs = 3\nTotalIdleJobs = 10\nTotalHeldJobs = 1\n",
    );
    // Captured verbatim: condor_status -schedd (its totals block has that blank-label line).
    let expected = "\
Name            Machine         RunningJobs   IdleJobs   HeldJobs

ap1.cs.wisc.edu ap1.cs.wisc.edu           3         10          1

                TotalRunningJobs      TotalIdleJobs      TotalHeldJobs

              
         Total                 3                 10                  1
";
    assert_eq!(jobs_table(&schedd, true), expected);
}
