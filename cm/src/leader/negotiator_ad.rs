//! Step 9 of a cycle: the Negotiator ad, with the `LastNegotiationCycle*0` figures HTCondor's
//! negotiator publishes (`Matchmaker::publishNegotiationCycleStats`), so `condor_status
//! -negotiator -long` habits and monitoring keep working.
use aerie_core::state::CycleRecord;
use classad::{ClassAd, Value};
use std::collections::BTreeMap;

/// Everything the ad shows besides the negotiator library's own statistics.
#[derive(Clone, Debug, Default)]
pub struct AdFacts {
    /// This CM's address (`host:port`).
    pub addr: String,
    /// The Raft term this CM leads.
    pub term: u64,
    /// This CM's Raft node id.
    pub leader_id: u64,
    /// Negotiation is paused (`AerieNegotiatorPaused`).
    pub paused: bool,
    /// The `cycle-now` counter the loop has acted on.
    pub cycle_requests_seen: u64,
    /// The last completed cycle, if any.
    pub last: Option<CycleRecord>,
    /// The end of the cycle before `last`, Unix seconds.
    pub previous_end: Option<i64>,
    /// `LastNegotiationCycle*0` figures of the last cycle from the negotiator library.
    pub stats: BTreeMap<String, f64>,
    /// Submitters stopped by their share.
    pub share_limited: Vec<String>,
    /// Access points that did not answer.
    pub failed_aps: Vec<String>,
}

/// The ad's `Name`.
pub fn negotiator_name(addr: &str) -> String {
    format!("negotiator@{addr}")
}

fn num(v: f64) -> Value {
    if v.fract() == 0.0 && v.abs() < 9e15 {
        Value::Int(v as i64)
    } else {
        Value::Real(v)
    }
}

/// Builds the ad.
pub fn negotiator_ad(f: &AdFacts) -> ClassAd {
    let mut ad = ClassAd::new();
    ad.insert_str("MyType", "Negotiator");
    ad.insert_str("Name", &negotiator_name(&f.addr));
    let host = f.addr.rsplit_once(':').map(|(h, _)| h).unwrap_or(&f.addr);
    ad.insert_str("Machine", host);
    let sinful = format!("<{}>", f.addr);
    ad.insert_str("MyAddress", &sinful);
    ad.insert_str("NegotiatorIpAddr", &sinful);
    ad.insert_int("AerieRaftTerm", f.term as i64);
    ad.insert_int("AerieRaftLeaderId", f.leader_id as i64);
    ad.insert_bool("AerieNegotiatorPaused", f.paused);
    ad.insert_int("AerieCycleRequestsSeen", f.cycle_requests_seen as i64);
    for (k, v) in &f.stats {
        ad.insert_value(k, num(*v));
    }
    if let Some(r) = &f.last {
        let duration = r.duration_seconds;
        let period = f.previous_end.map(|p| (r.end_time - p).max(0)).unwrap_or(0);
        ad.insert_int("AerieNegotiatorCycle", r.cycle as i64);
        // Which replicated negotiation policy the cycle used (0: the leader's own file, none
        // replicated yet), so `condor_status -negotiator` shows what `cmctl negotiator
        // status` shows.
        ad.insert_int("AerieNegotiationPolicyVersion", r.policy_version as i64);
        ad.insert_int("LastNegotiationCycleTime0", r.start_time);
        ad.insert_int("LastNegotiationCycleEnd0", r.end_time);
        ad.insert_int("LastNegotiationCyclePeriod0", period);
        ad.insert_value("LastNegotiationCycleDuration0", num(duration.round()));
        ad.insert_int("LastNegotiationCycleMatches0", r.matches as i64);
        ad.insert_int("LastNegotiationCycleRejections0", r.rejections as i64);
        ad.insert_int("LastNegotiationCycleNumIdleJobs0", r.idle_jobs as i64);
        ad.insert_int(
            "LastNegotiationCycleNumSchedulers0",
            (r.access_points - r.access_points_failed) as i64,
        );
        ad.insert_int(
            "LastNegotiationCycleSubmittersConsidered0",
            r.submitters as i64,
        );
        ad.insert_real(
            "LastNegotiationCycleMatchRate0",
            if duration > 0.0 {
                r.matches as f64 / duration
            } else {
                0.0
            },
        );
        ad.insert_real(
            "LastNegotiationCycleMatchRateSustained0",
            if period > 0 {
                r.matches as f64 / period as f64
            } else {
                0.0
            },
        );
        // HTCondor publishes these three as comma-separated name lists.
        ad.insert_str(
            "LastNegotiationCycleSubmittersShareLimit0",
            &f.share_limited.join(", "),
        );
        ad.insert_str(
            "LastNegotiationCycleSubmittersFailed0",
            &f.failed_aps.join(", "),
        );
        ad.insert_str("LastNegotiationCycleSubmittersOutOfTime0", "");
    }
    ad
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ad_carries_htcondor_cycle_figures() {
        let mut stats = BTreeMap::new();
        stats.insert("LastNegotiationCycleActiveSubmitterCount0".to_string(), 2.0);
        stats.insert("LastNegotiationCycleSubmittersShareLimit0".to_string(), 1.0);
        let f = AdFacts {
            addr: "127.0.0.1:9618".into(),
            term: 3,
            leader_id: 2,
            last: Some(CycleRecord {
                term: 3,
                cycle: 4,
                start_time: 100,
                end_time: 102,
                matches: 10,
                duration_seconds: 2.0,
                access_points: 2,
                access_points_failed: 1,
                submitters: 2,
                policy_version: 7,
                ..Default::default()
            }),
            previous_end: Some(92),
            stats,
            share_limited: vec!["alice@p".into()],
            ..Default::default()
        };
        let ad = negotiator_ad(&f);
        let int = |n: &str| ad.eval_attr(n).as_int();
        assert_eq!(
            ad.eval_attr("Name").as_str(),
            Some("negotiator@127.0.0.1:9618")
        );
        assert_eq!(ad.eval_attr("MyType").as_str(), Some("Negotiator"));
        assert_eq!(int("LastNegotiationCycleTime0"), Some(100));
        assert_eq!(int("LastNegotiationCycleEnd0"), Some(102));
        assert_eq!(int("LastNegotiationCyclePeriod0"), Some(10));
        assert_eq!(int("LastNegotiationCycleDuration0"), Some(2));
        assert_eq!(int("LastNegotiationCycleMatches0"), Some(10));
        assert_eq!(int("LastNegotiationCycleNumSchedulers0"), Some(1));
        assert_eq!(int("LastNegotiationCycleActiveSubmitterCount0"), Some(2));
        assert_eq!(
            ad.eval_attr("LastNegotiationCycleMatchRate0").as_number(),
            Some(5.0)
        );
        // The list form replaces the library's count.
        assert_eq!(
            ad.eval_attr("LastNegotiationCycleSubmittersShareLimit0")
                .as_str(),
            Some("alice@p")
        );
        assert_eq!(int("AerieRaftTerm"), Some(3));
        assert_eq!(int("AerieNegotiationPolicyVersion"), Some(7));
    }
}
