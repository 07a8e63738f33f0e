//! Private attributes: the secrets a node sends with its ad (HTCondor's claim capabilities,
//! `ClaimId`, `Capability` and the rest of compat_classad's list, and anything named
//! `_condor_priv...`) that no query may return or probe with a constraint.
//!
//! The table keeps each ad in two parts: the public ad that queries see and constraints are
//! evaluated on, and this private part, split off on the way in ([`split_private`]). Only two
//! paths read the private part back: the negotiator, which hands a slot's claim id to the
//! access point that won it ([`AdTable::private_attrs`]), and the relay, which sends the whole
//! ad to the other CMs so whichever one leads can do the same ([`Entry::whole_text`]). Keeping
//! those here, and nowhere else, makes the "never shown" rule checkable in one file.
use super::AdKey;
use super::{AdTable, AdType, Entry};
use classad::ClassAd;

/// HTCondor's private attributes (compat_classad's fixed list, compared case-insensitively)
/// and any name with the `_condor_priv` prefix: secrets no query may return.
pub fn is_private_attr(name: &str) -> bool {
    const FIXED: [&str; 6] = [
        "Capability",
        "ChildClaimIds",
        "ClaimId",
        "ClaimIdList",
        "ClaimIds",
        "TransferKey",
    ];
    const PREFIX: &str = "_condor_priv";
    FIXED.iter().any(|p| p.eq_ignore_ascii_case(name))
        || name
            .get(..PREFIX.len())
            .is_some_and(|p| p.eq_ignore_ascii_case(PREFIX))
}

/// Moves the private attributes of `ad` into their own ad.
pub(super) fn split_private(ad: &mut ClassAd) -> Option<ClassAd> {
    let names: Vec<String> = ad
        .iter()
        .filter(|(n, _)| is_private_attr(n))
        .map(|(n, _)| n.to_string())
        .collect();
    if names.is_empty() {
        return None;
    }
    let mut private = ClassAd::with_capacity(names.len());
    for n in &names {
        if let Some(e) = ad.remove(n) {
            private.insert(n, e);
        }
    }
    Some(private)
}

impl AdTable {
    /// The private attributes of the live ad under `key` (the claim capability), for the
    /// negotiator to hand to the access point that won the match. Never exposed by
    /// [`AdTable::query`]; `None` for absent ads, which are never matched. By the whole key:
    /// two machines may give their slots one name, and each slot's capability is its own.
    pub fn private_attrs_of(&self, key: &AdKey) -> Option<&ClassAd> {
        self.ads
            .get(key)
            .filter(|e| e.absent_since.is_none())
            .and_then(|e| e.private.as_ref())
    }

    /// [`AdTable::private_attrs_of`] the first live ad of `ad_type` named `name`, whatever its
    /// address (tests and tools that know one daemon by that name).
    pub fn private_attrs(&self, ad_type: &AdType, name: &str) -> Option<&ClassAd> {
        self.first_by_name(ad_type, name)
            .map(|(_, e)| e)
            .filter(|e| e.absent_since.is_none())
            .and_then(|e| e.private.as_ref())
    }
}

impl Entry {
    /// The ad's whole text in old syntax, public attributes then private ones, as relayed to
    /// the other CMs.
    pub(super) fn whole_text(&self) -> String {
        let mut text = self.ad.to_old_syntax();
        if let Some(p) = &self.private {
            text.push_str(&p.to_old_syntax());
        }
        text
    }
}
