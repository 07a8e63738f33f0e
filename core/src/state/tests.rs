use super::*;
use crate::accountant::Usage;

fn req(cmd: Command) -> Request {
    Request::new(cmd)
}

#[test]
fn quota_and_limit_changes_apply_and_bad_values_are_refused_without_change() {
    let mut s = PoolState::default();
    let r = s.apply(&req(Command::SetQuota {
        group: "group_a".into(),
        quota: Some(Quota::Static(10.0)),
    }));
    assert!(r.ok, "{r:?}");
    assert_eq!(s.groups["group_a"].quota, Some(Quota::Static(10.0)));
    let before = s.groups.clone();
    let r = s.apply(&req(Command::SetQuota {
        group: "group_a".into(),
        quota: Some(Quota::Dynamic(1.5)),
    }));
    assert!(!r.ok);
    assert!(r.error.contains("between 0 and 1"), "{}", r.error);
    assert_eq!(s.groups, before);
    let r = s.apply(&req(Command::SetLimit {
        name: "SW_License".into(),
        limit: Some(4.0),
    }));
    assert!(r.ok);
    assert_eq!(s.limits["sw_license"], 4.0);
    let r = s.apply(&req(Command::SetLimit {
        name: "x".into(),
        limit: Some(-1.0),
    }));
    assert!(!r.ok && r.error.contains("bad value"), "{r:?}");
    // Clearing the quota and surplus removes the group entry.
    s.apply(&req(Command::SetQuota {
        group: "group_a".into(),
        quota: None,
    }));
    assert!(!s.groups.contains_key("group_a"));
    assert_eq!(s.applied_commands, 5);
}

#[test]
fn same_commands_give_same_state_and_snapshot_round_trips() {
    let cmds = vec![
        Command::Accountant(AccountantCommand::Tick {
            now: 1000,
            usage: vec![Usage {
                submitter: "alice@pool".into(),
                weighted_slots: 4.0,
            }],
        }),
        Command::Accountant(AccountantCommand::Tick {
            now: 2000,
            usage: vec![Usage {
                submitter: "alice@pool".into(),
                weighted_slots: 4.0,
            }],
        }),
        Command::Accountant(AccountantCommand::SetFactor {
            name: "alice@pool".into(),
            value: 500.0,
        }),
        Command::SetSurplus {
            group: "group_b".into(),
            allow: Some(true),
        },
        Command::PutAd {
            ad_type: "Machine".into(),
            name: "slot1@host".into(),
            text: "[ Name = \"slot1@host\"; Absent = true ]".into(),
            time: 2000,
        },
    ];
    let mut a = PoolState::default();
    let mut b = PoolState::default();
    for c in &cmds {
        // Through JSON, as the log stores them.
        let j = serde_json::to_string(&req(c.clone())).unwrap();
        let r: Request = serde_json::from_str(&j).unwrap();
        assert!(a.apply(&r).ok);
        assert!(b.apply(&r).ok);
    }
    let ja = serde_json::to_string(&a).unwrap();
    assert_eq!(ja, serde_json::to_string(&b).unwrap());
    let back: PoolState = serde_json::from_str(&ja).unwrap();
    assert_eq!(serde_json::to_string(&back).unwrap(), ja);
    assert_eq!(a.now, 2000);
    let rec = a.accountant.record("alice@pool").unwrap();
    assert_eq!(rec.priority_factor, 500.0);
}

#[test]
fn old_tick_is_refused_and_unknown_submitter_reports_name() {
    let mut s = PoolState::default();
    let tick = |now| {
        req(Command::Accountant(AccountantCommand::Tick {
            now,
            usage: vec![],
        }))
    };
    assert!(s.apply(&tick(100)).ok);
    let r = s.apply(&tick(50));
    assert!(!r.ok);
    assert_eq!(s.now, 100);
    let r = s.apply(&req(Command::Accountant(AccountantCommand::ResetUsage {
        name: "nobody@nowhere".into(),
    })));
    assert!(!r.ok);
    assert!(r.error.contains("nobody@nowhere"), "{}", r.error);
}

#[test]
fn future_command_version_is_refused() {
    let mut s = PoolState::default();
    let r = s.apply(&Request {
        v: COMMAND_VERSION + 1,
        cmd: Command::Noop,
        audit: None,
    });
    assert!(!r.ok && r.error.contains("newer"));
}

#[test]
fn version_1_log_entry_text_still_decodes() {
    // The exact JSON a v1 binary writes; keep this test when changing Command.
    let j = r#"{"v":1,"cmd":{"SetQuota":{"group":"group_a","quota":{"Dynamic":0.25}}}}"#;
    let r: Request = serde_json::from_str(j).unwrap();
    let mut s = PoolState::default();
    assert!(s.apply(&r).ok);
    assert_eq!(s.groups["group_a"].quota, Some(Quota::Dynamic(0.25)));
}

#[test]
fn negotiator_pause_and_cycle_requests_apply_and_survive_a_snapshot() {
    let mut s = PoolState::default();
    assert!(!s.negotiator.paused);
    assert!(
        s.apply(&req(Command::SetNegotiatorPaused { paused: true }))
            .ok
    );
    assert!(s.negotiator.paused);
    let r = s.apply(&req(Command::RequestCycle));
    assert!(r.ok);
    assert_eq!(
        r.result,
        Some(CommandResult::CycleRequested {
            cycle_requests: 1,
            paused: true
        })
    );
    s.apply(&req(Command::RequestCycle));
    assert_eq!(s.negotiator.cycle_requests, 2);
    assert!(
        s.apply(&req(Command::SetNegotiatorPaused { paused: false }))
            .ok
    );
    assert!(!s.negotiator.paused);
    let back: PoolState = serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
    assert_eq!(back.negotiator, s.negotiator);
    // The commands as cmctl sends them (bare JSON).
    let r: Request = serde_json::from_str(r#"{"v":1,"cmd":"RequestCycle"}"#).unwrap();
    assert!(s.apply(&r).ok);
    let r: Request =
        serde_json::from_str(r#"{"v":1,"cmd":{"SetNegotiatorPaused":{"paused":true}}}"#).unwrap();
    assert!(s.apply(&r).ok && s.negotiator.paused);
}

#[test]
fn snapshot_and_cycle_record_without_the_new_fields_still_decode() {
    // A state written before the negotiator controls existed.
    let old = serde_json::to_value(PoolState::default()).unwrap();
    let mut obj = old.as_object().unwrap().clone();
    obj.remove("negotiator");
    let back: PoolState = serde_json::from_value(serde_json::Value::Object(obj)).unwrap();
    assert_eq!(back.negotiator, NegotiatorControl::default());
    // A v1 RecordCycle entry with only the original fields.
    let j = r#"{"v":1,"cmd":{"RecordCycle":{"term":2,"cycle":1,"start_time":10,"end_time":11,
        "slots":4,"submitters":1,"matches":3,"rejections":0}}}"#;
    let r: Request = serde_json::from_str(j).unwrap();
    let mut s = PoolState::default();
    assert!(s.apply(&r).ok);
    assert_eq!(s.cycles[0].matches, 3);
    assert!(s.cycles[0].matched_by_submitter.is_empty());
    assert!(s.cycles[0].groups.is_empty());
    // Records must move forward in (term, cycle).
    let again = s.apply(&r);
    assert!(!again.ok && again.error.contains("not after"), "{again:?}");
}

/// A cycle record's group quotas go through the Raft log's JSON and back; only the last
/// record keeps them; a record without groups is written as before (no `groups` key), so an
/// older CM reads it unchanged, and a non-finite figure (which JSON cannot carry) is written
/// as 0 rather than as a poison pill.
#[test]
fn cycle_records_carry_group_quotas_through_the_log() {
    let g = GroupQuotaRecord {
        name: "group_a".into(),
        config_quota: 20.0,
        is_static: true,
        effective_quota: 20.0,
        subtree_quota: 20.0,
        surplus: f64::NAN,
        accept_surplus: true,
        requested: f64::INFINITY,
        usage: 7.0,
    }
    .finite();
    assert_eq!((g.surplus, g.requested), (0.0, 0.0));
    let rec = CycleRecord {
        term: 1,
        cycle: 1,
        groups: vec![g],
        ..Default::default()
    };
    let wire = serde_json::to_string(&req(Command::RecordCycle(rec.clone()))).unwrap();
    let back: Request = serde_json::from_str(&wire).unwrap();
    let mut s = PoolState::default();
    assert!(s.apply(&back).ok);
    assert_eq!(s.cycles[0], rec);
    // The next record's quotas replace the previous one's (only the last cycle's are kept).
    let next = CycleRecord {
        cycle: 2,
        ..rec.clone()
    };
    assert!(s.apply(&req(Command::RecordCycle(next.clone()))).ok);
    assert!(s.cycles[0].groups.is_empty());
    assert_eq!(s.cycles[1], next);
    let plain = serde_json::to_string(&CycleRecord::default()).unwrap();
    assert!(!plain.contains("groups"), "{plain}");
}

/// Issue 13.15: times in commands are untrusted (any admin write, any leader's clock): the
/// extremes of i64 apply without a panic on any replica, and the state still reads back.
#[test]
fn extreme_times_in_commands_never_panic() {
    let mut s = PoolState::default();
    let usage = vec![Usage {
        submitter: "alice@pool".into(),
        weighted_slots: 1.0,
    }];
    for now in [i64::MIN, 0, i64::MAX, i64::MAX] {
        let r = s.apply(&req(Command::Accountant(AccountantCommand::Tick {
            now,
            usage: usage.clone(),
        })));
        assert!(r.ok, "{r:?}");
    }
    s.apply(&req(Command::RecordCycle(CycleRecord {
        term: 1,
        cycle: 1,
        start_time: i64::MIN,
        end_time: i64::MAX,
        ..Default::default()
    })));
    s.apply(&req(Command::PutAd {
        ad_type: "Machine".into(),
        name: "x".into(),
        text: "[ Name = \"x\" ]".into(),
        time: i64::MIN,
    }));
    let back: PoolState = serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
    assert_eq!(back, s);
    assert!(s
        .accountant
        .record("alice@pool")
        .unwrap()
        .accumulated_usage
        .is_finite());
}

/// Issue 13.14: a command of a newer feature version is refused, the same way on every
/// replica, until the cluster has committed that version; the version only goes up, and
/// never beyond what this binary supports.
#[test]
fn new_commands_wait_for_the_cluster_feature_version() {
    let mut s = PoolState::default();
    assert_eq!(s.feature_version, 1);
    let put = Command::PutAds {
        ads: vec![AdPut {
            ad_type: "Machine".into(),
            name: "slot1@a".into(),
            text: "[ Name = \"slot1@a\" ]".into(),
            time: 10,
        }],
    };
    let r = s.apply(&req(put.clone()));
    assert!(!r.ok && r.error.contains("feature version 2"), "{r:?}");
    assert!(s.ads.is_empty());
    let r = s.apply(&req(Command::SetFeatureVersion {
        version: FEATURE_VERSION + 1,
    }));
    assert!(!r.ok, "{r:?}");
    assert!(s.apply(&req(Command::SetFeatureVersion { version: 2 })).ok);
    assert!(s.apply(&req(put)).ok);
    assert_eq!(s.ads["Machine"]["slot1@a"].time, 10);
    assert!(!s.apply(&req(Command::SetFeatureVersion { version: 1 })).ok);
    let r = s.apply(&req(Command::RemoveAds {
        ads: vec![
            AdRef {
                ad_type: "Machine".into(),
                name: "slot1@a".into(),
            },
            AdRef {
                ad_type: "Machine".into(),
                name: "never@held".into(),
            },
        ],
    }));
    assert!(r.ok, "{r:?}");
    assert!(s.ads.is_empty());
    // An old snapshot (no feature version) reads as version 1.
    let mut j: serde_json::Value = serde_json::to_value(PoolState::default()).unwrap();
    j.as_object_mut().unwrap().remove("feature_version");
    let old: PoolState = serde_json::from_value(j).unwrap();
    assert_eq!(old.feature_version, 1);
}

fn proposal(kv: &[(&str, &str)]) -> Command {
    Command::SetPolicy(PolicyProposal {
        knobs: kv
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        source: "cm1:/etc/aerie.conf".into(),
        time: 5,
    })
}

fn policy_version(r: &CommandResponse) -> u64 {
    match &r.result {
        Some(CommandResult::PolicySet { version, .. }) => *version,
        other => panic!("not a PolicySet answer: {other:?} ({r:?})"),
    }
}

/// Issue 18.7: the policy is replicated, versioned, carries the ledger's parameters, and a
/// bad one is refused without a change.
#[test]
fn set_policy_versions_the_policy_and_sets_the_ledger_parameters() {
    let mut s = PoolState::default();
    let first = [
        ("GROUP_NAMES", "group_a"),
        ("GROUP_QUOTA_group_a", "10"),
        ("PRIORITY_HALFLIFE", "600"),
    ];
    let r = s.apply(&req(proposal(&first)));
    assert!(!r.ok && r.error.contains("feature version 4"), "{r:?}");
    assert!(s.policy.is_none());
    assert!(s.apply(&req(Command::SetFeatureVersion { version: 4 })).ok);
    let r = s.apply(&req(proposal(&first)));
    assert!(r.ok, "{r:?}");
    assert_eq!(policy_version(&r), 1);
    assert_eq!(s.accountant.params().priority_halflife, 600.0);
    assert_eq!(
        s.accountant.params().group_names,
        vec!["group_a".to_string()]
    );
    // The same knobs again: nothing changes, the version stays.
    let r = s.apply(&req(proposal(&first)));
    assert_eq!(policy_version(&r), 1);
    // A new quota: version 2, the change named, the cycle's configuration follows.
    let second = [
        ("GROUP_NAMES", "group_a"),
        ("GROUP_QUOTA_group_a", "25"),
        ("PRIORITY_HALFLIFE", "600"),
    ];
    let r = s.apply(&req(proposal(&second)));
    assert_eq!(
        r.result,
        Some(CommandResult::PolicySet {
            version: 2,
            changed: vec!["GROUP_QUOTA_group_a".into()]
        })
    );
    let file = crate::negotiator::NegotiatorConfig::default();
    let (cfg, version, warnings) = s.policy_config(&file);
    assert_eq!((version, warnings.len()), (2, 0));
    assert_eq!(
        cfg.groups[0].quota,
        crate::negotiator::GroupQuota::Static(25.0)
    );
    // A runtime override still wins over the replicated policy.
    assert!(
        s.apply(&req(Command::SetQuota {
            group: "group_a".into(),
            quota: Some(Quota::Static(3.0)),
        }))
        .ok
    );
    let (cfg, _, _) = s.policy_config(&file);
    assert_eq!(
        cfg.groups[0].quota,
        crate::negotiator::GroupQuota::Static(3.0)
    );
    // A bad knob is refused, naming it; the policy in force stays.
    let before = s.clone();
    let r = s.apply(&req(proposal(&[("GROUP_ACCEPT_SURPLUS", "perhaps")])));
    assert!(!r.ok && r.error.contains("GROUP_ACCEPT_SURPLUS"), "{r:?}");
    assert_eq!(s.policy, before.policy);
    assert_eq!(s.accountant, before.accountant);
    // A state from before the replicated policy reads back without one.
    let mut j = serde_json::to_value(PoolState::default()).unwrap();
    j.as_object_mut().unwrap().remove("policy");
    assert_eq!(serde_json::from_value::<PoolState>(j).unwrap().policy, None);
}

/// Issue 18.5: a restore puts back the ledger, the policy (at a newer version) and the
/// overrides; one with a bad part changes nothing.
#[test]
fn restore_puts_back_a_saved_pool_and_a_bad_one_changes_nothing() {
    let mut saved = PoolState::default();
    saved.apply(&req(Command::SetFeatureVersion { version: 4 }));
    saved.apply(&req(proposal(&[("PRIORITY_HALFLIFE", "900")])));
    saved.apply(&req(Command::Accountant(
        crate::accountant::AccountantCommand::SetFactor {
            name: "alice@x".into(),
            value: 42.0,
        },
    )));
    saved.apply(&req(Command::SetLimit {
        name: "license".into(),
        limit: Some(2.0),
    }));
    let backup = backup::Backup::of(&saved);

    let mut fresh = PoolState::default();
    fresh.apply(&req(Command::SetFeatureVersion { version: 4 }));
    fresh.apply(&req(proposal(&[("PRIORITY_HALFLIFE", "60")])));
    fresh.apply(&req(proposal(&[("PRIORITY_HALFLIFE", "70")])));
    let r = fresh.apply(&req(Command::Restore(Box::new(backup.clone()))));
    assert!(r.ok, "{r:?}");
    assert_eq!(
        r.result,
        Some(CommandResult::Restored {
            submitters: 1,
            policy_version: 3
        })
    );
    assert_eq!(fresh.accountant, saved.accountant);
    assert_eq!(
        fresh.policy.as_ref().map(|p| &p.knobs),
        saved.policy.as_ref().map(|p| &p.knobs)
    );
    assert_eq!(fresh.limits["license"], 2.0);

    let mut bad = backup;
    bad.limits.insert("license".into(), f64::NAN);
    let before = fresh.clone();
    let r = fresh.apply(&req(Command::Restore(Box::new(bad))));
    assert!(!r.ok && r.error.contains("license"), "{r:?}");
    assert_eq!(fresh.accountant, before.accountant);
    assert_eq!(fresh.policy, before.policy);
    assert_eq!(fresh.limits, before.limits);
}

fn token(jti: &str, issued: i64, expires: i64) -> TokenRecord {
    TokenRecord {
        jti: jti.into(),
        identity: "alice@pool.example".into(),
        scopes: vec!["READ".into()],
        issued,
        expires,
        revoked: false,
    }
}

#[test]
fn tokens_are_issued_once_revoked_by_id_and_pruned_a_day_after_expiry() {
    let mut s = PoolState {
        feature_version: FEATURE_VERSION,
        ..Default::default()
    };
    let r = s.apply(&req(Command::IssueToken(token("a", 100, 200))));
    assert!(r.ok, "{}", r.error);
    assert!(
        matches!(r.result, Some(CommandResult::TokenIssued { ref jti, expires: 200, .. }) if jti == "a")
    );
    let r = s.apply(&req(Command::IssueToken(token("a", 100, 300))));
    assert!(!r.ok && r.error.contains("already issued"), "{}", r.error);
    assert!(!s.apply(&req(Command::IssueToken(token("", 100, 300)))).ok);
    assert!(!s.apply(&req(Command::IssueToken(token("b", 300, 300)))).ok);
    assert!(s.apply(&req(Command::RevokeToken { jti: "a".into() })).ok);
    assert!(s.tokens["a"].revoked);
    let r = s.apply(&req(Command::RevokeToken { jti: "zz".into() }));
    assert!(!r.ok && r.error.contains("zz"), "{}", r.error);
    // Issuing a day after "a" expired drops its record.
    assert!(
        s.apply(&req(Command::IssueToken(token(
            "c",
            200 + tokens::KEEP_EXPIRED,
            90_000
        ))))
        .ok
    );
    assert_eq!(s.tokens.keys().collect::<Vec<_>>(), ["c"]);
}

#[test]
fn token_commands_wait_for_feature_version_5() {
    let mut s = PoolState {
        feature_version: 4,
        ..Default::default()
    };
    let r = s.apply(&req(Command::IssueToken(token("a", 1, 2))));
    assert!(
        !r.ok && r.error.contains("feature version 5"),
        "{}",
        r.error
    );
}

#[test]
fn stamped_requests_leave_a_bounded_audit_trail_unstamped_ones_none() {
    let mut s = PoolState::default();
    let stamp = |t: i64| AuditStamp {
        who: "admin@admin".into(),
        from: "10.0.0.9".into(),
        time: t,
    };
    s.apply(&req(Command::SetLimit {
        name: "lic".into(),
        limit: Some(2.0),
    }));
    assert!(s.audit.is_empty());
    let mut r = req(Command::SetLimit {
        name: "lic".into(),
        limit: Some(3.0),
    });
    r.audit = Some(stamp(50));
    s.apply(&r);
    let mut bad = req(Command::CancelDrain {
        machine: "nowhere".into(),
    });
    bad.audit = Some(stamp(60));
    s.apply(&bad);
    let a: Vec<_> = s.audit.iter().collect();
    assert_eq!(a.len(), 2);
    assert_eq!(
        (a[0].time, a[0].who.as_str(), a[0].from.as_str()),
        (50, "admin@admin", "10.0.0.9")
    );
    assert_eq!(a[0].command, "set_limit");
    assert!(a[0].ok && a[0].summary.contains("lic") && a[0].summary.contains('3'));
    assert!(!a[1].ok && a[1].error.contains("nowhere"));
    for t in 0..(MAX_AUDIT_RECORDS as i64 + 5) {
        let mut r = req(Command::Noop);
        r.audit = Some(stamp(100 + t));
        s.apply(&r);
    }
    assert_eq!(s.audit.len(), MAX_AUDIT_RECORDS);
    assert_eq!(
        s.audit.back().unwrap().time,
        100 + MAX_AUDIT_RECORDS as i64 + 4
    );
    // The stamp survives the log's JSON, and an entry without one reads as before.
    let json = serde_json::to_string(&r).unwrap();
    assert_eq!(serde_json::from_str::<Request>(&json).unwrap(), r);
    let old: Request = serde_json::from_str(r#"{"v":1,"cmd":"Noop"}"#).unwrap();
    assert_eq!(old.audit, None);
    assert_eq!(
        crate::state::audit::shorten(&"x".repeat(500)).len(),
        crate::state::audit::SUMMARY_CHARS + 3
    );
}

#[test]
fn a_state_from_before_tokens_and_audit_still_loads() {
    let mut v = serde_json::to_value(PoolState::default()).unwrap();
    let m = v.as_object_mut().unwrap();
    m.remove("tokens");
    m.remove("audit");
    let s: PoolState = serde_json::from_value(v).unwrap();
    assert!(s.tokens.is_empty() && s.audit.is_empty());
}
