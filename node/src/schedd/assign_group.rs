//! HTCondor's `use FEATURE : AssignAccountingGroup(MAP_FILE [, CHECK_REQUEST])` at the access
//! point, pure: every submitted job's accounting group comes from a user map file (see
//! [`super::usermap`]) keyed by its `Owner`, whatever the submit file asked for. The metaknob
//! (src/condor_utils/param_info.in, `[$FEATURE.AssignAccountingGroup]`) is a job transform
//! and two submit requirements, which this module performs in their order:
//!
//! - `AcctGroupUser` := `Owner`; `RequestedAcctGroup` := the submitted `AcctGroup`;
//!   `AcctGroup` := `usermap("AssignAccountingGroup", AcctGroupUser, AcctGroup)` (the requested
//!   group when the user's list holds it, else the list's first); `AccountingGroup` :=
//!   `AcctGroup.AcctGroupUser`;
//! - `CheckRequestedGroup` (unless CHECK_REQUEST is false): a requested group must be the
//!   assigned one ("Permission denied setting accounting_group to ...");
//! - `AssignAccountingGroup`: the owner must map to a group ("Submit requirement
//!   AssignAccountingGroup not met - Could not map ..."), else the submit is refused;
//! - and `AcctGroup`, `AcctGroupUser`, `AccountingGroup` join `IMMUTABLE_JOB_ATTRS`: condor_qedit
//!   may not change them ([`IMMUTABLE`]).
//!
//! The refusals read as the real schedd's (schedd.cpp, `Scheduler::checkSubmitRequirements`):
//! a reason that evaluates to undefined gives "Submit requirement NAME not met.", a
//! requirement that evaluates to undefined "Submit requirement NAME evaluated to
//! non-boolean.". The map is read when the access point starts.
use super::job::get_str;
use super::usermap::UserMap;
use classad::{ClassAd, Value};

/// The attributes condor_qedit may not change once the map assigned them.
pub const IMMUTABLE: [&str; 3] = ["AcctGroup", "AcctGroupUser", "AccountingGroup"];

/// The configured feature: the map, and whether a requested group is checked.
#[derive(Clone, Debug, Default)]
pub struct AssignAccountingGroup {
    /// `CLASSAD_USER_MAPFILE_AssignAccountingGroup`, read.
    pub map: UserMap,
    /// The metaknob's second argument (default true): `CheckRequestedGroup` is a submit
    /// requirement.
    pub check_request: bool,
}

impl AssignAccountingGroup {
    /// Assigns the group of `owner` to job `ad`, or says why the job is refused.
    pub fn apply(&self, ad: &mut ClassAd, owner: &str) -> Result<(), String> {
        let requested = get_str(ad, "AcctGroup");
        ad.insert_str("AcctGroupUser", owner);
        if let Some(r) = &requested {
            ad.insert_str("RequestedAcctGroup", r);
        }
        let group = self.map.pick(owner, requested.as_deref());
        match &group {
            Some(g) => {
                ad.insert_str("AcctGroup", g);
                ad.insert_str("AccountingGroup", &format!("{g}.{owner}"));
            }
            None => {
                ad.insert_value("AcctGroup", Value::Undefined);
                ad.insert_str("AccountingGroup", owner);
            }
        }
        if self.check_request {
            match (&requested, &group) {
                (Some(r), Some(g)) if !r.eq_ignore_ascii_case(g) => {
                    return Err(format!("Permission denied setting accounting_group to {r}"))
                }
                (Some(_), None) => {
                    return Err(
                        "Submit requirement CheckRequestedGroup evaluated to non-boolean.".into(),
                    )
                }
                _ => {}
            }
        }
        match (group, requested) {
            (Some(_), _) => Ok(()),
            (None, Some(r)) => Err(format!(
                "Submit requirement AssignAccountingGroup not met - Could not map '{owner}' \
                 to an accounting group {r}"
            )),
            (None, None) => Err("Submit requirement AssignAccountingGroup not met.".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feature(check_request: bool) -> AssignAccountingGroup {
        let map = UserMap::parse(
            "* Alice     group_physics\n\
             * Bob       group_atlas\n\
             * Carol group_physics\n\
             * /^student_.*/     group_students\n\
             * dave group_a,group_b\n",
            "groups.map",
        )
        .unwrap();
        AssignAccountingGroup { map, check_request }
    }

    fn job(extra: &str) -> ClassAd {
        classad::parse_ad(&format!("Cmd = \"/bin/true\"\n{extra}")).unwrap()
    }

    fn s(ad: &ClassAd, a: &str) -> Option<String> {
        get_str(ad, a)
    }

    #[test]
    fn every_owner_of_the_seed_map_gets_its_group() {
        let f = feature(true);
        for (owner, group) in [
            ("Alice", "group_physics"),
            ("Bob", "group_atlas"),
            ("Carol", "group_physics"),
            ("student_42", "group_students"),
        ] {
            let mut ad = job("");
            f.apply(&mut ad, owner).unwrap();
            assert_eq!(s(&ad, "AcctGroup").as_deref(), Some(group));
            assert_eq!(s(&ad, "AcctGroupUser").as_deref(), Some(owner));
            assert_eq!(s(&ad, "AccountingGroup"), Some(format!("{group}.{owner}")));
        }
    }

    #[test]
    fn a_submit_file_cannot_pick_another_group_nor_user() {
        let f = feature(true);
        let mut ad = job("AcctGroup = \"group_atlas\"\nAcctGroupUser = \"bob\"\n\
             AccountingGroup = \"group_atlas.bob\"");
        let e = f.apply(&mut ad, "Alice").unwrap_err();
        assert_eq!(
            e,
            "Permission denied setting accounting_group to group_atlas"
        );
        // Without the check the map's group wins silently.
        let mut ad = job("AcctGroup = \"group_atlas\"\nAcctGroupUser = \"bob\"");
        feature(false).apply(&mut ad, "Alice").unwrap();
        assert_eq!(
            s(&ad, "AccountingGroup").as_deref(),
            Some("group_physics.Alice")
        );
        assert_eq!(s(&ad, "RequestedAcctGroup").as_deref(), Some("group_atlas"));
        // A group of the user's list may be chosen, in any case; the map's spelling is kept.
        let mut ad = job("AcctGroup = \"GROUP_B\"");
        f.apply(&mut ad, "dave").unwrap();
        assert_eq!(s(&ad, "AccountingGroup").as_deref(), Some("group_b.dave"));
        let mut ad = job("");
        f.apply(&mut ad, "dave").unwrap();
        assert_eq!(s(&ad, "AcctGroup").as_deref(), Some("group_a"));
    }

    #[test]
    fn an_owner_the_map_does_not_name_is_refused_as_the_schedd_refuses() {
        let f = feature(true);
        let e = f.apply(&mut job(""), "mallory").unwrap_err();
        assert_eq!(e, "Submit requirement AssignAccountingGroup not met.");
        let e = f
            .apply(&mut job("AcctGroup = \"group_x\""), "mallory")
            .unwrap_err();
        assert_eq!(
            e,
            "Submit requirement CheckRequestedGroup evaluated to non-boolean."
        );
        let e = feature(false)
            .apply(&mut job("AcctGroup = \"group_x\""), "mallory")
            .unwrap_err();
        assert_eq!(
            e,
            "Submit requirement AssignAccountingGroup not met - Could not map 'mallory' to an \
             accounting group group_x"
        );
    }
}
