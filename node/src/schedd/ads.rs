//! What the access point advertises to the CMs' collectors: one `Submitter` ad per submitter
//! with jobs in the queue (idle, running and held counts; the leader finds the access point
//! through its `ScheddIpAddr`) and one `Scheduler` ad, as HTCondor's schedd does
//! (src/condor_schedd.V6/schedd.cpp, `Scheduler::count_jobs` and `update_central_mgr`).
//! A submitter whose last job left the queue is invalidated.
use super::daemon::Schedd;
use classad::ClassAd;
use std::collections::BTreeMap;

/// An ad of `my_type` named `name`, from the access point `schedd` at `my_address`.
fn ad_of(my_type: &str, name: &str, schedd: &str, my_address: &str) -> ClassAd {
    let mut ad = ClassAd::new();
    ad.insert_str("MyType", my_type);
    ad.insert_str("TargetType", "");
    ad.insert_str("Name", name);
    ad.insert_str("Machine", schedd);
    ad.insert_str("ScheddIpAddr", my_address);
    ad.insert_str("MyAddress", my_address);
    ad
}

/// The Submitter ads and the Scheduler ad for `counts` ((idle, running, held) per submitter
/// name). Pure.
pub fn build(
    counts: &BTreeMap<String, (u64, u64, u64)>,
    name: &str,
    my_address: &str,
) -> Vec<String> {
    let mut ads = Vec::with_capacity(counts.len() + 1);
    let (mut ti, mut tr, mut th) = (0, 0, 0);
    for (sub, (i, r, h)) in counts {
        let mut ad = ad_of("Submitter", sub, name, my_address);
        ad.insert_str("ScheddName", name);
        ad.insert_int("IdleJobs", *i as i64);
        ad.insert_int("RunningJobs", *r as i64);
        ad.insert_int("HeldJobs", *h as i64);
        ads.push(ad.to_old_syntax());
        (ti, tr, th) = (ti + i, tr + r, th + h);
    }
    let mut ad = ad_of("Scheduler", name, name, my_address);
    ad.insert_int("TotalIdleJobs", ti as i64);
    ad.insert_int("TotalRunningJobs", tr as i64);
    ad.insert_int("TotalHeldJobs", th as i64);
    ad.insert_int("NumUsers", counts.len() as i64);
    ads.push(ad.to_old_syntax());
    ads
}

impl Schedd {
    /// Every ad now; remembers the submitters advertised and returns the ones gone since.
    fn ads_and_gone(&self) -> (Vec<String>, Vec<(String, String)>) {
        let mut st = self.lock();
        let counts = st.queue.counts(&self.settings.domain);
        let gone = st
            .advertised
            .iter()
            .filter(|n| !counts.contains_key(*n))
            .map(|n| ("Submitter".to_string(), n.clone()))
            .collect();
        st.advertised = counts.keys().cloned().collect();
        (
            build(&counts, &self.settings.name, &self.settings.my_address),
            gone,
        )
    }
}

impl crate::advertise::AdSource for Schedd {
    fn all_ads(&self) -> Vec<String> {
        let (ads, gone) = self.ads_and_gone();
        // Kept for the next take_changes, which the advertiser calls before all_ads.
        self.lock()
            .advertised
            .extend(gone.into_iter().map(|(_, n)| n));
        ads
    }
    fn take_changes(&self) -> (Vec<String>, Vec<(String, String)>) {
        self.ads_and_gone()
    }
    fn requeue_removed(&self, removed: Vec<(String, String)>) {
        self.lock()
            .advertised
            .extend(removed.into_iter().map(|(_, n)| n));
    }
    fn ad_keys(&self) -> Vec<(String, String)> {
        let st = self.lock();
        let mut keys: Vec<(String, String)> = st
            .advertised
            .iter()
            .map(|n| ("Submitter".to_string(), n.clone()))
            .collect();
        keys.push(("Scheduler".into(), self.settings.name.clone()));
        keys
    }
    fn changed(&self) -> &tokio::sync::Notify {
        &self.changed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn submitter_and_scheduler_ads_count_jobs() {
        let mut c = BTreeMap::new();
        c.insert("alice@d".to_string(), (2, 1, 0));
        c.insert("grp.bob@d".to_string(), (0, 0, 3));
        let ads = build(&c, "ap.d", "<127.0.0.1:9>");
        assert_eq!(ads.len(), 3);
        let bob = classad::parse_ad(&ads[1]).unwrap();
        assert_eq!(bob.eval_attr("Name").as_str(), Some("grp.bob@d"));
        assert_eq!(bob.eval_attr("HeldJobs").as_int(), Some(3));
        assert_eq!(
            bob.eval_attr("ScheddIpAddr").as_str(),
            Some("<127.0.0.1:9>")
        );
        let s = classad::parse_ad(&ads[2]).unwrap();
        assert_eq!(s.eval_attr("MyType").as_str(), Some("Scheduler"));
        assert_eq!(s.eval_attr("TotalIdleJobs").as_int(), Some(2));
        assert_eq!(s.eval_attr("TotalHeldJobs").as_int(), Some(3));
        assert_eq!(s.eval_attr("NumUsers").as_int(), Some(2));
    }
}
