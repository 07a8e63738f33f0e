//! Step 2 of a cycle: what the local collector knows of the pool, copied out under one read
//! lock so the rest of the cycle works on a consistent view.
use crate::collector::{AdTable, AdType, Query};
use classad::{ClassAd, Value};
use std::collections::BTreeSet;

/// The live slot ads (absent ones left out), each slot's claim capability, and the
/// submitter ads.
#[derive(Clone, Debug, Default)]
pub struct PoolSnapshot {
    /// Live slot ads (public attributes only).
    pub slots: Vec<ClassAd>,
    /// `claim_ids[i]` is the private `ClaimId` (or `Capability`) of `slots[i]`.
    pub claim_ids: Vec<Option<String>>,
    /// Submitter ads (the demand: who has idle jobs, and where).
    pub submitters: Vec<ClassAd>,
}

/// A string attribute of an ad, evaluated.
pub(crate) fn attr_str(ad: &ClassAd, name: &str) -> Option<String> {
    match ad.eval_attr(name) {
        Value::Str(s) => Some(s.to_string()),
        _ => None,
    }
}

impl PoolSnapshot {
    /// Copies the slots and submitters out of `table`.
    pub fn take(table: &AdTable) -> PoolSnapshot {
        let keyed = table.query_keyed(&Query {
            ad_type: Some(AdType::Machine),
            ..Default::default()
        });
        // Each slot's capability by its whole key: two machines may name slots alike.
        let claim_ids = keyed
            .iter()
            .map(|(key, _)| {
                let private = table.private_attrs_of(key)?;
                attr_str(private, "ClaimId").or_else(|| attr_str(private, "Capability"))
            })
            .collect();
        let slots = keyed.into_iter().map(|(_, ad)| ad).collect();
        let submitters = table.query(&Query {
            ad_type: Some(AdType::Submitter),
            ..Default::default()
        });
        PoolSnapshot {
            slots,
            claim_ids,
            submitters,
        }
    }

    /// The distinct access point addresses the submitter ads name, in order.
    pub fn access_points(&self) -> Vec<String> {
        let mut seen = BTreeSet::new();
        let mut out = Vec::new();
        for ad in &self.submitters {
            let Some(raw) = attr_str(ad, "ScheddIpAddr").or_else(|| attr_str(ad, "MyAddress"))
            else {
                tracing::warn!(
                    submitter = attr_str(ad, "Name").unwrap_or_default(),
                    "submitter ad has neither ScheddIpAddr nor MyAddress; its jobs are not negotiated"
                );
                continue;
            };
            match sinful_to_addr(&raw) {
                Some(a) => {
                    if seen.insert(a.clone()) {
                        out.push(a);
                    }
                }
                None => tracing::warn!(
                    submitter = attr_str(ad, "Name").unwrap_or_default(),
                    address = raw,
                    "submitter ad's address is not <host:port>; its jobs are not negotiated"
                ),
            }
        }
        out
    }
}

/// `<host:port?params>` (HTCondor's "sinful string") or `host:port` -> `host:port`.
pub fn sinful_to_addr(s: &str) -> Option<String> {
    let t = s.trim();
    let t = t.strip_prefix('<').unwrap_or(t);
    let t = t.strip_suffix('>').unwrap_or(t);
    let t = t.split('?').next().unwrap_or(t);
    let t = t.strip_suffix('>').unwrap_or(t);
    let (host, port) = t.rsplit_once(':')?;
    if host.is_empty() || port.parse::<u16>().is_err() {
        return None;
    }
    Some(t.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collector::CollectorParams;

    #[test]
    fn sinful_strings() {
        assert_eq!(
            sinful_to_addr("<10.0.0.1:9618?addrs=10.0.0.1-9618&noUDP>").as_deref(),
            Some("10.0.0.1:9618")
        );
        assert_eq!(
            sinful_to_addr("<127.0.0.1:4000>").as_deref(),
            Some("127.0.0.1:4000")
        );
        assert_eq!(
            sinful_to_addr("ap.example:4000").as_deref(),
            Some("ap.example:4000")
        );
        assert_eq!(sinful_to_addr("<nohost>"), None);
        assert_eq!(sinful_to_addr("<h:notaport>"), None);
    }

    #[test]
    fn snapshot_takes_live_slots_with_their_claim_ids_and_distinct_aps() {
        let mut t = AdTable::new(CollectorParams::default());
        let now = 1000;
        t.advertise_text(
            "MyType = \"Machine\"\nName = \"slot1@a\"\nState = \"Unclaimed\"\nClaimId = \"<a>#1#secret\"\n",
            now,
        )
        .unwrap();
        t.advertise_text(
            "MyType = \"Machine\"\nName = \"slot2@a\"\nState = \"Unclaimed\"\n",
            now,
        )
        .unwrap();
        for (n, addr) in [
            ("alice@p", "<127.0.0.1:5000>"),
            ("bob@p", "<127.0.0.1:5000?x=y>"),
        ] {
            t.advertise_text(
                &format!("MyType = \"Submitter\"\nName = \"{n}\"\nScheddIpAddr = \"{addr}\"\n"),
                now,
            )
            .unwrap();
        }
        t.advertise_text(
            "MyType = \"Submitter\"\nName = \"carol@p\"\nMyAddress = \"<127.0.0.1:6000>\"\n",
            now,
        )
        .unwrap();
        let s = PoolSnapshot::take(&t);
        assert_eq!(s.slots.len(), 2);
        assert_eq!(s.claim_ids, vec![Some("<a>#1#secret".to_string()), None]);
        // The public copy never carries the secret.
        assert!(s.slots[0].lookup("ClaimId").is_none());
        assert_eq!(s.access_points(), vec!["127.0.0.1:5000", "127.0.0.1:6000"]);
    }

    /// Issue 13.3: a grant for host b's slot must carry host b's capability, even when both
    /// machines call their slot `slot1@localhost`.
    #[test]
    fn same_named_slots_on_two_hosts_keep_their_own_claim_ids() {
        let mut t = AdTable::new(CollectorParams::default());
        for (ip, secret) in [("10.0.0.1", "claim-a"), ("10.0.0.2", "claim-b")] {
            t.advertise_text(
                &format!(
                    "MyType = \"Machine\"\nName = \"slot1@localhost\"\nState = \"Unclaimed\"\nMyAddress = \"<{ip}:9618>\"\nClaimId = \"{secret}\"\n"
                ),
                1000,
            )
            .unwrap();
        }
        let s = PoolSnapshot::take(&t);
        let got: Vec<(String, Option<String>)> = s
            .slots
            .iter()
            .zip(&s.claim_ids)
            .map(|(ad, c)| (attr_str(ad, "MyAddress").unwrap(), c.clone()))
            .collect();
        assert_eq!(
            got,
            vec![
                ("<10.0.0.1:9618>".to_string(), Some("claim-a".to_string())),
                ("<10.0.0.2:9618>".to_string(), Some("claim-b".to_string())),
            ]
        );
    }
}
