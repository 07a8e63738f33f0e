//! The typed admin protocol end to end: every kind of command goes through a follower of a
//! live 3-CM cluster (forwarded to the leader, committed, applied) and is read back through
//! another CM with the typed query that shows it. The `kind` functions below match every
//! variant without a wildcard, so a new command that this test does not send fails to
//! compile here instead of going untested.
use aerie_core::accountant::{AccountantCommand, AccountantParams, Usage};
use aerie_core::admin::{
    AdsQuery, AuditQuery, CyclesQuery, NegotiatorQuery, PolicyQuery, StateQuery, SummaryQuery,
    TokensQuery, UserprioQuery,
};
use aerie_core::state::backup::Backup;
use aerie_core::state::{
    AdPut, AdRef, Command, CommandResult, CycleRecord, DrainRequest, PolicyProposal, Quota,
    TokenRecord, FEATURE_VERSION,
};
use aerie_tests::*;
use std::collections::BTreeSet;
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_aerie-cm-node");

/// The name of a command's kind; exhaustive on purpose (see the module doc).
fn kind(c: &Command) -> &'static str {
    match c {
        Command::Noop => "noop",
        Command::Accountant(a) => accountant_kind(a),
        Command::SetQuota { .. } => "set_quota",
        Command::SetSurplus { .. } => "set_surplus",
        Command::SetLimit { .. } => "set_limit",
        Command::RequestDrain(_) => "request_drain",
        Command::CancelDrain { .. } => "cancel_drain",
        Command::PutAd { .. } => "put_ad",
        Command::RemoveAd { .. } => "remove_ad",
        Command::RecordCycle(_) => "record_cycle",
        Command::SetNegotiatorPaused { .. } => "set_negotiator_paused",
        Command::RequestCycle => "request_cycle",
        Command::SetFeatureVersion { .. } => "set_feature_version",
        Command::PutAds { .. } => "put_ads",
        Command::RemoveAds { .. } => "remove_ads",
        Command::SetPolicy(_) => "set_policy",
        Command::Restore(_) => "restore",
        Command::IssueToken(_) => "issue_token",
        Command::RevokeToken { .. } => "revoke_token",
    }
}

fn accountant_kind(a: &AccountantCommand) -> &'static str {
    match a {
        AccountantCommand::Tick { .. } => "tick",
        AccountantCommand::SetParams(_) => "set_params",
        AccountantCommand::SetPriority { .. } => "set_priority",
        AccountantCommand::SetFactor { .. } => "set_factor",
        AccountantCommand::SetFloor { .. } => "set_floor",
        AccountantCommand::SetCeiling { .. } => "set_ceiling",
        AccountantCommand::ResetUsage { .. } => "reset_usage",
        AccountantCommand::ResetAll => "reset_all",
        AccountantCommand::Delete { .. } => "delete",
        AccountantCommand::SetAccumulatedUsage { .. } => "set_accumulated_usage",
        AccountantCommand::SetBeginUsageTime { .. } => "set_begin_usage_time",
        AccountantCommand::SetLastUsageTime { .. } => "set_last_usage_time",
    }
}

fn acc(a: AccountantCommand) -> Command {
    Command::Accountant(a)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_command_kind_round_trips_through_a_live_cluster() {
    let c = Cluster::start(daemon_bin(BIN), 3, &[]).expect("start cluster");
    let leader = wait_leader(&c.running(), Duration::from_secs(20))
        .await
        .expect("leader");
    let followers: Vec<String> = c
        .running()
        .into_iter()
        .filter(|(id, _)| *id != leader)
        .map(|(_, a)| a)
        .collect();
    // Written through one follower, read (linearizably) through the other.
    let (w, r) = (followers[0].clone(), followers[1].clone());
    let within = Duration::from_secs(20);
    let now = unix_now();
    let alice = "alice@pool".to_string();
    let mut sent = BTreeSet::new();
    let mut send = |cmd: Command| {
        sent.insert(kind(&cmd));
        let w = w.clone();
        async move {
            let reply = write_retry(&[w], &cmd, Duration::from_secs(20))
                .await
                .unwrap_or_else(|e| panic!("{}: {e:#}", kind(&cmd)));
            assert!(reply.ok && reply.log_index > 0, "{}: {reply:?}", kind(&cmd));
            reply
        }
    };

    send(Command::Noop).await;

    // The ledger: a tick creates alice and bob; every userprio edit shows in the rows.
    let params = AccountantParams {
        priority_halflife: 3600.0,
        ..Default::default()
    };
    send(acc(AccountantCommand::SetParams(params.clone()))).await;
    send(acc(AccountantCommand::Tick {
        now: now - 100,
        usage: vec![
            Usage {
                submitter: alice.clone(),
                weighted_slots: 2.0,
            },
            Usage {
                submitter: "bob@pool".into(),
                weighted_slots: 1.0,
            },
        ],
    }))
    .await;
    for a in [
        AccountantCommand::SetFactor {
            name: alice.clone(),
            value: 250.0,
        },
        AccountantCommand::SetPriority {
            name: alice.clone(),
            value: 7.0,
        },
        AccountantCommand::SetFloor {
            name: alice.clone(),
            value: 2.0,
        },
        AccountantCommand::SetCeiling {
            name: alice.clone(),
            value: 9.0,
        },
        AccountantCommand::SetAccumulatedUsage {
            name: alice.clone(),
            value: 1234.0,
        },
        AccountantCommand::SetBeginUsageTime {
            name: alice.clone(),
            time: now - 5000,
        },
        AccountantCommand::SetLastUsageTime {
            name: alice.clone(),
            time: now - 200,
        },
    ] {
        send(acc(a)).await;
    }
    let up = query_retry(&r, UserprioQuery::default(), within)
        .await
        .expect("userprio");
    assert_eq!(up.params, params);
    let row = up.rows.iter().find(|x| x.name == alice).expect("alice");
    assert_eq!(
        (
            row.priority_factor,
            row.real_priority,
            row.floor,
            row.ceiling,
            row.accumulated_usage,
            row.begin_usage_time,
            row.last_usage_time
        ),
        (250.0, 7.0, 2.0, 9.0, 1234.0, now - 5000, now - 200)
    );
    send(acc(AccountantCommand::ResetUsage {
        name: alice.clone(),
    }))
    .await;
    let up = query_retry(&r, UserprioQuery::default(), within)
        .await
        .expect("userprio");
    let row = up.rows.iter().find(|x| x.name == alice).expect("alice");
    assert_eq!(row.accumulated_usage, 0.0);
    send(acc(AccountantCommand::SetAccumulatedUsage {
        name: "bob@pool".into(),
        value: 50.0,
    }))
    .await;
    send(acc(AccountantCommand::ResetAll)).await;
    send(acc(AccountantCommand::Delete {
        name: "bob@pool".into(),
    }))
    .await;
    let up = query_retry(&r, UserprioQuery::default(), within)
        .await
        .expect("userprio");
    assert!(up.rows.iter().all(|x| x.name != "bob@pool"), "{up:?}");
    assert!(up.rows.iter().all(|x| x.accumulated_usage == 0.0), "{up:?}");

    // Runtime policy.
    send(Command::SetQuota {
        group: "group_a".into(),
        quota: Some(Quota::Dynamic(0.25)),
    })
    .await;
    send(Command::SetSurplus {
        group: "group_a".into(),
        allow: Some(true),
    })
    .await;
    send(set_limit("SW_License", 4.0)).await;
    let drain = DrainRequest {
        machine: "node7.pool".into(),
        how: "graceful".into(),
        reason: "kernel update".into(),
        time: now,
        request_id: "d1".into(),
        start_expr: "Owner == \"ops\"".into(),
        check_expr: String::new(),
        resume_on_completion: false,
    };
    send(Command::RequestDrain(drain.clone())).await;
    let p = query_retry(&r, PolicyQuery, within).await.expect("policy");
    assert_eq!(p.groups["group_a"].quota, Some(Quota::Dynamic(0.25)));
    assert_eq!(p.groups["group_a"].accept_surplus, Some(true));
    assert_eq!(p.limits["sw_license"], 4.0);
    assert_eq!(p.drains["node7.pool"], drain);
    send(Command::CancelDrain {
        machine: "node7.pool".into(),
    })
    .await;
    assert!(query_retry(&r, PolicyQuery, within)
        .await
        .expect("policy")
        .drains
        .is_empty());

    // Absent ads.
    let text = "[ MyType = \"Machine\"; Name = \"slot1@n1\"; Absent = true ]".to_string();
    send(Command::PutAd {
        ad_type: "Machine".into(),
        name: "slot1@n1".into(),
        text: text.clone(),
        time: now,
    })
    .await;
    let ads = query_retry(&r, AdsQuery, within).await.expect("ads");
    assert_eq!(ads["Machine"]["slot1@n1"].text, text);
    send(Command::RemoveAd {
        ad_type: "Machine".into(),
        name: "slot1@n1".into(),
    })
    .await;
    assert!(query_retry(&r, AdsQuery, within)
        .await
        .expect("ads")
        .is_empty());
    // The batched forms, once the cluster runs feature version 2 (every CM here does: the
    // leader raises it by itself; setting it again to the same version is accepted).
    send(Command::SetFeatureVersion {
        version: FEATURE_VERSION,
    })
    .await;
    assert_eq!(
        query_retry(&r, StateQuery, within)
            .await
            .expect("state")
            .feature_version,
        FEATURE_VERSION
    );
    let rack: Vec<AdPut> = (0..3)
        .map(|i| AdPut {
            ad_type: "Machine".into(),
            name: format!("slot1@r{i}"),
            text: format!("[ MyType = \"Machine\"; Name = \"slot1@r{i}\"; Absent = true ]"),
            time: now,
        })
        .collect();
    send(Command::PutAds { ads: rack.clone() }).await;
    assert_eq!(
        query_retry(&r, AdsQuery, within).await.expect("ads")["Machine"].len(),
        3
    );
    send(Command::RemoveAds {
        ads: rack
            .iter()
            .map(|a| AdRef {
                ad_type: a.ad_type.clone(),
                name: a.name.clone(),
            })
            .collect(),
    })
    .await;
    assert!(query_retry(&r, AdsQuery, within)
        .await
        .expect("ads")
        .is_empty());

    // The negotiation policy (feature version 4), and a snapshot of the state restored.
    let knobs: std::collections::BTreeMap<String, String> =
        [("GROUP_NAMES", "group_a"), ("GROUP_QUOTA_group_a", "5")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
    let reply = send(Command::SetPolicy(PolicyProposal {
        knobs: knobs.clone(),
        source: "test".into(),
        time: now,
    }))
    .await;
    assert!(reply.result_json.contains("\"version\":1"), "{reply:?}");
    let before = query_retry(&r, StateQuery, within).await.expect("state");
    assert_eq!(before.policy.as_ref().map(|p| &p.knobs), Some(&knobs));
    assert_eq!(before.accountant.params().group_names, vec!["group_a"]);
    send(Command::Restore(Box::new(Backup::of(&before)))).await;
    let after = query_retry(&r, StateQuery, within).await.expect("state");
    assert_eq!(after.accountant, before.accountant);
    assert_eq!(after.policy.map(|p| (p.version, p.knobs)), Some((2, knobs)));

    // The negotiation's controls and records.
    let record = CycleRecord {
        term: 1,
        cycle: 1,
        start_time: now - 1,
        end_time: now,
        matches: 3,
        ..Default::default()
    };
    send(Command::RecordCycle(record.clone())).await;
    send(Command::SetNegotiatorPaused { paused: true }).await;
    let reply = send(Command::RequestCycle).await;
    assert_eq!(
        reply.result_json,
        r#"{"CycleRequested":{"cycle_requests":1,"paused":true}}"#
    );
    let n = query_retry(&r, NegotiatorQuery, within)
        .await
        .expect("negotiator");
    assert!(n.paused);
    assert_eq!(n.cycle_requests, 1);
    assert_eq!(n.cycles, vec![record.clone()]);
    assert_eq!(n.leader.map(|l| l.id), Some(leader));
    assert_eq!(
        query_retry(&r, CyclesQuery, within)
            .await
            .expect("cycles")
            .into_iter()
            .collect::<Vec<_>>(),
        vec![record]
    );

    // Tokens: the CM completes and signs the request, the record reads back, revocation sticks.
    let reply = send(Command::IssueToken(TokenRecord {
        jti: String::new(),
        identity: "carol@pool.example".into(),
        scopes: vec!["READ".into()],
        issued: 0,
        expires: 600,
        revoked: false,
    }))
    .await;
    let Ok(CommandResult::TokenIssued { jti, token, .. }) =
        serde_json::from_str(&reply.result_json)
    else {
        panic!("no token in {reply:?}");
    };
    assert_eq!(token.split('.').count(), 3);
    send(Command::RevokeToken { jti: jti.clone() }).await;
    let tokens = query_retry(&r, TokensQuery, within).await.expect("tokens");
    assert!(
        tokens
            .iter()
            .any(|t| t.jti == jti && t.revoked && t.expires > now),
        "{tokens:?}"
    );
    // Every admin write here was audited with the harness as its author.
    let audit = query_retry(&r, AuditQuery::default(), within)
        .await
        .expect("audit");
    assert!(audit
        .iter()
        .any(|a| a.command == "revoke_token" && a.summary.contains(&jti)));
    assert!(
        audit.iter().all(|a| a.who.starts_with("harness@")),
        "{audit:?}"
    );

    // Every kind was sent, and the whole state agrees with the summary.
    let every: BTreeSet<&str> = [
        "noop",
        "tick",
        "set_params",
        "set_priority",
        "set_factor",
        "set_floor",
        "set_ceiling",
        "reset_usage",
        "reset_all",
        "delete",
        "set_accumulated_usage",
        "set_begin_usage_time",
        "set_last_usage_time",
        "set_quota",
        "set_surplus",
        "set_limit",
        "request_drain",
        "cancel_drain",
        "put_ad",
        "remove_ad",
        "record_cycle",
        "set_negotiator_paused",
        "request_cycle",
        "set_feature_version",
        "put_ads",
        "remove_ads",
        "set_policy",
        "restore",
        "issue_token",
        "revoke_token",
    ]
    .into_iter()
    .collect();
    assert_eq!(sent, every);
    let state = query_retry(&r, StateQuery, within).await.expect("state");
    let summary = query_retry(&r, SummaryQuery, within)
        .await
        .expect("summary");
    assert_eq!(summary.applied_commands, state.applied_commands);
    assert_eq!(summary.limits, 1);
    assert!(summary.applied_commands >= every.len() as u64);
}

/// Found by the jepsen `mixed` scenario (seed 8): a follower forwarding an admin request to a
/// leader that is then paused waited out the whole forward deadline, although a new leader
/// was elected within seconds. It must give up once it sees the leader replaced, saying the
/// outcome is unknown.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_forwarded_to_a_leader_that_is_replaced_is_answered_without_waiting_it_out() {
    // A forward deadline far longer than an election, so waiting it out is told apart.
    let c = Cluster::start(daemon_bin(BIN), 3, &[("AERIE_ADMIN_TIMEOUT", "40000")])
        .expect("start cluster");
    // Every CM a voter first: a leader paused before the third joined leaves no quorum.
    let leader = wait_formed(&c.running(), Duration::from_secs(30))
        .await
        .expect("cluster formed");
    let follower = c
        .ids()
        .into_iter()
        .find(|i| *i != leader)
        .expect("follower");
    c.pause(leader);
    let mut client = admin(&c.addr(follower)).await.expect("client");
    let cmd = Command::Accountant(AccountantCommand::SetFactor {
        name: "replaced@pool".into(),
        value: 7.0,
    });
    let mut req = tonic::Request::new(aerie_proto::admin::WriteRequest {
        command_json: serde_json::to_string(&aerie_core::state::Request::new(cmd)).unwrap(),
        forwarded: false,
    });
    req.set_timeout(Duration::from_secs(60));
    let t = std::time::Instant::now();
    let answer = client.write(req).await;
    let took = t.elapsed();
    c.resume(leader);
    let err = answer.expect_err("a paused leader cannot have answered");
    assert!(
        err.message().contains("replaced before it answered"),
        "{}\n--- follower log\n{}",
        err.message(),
        c.log(follower)
    );
    // An election (1.6 s at most here, up to twice that with openraft's vote lease) and a
    // margin, far below the 40 s forward deadline.
    assert!(took < Duration::from_secs(15), "answered after {took:?}");
}
