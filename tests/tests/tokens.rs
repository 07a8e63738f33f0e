//! Tokens and the audit log against a live 3-CM cluster (issue 16, items 2 and 7): an admin
//! creates, lists and revokes tokens with `cmctl token`; a holder without a certificate
//! connects with one (`AERIE_TOKEN`) and may do what its scopes allow and no more; expired,
//! revoked and forged tokens are refused saying why; and `cmctl audit` shows who changed
//! what, from where, after a write sent through a follower.
use aerie_core::admin::StateQuery;
use aerie_core::state::AuditRecord;
use aerie_security::token::{Claims, SigningKey};
use aerie_tests::*;
use std::process::Command;
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_aerie-cm-node");
const CMCTL: &str = env!("CARGO_BIN_EXE_aerie-cmctl");

/// Runs cmctl against `cms`: as the admin certificate, or (with `token`) as a token holder
/// without a certificate.
fn cmctl(cms: &[String], token: Option<&str>, args: &[&str]) -> (i32, String, String) {
    aerie_security::testing::test_pool();
    let home = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(CMCTL);
    cmd.args(args)
        .env("AERIE_CMS", cms.join(","))
        .env("HOME", home.path())
        .env_remove("AERIE_TOKEN")
        .env_remove("AERIE_TOKEN_FILE");
    if let Some(t) = token {
        // No certificate by that name: cmctl connects with the token and the CA only.
        cmd.env("AERIE_TOKEN", t)
            .env("AERIE_CREDENTIAL_NAME", "no-such-certificate");
    }
    let out = cmd.output().expect("run cmctl");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

async fn started() -> (Cluster, Vec<String>, u64) {
    let c = Cluster::start(daemon_bin(BIN), 3, &[]).expect("start the cluster");
    let leader = wait_leader(&c.running(), Duration::from_secs(20))
        .await
        .expect("a leader");
    let cms: Vec<String> = c.running().into_iter().map(|(_, a)| a).collect();
    // Token commands and audit stamps need feature version 5, which the leader commits
    // once every CM says it supports it.
    let addr = cms[0].clone();
    eventually("feature version 5", Duration::from_secs(20), || {
        let addr = addr.clone();
        async move {
            let s = query(&addr, StateQuery, false).await?;
            anyhow::ensure!(s.feature_version >= 5, "at {}", s.feature_version);
            Ok(Some(()))
        }
    })
    .await
    .unwrap();
    (c, cms, leader)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_are_created_used_within_their_scope_listed_and_revoked() {
    let (_c, cms, _) = started().await;
    let (code, token, err) = cmctl(
        &cms,
        None,
        &[
            "token",
            "create",
            "--identity",
            "alice@pool.example",
            "--scope",
            "READ",
            "--lifetime",
            "1h",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let token = token.trim().to_string();
    assert_eq!(token.split('.').count(), 3, "{token:?}");

    // A READ token queries (on every CM) but may not write.
    for cm in &cms {
        let (code, out, err) = cmctl(std::slice::from_ref(cm), Some(&token), &["token", "list"]);
        assert_eq!(code, 0, "{cm}: {err}");
        assert!(
            out.contains("alice@pool.example") && out.contains("valid"),
            "{out}"
        );
    }
    let (code, _, err) = cmctl(
        &cms,
        Some(&token),
        &["userprio", "-setfactor", "alice@pool", "5"],
    );
    assert_ne!(code, 0);
    assert!(
        err.contains("alice@pool.example")
            && err.contains("does not include condor:/ADMINISTRATOR"),
        "{err}"
    );
    // Nor create tokens of its own.
    let (code, _, err) = cmctl(
        &cms,
        Some(&token),
        &["token", "create", "--identity", "x@y"],
    );
    assert_ne!(code, 0);
    assert!(err.contains("condor:/READ"), "{err}");

    // Revoked on one CM, refused by every CM once committed.
    let (_, list, _) = cmctl(&cms, None, &["token", "list", "--json"]);
    let records: serde_json::Value = serde_json::from_str(&list).expect("token list --json");
    let jti = records[0]["jti"].as_str().expect("a jti").to_string();
    let (code, _, err) = cmctl(&cms[..1], None, &["token", "revoke", &jti]);
    assert_eq!(code, 0, "{err}");
    for cm in &cms {
        eventually(
            "the revocation reaches every CM",
            Duration::from_secs(10),
            || {
                let cm = cm.clone();
                let token = token.clone();
                async move {
                    let (code, _, err) = cmctl(&[cm], Some(&token), &["token", "list"]);
                    match code != 0 && err.contains("revoked") {
                        true => Ok(Some(())),
                        false => Err(anyhow::anyhow!("not refused yet: {err}")),
                    }
                }
            },
        )
        .await
        .unwrap();
    }
    let (_, out, _) = cmctl(&cms, None, &["token", "list"]);
    assert!(out.contains(&jti) && out.contains("revoked"), "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expired_forged_and_missing_tokens_are_refused_saying_why() {
    let (_c, cms, _) = started().await;
    let key = SigningKey::load(aerie_security::testing::test_pool()).expect("the pool key");
    let now = unix_now();
    let claims = |exp| Claims {
        sub: "alice@pool.example".into(),
        iss: key.issuer.clone(),
        iat: now - 100,
        exp,
        jti: "t1".into(),
        scope: Some("condor:/READ".into()),
    };
    let expired = key.sign(&claims(now - 10));
    let (code, _, err) = cmctl(&cms, Some(&expired), &["token", "list"]);
    assert_ne!(code, 0);
    assert!(err.contains("expired"), "{err}");
    let forged = SigningKey::new(vec![1; 32], key.issuer.clone()).sign(&claims(now + 3600));
    let (code, _, err) = cmctl(&cms, Some(&forged), &["token", "list"]);
    assert_ne!(code, 0);
    assert!(err.contains("bad token signature"), "{err}");
    // A token the pool signed but never recorded still verifies (as HTCondor's): only
    // revocation needs the record.
    let (code, _, err) = cmctl(
        &cms,
        Some(&key.sign(&claims(now + 3600))),
        &["token", "list"],
    );
    assert_eq!(code, 0, "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_audit_log_names_who_changed_what_through_a_follower() {
    let (c, _, leader) = started().await;
    let follower = c
        .running()
        .into_iter()
        .find(|(id, _)| *id != leader)
        .map(|(_, a)| a)
        .unwrap();
    let before = unix_now();
    let (code, _, err) = cmctl(
        std::slice::from_ref(&follower),
        None,
        &["userprio", "-setfactor", "alice@pool", "250"],
    );
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = cmctl(
        &[follower],
        None,
        &["audit", "-since", &before.to_string(), "-json"],
    );
    assert_eq!(code, 0, "{err}");
    let records: Vec<AuditRecord> = out
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON record a line"))
        .collect();
    let r = records
        .iter()
        .find(|r| r.summary.contains("SetFactor"))
        .unwrap_or_else(|| panic!("no SetFactor record in {records:?}"));
    assert_eq!(r.who, "admin@admin");
    assert_eq!(r.from, "127.0.0.1");
    assert_eq!(r.command, "accountant");
    assert!(
        r.ok && r.summary.contains("alice@pool") && r.summary.contains("250"),
        "{r:?}"
    );
    assert!(r.time >= before && r.time <= unix_now(), "{r:?}");
    // The leader's own internal writes (ticks) are not in it.
    assert!(
        records.iter().all(|r| r.who == "admin@admin"),
        "{records:?}"
    );
}
