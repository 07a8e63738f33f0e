//! Step 7 of a cycle: turn the matches into grants, one batch per access point, sign them
//! with the leader's CM key (so execute nodes believe their term, `aerie_security::grant`)
//! and deliver them (`AccessPoint.DeliverGrants`), counting what the access points took.
use super::snapshot::{attr_str, PoolSnapshot};
use aerie_core::negotiator::Outcome;
use aerie_proto::negotiation::{
    access_point_client::AccessPointClient, Grant, GrantBatch, SignedGrant,
};
use aerie_security::grant::{GrantSigner, GrantText};
use std::collections::BTreeMap;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The grants of one cycle by access point address, plus matches that could not become a
/// grant (the slot has no claim capability or no address) with the reason.
#[derive(Clone, Debug, Default)]
pub struct Grants {
    /// Grants by the address of the access point that offered the job.
    pub by_ap: BTreeMap<String, Vec<Grant>>,
    /// (job, why) for matches that could not become a grant.
    pub undeliverable: Vec<(String, String)>,
    /// The leader's certificate (DER) and its one signature over the cycle's grant tree, set
    /// by [`sign_grants`]; every access point's batch carries them once.
    pub leader_cert: Vec<u8>,
    /// See `leader_cert`.
    pub signature: Vec<u8>,
}

impl Grants {
    /// How many grants.
    pub fn len(&self) -> usize {
        self.by_ap.values().map(|v| v.len()).sum()
    }
    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Groups the matches of `outcome` by the access point that offered each job.
/// `origin[job_index]` indexes `access_points`; `autocluster[job_index]` is the job's
/// autocluster at its access point (empty, or missing, when it came as a whole ad); slot
/// indexes refer to `snap.slots`.
pub fn build_grants(
    outcome: &Outcome,
    snap: &PoolSnapshot,
    origin: &[usize],
    access_points: &[String],
    autocluster: &[String],
) -> Grants {
    let mut g = Grants::default();
    for m in &outcome.matches {
        let Some(ap) = origin.get(m.job_index).and_then(|i| access_points.get(*i)) else {
            g.undeliverable
                .push((m.job.clone(), "job's access point unknown".into()));
            continue;
        };
        let Some(slot) = snap.slots.get(m.slot_index) else {
            g.undeliverable.push((
                m.job.clone(),
                format!("slot {} not in the snapshot", m.slot),
            ));
            continue;
        };
        let Some(claim_id) = snap.claim_ids.get(m.slot_index).cloned().flatten() else {
            g.undeliverable.push((
                m.job.clone(),
                format!("slot {} has no ClaimId or Capability", m.slot),
            ));
            continue;
        };
        let Some(startd_addr) =
            attr_str(slot, "MyAddress").or_else(|| attr_str(slot, "StartdIpAddr"))
        else {
            g.undeliverable.push((
                m.job.clone(),
                format!("slot {} has no MyAddress or StartdIpAddr", m.slot),
            ));
            continue;
        };
        let (carve_cpus, carve_memory, carve_disk) = m.carved.unwrap_or((0.0, 0.0, 0.0));
        g.by_ap.entry(ap.clone()).or_default().push(Grant {
            job: m.job.clone(),
            submitter: m.submitter.clone(),
            slot: m.slot.clone(),
            startd_addr,
            claim_id,
            weight: m.weight,
            carve_cpus,
            carve_memory,
            carve_disk,
            preempts: m.preempts.is_some(),
            autocluster: autocluster.get(m.job_index).cloned().unwrap_or_default(),
            // Signed by sign_grants before the delivery lease is taken (sent only within it).
            signed: None,
        });
    }
    for (job, why) in &g.undeliverable {
        tracing::warn!(job = %job, reason = %why, "match not granted");
    }
    g
}

/// Signs every grant of `grants` for `term` at `now` (Unix seconds): slot, capability hash,
/// term, access point, submitter and time, with `signer` (the leader's CM key), one
/// signature over the tree of the cycle's grants (aerie-security's grant module). Grants
/// that cannot be signed go out unsigned, and a node with credentials will refuse their claims.
pub fn sign_grants(grants: &mut Grants, signer: &GrantSigner, term: u64, now: i64) {
    // Most cycles of a full pool match nothing: no signature to make then.
    if grants.is_empty() {
        return;
    }
    // Borrowed texts, the one signature, and each grant's own text and proof moved into it:
    // no copy of the certificate or signature per grant (they travel once per GrantBatch:
    // 10,000 grants would carry 7 MB of copies of one certificate).
    let texts: Vec<GrantText> = grants
        .by_ap
        .iter()
        .flat_map(|(ap, list)| {
            list.iter().map(move |g| GrantText {
                slot: &g.slot,
                claim_id: &g.claim_id,
                term,
                access_point: ap,
                submitter: &g.submitter,
                issued: now,
            })
        })
        .collect();
    let count = texts.len();
    match signer.sign_cycle(&texts) {
        Ok(cycle) => {
            drop(texts);
            grants.leader_cert = signer.cert_der().to_vec();
            grants.signature = cycle.signature;
            let all = grants.by_ap.values_mut().flat_map(|l| l.iter_mut());
            for (g, (payload, proof)) in all.zip(cycle.grants) {
                g.signed = Some(SignedGrant {
                    payload,
                    signature: Vec::new(),
                    leader_cert: Vec::new(),
                    proof,
                });
            }
        }
        Err(e) => tracing::warn!(grants = count, error = %e, "grants not signed"),
    }
}

/// This process's grant signer (its CM certificate and key), loaded once; `None` without
/// credentials (`--insecure`: grants go unsigned, as insecure nodes accept them).
pub fn leader_signer() -> Option<&'static GrantSigner> {
    static SIGNER: OnceLock<Option<GrantSigner>> = OnceLock::new();
    SIGNER
        .get_or_init(|| match aerie_security::transport::transport().grant_signer() {
            None => None,
            Some(Ok(s)) => Some(s),
            Some(Err(e)) => {
                tracing::error!(error = %e, "cannot sign grants; execute nodes will refuse their claims");
                None
            }
        })
        .as_ref()
}

/// What the access points answered.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Delivery {
    /// Grants the access points took.
    pub accepted: u64,
    /// Refused by the access point, or lost because it did not answer.
    pub refused: u64,
}

async fn deliver_one(
    ap: &str,
    batch: GrantBatch,
    timeout: Duration,
) -> Result<Vec<(bool, String)>, String> {
    let ch = crate::raft::network::lazy_channel(ap, aerie_security::Role::AccessPoint, timeout)?;
    let mut c = AccessPointClient::new(ch);
    let mut r = tonic::Request::new(batch);
    r.set_timeout(timeout);
    match tokio::time::timeout(timeout, c.deliver_grants(r)).await {
        Err(_) => Err(format!("no answer within {:.1} s", timeout.as_secs_f64())),
        Ok(Err(s)) => Err(format!("{}: {}", s.code(), s.message())),
        Ok(Ok(r)) => Ok(r
            .into_inner()
            .results
            .into_iter()
            .map(|x| (x.accepted, x.error))
            .collect()),
    }
}

/// Sends every access point its batch at once, fenced by `term`. No call starts, and none is
/// waited for, after `lease_end` (the leadership lease of the confirmation just before): a
/// batch not sent by then counts as refused.
pub async fn deliver(
    grants: Grants,
    term: u64,
    cycle: u64,
    leader_id: u64,
    timeout: Duration,
    lease_end: Instant,
) -> Delivery {
    let (leader_cert, signature) = (&grants.leader_cert, &grants.signature);
    let calls = grants.by_ap.into_iter().map(|(ap, list)| async move {
        let n = list.len();
        let batch = GrantBatch {
            term,
            cycle,
            leader_id,
            grants: list,
            leader_cert: leader_cert.clone(),
            signature: signature.clone(),
        };
        let left = lease_end.saturating_duration_since(Instant::now());
        let r = if left.is_zero() {
            Err("the leadership lease ended before delivery; not sent".to_string())
        } else {
            deliver_one(&ap, batch, timeout.min(left)).await
        };
        (ap, n, r)
    });
    let mut d = Delivery::default();
    for (ap, n, r) in futures::future::join_all(calls).await {
        match r {
            Ok(results) => {
                for (ok, err) in &results {
                    if *ok {
                        d.accepted += 1;
                    } else {
                        d.refused += 1;
                        tracing::debug!(access_point = %ap, error = %err, "grant refused");
                    }
                }
                // A reply with fewer results than grants leaves the rest unanswered.
                d.refused += n.saturating_sub(results.len()) as u64;
            }
            Err(e) => {
                tracing::warn!(access_point = %ap, grants = n, error = %e, term, cycle, "grants not delivered");
                d.refused += n as u64;
            }
        }
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;
    use aerie_core::negotiator::{Match, MatchReason};
    use classad::ClassAd;

    fn slot(name: &str, addr_attr: &str) -> ClassAd {
        let mut a = ClassAd::new();
        a.insert_str("Name", name);
        a.insert_str(addr_attr, &format!("<10.0.0.1:{}>", name.len()));
        a
    }

    fn m(job: &str, job_index: usize, slot_index: usize, carved: Option<(f64, f64, f64)>) -> Match {
        Match {
            job: job.into(),
            job_index,
            autocluster: 0,
            submitter: "alice@p".into(),
            negotiating_group: "<none>".into(),
            slot: format!("slot{slot_index}"),
            slot_index,
            reason: MatchReason::NoPreemption,
            preempts: None,
            weight: 1.0,
            carved,
        }
    }

    #[test]
    fn grants_go_to_the_access_point_that_offered_the_job() {
        let snap = PoolSnapshot {
            slots: vec![
                slot("slot0", "MyAddress"),
                slot("slot1", "StartdIpAddr"),
                slot("slot2", "MyAddress"),
                ClassAd::new(),
            ],
            claim_ids: vec![
                Some("c0".into()),
                Some("c1".into()),
                None,
                Some("c3".into()),
            ],
            submitters: vec![],
        };
        let aps = vec!["ap-a:1".to_string(), "ap-b:2".to_string()];
        // jobs 0 and 2 from ap-a, job 1 from ap-b.
        let origin = vec![0, 1, 0, 1];
        let outcome = Outcome {
            matches: vec![
                m("1.0", 0, 0, None),
                m("7.0", 1, 1, Some((2.0, 2048.0, 1024.0))),
                m("1.1", 2, 2, None),
                m("7.1", 3, 3, None),
            ],
            ..Default::default()
        };
        // 7.* came in a resource request of autocluster "ac7"; 1.* came whole.
        let acs = ["", "ac7", "", "ac7"].map(String::from);
        let g = build_grants(&outcome, &snap, &origin, &aps, &acs);
        assert_eq!(g.len(), 2);
        let a = &g.by_ap["ap-a:1"];
        assert_eq!(a.len(), 1);
        assert_eq!(
            (
                a[0].job.as_str(),
                a[0].slot.as_str(),
                a[0].claim_id.as_str()
            ),
            ("1.0", "slot0", "c0")
        );
        assert_eq!(a[0].startd_addr, "<10.0.0.1:5>");
        let b = &g.by_ap["ap-b:2"];
        assert_eq!((b[0].job.as_str(), b[0].claim_id.as_str()), ("7.0", "c1"));
        assert_eq!((b[0].carve_cpus, b[0].carve_memory), (2.0, 2048.0));
        assert_eq!(
            (a[0].autocluster.as_str(), b[0].autocluster.as_str()),
            ("", "ac7")
        );
        // No claim id, no address: not granted, with the reason.
        assert_eq!(g.undeliverable.len(), 2);
        assert!(g.undeliverable[0].1.contains("ClaimId"));
        assert!(g.undeliverable[1].1.contains("MyAddress"));
    }

    #[test]
    fn signed_grants_name_their_slot_term_and_access_point() {
        use aerie_security::grant::{GrantVerifier, Presented};
        use aerie_security::pki::{self, Holder};
        let dir = tempfile::tempdir().unwrap();
        pki::init(dir.path(), "t", &[Holder::parse("cm1=cm").unwrap()], 30).unwrap();
        let read = |f: &str| std::fs::read_to_string(dir.path().join(f)).unwrap();
        let signer = GrantSigner::from_pem(&read("cm1.crt"), &read("cm1.key")).unwrap();
        let mut g = Grants::default();
        let grant = Grant {
            job: "1.0".into(),
            submitter: "alice@p".into(),
            slot: "slot1@m".into(),
            claim_id: "<m:1>#abc".into(),
            ..Default::default()
        };
        g.by_ap.insert("ap-a:1".into(), vec![grant]);
        let now = aerie_security::transport::now_unix();
        sign_grants(&mut g, &signer, 7, now);
        let s = g.by_ap["ap-a:1"][0].signed.clone().unwrap();
        // The certificate and signature go once per batch, not in the grant.
        assert!(s.leader_cert.is_empty() && s.signature.is_empty());
        assert!(!g.leader_cert.is_empty() && !g.signature.is_empty());
        let signed = aerie_security::grant::SignedGrant {
            payload: s.payload,
            signature: g.signature.clone(),
            leader_cert: g.leader_cert.clone(),
            proof: s.proof,
        };
        let v = GrantVerifier::from_pem(&read("ca.crt")).unwrap();
        let presented = Presented {
            slot: "slot1@m",
            claim_id: "<m:1>#abc",
            term: 7,
        };
        let c = v.verify(&signed, presented, now).unwrap();
        assert_eq!(
            (c.access_point.as_str(), c.submitter.as_str()),
            ("ap-a:1", "alice@p")
        );
    }

    /// Every grant gets its own signed text and proof, across access points (the texts are
    /// made in one pass over the grants and moved back in another: they must line up).
    #[test]
    fn each_grant_carries_its_own_signed_text() {
        use aerie_security::grant::{GrantVerifier, Presented};
        use aerie_security::pki::{self, Holder};
        let dir = tempfile::tempdir().unwrap();
        pki::init(dir.path(), "t", &[Holder::parse("cm1=cm").unwrap()], 30).unwrap();
        let read = |f: &str| std::fs::read_to_string(dir.path().join(f)).unwrap();
        let signer = GrantSigner::from_pem(&read("cm1.crt"), &read("cm1.key")).unwrap();
        let v = GrantVerifier::from_pem(&read("ca.crt")).unwrap();
        let mut g = Grants::default();
        for ap in ["ap-b:2", "ap-a:1"] {
            let list = (0..3)
                .map(|i| Grant {
                    job: format!("{i}.0"),
                    submitter: format!("u{i}@{ap}"),
                    slot: format!("slot{i}@{ap}"),
                    claim_id: format!("<m:1>#{ap}{i}"),
                    ..Default::default()
                })
                .collect();
            g.by_ap.insert(ap.into(), list);
        }
        let now = aerie_security::transport::now_unix();
        sign_grants(&mut g, &signer, 7, now);
        for (ap, list) in &g.by_ap {
            for grant in list {
                let s = grant.signed.clone().unwrap();
                let signed = aerie_security::grant::SignedGrant {
                    payload: s.payload,
                    signature: g.signature.clone(),
                    leader_cert: g.leader_cert.clone(),
                    proof: s.proof,
                };
                let presented = Presented {
                    slot: &grant.slot,
                    claim_id: &grant.claim_id,
                    term: 7,
                };
                let c = v.verify(&signed, presented, now).unwrap();
                assert_eq!((&c.access_point, &c.submitter), (ap, &grant.submitter));
            }
        }
    }

    /// Issue 13.5: after the lease of the last confirmation, nothing is sent (the access point
    /// address here would refuse connections anyway; nothing is even tried).
    #[tokio::test]
    async fn no_batch_leaves_after_the_lease() {
        let mut g = Grants::default();
        g.by_ap.insert(
            "127.0.0.1:1".into(),
            vec![Grant {
                job: "1.0".into(),
                ..Default::default()
            }],
        );
        let expired = Instant::now() - Duration::from_millis(1);
        let t = Instant::now();
        let d = deliver(g, 7, 1, 1, Duration::from_secs(5), expired).await;
        assert_eq!(
            d,
            Delivery {
                accepted: 0,
                refused: 1
            }
        );
        assert!(
            t.elapsed() < Duration::from_millis(100),
            "{:?}",
            t.elapsed()
        );
    }
}
