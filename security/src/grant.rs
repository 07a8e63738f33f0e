//! Signed grants: the leader vouches for each match it hands out, and an execute node checks
//! the voucher before it believes the grant's Raft term (issue 16, item 6).
//!
//! In HTCondor the negotiator hands the schedd the slot's `ClaimId` in the match and the
//! startd checks only that capability (`src/condor_negotiator.V6/matchmaker.cpp`
//! `matchmakingProtocol`, `src/condor_startd.V6/command.cpp` `request_claim`): there is one
//! negotiator, so nothing else in a claim needs vouching for. Aerie's negotiator is whichever
//! CM leads, and a node fences claims by the leader's Raft term (`node/src/startd/term.rs`);
//! the term reaches the node through the access point, which could raise it at will. So the
//! leader signs what it decided — the slot, a SHA-256 of the slot's capability (the
//! capability itself stays out of the signed text, which travels and is logged), its term,
//! the access point and submitter the grant is for, and when — with the private key of its
//! own mutual-TLS certificate (issued by the pool CA with the `cm` role, [`crate::pki`]), and
//! sends its certificate (DER) along. The node checks that the certificate chains to the pool
//! CA it already trusts, is valid now and names the `cm` role ([`crate::identity`]), that the
//! signature over the exact bytes sent is the certificate key's, and that the signed slot,
//! capability and term are the claim's. Only then is the term believed.
//!
//! The signed text is sent as bytes (JSON, [`GrantClaims`]) and verified as sent, so there is
//! no canonical form to agree on; it is parsed only after the signature holds.
//!
//! One signature per cycle, not per grant: an ECDSA signature costs tens of microseconds,
//! which made a cycle of 10,000 matches a third slower (BENCHMARKS.md, "What security
//! costs"). The leader hashes every grant's text into a Merkle tree (RFC 6962's shape:
//! leaves and inner nodes hashed under different prefixes, so one cannot pose as the other)
//! and signs only the root; each grant carries the sibling hashes from its leaf to the root
//! ([`SignedGrant::proof`]), and the node folds them back to the root the signature covers.
//! Changing a grant's text, or its proof, changes the root, and the signature fails. Signing is
//! ECDSA P-256 with SHA-256 (the pool keys `rcgen` makes) through *ring*, and the chain is
//! checked with `rustls-webpki`: the crypto rustls already uses, no second stack.
//!
//! Pure apart from the signature's random nonce: every check takes `now` (Unix seconds).
use crate::identity::{Identity, Role};
use ring::rand::SystemRandom;
use ring::signature::{EcdsaKeyPair, ECDSA_P256_SHA256_ASN1_SIGNING};
use rustls_pki_types::{CertificateDer, UnixTime};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::time::Duration;

/// How old a grant may be when a node checks it. Access points claim as soon as grants
/// arrive; a preempting claim may wait for the slot to empty, but it is checked when it
/// arrives. Ten minutes is far beyond any delivery and still bounds the replay of a signed
/// grant whose capability somehow stayed current.
pub const MAX_GRANT_AGE: i64 = 600;

/// How far in the future a grant's time may be (clocks of different hosts disagree).
pub const MAX_CLOCK_SKEW: i64 = 60;

/// The version tag of the signed text.
const VERSION: u32 = 1;

/// What the leader signs about one grant.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GrantClaims {
    /// Version of this format ([`VERSION`]).
    pub v: u32,
    /// The slot's `Name` (a partitionable slot's, when carving).
    pub slot: String,
    /// The SHA-256 of the slot's claim capability, hex ([`capability_hash`]).
    pub capability: String,
    /// The leader's Raft term.
    pub term: u64,
    /// The access point the grant was delivered to (its address).
    pub access_point: String,
    /// The submitter the match was made for (user@domain or group.user@domain).
    pub submitter: String,
    /// When the leader signed, Unix seconds.
    pub issued: i64,
}

impl GrantClaims {
    /// The claims of a grant for `slot` under `claim_id`, signed at `issued`.
    pub fn new(
        slot: &str,
        claim_id: &str,
        term: u64,
        access_point: &str,
        submitter: &str,
        issued: i64,
    ) -> GrantClaims {
        GrantClaims {
            v: VERSION,
            slot: slot.to_string(),
            capability: capability_hash(claim_id),
            term,
            access_point: access_point.to_string(),
            submitter: submitter.to_string(),
            issued,
        }
    }
}

/// A grant as it travels: the signed text, the signature and the signer's certificate.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SignedGrant {
    /// The signed text (JSON [`GrantClaims`]), exactly as signed.
    pub payload: Vec<u8>,
    /// ECDSA P-256 SHA-256 signature (ASN.1 DER) over the root of the cycle's grant tree
    /// (after [`ROOT_TAG`]), which `payload` and `proof` lead to.
    pub signature: Vec<u8>,
    /// The signer's certificate, DER.
    pub leader_cert: Vec<u8>,
    /// The path from this grant's leaf to the signed root: per level, a side byte (0: the
    /// sibling is on the left, 1: on the right) and the sibling's 32-byte hash. Empty when
    /// the grant was signed alone.
    pub proof: Vec<Vec<u8>>,
}

/// What precedes the tree root in the signed bytes, so a grant signature can be mistaken
/// for no other signature made with a CM key.
pub const ROOT_TAG: &[u8] = b"aerie grant tree root v1\0";

/// The hash of a leaf: a grant's signed text.
fn leaf_hash(payload: &[u8]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update([0u8]);
    h.update(payload);
    h.finalize().into()
}

/// The hash of an inner node of the tree.
fn node_hash(left: &[u8; 32], right: &[u8; 32]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update([1u8]);
    h.update(left);
    h.update(right);
    h.finalize().into()
}

/// The root of the tree over `leaves` and each leaf's proof. Pairs are hashed level by level;
/// an odd node out is carried up unchanged (it gets no proof entry at that level).
fn merkle(leaves: Vec<[u8; 32]>) -> ([u8; 32], Vec<Vec<Vec<u8>>>) {
    let mut proofs: Vec<Vec<Vec<u8>>> = vec![Vec::new(); leaves.len()];
    // Which leaves sit under each node of the current level.
    let mut members: Vec<Vec<usize>> = (0..leaves.len()).map(|i| vec![i]).collect();
    let mut level = leaves;
    while level.len() > 1 {
        let mut next = Vec::with_capacity(level.len().div_ceil(2));
        let mut next_members = Vec::with_capacity(next.capacity());
        let mut i = 0;
        while i < level.len() {
            if i + 1 == level.len() {
                next.push(level[i]);
                next_members.push(std::mem::take(&mut members[i]));
                break;
            }
            let (l, r) = (level[i], level[i + 1]);
            for &m in &members[i] {
                proofs[m].push([&[1u8][..], &r[..]].concat());
            }
            for &m in &members[i + 1] {
                proofs[m].push([&[0u8][..], &l[..]].concat());
            }
            let mut joined = std::mem::take(&mut members[i]);
            joined.append(&mut members[i + 1]);
            next.push(node_hash(&l, &r));
            next_members.push(joined);
            i += 2;
        }
        level = next;
        members = next_members;
    }
    (level.first().copied().unwrap_or([0; 32]), proofs)
}

/// The root a grant's text and proof lead to; `None` when the proof is malformed.
fn root_of(payload: &[u8], proof: &[Vec<u8>]) -> Option<[u8; 32]> {
    let mut h = leaf_hash(payload);
    for step in proof {
        let sibling: &[u8; 32] = step.get(1..)?.try_into().ok()?;
        h = match step.first()? {
            0 => node_hash(sibling, &h),
            1 => node_hash(&h, sibling),
            _ => return None,
        };
    }
    Some(h)
}

/// The hex SHA-256 of a claim capability: what a signed grant names instead of the
/// capability itself.
pub fn capability_hash(claim_id: &str) -> String {
    Sha256::digest(claim_id.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Why a grant was not believed; the message names the check that failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum GrantError {
    /// The claim carries no signed grant though this node requires one.
    #[error("unsigned grant: this node runs with pool credentials and takes only grants signed by the leader")]
    Unsigned,
    /// The signer's certificate does not chain to the pool CA, or is not valid now.
    #[error("grant signer's certificate not trusted: {0}")]
    Untrusted(String),
    /// The certificate is the pool's but not a central manager's.
    #[error("grant signed by {0}, which is not a central manager (no cm role)")]
    NotCm(String),
    /// The signature does not verify.
    #[error("grant signature invalid (forged or altered)")]
    BadSignature,
    /// The signed text does not parse.
    #[error("signed grant unreadable: {0}")]
    Malformed(String),
    /// The signed grant is for another claim than the one presented.
    #[error("signed grant does not match the claim: {0}")]
    Mismatch(String),
    /// The grant is too old, or from the future.
    #[error("signed grant issued at {issued}, now {now}: {why}")]
    Stale {
        /// When it was signed.
        issued: i64,
        /// Now.
        now: i64,
        /// Too old or too new.
        why: &'static str,
    },
}

/// The leader's signing key and certificate.
pub struct GrantSigner {
    key: EcdsaKeyPair,
    cert_der: Vec<u8>,
    rng: SystemRandom,
}

impl std::fmt::Debug for GrantSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GrantSigner").finish_non_exhaustive()
    }
}

fn pem_der(pem: &str, what: &str) -> Result<Vec<u8>, String> {
    let (_, p) = x509_parser::pem::parse_x509_pem(pem.as_bytes())
        .map_err(|e| format!("{what}: not PEM: {e}"))?;
    Ok(p.contents)
}

impl GrantSigner {
    /// A signer from a certificate and its PKCS#8 key, both PEM (`NAME.crt`, `NAME.key` as
    /// `aerie-cm security init` writes them).
    pub fn from_pem(cert_pem: &str, key_pem: &str) -> Result<GrantSigner, String> {
        let cert_der = pem_der(cert_pem, "certificate")?;
        let pkcs8 = pem_der(key_pem, "private key")?;
        let rng = SystemRandom::new();
        let key = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, &pkcs8, &rng)
            .map_err(|e| format!("private key: not an ECDSA P-256 PKCS#8 key: {e}"))?;
        Ok(GrantSigner { key, cert_der, rng })
    }

    /// Signs `claims` alone.
    pub fn sign(&self, claims: &GrantClaims) -> Result<SignedGrant, String> {
        let mut one = self.sign_batch(std::slice::from_ref(claims))?;
        one.pop()
            .ok_or_else(|| "signing a grant failed".to_string())
    }

    /// Signs every grant of `claims` with one signature over their tree's root; the grants
    /// come back in the same order, each with its proof.
    pub fn sign_batch(&self, claims: &[GrantClaims]) -> Result<Vec<SignedGrant>, String> {
        let payloads = claims
            .iter()
            .map(serde_json::to_vec)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("grant claims: {e}"))?;
        let (root, proofs) = merkle(payloads.iter().map(|p| leaf_hash(p)).collect());
        let signature = self
            .key
            .sign(&self.rng, &[ROOT_TAG, &root[..]].concat())
            .map_err(|_| "signing a grant failed".to_string())?
            .as_ref()
            .to_vec();
        Ok(payloads
            .into_iter()
            .zip(proofs)
            .map(|(payload, proof)| SignedGrant {
                payload,
                signature: signature.clone(),
                leader_cert: self.cert_der.clone(),
                proof,
            })
            .collect())
    }
}

/// What a claim presents, to be matched against what the leader signed.
#[derive(Clone, Copy, Debug)]
pub struct Presented<'a> {
    /// The slot claimed.
    pub slot: &'a str,
    /// The capability presented.
    pub claim_id: &'a str,
    /// The term the claim carries.
    pub term: u64,
}

/// Checks signed grants against the pool CA.
#[derive(Clone, Debug)]
pub struct GrantVerifier {
    ca_der: Vec<u8>,
}

impl GrantVerifier {
    /// A verifier trusting the pool CA `ca_pem` (`ca.crt`).
    pub fn from_pem(ca_pem: &str) -> Result<GrantVerifier, String> {
        let ca_der = pem_der(ca_pem, "pool CA")?;
        let v = GrantVerifier { ca_der };
        v.anchor_check()?;
        Ok(v)
    }

    fn anchor_check(&self) -> Result<(), String> {
        let der = CertificateDer::from(self.ca_der.as_slice());
        webpki::anchor_from_trusted_cert(&der)
            .map(|_| ())
            .map_err(|e| format!("pool CA unusable as a trust anchor: {e}"))
    }

    /// Believes `grant` for the claim `presented` at `now` (Unix seconds), or says why not;
    /// returns what was signed.
    pub fn verify(
        &self,
        grant: &SignedGrant,
        presented: Presented<'_>,
        now: i64,
    ) -> Result<GrantClaims, GrantError> {
        let ca = CertificateDer::from(self.ca_der.as_slice());
        let anchor = webpki::anchor_from_trusted_cert(&ca)
            .map_err(|e| GrantError::Untrusted(format!("pool CA: {e}")))?;
        let leaf = CertificateDer::from(grant.leader_cert.as_slice());
        let cert = webpki::EndEntityCert::try_from(&leaf)
            .map_err(|e| GrantError::Untrusted(format!("unreadable certificate: {e}")))?;
        let time = UnixTime::since_unix_epoch(Duration::from_secs(now.max(0) as u64));
        cert.verify_for_usage(
            webpki::ALL_VERIFICATION_ALGS,
            &[anchor],
            &[],
            time,
            webpki::KeyUsage::server_auth(),
            None,
            None,
        )
        .map_err(|e| GrantError::Untrusted(e.to_string()))?;
        let id = Identity::from_der(&grant.leader_cert).map_err(GrantError::Untrusted)?;
        if !id.is(Role::Cm) {
            return Err(GrantError::NotCm(id.to_string()));
        }
        let root = root_of(&grant.payload, &grant.proof).ok_or_else(|| {
            GrantError::Malformed("the proof's steps are not a side byte and a 32-byte hash".into())
        })?;
        cert.verify_signature(
            webpki::ring::ECDSA_P256_SHA256,
            &[ROOT_TAG, &root[..]].concat(),
            &grant.signature,
        )
        .map_err(|_| GrantError::BadSignature)?;
        let claims: GrantClaims = serde_json::from_slice(&grant.payload)
            .map_err(|e| GrantError::Malformed(e.to_string()))?;
        if claims.v != VERSION {
            return Err(GrantError::Malformed(format!(
                "version {} (this node reads {VERSION})",
                claims.v
            )));
        }
        if claims.slot != presented.slot {
            return Err(GrantError::Mismatch(format!(
                "signed for slot {:?}, claim names {:?}",
                claims.slot, presented.slot
            )));
        }
        if claims.capability != capability_hash(presented.claim_id) {
            return Err(GrantError::Mismatch(
                "signed for another capability of the slot".into(),
            ));
        }
        if claims.term != presented.term {
            return Err(GrantError::Mismatch(format!(
                "signed in term {}, claim carries term {}",
                claims.term, presented.term
            )));
        }
        if now - claims.issued > MAX_GRANT_AGE {
            return Err(GrantError::Stale {
                issued: claims.issued,
                now,
                why: "older than MAX_GRANT_AGE",
            });
        }
        if claims.issued - now > MAX_CLOCK_SKEW {
            return Err(GrantError::Stale {
                issued: claims.issued,
                now,
                why: "from the future (clock skew beyond MAX_CLOCK_SKEW)",
            });
        }
        Ok(claims)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pki::{self, Holder};
    use std::path::Path;

    fn read(dir: &Path, f: &str) -> String {
        std::fs::read_to_string(dir.join(f)).unwrap()
    }

    fn pool(holders: &[&str]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let hs: Vec<Holder> = holders.iter().map(|h| Holder::parse(h).unwrap()).collect();
        pki::init(dir.path(), "test", &hs, 30).unwrap();
        dir
    }

    fn signer(dir: &Path, name: &str) -> GrantSigner {
        GrantSigner::from_pem(
            &read(dir, &format!("{name}.crt")),
            &read(dir, &format!("{name}.key")),
        )
        .unwrap()
    }

    fn now() -> i64 {
        crate::transport::now_unix()
    }

    const CAP: &str = "<10.0.0.1:9618>#0123456789abcdef0123456789abcdef";

    fn claim(term: u64) -> Presented<'static> {
        Presented {
            slot: "slot1@exec1",
            claim_id: CAP,
            term,
        }
    }

    fn signed(s: &GrantSigner, term: u64, issued: i64) -> SignedGrant {
        let c = GrantClaims::new("slot1@exec1", CAP, term, "ap:1", "alice@pool", issued);
        s.sign(&c).unwrap()
    }

    #[test]
    fn a_grant_signed_by_the_leader_is_believed() {
        let dir = pool(&["cm1=cm"]);
        let v = GrantVerifier::from_pem(&read(dir.path(), pki::CA_CERT)).unwrap();
        let t = now();
        let g = signed(&signer(dir.path(), "cm1"), 7, t);
        let c = v.verify(&g, claim(7), t + 5).unwrap();
        assert_eq!((c.term, c.submitter.as_str()), (7, "alice@pool"));
        assert!(!String::from_utf8_lossy(&g.payload).contains(CAP));
    }

    #[test]
    fn one_signature_covers_a_cycle_of_grants_each_with_its_own_proof() {
        let dir = pool(&["cm1=cm"]);
        let v = GrantVerifier::from_pem(&read(dir.path(), pki::CA_CERT)).unwrap();
        let t = now();
        // Seven grants: an odd count, so a node is carried up a level unpaired.
        let slots: Vec<String> = (1..=7).map(|i| format!("slot{i}@exec1")).collect();
        let claims: Vec<GrantClaims> = slots
            .iter()
            .map(|s| GrantClaims::new(s, CAP, 7, "ap:1", "alice@pool", t))
            .collect();
        let grants = signer(dir.path(), "cm1").sign_batch(&claims).unwrap();
        assert_eq!(grants.len(), 7);
        assert!(grants.iter().all(|g| g.signature == grants[0].signature));
        assert!(grants.iter().all(|g| (2..=3).contains(&g.proof.len())));
        let presented = |i: usize| Presented {
            slot: slots[i].as_str(),
            claim_id: CAP,
            term: 7,
        };
        for (i, g) in grants.iter().enumerate() {
            assert_eq!(v.verify(g, presented(i), t).unwrap().slot, slots[i]);
        }
        // Another grant's proof, a flipped side, a changed sibling hash: the root changes.
        let mut swapped = grants[0].clone();
        swapped.proof = grants[1].proof.clone();
        assert_eq!(
            v.verify(&swapped, presented(0), t),
            Err(GrantError::BadSignature)
        );
        let mut side = grants[2].clone();
        side.proof[0][0] ^= 1;
        assert_eq!(
            v.verify(&side, presented(2), t),
            Err(GrantError::BadSignature)
        );
        let mut sibling = grants[3].clone();
        sibling.proof[1][5] ^= 0x40;
        assert_eq!(
            v.verify(&sibling, presented(3), t),
            Err(GrantError::BadSignature)
        );
        // Leaving the proof out makes the grant look signed alone: it is not.
        let mut bare = grants[4].clone();
        bare.proof.clear();
        assert_eq!(
            v.verify(&bare, presented(4), t),
            Err(GrantError::BadSignature)
        );
        let mut short = grants[5].clone();
        short.proof[0].truncate(10);
        assert!(matches!(
            v.verify(&short, presented(5), t),
            Err(GrantError::Malformed(_))
        ));
    }

    #[test]
    fn forged_or_altered_grants_are_refused() {
        let dir = pool(&["cm1=cm"]);
        let v = GrantVerifier::from_pem(&read(dir.path(), pki::CA_CERT)).unwrap();
        let t = now();
        let good = signed(&signer(dir.path(), "cm1"), 7, t);
        // The term raised in the signed text: the signature no longer holds.
        let mut raised = good.clone();
        raised.payload = String::from_utf8(raised.payload)
            .unwrap()
            .replace("\"term\":7", "\"term\":9999")
            .into_bytes();
        assert_eq!(
            v.verify(&raised, claim(9999), t),
            Err(GrantError::BadSignature)
        );
        // A signature of other bytes.
        let mut forged = good.clone();
        forged.signature = signed(&signer(dir.path(), "cm1"), 8, t).signature;
        assert_eq!(
            v.verify(&forged, claim(7), t),
            Err(GrantError::BadSignature)
        );
        let mut junk = good.clone();
        junk.signature = vec![0; 70];
        assert_eq!(v.verify(&junk, claim(7), t), Err(GrantError::BadSignature));
        // No certificate at all.
        let mut nocert = good;
        nocert.leader_cert.clear();
        assert!(matches!(
            v.verify(&nocert, claim(7), t),
            Err(GrantError::Untrusted(_))
        ));
    }

    #[test]
    fn only_a_central_manager_of_this_pool_may_sign() {
        let dir = pool(&["cm1=cm", "exec1=execute+access-point"]);
        let v = GrantVerifier::from_pem(&read(dir.path(), pki::CA_CERT)).unwrap();
        let t = now();
        // An execute node's (or access point's) own key: a valid pool certificate, no cm role.
        let by_node = signed(&signer(dir.path(), "exec1"), 7, t);
        let e = v.verify(&by_node, claim(7), t).unwrap_err();
        assert!(
            matches!(e, GrantError::NotCm(ref who) if who.contains("exec1")),
            "{e}"
        );
        // A CM of another pool (another CA).
        let other = pool(&["cm1=cm"]);
        let foreign = signed(&signer(other.path(), "cm1"), 7, t);
        assert!(matches!(
            v.verify(&foreign, claim(7), t),
            Err(GrantError::Untrusted(_))
        ));
        // The pool CA's own certificate and key are not a CM's either.
        let ca_signer = GrantSigner::from_pem(
            &read(dir.path(), pki::CA_CERT),
            &read(dir.path(), pki::CA_KEY),
        )
        .unwrap();
        assert!(v.verify(&signed(&ca_signer, 7, t), claim(7), t).is_err());
    }

    #[test]
    fn a_grant_for_another_claim_is_refused() {
        let dir = pool(&["cm1=cm"]);
        let v = GrantVerifier::from_pem(&read(dir.path(), pki::CA_CERT)).unwrap();
        let t = now();
        let g = signed(&signer(dir.path(), "cm1"), 7, t);
        let e = v.verify(&g, claim(9), t).unwrap_err();
        assert!(
            e.to_string()
                .contains("signed in term 7, claim carries term 9"),
            "{e}"
        );
        let other_slot = Presented {
            slot: "slot2@exec1",
            ..claim(7)
        };
        assert!(matches!(
            v.verify(&g, other_slot, t),
            Err(GrantError::Mismatch(_))
        ));
        let other_cap = Presented {
            claim_id: "<10.0.0.1:9618>#ffff",
            ..claim(7)
        };
        assert!(matches!(
            v.verify(&g, other_cap, t),
            Err(GrantError::Mismatch(_))
        ));
    }

    #[test]
    fn old_and_future_grants_are_refused() {
        let dir = pool(&["cm1=cm"]);
        let v = GrantVerifier::from_pem(&read(dir.path(), pki::CA_CERT)).unwrap();
        let s = signer(dir.path(), "cm1");
        let t = now();
        assert!(v
            .verify(&signed(&s, 7, t), claim(7), t + MAX_GRANT_AGE)
            .is_ok());
        assert!(matches!(
            v.verify(&signed(&s, 7, t), claim(7), t + MAX_GRANT_AGE + 1),
            Err(GrantError::Stale { .. })
        ));
        assert!(matches!(
            v.verify(&signed(&s, 7, t + MAX_CLOCK_SKEW + 1), claim(7), t),
            Err(GrantError::Stale { .. })
        ));
        // A certificate checked long after it expired (30 days here) is not trusted.
        let later = t + 31 * 86_400;
        assert!(matches!(
            v.verify(&signed(&s, 7, later), claim(7), later),
            Err(GrantError::Untrusted(_))
        ));
    }
}
