//! Which Raft terms a node believes in a claim request (issue 16, item 6).
//!
//! A claim request carries the Raft term of the leader whose grant made the match, and each
//! slot refuses terms older than the newest it has seen (the term fence, [`super::claim`]), so
//! a deposed leader's late grants cannot take a slot the new leader gave away. HTCondor needs
//! no such fence (one negotiator; `src/condor_startd.V6/command.cpp` checks only the claim
//! id); Aerie's replicated negotiator does, and the fence is only as good as the terms fed to
//! it. The term arrives from the access point, which could forge it: a claim with
//! `term = u64::MAX` and the right capability would make the slot refuse every real grant
//! forever. So a node believes a term only within [`MAX_TERM_LEAD`] of the newest term its
//! central managers told it themselves (each advertise summary carries the CM's current term,
//! over mutual TLS from a certificate with the `cm` role), and it keeps the newest term it
//! has seen (accepted claims and CM reports) in its state directory, so that after a restart
//! the fence does not fall back to zero and a deposed leader's grant from before the restart
//! is still refused.
//!
//! Why a lead and not equality: a new election may complete between the node's last summary
//! and the claim (summaries come every few seconds); a lead of a few terms admits those, and
//! a claim refused for a term just past the lead is granted again in a later cycle, once the
//! node has heard the new term. What remains open to an access point holding a real grant's
//! capability is raising the fence by at most the lead, which costs the pool a few grants,
//! not the slot. With pool credentials that is closed too: the leader signs each grant with
//! its term (`aerie_security::grant`), and the node checks the signature, the `cm` role of the
//! signer and that the signed term is the claim's before it asks this bound; the bound stays
//! as a second fence (and the only one in `--insecure` development mode).
//!
//! Pure: the shell feeds reports and persists [`TermBound::newest`] when it grows.
use std::path::Path;

/// How far beyond the newest term its CMs reported a claim's term may be.
pub const MAX_TERM_LEAD: u64 = 3;

/// The file in the node's state directory holding the newest term it has seen.
pub const NEWEST_TERM_FILE: &str = "newest-term";

/// The newest term a node has seen, and the newest its CMs reported.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TermBound {
    reported: u64,
    newest: u64,
}

impl TermBound {
    /// A bound starting from `persisted`, the newest term seen before a restart (CMs
    /// reported at least that much, or a claim within the lead of their report carried it).
    pub fn new(persisted: u64) -> Self {
        TermBound {
            reported: 0,
            newest: persisted,
        }
    }

    /// A CM told the node its current term. True when the newest term grew (persist it).
    pub fn reported(&mut self, term: u64) -> bool {
        self.reported = self.reported.max(term);
        self.saw(term)
    }

    /// Whether a claim's term is believable; the refusal says why.
    pub fn check(&self, term: u64) -> Result<(), String> {
        let limit = self.reported.max(self.newest).saturating_add(MAX_TERM_LEAD);
        if term > limit {
            return Err(format!(
                "implausible term {term}: the newest term this node's central managers \
                 reported is {}, and a claim may be at most {MAX_TERM_LEAD} beyond it \
                 (a forged or far-future term)",
                self.reported.max(self.newest)
            ));
        }
        Ok(())
    }

    /// An accepted claim carried `term`. True when the newest term grew (persist it).
    pub fn saw(&mut self, term: u64) -> bool {
        if term > self.newest {
            self.newest = term;
            true
        } else {
            false
        }
    }

    /// The newest term seen: what the node persists and fences its slots with on restart.
    pub fn newest(&self) -> u64 {
        self.newest
    }
}

/// Reads the newest term persisted in `state_dir` (0 when there is none yet); a file that
/// does not hold a number is an error naming it.
pub fn load(state_dir: &Path) -> Result<u64, String> {
    let path = state_dir.join(NEWEST_TERM_FILE);
    match std::fs::read_to_string(&path) {
        Ok(s) => s.trim().parse().map_err(|e| {
            format!(
                "{}: not a Raft term ({e}); delete it to start again from the CMs' term",
                path.display()
            )
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(0),
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

/// Persists `term` in `state_dir` (written aside and renamed, so a crash leaves the old or
/// the new value, never half of one).
pub fn store(state_dir: &Path, term: u64) -> Result<(), String> {
    let path = state_dir.join(NEWEST_TERM_FILE);
    let tmp = state_dir.join(format!("{NEWEST_TERM_FILE}.tmp"));
    std::fs::write(&tmp, format!("{term}\n"))
        .and_then(|()| std::fs::rename(&tmp, &path))
        .map_err(|e| format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_term_far_beyond_what_the_cms_reported_is_refused() {
        let mut b = TermBound::new(0);
        assert!(b.reported(7));
        assert_eq!(b.check(7), Ok(()));
        assert_eq!(b.check(7 + MAX_TERM_LEAD), Ok(()));
        let e = b.check(u64::MAX).unwrap_err();
        assert!(e.contains("implausible term") && e.contains(" 7,"), "{e}");
        assert!(b.check(8 + MAX_TERM_LEAD).is_err());
        // Once a CM reports the newer term, it is believed.
        b.reported(20);
        assert_eq!(b.check(21), Ok(()));
        // Reports never lower the bound.
        assert!(!b.reported(3));
        assert_eq!(b.newest(), 20);
    }

    #[test]
    fn the_newest_term_survives_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(load(dir.path()), Ok(0));
        let mut b = TermBound::new(load(dir.path()).unwrap());
        b.reported(41);
        assert!(b.saw(42));
        store(dir.path(), b.newest()).unwrap();
        let after = TermBound::new(load(dir.path()).unwrap());
        assert_eq!(after.newest(), 42);
        // Before any CM speaks again, the restarted node still believes terms near 42 and
        // refuses absurd ones.
        assert_eq!(after.check(43), Ok(()));
        assert!(after.check(u64::MAX).is_err());
        std::fs::write(dir.path().join(NEWEST_TERM_FILE), "junk").unwrap();
        let e = load(dir.path()).unwrap_err();
        assert!(e.contains(NEWEST_TERM_FILE), "{e}");
    }
}
