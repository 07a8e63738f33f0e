//! Step 4 of a cycle: ask every access point for its idle jobs (`AccessPoint.GetRequests`),
//! all at once, each with a deadline, and remember which access point offered which job.
use aerie_proto::negotiation::{access_point_client::AccessPointClient, RequestsRequest};
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
    /// Access points that did not answer, with the reason.
    pub failed: Vec<(String, String)>,
    /// Job ads skipped because they do not parse (already logged).
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
) -> Result<Vec<String>, String> {
    let ch = crate::raft::network::lazy_channel(ap, aerie_security::Role::AccessPoint, timeout)?;
    let mut c = AccessPointClient::new(ch)
        .max_decoding_message_size(aerie_security::transport::MAX_POOL_REPLY);
    let mut r = tonic::Request::new(req);
    r.set_timeout(timeout);
    match tokio::time::timeout(timeout, c.get_requests(r)).await {
        Err(_) => Err(format!("no answer within {:.1} s", timeout.as_secs_f64())),
        Ok(Err(s)) => Err(format!("{}: {}", s.code(), s.message())),
        Ok(Ok(r)) => Ok(r.into_inner().jobs),
    }
}

/// Asks every access point at once; an access point that fails costs only its own jobs.
pub async fn fetch_jobs(
    access_points: Vec<String>,
    term: u64,
    cycle: u64,
    negotiator: &str,
    timeout: Duration,
) -> JobSet {
    let calls = access_points.iter().map(|ap| {
        get_requests(
            ap,
            RequestsRequest {
                term,
                cycle,
                negotiator: negotiator.to_string(),
            },
            timeout,
        )
    });
    let answers = futures::future::join_all(calls).await;
    let mut set = JobSet {
        access_points: access_points.clone(),
        ..Default::default()
    };
    for (i, (ap, ans)) in access_points.iter().zip(answers).enumerate() {
        match ans {
            Ok(texts) => {
                let (jobs, skipped) = parse_jobs(ap, &texts);
                set.skipped += skipped;
                set.origin.extend(std::iter::repeat_n(i, jobs.len()));
                set.jobs.extend(jobs);
            }
            Err(e) => {
                tracing::warn!(access_point = %ap, error = %e, term, cycle, "access point did not give its jobs");
                set.failed.push((ap.clone(), e));
            }
        }
    }
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
}
