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
use crate::identity::{Caller, Identity, Role};
use ring::rand::SystemRandom;
use ring::signature::{EcdsaKeyPair, ECDSA_P256_SHA256_ASN1_SIGNING};
use rustls_pki_types::{CertificateDer, UnixTime};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
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

/// One grant to sign, borrowed from the leader's grant list: what [`GrantClaims`] holds,
/// with the capability itself (hashed when the text is written). Signing a cycle's grants
/// from these makes no owned copy of any field.
#[derive(Clone, Copy, Debug)]
pub struct GrantText<'a> {
    /// The slot's `Name`.
    pub slot: &'a str,
    /// The slot's claim capability (only its hash is written).
    pub claim_id: &'a str,
    /// The leader's Raft term.
    pub term: u64,
    /// The access point's address.
    pub access_point: &'a str,
    /// The submitter.
    pub submitter: &'a str,
    /// When the leader signed, Unix seconds.
    pub issued: i64,
}

/// [`GrantClaims`] as written, borrowing every field: the same field names in the same
/// order, so the JSON is byte for byte what serializing a [`GrantClaims`] gives (a test pins
/// it).
#[derive(Serialize)]
struct ClaimsText<'a> {
    v: u32,
    slot: &'a str,
    capability: &'a str,
    term: u64,
    access_point: &'a str,
    submitter: &'a str,
    issued: i64,
}

impl GrantText<'_> {
    /// The signed text of this grant: JSON [`GrantClaims`], written straight into one buffer
    /// sized for it.
    pub fn payload(&self) -> Vec<u8> {
        let hash = capability_hex(self.claim_id);
        let text = ClaimsText {
            v: VERSION,
            slot: self.slot,
            // Hex digits are ASCII.
            capability: std::str::from_utf8(&hash).unwrap_or_default(),
            term: self.term,
            access_point: self.access_point,
            submitter: self.submitter,
            issued: self.issued,
        };
        // The keys, punctuation, hash and two numbers take under 160 bytes.
        let mut out = Vec::with_capacity(
            160 + self.slot.len() + self.access_point.len() + self.submitter.len(),
        );
        // Writing plain strings and integers into a Vec cannot fail.
        let _ = serde_json::to_writer(&mut out, &text);
        out
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
///
/// The levels are kept, and each leaf's proof is read off them by walking its index up (its
/// sibling at each level is the index with the low bit flipped), so every proof is allocated
/// once at its final size.
fn merkle(leaves: Vec<[u8; 32]>) -> ([u8; 32], Vec<Vec<Vec<u8>>>) {
    let n = leaves.len();
    let mut levels = vec![leaves];
    while let Some(level) = levels.last().filter(|l| l.len() > 1) {
        let next: Vec<[u8; 32]> = level
            .chunks(2)
            .map(|pair| match pair {
                [l, r] => node_hash(l, r),
                [odd] => *odd,
                _ => unreachable!("chunks(2) yields one or two"),
            })
            .collect();
        levels.push(next);
    }
    let root = levels
        .last()
        .and_then(|l| l.first())
        .copied()
        .unwrap_or([0; 32]);
    let depth = levels.len() - 1;
    let proofs = (0..n)
        .map(|leaf| {
            let mut proof = Vec::with_capacity(depth);
            let mut i = leaf;
            for level in &levels[..depth] {
                let sibling = i ^ 1;
                if let Some(h) = level.get(sibling) {
                    // Side byte: 1 when the sibling is on the right.
                    let mut step = Vec::with_capacity(33);
                    step.push(u8::from(sibling > i));
                    step.extend_from_slice(h);
                    proof.push(step);
                }
                i /= 2;
            }
            proof
        })
        .collect();
    (root, proofs)
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
    let hex = capability_hex(claim_id);
    std::str::from_utf8(&hex).unwrap_or_default().to_string()
}

/// The lowercase hex SHA-256 of `claim_id`, on the stack (no allocation per byte).
fn capability_hex(claim_id: &str) -> [u8; 64] {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = [0u8; 64];
    for (i, b) in Sha256::digest(claim_id.as_bytes()).iter().enumerate() {
        out[2 * i] = DIGITS[usize::from(b >> 4)];
        out[2 * i + 1] = DIGITS[usize::from(b & 0xf)];
    }
    out
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
    /// The caller presenting the grant is not the access point it was delivered to.
    #[error("grant presented by the wrong daemon: {0}")]
    WrongPresenter(String),
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
    /// come back in the same order, each with its proof and its own copy of the signature and
    /// certificate. For a few grants (tests, tools); a cycle's grants go through
    /// [`GrantSigner::sign_cycle`], which copies neither.
    pub fn sign_batch(&self, claims: &[GrantClaims]) -> Result<Vec<SignedGrant>, String> {
        let payloads = claims
            .iter()
            .map(serde_json::to_vec)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("grant claims: {e}"))?;
        let cycle = self.sign_payloads(payloads)?;
        Ok(cycle
            .grants
            .into_iter()
            .map(|(payload, proof)| SignedGrant {
                payload,
                signature: cycle.signature.clone(),
                leader_cert: self.cert_der.clone(),
                proof,
            })
            .collect())
    }

    /// Signs a cycle's grants with one signature over their tree's root: each grant's text
    /// and proof in the order given, and the signature once.
    pub fn sign_cycle(&self, grants: &[GrantText<'_>]) -> Result<SignedCycle, String> {
        self.sign_payloads(grants.iter().map(GrantText::payload).collect())
    }

    fn sign_payloads(&self, payloads: Vec<Vec<u8>>) -> Result<SignedCycle, String> {
        let (root, proofs) = merkle(payloads.iter().map(|p| leaf_hash(p)).collect());
        let mut signed = Vec::with_capacity(ROOT_TAG.len() + root.len());
        signed.extend_from_slice(ROOT_TAG);
        signed.extend_from_slice(&root);
        let signature = self
            .key
            .sign(&self.rng, &signed)
            .map_err(|_| "signing a grant failed".to_string())?
            .as_ref()
            .to_vec();
        Ok(SignedCycle {
            signature,
            grants: payloads.into_iter().zip(proofs).collect(),
        })
    }

    /// The signer's certificate, DER: what travels with a cycle's signature.
    pub fn cert_der(&self) -> &[u8] {
        &self.cert_der
    }
}

/// A cycle's grants signed together ([`GrantSigner::sign_cycle`]): the one signature, and
/// per grant its signed text and proof. The certificate is the signer's
/// ([`GrantSigner::cert_der`]); a [`SignedGrant`] is the text and proof with both.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SignedCycle {
    /// The signature over the tree root (see [`SignedGrant::signature`]).
    pub signature: Vec<u8>,
    /// Per grant, in the order given: its signed text and its proof.
    pub grants: Vec<(Vec<u8>, Vec<Vec<u8>>)>,
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
    /// The last certificate, tree root and signature that verified, and when: the claims of
    /// one cycle share them, so the chain and ECDSA checks run once per cycle and second
    /// rather than once per claim. A memo of a pure check: the same inputs at the same `now`
    /// give the same answer.
    last: Arc<Mutex<Option<Verified>>>,
}

/// A (certificate, root, signature) that verified at `now`.
#[derive(Debug, PartialEq, Eq)]
struct Verified {
    now: i64,
    cert: Vec<u8>,
    root: [u8; 32],
    signature: Vec<u8>,
}

impl GrantVerifier {
    /// A verifier trusting the pool CA `ca_pem` (`ca.crt`).
    pub fn from_pem(ca_pem: &str) -> Result<GrantVerifier, String> {
        let ca_der = pem_der(ca_pem, "pool CA")?;
        let v = GrantVerifier {
            ca_der,
            last: Arc::default(),
        };
        v.anchor_check()?;
        Ok(v)
    }

    fn anchor_check(&self) -> Result<(), String> {
        let der = CertificateDer::from(self.ca_der.as_slice());
        webpki::anchor_from_trusted_cert(&der)
            .map(|_| ())
            .map_err(|e| format!("pool CA unusable as a trust anchor: {e}"))
    }

    /// Checks that `grant.leader_cert` chains to the pool CA at `now` with the `cm` role and
    /// that `grant.signature` is its key's over `root`.
    fn verify_root(
        &self,
        grant: &SignedGrant,
        root: &[u8; 32],
        now: i64,
    ) -> Result<(), GrantError> {
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
        let mut signed = Vec::with_capacity(ROOT_TAG.len() + root.len());
        signed.extend_from_slice(ROOT_TAG);
        signed.extend_from_slice(root);
        cert.verify_signature(webpki::ring::ECDSA_P256_SHA256, &signed, &grant.signature)
            .map_err(|_| GrantError::BadSignature)
    }

    /// Believes `grant` for the claim `presented` at `now` (Unix seconds), or says why not;
    /// returns what was signed.
    pub fn verify(
        &self,
        grant: &SignedGrant,
        presented: Presented<'_>,
        now: i64,
    ) -> Result<GrantClaims, GrantError> {
        let root = root_of(&grant.payload, &grant.proof).ok_or_else(|| {
            GrantError::Malformed("the proof's steps are not a side byte and a 32-byte hash".into())
        })?;
        let seen = |v: &Verified| {
            v.now == now
                && v.root == root
                && v.signature == grant.signature
                && v.cert == grant.leader_cert
        };
        let memo = self
            .last
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .is_some_and(seen);
        if !memo {
            self.verify_root(grant, &root, now)?;
            *self.last.lock().unwrap_or_else(|p| p.into_inner()) = Some(Verified {
                now,
                cert: grant.leader_cert.clone(),
                root,
                signature: grant.signature.clone(),
            });
        }
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

/// Whether `caller`, connecting from `from`, may present a grant signed for the access point
/// at `access_point` (the grant's [`GrantClaims::access_point`], `host:port`): the execute
/// node's check that a signed grant comes from the access point it was delivered to, so a
/// grant copied off the wire (or a stolen claim request) is no use to another daemon.
///
/// - an access point's certificate (the `access-point` role) must connect from the grant's
///   host: the same IP when the grant names an IP literal (both loopback counts as the same
///   host), or a certificate named as the host when it names a host name; host names are not
///   resolved (pure), as the collector's binding of an access point's `MyAddress` to the host
///   it connects from (`cm/src/collector/binding.rs`) compares IP literals only;
/// - an administrator's certificate may present any grant (the pool simulator stands in for
///   many access points, as it may advertise for them);
/// - nobody else (an execute node's or a CM's certificate, a token) claims with a grant;
/// - an anonymous caller is an insecure (development) node's, which checks no grants.
pub fn check_presenter(
    access_point: &str,
    caller: &Caller,
    from: Option<IpAddr>,
) -> Result<(), GrantError> {
    let id = match caller {
        Caller::Anonymous => return Ok(()),
        Caller::Daemon(id) if id.is(Role::Admin) => return Ok(()),
        Caller::Daemon(id) if id.is(Role::AccessPoint) => id,
        other => {
            return Err(GrantError::WrongPresenter(format!(
                "{other} is not an access point; only the access point a grant was delivered \
                 to ({access_point}) may claim with it"
            )))
        }
    };
    let host = address_host(access_point);
    match (host.parse::<IpAddr>(), from) {
        (Ok(ip), Some(peer)) => {
            let (ip, peer) = (ip.to_canonical(), peer.to_canonical());
            if ip == peer || (ip.is_loopback() && peer.is_loopback()) {
                Ok(())
            } else {
                Err(GrantError::WrongPresenter(format!(
                    "the grant is for the access point at {access_point}, but {caller} \
                     connects from {peer}"
                )))
            }
        }
        // An IP literal and no peer address: nothing to compare (not a TCP connection).
        (Ok(_), None) => Ok(()),
        (Err(_), _) if host.eq_ignore_ascii_case(&id.name) => Ok(()),
        (Err(_), _) => Err(GrantError::WrongPresenter(format!(
            "the grant is for the access point at {access_point}, but {caller}'s certificate \
             names {:?}",
            id.name
        ))),
    }
}

/// The host of `host:port`, `<host:port?params>` or `[v6]:port`.
fn address_host(addr: &str) -> &str {
    let a = addr.trim().trim_start_matches('<').trim_end_matches('>');
    let a = a.split_once('?').map_or(a, |(h, _)| h);
    if let Some(rest) = a.strip_prefix('[') {
        return rest.split_once(']').map_or(rest, |(h, _)| h);
    }
    match a.rsplit_once(':') {
        Some((h, p)) if !h.contains(':') && p.bytes().all(|b| b.is_ascii_digit()) => h,
        _ => a,
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

    /// The signed text is pinned byte for byte: a change of the format (field order, names,
    /// escaping, the hash's case) would make nodes of the old version refuse every grant.
    #[test]
    fn the_signed_text_is_pinned() {
        let t = GrantText {
            slot: "slot1@exec1",
            claim_id: "abc",
            term: 7,
            access_point: "10.0.0.2:9615",
            submitter: "alice@pool",
            issued: 1_700_000_000,
        };
        assert_eq!(
            String::from_utf8(t.payload()).unwrap(),
            "{\"v\":1,\"slot\":\"slot1@exec1\",\
             \"capability\":\"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad\",\
             \"term\":7,\"access_point\":\"10.0.0.2:9615\",\"submitter\":\"alice@pool\",\
             \"issued\":1700000000}"
        );
        assert_eq!(
            capability_hash("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    /// The borrowed writer gives exactly what serializing the owned claims gives, also for
    /// names that need escaping, multi-byte names and extreme numbers.
    #[test]
    fn the_borrowed_text_is_the_owned_claims_json() {
        let odd = [
            "",
            "plain",
            "quo\"te\\back",
            "tab\tnl\ncr\r\u{1}\u{1f}",
            "ünïcødé@p",
            "</script>",
        ];
        for (i, a) in odd.iter().enumerate() {
            let b = odd[(i + 1) % odd.len()];
            let c = odd[(i + 2) % odd.len()];
            for (term, issued) in [(0, i64::MIN), (u64::MAX, i64::MAX), (3, -1)] {
                let t = GrantText {
                    slot: a,
                    claim_id: b,
                    term,
                    access_point: c,
                    submitter: a,
                    issued,
                };
                let owned = GrantClaims::new(a, b, term, c, a, issued);
                assert_eq!(t.payload(), serde_json::to_vec(&owned).unwrap(), "{a:?}");
            }
        }
    }

    /// The tree as it was first built (members carried up level by level): the proofs and
    /// root of the level walk must be the same for every size.
    fn merkle_reference(leaves: Vec<[u8; 32]>) -> ([u8; 32], Vec<Vec<Vec<u8>>>) {
        let mut proofs: Vec<Vec<Vec<u8>>> = vec![Vec::new(); leaves.len()];
        let mut members: Vec<Vec<usize>> = (0..leaves.len()).map(|i| vec![i]).collect();
        let mut level = leaves;
        while level.len() > 1 {
            let (mut next, mut next_members) = (Vec::new(), Vec::new());
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

    #[test]
    fn the_tree_and_proofs_are_those_of_the_first_build() {
        for n in 0..=40usize {
            let leaves: Vec<[u8; 32]> = (0..n).map(|i| leaf_hash(&i.to_le_bytes())).collect();
            let got = merkle(leaves.clone());
            assert_eq!(got, merkle_reference(leaves.clone()), "{n} leaves");
            for (i, p) in got.1.iter().enumerate() {
                assert_eq!(
                    root_of(&i.to_le_bytes(), p),
                    Some(got.0),
                    "{n} leaves, leaf {i}"
                );
            }
        }
        // And the root of five fixed texts, pinned.
        let five: Vec<[u8; 32]> = (0..5u8).map(|i| leaf_hash(&[i])).collect();
        let hex: String = merkle(five).0.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, FIVE_ROOT);
    }

    /// Computed outside Rust (Python hashlib) from the RFC 6962 shape.
    const FIVE_ROOT: &str = "b855b42d6c30f5b087e05266783fbd6e394f7b926013ccaa67700a8b0c5a596f";

    #[test]
    fn a_cycle_signed_without_copies_verifies_like_a_batch() {
        let dir = pool(&["cm1=cm"]);
        let v = GrantVerifier::from_pem(&read(dir.path(), pki::CA_CERT)).unwrap();
        let s = signer(dir.path(), "cm1");
        let t = now();
        let slots: Vec<String> = (1..=5).map(|i| format!("slot{i}@exec1")).collect();
        let texts: Vec<GrantText> = slots
            .iter()
            .map(|slot| GrantText {
                slot,
                claim_id: CAP,
                term: 7,
                access_point: "ap:1",
                submitter: "alice@pool",
                issued: t,
            })
            .collect();
        let cycle = s.sign_cycle(&texts).unwrap();
        let owned: Vec<GrantClaims> = slots
            .iter()
            .map(|slot| GrantClaims::new(slot, CAP, 7, "ap:1", "alice@pool", t))
            .collect();
        let batch = s.sign_batch(&owned).unwrap();
        for (i, ((payload, proof), b)) in cycle.grants.iter().zip(&batch).enumerate() {
            // Same texts and proofs (signatures differ: ECDSA's nonce is random).
            assert_eq!((payload, proof), (&b.payload, &b.proof));
            let g = SignedGrant {
                payload: payload.clone(),
                signature: cycle.signature.clone(),
                leader_cert: s.cert_der().to_vec(),
                proof: proof.clone(),
            };
            let presented = Presented {
                slot: &slots[i],
                claim_id: CAP,
                term: 7,
            };
            assert_eq!(v.verify(&g, presented, t).unwrap(), owned[i]);
        }
    }

    /// Who may present a grant delivered to which access point, from where.
    #[test]
    fn only_the_access_point_a_grant_names_may_present_it() {
        let cert = |name: &str, roles: &[Role]| {
            Caller::Daemon(Identity {
                name: name.into(),
                roles: roles.to_vec(),
            })
        };
        let ap = cert("ap1", &[Role::AccessPoint]);
        let node_ap = cert("node1", &[Role::Execute, Role::AccessPoint]);
        let ip = |s: &str| Some(s.parse::<IpAddr>().unwrap());
        let token = Caller::User {
            identity: "alice@pool".into(),
            scopes: crate::authz::Level::ALL.to_vec(),
        };
        let cases: Vec<(&str, Caller, Option<IpAddr>, bool)> = vec![
            ("10.0.0.2:7200", ap.clone(), ip("10.0.0.2"), true),
            ("<10.0.0.2:7200?sock=x>", ap.clone(), ip("10.0.0.2"), true),
            ("10.0.0.2:7200", ap.clone(), ip("::ffff:10.0.0.2"), true),
            ("10.0.0.2:7200", ap.clone(), ip("10.0.0.3"), false),
            ("127.0.0.1:7200", ap.clone(), ip("127.0.0.2"), true),
            ("[::1]:7200", ap.clone(), ip("127.0.0.1"), true),
            ("[fd00::2]:7200", ap.clone(), ip("fd00::3"), false),
            ("10.0.0.2:7200", ap.clone(), None, true),
            ("ap1:7200", ap.clone(), ip("10.0.0.9"), true),
            ("AP1:7200", ap.clone(), ip("10.0.0.9"), true),
            ("ap2.pool:7200", ap.clone(), ip("10.0.0.9"), false),
            ("node1:7200", node_ap, ip("10.0.0.9"), true),
            (
                "10.0.0.2:7200",
                cert("sim", &[Role::Admin]),
                ip("10.9.9.9"),
                true,
            ),
            (
                "10.0.0.2:7200",
                cert("exec1", &[Role::Execute]),
                ip("10.0.0.2"),
                false,
            ),
            (
                "10.0.0.2:7200",
                cert("cm1", &[Role::Cm]),
                ip("10.0.0.2"),
                false,
            ),
            ("10.0.0.2:7200", token, ip("10.0.0.2"), false),
            (
                "10.0.0.2:7200",
                Caller::LocalUser("bob".into()),
                None,
                false,
            ),
            ("10.0.0.2:7200", Caller::Anonymous, ip("10.9.9.9"), true),
        ];
        for (addr, caller, from, ok) in cases {
            let got = check_presenter(addr, &caller, from);
            assert_eq!(
                got.is_ok(),
                ok,
                "{caller} from {from:?} for {addr}: {got:?}"
            );
            if let Err(e) = got {
                assert!(matches!(e, GrantError::WrongPresenter(_)), "{e}");
                assert!(e.to_string().contains(addr), "{e}");
            }
        }
    }

    /// The memo of the last verified signature never lets a grant through that a full check
    /// would refuse: other texts, other signatures, later times are checked again.
    #[test]
    fn the_signature_memo_changes_no_answer() {
        let dir = pool(&["cm1=cm"]);
        let v = GrantVerifier::from_pem(&read(dir.path(), pki::CA_CERT)).unwrap();
        let s = signer(dir.path(), "cm1");
        let t = now();
        let slots = ["slot1@exec1", "slot2@exec1", "slot3@exec1"];
        let owned: Vec<GrantClaims> = slots
            .iter()
            .map(|slot| GrantClaims::new(slot, CAP, 7, "ap:1", "alice@pool", t))
            .collect();
        let grants = s.sign_batch(&owned).unwrap();
        let presented = |i: usize| Presented {
            slot: slots[i],
            claim_id: CAP,
            term: 7,
        };
        for (i, g) in grants.iter().enumerate() {
            assert!(v.verify(g, presented(i), t).is_ok());
            // Again, from the memo.
            assert!(v.verify(g, presented(i), t).is_ok());
        }
        // The memo holds this cycle's root now; a signature of another cycle is still refused.
        let mut other = grants[0].clone();
        other.signature = signed(&s, 8, t).signature;
        assert_eq!(
            v.verify(&other, presented(0), t),
            Err(GrantError::BadSignature)
        );
        assert!(v.verify(&grants[1], presented(1), t).is_ok());
        // Another certificate with the memo's signature and root.
        let mut nocert = grants[1].clone();
        nocert.leader_cert.truncate(10);
        assert!(matches!(
            v.verify(&nocert, presented(1), t),
            Err(GrantError::Untrusted(_))
        ));
        // Long after the certificate expired, the chain is checked again.
        let later = t + 31 * 86_400;
        let old = GrantClaims::new(slots[2], CAP, 7, "ap:1", "alice@pool", later);
        let g = s.sign(&old).unwrap();
        assert!(matches!(
            v.verify(&g, presented(2), later),
            Err(GrantError::Untrusted(_))
        ));
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
