//! Unit tests: the seeds' worked examples (INVENTORY section 2 and section 15 items 1-5).
use super::*;

const DAY: i64 = 86400;

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9 * b.abs().max(1.0)
}

fn tick(a: &mut Accountant, now: i64, usage: &[(&str, f64)]) {
    let usage = usage
        .iter()
        .map(|(s, w)| Usage {
            submitter: s.to_string(),
            weighted_slots: *w,
        })
        .collect();
    a.apply(&AccountantCommand::Tick { now, usage })
        .expect("tick");
}

fn with_prio(name: &str, prio: f64) -> Accountant {
    let mut a = Accountant::new(AccountantParams::default());
    tick(&mut a, 0, &[]);
    a.apply(&AccountantCommand::SetPriority {
        name: name.into(),
        value: prio,
    })
    .unwrap();
    a
}

#[test]
fn rup_10_decays_to_5_then_2_5() {
    let mut a = with_prio("u@d", 10.0);
    tick(&mut a, DAY, &[]);
    assert!(close(a.real_priority("u@d"), 5.0));
    tick(&mut a, 2 * DAY, &[]);
    assert!(close(a.real_priority("u@d"), 2.5));
}

#[test]
fn rup_100_steady_state_decays_to_50_then_25() {
    let mut a = with_prio("u@d", 100.0);
    tick(&mut a, DAY, &[]);
    assert!(close(a.real_priority("u@d"), 50.0));
    tick(&mut a, 2 * DAY, &[]);
    assert!(close(a.real_priority("u@d"), 25.0));
}

#[test]
fn new_user_under_100_cores_reaches_50_25_then_75_125() {
    let mut a = Accountant::new(AccountantParams::default());
    tick(&mut a, 0, &[("a@d", 100.0)]);
    assert!(close(a.real_priority("a@d"), 0.5));
    tick(&mut a, DAY, &[("a@d", 100.0)]);
    assert!(close(a.real_priority("a@d"), 50.25));
    tick(&mut a, 2 * DAY, &[("a@d", 100.0)]);
    assert!(close(a.real_priority("a@d"), 75.125));
    let r = a.record("a@d").unwrap();
    assert!(close(r.accumulated_usage, 100.0 * 2.0 * DAY as f64));
    assert_eq!(r.begin_usage_time, DAY);
    assert_eq!(r.last_usage_time, 2 * DAY);
}

#[test]
fn stop_after_24h_gives_25_125_then_12_5625() {
    let mut a = Accountant::new(AccountantParams::default());
    tick(&mut a, 0, &[("a@d", 100.0)]);
    tick(&mut a, DAY, &[("a@d", 100.0)]);
    // Jobs removed: the next ticks report no usage.
    tick(&mut a, 2 * DAY, &[]);
    assert!(close(a.real_priority("a@d"), 25.125));
    tick(&mut a, 3 * DAY, &[]);
    assert!(close(a.real_priority("a@d"), 12.5625));
    assert_eq!(a.record("a@d").unwrap().last_usage_time, DAY);
}

#[test]
fn irregular_intervals_give_the_same_result() {
    let mut one = with_prio("u@d", 10.0);
    tick(&mut one, DAY, &[]);
    let mut two = with_prio("u@d", 10.0);
    tick(&mut two, DAY / 2, &[]);
    tick(&mut two, DAY, &[]);
    assert!(close(one.real_priority("u@d"), 5.0));
    assert!(close(two.real_priority("u@d"), one.real_priority("u@d")));
    // Also with constant usage, and uneven steps (1 h, 5 h, 18 h).
    let mut a = Accountant::new(AccountantParams::default());
    tick(&mut a, 0, &[("x@d", 40.0)]);
    tick(&mut a, DAY, &[("x@d", 40.0)]);
    let mut b = Accountant::new(AccountantParams::default());
    for t in [0, 3600, 6 * 3600, DAY] {
        tick(&mut b, t, &[("x@d", 40.0)]);
    }
    assert!(close(a.real_priority("x@d"), b.real_priority("x@d")));
    assert!(close(
        a.record("x@d").unwrap().accumulated_usage,
        b.record("x@d").unwrap().accumulated_usage
    ));
}

#[test]
fn rup_never_below_one_half() {
    let mut a = Accountant::new(AccountantParams::default());
    tick(&mut a, 0, &[("new@d", 0.0)]);
    assert_eq!(a.real_priority("new@d"), 0.5);
    assert_eq!(a.real_priority("never-seen@d"), 0.5);
    let mut a = with_prio("u@d", 0.6);
    tick(&mut a, 30 * DAY, &[]);
    assert_eq!(a.real_priority("u@d"), 0.5);
    assert_eq!(a.record("u@d").unwrap().real_priority, 0.5);
}

#[test]
fn default_factor_1000_gives_eup_500() {
    let mut a = Accountant::new(AccountantParams::default());
    tick(&mut a, 0, &[("new@d", 1.0)]);
    assert_eq!(a.record("new@d").unwrap().priority_factor, 1000.0);
    assert_eq!(a.effective_priority("new@d"), 500.0);
    assert_eq!(a.effective_priority("unknown@d"), 500.0);
}

#[test]
fn nice_remote_and_group_factors() {
    let mut p = AccountantParams {
        local_domain: Some("cs.wisc.edu".into()),
        group_names: vec!["group_physics".into()],
        ..Default::default()
    };
    p.group_prio_factors.insert("group_physics".into(), 50.0);
    let a = Accountant::new(p);
    assert_eq!(a.default_factor("nice-user.bob@cs.wisc.edu"), 1e10);
    assert_eq!(a.default_factor("bob@elsewhere.org"), 1e7);
    assert_eq!(a.default_factor("bob@cs.wisc.edu"), 1000.0);
    assert_eq!(a.default_factor("group_physics.bob@cs.wisc.edu"), 50.0);
    // Without ACCOUNTANT_LOCAL_DOMAIN every submitter is local (HTCondor sets the remote
    // factor to 1 then).
    let a = Accountant::new(AccountantParams::default());
    assert_eq!(a.default_factor("bob@elsewhere.org"), 1000.0);
}

#[test]
fn factor_2000_has_twice_the_eup() {
    let mut a = Accountant::new(AccountantParams::default());
    tick(&mut a, 0, &[("a@d", 10.0), ("b@d", 10.0)]);
    tick(&mut a, DAY, &[("a@d", 10.0), ("b@d", 10.0)]);
    a.apply(&AccountantCommand::SetFactor {
        name: "b@d".into(),
        value: 2000.0,
    })
    .unwrap();
    assert!(close(
        a.effective_priority("b@d"),
        2.0 * a.effective_priority("a@d")
    ));
}

#[test]
fn group_usage_rolls_up_the_hierarchy() {
    let p = AccountantParams {
        group_names: vec!["group_physics".into(), "group_physics.hep".into()],
        ..Default::default()
    };
    let mut a = Accountant::new(p);
    tick(
        &mut a,
        0,
        &[
            ("group_physics.hep.einstein@d", 8.0),
            ("group_physics.bohr@d", 2.0),
            ("u@d", 5.0),
        ],
    );
    tick(
        &mut a,
        DAY,
        &[
            ("group_physics.hep.einstein@d", 8.0),
            ("group_physics.bohr@d", 2.0),
            ("u@d", 5.0),
        ],
    );
    let hep = a.record("group_physics.hep").unwrap();
    assert!(hep.is_group);
    assert_eq!(hep.hier_weighted_slots_at_last_tick, 8.0);
    assert!(close(hep.real_priority, 0.25 + 4.0));
    let phys = a.record("group_physics").unwrap();
    assert_eq!(phys.weighted_slots_at_last_tick, 2.0);
    assert_eq!(phys.hier_weighted_slots_at_last_tick, 10.0);
    assert!(close(phys.real_priority, 0.25 + 5.0));
    let none = a.record(ROOT_GROUP).unwrap();
    assert_eq!(none.weighted_slots_at_last_tick, 5.0);
    // Case-insensitive group names; an unknown subgroup falls back to the deepest known one.
    assert_eq!(
        a.assigned_group("GROUP_PHYSICS.HEP.x@d"),
        "group_physics.hep"
    );
    assert_eq!(a.assigned_group("group_physics.lep.x@d"), "group_physics");
    assert_eq!(a.assigned_group("john.doe@d"), ROOT_GROUP);
    let rows = a.userprio_rows(DAY);
    let row = rows.iter().find(|r| r.name == "group_physics").unwrap();
    assert_eq!(row.resources_used, 10.0);
}

#[test]
fn tick_older_than_last_is_refused_and_changes_nothing() {
    let mut a = Accountant::new(AccountantParams::default());
    tick(&mut a, 1000, &[("a@d", 3.0)]);
    let before = a.clone();
    let err = a
        .apply(&AccountantCommand::Tick {
            now: 999,
            usage: vec![],
        })
        .unwrap_err();
    assert_eq!(
        err,
        AccountantError::TimeWentBackwards {
            last: 1000,
            now: 999
        }
    );
    assert!(err.to_string().contains("older than the last tick at 1000"));
    assert_eq!(a, before);
}

#[test]
fn bad_values_are_refused_and_change_nothing() {
    let mut a = Accountant::new(AccountantParams::default());
    tick(&mut a, 0, &[("a@d", 3.0)]);
    let before = a.clone();
    assert!(a
        .apply(&AccountantCommand::SetFactor {
            name: "a@d".into(),
            value: 0.5
        })
        .is_err());
    assert!(a
        .apply(&AccountantCommand::SetPriority {
            name: "a@d".into(),
            value: f64::NAN
        })
        .is_err());
    assert!(a
        .apply(&AccountantCommand::Tick {
            now: 10,
            usage: vec![Usage {
                submitter: "a@d".into(),
                weighted_slots: -1.0
            }]
        })
        .is_err());
    assert_eq!(
        a.apply(&AccountantCommand::Delete { name: "x@d".into() }),
        Err(AccountantError::UnknownSubmitter("x@d".into()))
    );
    assert_eq!(a, before);
}

#[test]
fn admin_commands() {
    let mut a = Accountant::new(AccountantParams::default());
    tick(&mut a, 0, &[("a@d", 4.0)]);
    tick(&mut a, 100, &[("a@d", 4.0)]);
    use AccountantCommand as C;
    a.apply(&C::SetFloor {
        name: "a@d".into(),
        value: 10.0,
    })
    .unwrap();
    a.apply(&C::SetCeiling {
        name: "a@d".into(),
        value: 5.0,
    })
    .unwrap();
    a.apply(&C::SetAccumulatedUsage {
        name: "a@d".into(),
        value: 7.0,
    })
    .unwrap();
    a.apply(&C::SetBeginUsageTime {
        name: "a@d".into(),
        time: 5,
    })
    .unwrap();
    a.apply(&C::SetLastUsageTime {
        name: "a@d".into(),
        time: 6,
    })
    .unwrap();
    let r = a.record("a@d").unwrap();
    assert_eq!(
        (r.floor, r.ceiling(), r.accumulated_usage),
        (10.0, Some(5.0), 7.0)
    );
    assert_eq!((r.begin_usage_time, r.last_usage_time), (5, 6));
    a.apply(&C::ResetUsage { name: "a@d".into() }).unwrap();
    let r = a.record("a@d").unwrap();
    assert_eq!((r.accumulated_usage, r.begin_usage_time), (0.0, 100));
    a.apply(&C::SetCeiling {
        name: "a@d".into(),
        value: -1.0,
    })
    .unwrap();
    assert_eq!(a.record("a@d").unwrap().ceiling(), None);
    a.apply(&C::Delete { name: "a@d".into() }).unwrap();
    assert!(a.record("a@d").is_none());
}

#[test]
fn serde_round_trip() {
    let mut a = Accountant::new(AccountantParams::default());
    tick(&mut a, 0, &[("a@d", 4.0)]);
    tick(&mut a, 100, &[("a@d", 4.0)]);
    let json = serde_json::to_string(&a).unwrap();
    let b: Accountant = serde_json::from_str(&json).unwrap();
    assert_eq!(a, b);
}

#[test]
fn userprio_long_round_trip() {
    let p = AccountantParams {
        group_names: vec!["group_a".into()],
        ..Default::default()
    };
    let mut a = Accountant::new(p.clone());
    tick(&mut a, 1000, &[("group_a.u@d", 3.0), ("v@d", 1.5)]);
    tick(&mut a, 1000 + DAY, &[("group_a.u@d", 3.0), ("v@d", 1.5)]);
    a.apply(&AccountantCommand::SetFloor {
        name: "v@d".into(),
        value: 2.0,
    })
    .unwrap();
    a.apply(&AccountantCommand::SetCeiling {
        name: "v@d".into(),
        value: 9.0,
    })
    .unwrap();
    let text = a.to_userprio_long(1000 + DAY);
    let b = parse_userprio(&text, "dump", p).unwrap();
    assert_eq!(b.last_tick(), Some(1000 + DAY));
    for (n, r) in a.records() {
        let s = b.record(n).unwrap_or_else(|| panic!("{n} missing"));
        assert!(close(s.real_priority, r.real_priority), "{n}");
        assert_eq!(
            (s.priority_factor, s.floor, s.ceiling, s.is_group),
            (r.priority_factor, r.floor, r.ceiling, r.is_group)
        );
        assert!(close(s.accumulated_usage, r.accumulated_usage));
        assert_eq!(
            (s.begin_usage_time, s.last_usage_time),
            (r.begin_usage_time, r.last_usage_time)
        );
    }
}

#[test]
fn userprio_modular_form_and_errors() {
    // `Priority` is the effective priority (real 12.5 times factor 1000).
    let text = "Name = \"alice@cs\"\nPriority = 12500.0\nPriorityFactor = 1000.0\nIsAccountingGroup = false\n\nName = \"group_x\"\nPriority = 3.0\nPriorityFactor = 1.0\nIsAccountingGroup = true\n";
    let a = parse_userprio(text, "prio.txt", AccountantParams::default()).unwrap();
    assert_eq!(a.effective_priority("alice@cs"), 12500.0);
    assert_eq!(a.real_priority("alice@cs"), 12.5);
    assert!(a.record("group_x").unwrap().is_group);
    let err = parse_userprio("Foo = 1\n", "prio.txt", AccountantParams::default()).unwrap_err();
    assert!(err.to_string().starts_with("prio.txt: ad 1"), "{err}");
    let err = parse_userprio("Name = \n", "prio.txt", AccountantParams::default()).unwrap_err();
    assert!(err.to_string().starts_with("prio.txt"), "{err}");
}

#[test]
fn userprio_long_keeps_names_with_quotes_and_backslashes() {
    let mut a = Accountant::new(AccountantParams::default());
    let names = ["a\"b@d", "c\\d@d", "q\\\"x@d"];
    tick(&mut a, 0, &names.map(|n| (n, 1.0)));
    tick(&mut a, DAY, &names.map(|n| (n, 1.0)));
    let text = a.to_userprio_long(DAY);
    assert!(text.contains("\"c\\d@d\""), "{text}");
    let b = parse_userprio(&text, "dump", AccountantParams::default()).unwrap();
    let got: Vec<&str> = b.records().map(|(n, _)| n).collect();
    let want: Vec<&str> = a.records().map(|(n, _)| n).collect();
    assert_eq!(got, want);
}

/// A submitter name is untrusted input (a job's AccountingGroup, a command's argument): one
/// with a multi-byte character across the nice-user prefix's length once made `apply` panic,
/// in every replica at once.
#[test]
fn a_name_with_a_multibyte_character_at_the_prefix_length_is_just_a_name() {
    let a = Accountant::new(AccountantParams::default());
    assert_eq!(
        a.default_factor("gRoup_a\u{fffd}alice@pool"),
        a.default_factor("alice@pool")
    );
    assert_eq!(
        a.default_factor("nice-useR.bob@pool"),
        a.params().nice_user_prio_factor
    );
}
