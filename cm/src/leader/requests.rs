//! Step 4 of a cycle: ask every access point for its idle jobs (`AccessPoint.GetRequests`),
//! all at once, each with a deadline, and remember which access point offered which job.
//!
//! The leader asks for resource requests (HTCondor's schedd sends the negotiator one request
//! per autocluster, schedd_negotiate.cpp): one representative ad per group of jobs the
//! negotiator cannot tell apart, grouped by the names [`significant_names`] gives, with the
//! jobs' ids; it expands each back into one ad per job (see
//! [`aerie_core::negotiator::requests`]), so the cycle's outcome is the one with full ads,
//! at the cost of parsing one ad per request instead of one per job. An access point that
//! answers with whole job ads (one from before resource requests) is read as before.
//!
//! [`significant_names`]: aerie_core::negotiator::requests::significant_names
use aerie_core::negotiator::requests::{expand, ProcRange};
use aerie_proto::negotiation::{
    access_point_client::AccessPointClient, RequestsReply, RequestsRequest, ResourceRequest,
};
use classad::ClassAd;
use std::time::Duration;

/// The idle jobs of the whole pool. `origin[i]` is the index in `access_points` of the access
/// point that offered `jobs[i]`.
#[derive(Clone, Debug, Default)]
pub struct JobSet {
    /// The access points asked, in order.
    pub access_points: Vec<String>,
    /// Every idle job ad they offered.
    pub jobs: Vec<ClassAd>,
    /// `origin[i]` indexes `access_points`: who offered `jobs[i]`.
    pub origin: Vec<usize>,
    /// `autocluster[i]`: the access point's autocluster of `jobs[i]` when it came in a
    /// resource request, empty when it came whole (the grant names it).
    pub autocluster: Vec<String>,
    /// Resource requests read (each stands for one or more of `jobs`).
    pub requests: usize,
    /// Access points that did not answer, with the reason.
    pub failed: Vec<(String, String)>,
    /// Job ads and resource requests skipped because they do not parse (already logged).
    pub skipped: usize,
}

/// Parses the job ads one access point returned. A bad ad is skipped with a warning naming
/// the access point and the job (its position, and its ClusterId.ProcId when that much
/// could be read).
pub fn parse_jobs(ap: &str, texts: &[String]) -> (Vec<ClassAd>, usize) {
    let mut out = Vec::with_capacity(texts.len());
    let mut skipped = 0;
    for (i, text) in texts.iter().enumerate() {
        let parsed = if text.trim_start().starts_with('[') {
            classad::parse_ad(text).map_err(|e| e.to_string())
        } else {
            match classad::parse_old_ads_strict(text) {
                Ok(mut v) if v.len() == 1 => Ok(v.remove(0)),
                Ok(v) if v.is_empty() => Err("empty ad".to_string()),
                Ok(v) => Err(format!("{} ads in one entry", v.len())),
                Err(e) => Err(e.to_string()),
            }
        };
        match parsed {
            Ok(ad) => out.push(ad),
            Err(e) => {
                skipped += 1;
                tracing::warn!(
                    access_point = ap,
                    job_index = i,
                    job = job_id_guess(text),
                    error = %e,
                    "skipping a job ad that does not parse"
                );
            }
        }
    }
    (out, skipped)
}

/// `ClusterId.ProcId` read line by line from text that did not parse as a whole.
fn job_id_guess(text: &str) -> String {
    let find = |attr: &str| {
        text.lines().find_map(|l| {
            let (k, v) = l.split_once('=')?;
            k.trim()
                .eq_ignore_ascii_case(attr)
                .then(|| v.trim().trim_end_matches(';').to_string())
        })
    };
    match (find("ClusterId"), find("ProcId")) {
        (Some(c), Some(p)) => format!("{c}.{p}"),
        _ => "?".into(),
    }
}

/// Asks one access point for its jobs.
async fn get_requests(
    ap: &str,
    req: RequestsRequest,
    timeout: Duration,
) -> Result<RequestsReply, String> {
    let ch = crate::raft::network::lazy_channel(ap, aerie_security::Role::AccessPoint, timeout)?;
    let mut c = AccessPointClient::new(ch)
        .max_decoding_message_size(aerie_security::transport::MAX_POOL_REPLY);
    let mut r = tonic::Request::new(req);
    r.set_timeout(timeout);
    match tokio::time::timeout(timeout, c.get_requests(r)).await {
        Err(_) => Err(format!("no answer within {:.1} s", timeout.as_secs_f64())),
        Ok(Err(s)) => Err(format!("{}: {}", s.code(), s.message())),
        Ok(Ok(r)) => Ok(r.into_inner()),
    }
}

/// Expands the resource requests one access point returned into one ad per job, with each
/// job's autocluster. A request whose ad does not parse is skipped with a warning naming the
/// access point, the request and its cluster; returns the jobs, their autoclusters and how
/// many requests were skipped.
pub fn expand_requests(
    ap: &str,
    requests: &[ResourceRequest],
) -> (Vec<ClassAd>, Vec<String>, usize) {
    let mut jobs = Vec::new();
    let mut autoclusters = Vec::new();
    let mut skipped = 0;
    for (i, r) in requests.iter().enumerate() {
        let (mut ads, bad) = parse_jobs(ap, std::slice::from_ref(&r.ad));
        let Some(rep) = ads.pop() else {
            skipped += bad;
            tracing::warn!(
                access_point = ap,
                request = i,
                cluster = r.cluster,
                jobs = r.count,
                "skipping a resource request whose ad does not parse"
            );
            continue;
        };
        let procs: Vec<ProcRange> = r
            .procs
            .iter()
            .map(|p| ProcRange {
                first: p.first,
                count: p.count,
            })
            .collect();
        let before = jobs.len();
        expand(&rep, r.has_ids.then_some(r.cluster), &procs, &mut jobs);
        autoclusters.resize(jobs.len(), r.autocluster.clone());
        if r.has_ids && (jobs.len() - before) as u64 != r.count {
            tracing::warn!(
                access_point = ap,
                request = i,
                cluster = r.cluster,
                count = r.count,
                ids = jobs.len() - before,
                "a resource request's count does not match its ids; negotiating for its ids"
            );
        }
    }
    (jobs, autoclusters, skipped)
}

/// Asks every access point at once for resource requests grouped by `significant` (the
/// leader's significant names); an access point that fails costs only its own jobs.
pub async fn fetch_jobs(
    access_points: Vec<String>,
    term: u64,
    cycle: u64,
    negotiator: &str,
    significant: Vec<String>,
    timeout: Duration,
) -> JobSet {
    let calls = access_points.iter().map(|ap| {
        get_requests(
            ap,
            RequestsRequest {
                term,
                cycle,
                negotiator: negotiator.to_string(),
                resource_requests: true,
                significant_attributes: significant.clone(),
            },
            timeout,
        )
    });
    let asked = std::time::Instant::now();
    let answers = futures::future::join_all(calls).await;
    let answered = std::time::Instant::now();
    let mut set = JobSet {
        access_points: access_points.clone(),
        ..Default::default()
    };
    for (i, (ap, ans)) in access_points.iter().zip(answers).enumerate() {
        match ans {
            Ok(reply) => {
                let (whole, skipped) = parse_jobs(ap, &reply.jobs);
                let (expanded, autoclusters, bad) = expand_requests(ap, &reply.requests);
                set.skipped += skipped + bad;
                set.requests += reply.requests.len();
                set.autocluster
                    .extend(std::iter::repeat_n(String::new(), whole.len()));
                set.autocluster.extend(autoclusters);
                set.jobs.extend(whole);
                set.jobs.extend(expanded);
                set.origin
                    .extend(std::iter::repeat_n(i, set.jobs.len() - set.origin.len()));
            }
            Err(e) => {
                tracing::warn!(access_point = %ap, error = %e, term, cycle, "access point did not give its jobs");
                set.failed.push((ap.clone(), e));
            }
        }
    }
    tracing::debug!(
        term,
        cycle,
        answer_ms = answered.duration_since(asked).as_millis() as u64,
        expand_ms = answered.elapsed().as_millis() as u64,
        requests = set.requests,
        jobs = set.jobs.len(),
        "resource requests read"
    );
    set
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_job_ads_are_skipped_and_good_ones_kept() {
        let texts = vec![
            "ClusterId = 1\nProcId = 0\nOwner = \"alice\"\n".to_string(),
            "ClusterId = 1\nProcId = 1\nRequirements = (1 +\n".to_string(),
            "[ ClusterId = 2; ProcId = 0; Owner = \"bob\" ]".to_string(),
            "".to_string(),
        ];
        let (jobs, skipped) = parse_jobs("127.0.0.1:1", &texts);
        assert_eq!(jobs.len(), 2);
        assert_eq!(skipped, 2);
        assert_eq!(job_id_guess(&texts[1]), "1.1");
    }

    #[test]
    fn resource_requests_expand_into_one_ad_per_job_with_its_autocluster() {
        use aerie_proto::negotiation::ProcRange as Pr;
        let request = |ad: &str, cluster, procs: Vec<Pr>, has_ids| ResourceRequest {
            ad: ad.to_string(),
            cluster,
            count: procs.iter().map(|p| u64::from(p.count)).sum::<u64>().max(1),
            procs,
            autocluster: format!("ac{cluster}"),
            has_ids,
        };
        let requests = vec![
            request(
                "ClusterId = 7\nProcId = 0\nOwner = \"alice\"\n",
                7,
                vec![Pr { first: 0, count: 2 }, Pr { first: 5, count: 1 }],
                true,
            ),
            request(
                "ClusterId = 8\nRequirements = (1 +\n",
                8,
                vec![Pr { first: 0, count: 9 }],
                true,
            ),
            request("Owner = \"bob\"\n", 0, vec![], false),
        ];
        let (jobs, acs, skipped) = expand_requests("127.0.0.1:1", &requests);
        let ids: Vec<String> = jobs
            .iter()
            .map(|j| format!("{}.{}", j.eval_attr("ClusterId"), j.eval_attr("ProcId")))
            .collect();
        assert_eq!(ids, ["7.0", "7.1", "7.5", "undefined.undefined"]);
        assert_eq!(acs, ["ac7", "ac7", "ac7", "ac0"]);
        assert_eq!(skipped, 1);
    }
}
