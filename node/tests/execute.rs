//! `aerie-node execute` as a real daemon: claims with the capability from its slot ads (read
//! from `--dump-ads`, since no CM runs here), real `/bin/sh` jobs, and a test `Shadow` server
//! that records the job events the node sends.
use aerie_proto::execute::{self as xpb, execute_client::ExecuteClient, shadow_server};
use aerie_proto::negotiation::{self as npb, startd_client::StartdClient};
use aerie_security::grant::GrantClaims;
use classad::ClassAd;
use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, Mutex};
use tonic::transport::Channel;

/// A running `aerie-node execute`.
struct Daemon {
    child: Child,
    addr: String,
    ads: PathBuf,
    _dir: tempfile::TempDir,
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

const STATIC: &str = "NUM_CPUS = 2\nMEMORY = 2048\nDISK = 1000000\n\
                      SLOT_TYPE_0_PARTITIONABLE = false\nUPDATE_INTERVAL = 5\n";

impl Daemon {
    fn start(config: &str, extra: &[&str]) -> Daemon {
        let dir = tempfile::tempdir().unwrap();
        // Jobs run as `nobody` when the tests run as root: it must reach its sandbox.
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let cfg = dir.path().join("condor_config");
        std::fs::write(&cfg, config).unwrap();
        let ads = dir.path().join("ads.json");
        aerie_security::testing::test_pool();
        let mut child = Command::new(env!("CARGO_BIN_EXE_aerie-node"))
            .args(["execute", "--name", "node1.test", "--config"])
            .arg(&cfg)
            .arg("--state-dir")
            .arg(dir.path().join("state"))
            .arg("--dump-ads")
            .arg(&ads)
            .args(extra)
            .env("AERIE_LOG", "info")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let addr = line
            .trim()
            .rsplit(' ')
            .next()
            .unwrap_or_else(|| panic!("no address in {line:?}"))
            .to_string();
        Daemon {
            child,
            addr,
            ads,
            _dir: dir,
        }
    }

    fn ads(&self) -> Vec<ClassAd> {
        let Ok(text) = std::fs::read_to_string(&self.ads) else {
            return Vec::new();
        };
        let list: Vec<String> = serde_json::from_str(&text).unwrap_or_default();
        list.iter().map(|t| classad::parse_ad(t).unwrap()).collect()
    }

    fn ad(&self, slot: &str) -> Option<ClassAd> {
        self.ads()
            .into_iter()
            .find(|a| a.eval_attr("Name").as_str() == Some(slot))
    }

    /// Waits until the ad of `slot` satisfies `ok` (or the slot is gone, for `None`).
    async fn wait_ad(&self, slot: &str, what: &str, ok: impl Fn(Option<&ClassAd>) -> bool) {
        let t0 = Instant::now();
        loop {
            let ad = self.ad(slot);
            if ok(ad.as_ref()) {
                return;
            }
            if t0.elapsed() > Duration::from_secs(20) {
                panic!("{slot}: {what} never happened; ad: {ad:?}");
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    async fn wait_state(&self, slot: &str, state: &str, activity: &str) {
        let what = format!("{state}/{activity}");
        self.wait_ad(slot, &what, |a| {
            a.is_some_and(|a| {
                a.eval_attr("State").as_str() == Some(state)
                    && a.eval_attr("Activity").as_str() == Some(activity)
            })
        })
        .await
    }

    fn claim_id(&self, slot: &str) -> String {
        let ad = self.ad(slot).unwrap_or_else(|| panic!("no ad for {slot}"));
        ad.eval_attr("ClaimId").as_str().unwrap().to_string()
    }

    async fn startd(&self) -> StartdClient<Channel> {
        StartdClient::new(
            aerie_security::testing::endpoint(
                &self.addr.to_string(),
                aerie_security::Role::Execute,
            )
            .connect()
            .await
            .unwrap(),
        )
    }

    async fn execute(&self) -> ExecuteClient<Channel> {
        ExecuteClient::new(
            aerie_security::testing::endpoint(
                &self.addr.to_string(),
                aerie_security::Role::Execute,
            )
            .connect()
            .await
            .unwrap(),
        )
    }

    async fn claim_with(
        &self,
        slot: &str,
        claim_id: &str,
        term: u64,
        job_ad: &str,
        preempts: bool,
    ) -> npb::ClaimReply {
        self.send(claim_request(slot, claim_id, term, job_ad, preempts))
            .await
    }

    async fn send(&self, req: npb::ClaimRequest) -> npb::ClaimReply {
        self.startd()
            .await
            .request_claim(req)
            .await
            .unwrap()
            .into_inner()
    }

    /// Sends `req` with the test pool's certificate `name` instead of the test process's own.
    async fn send_as(&self, name: &str, req: npb::ClaimRequest) -> npb::ClaimReply {
        let t = aerie_security::Transport::load(
            aerie_security::testing::test_pool(),
            name,
            aerie_security::transport::now_unix(),
        )
        .unwrap();
        let ch = t
            .endpoint(&self.addr, aerie_security::Role::Execute)
            .unwrap()
            .connect()
            .await
            .unwrap();
        StartdClient::new(ch)
            .request_claim(req)
            .await
            .unwrap()
            .into_inner()
    }

    async fn claim(&self, slot: &str, job_ad: &str) -> npb::ClaimReply {
        let cid = self.claim_id(slot);
        let r = self.claim_with(slot, &cid, 1, job_ad, false).await;
        assert!(r.ok, "claim of {slot} refused: {}", r.error);
        r
    }

    async fn release(&self, c: &npb::ClaimReply) {
        let req = npb::ReleaseRequest {
            slot: c.claimed_slot.clone(),
            claim_id: c.claim_id.clone(),
        };
        let r = self.startd().await.release_claim(req).await.unwrap();
        assert!(r.get_ref().ok, "release refused: {}", r.get_ref().error);
    }

    async fn activate(
        &self,
        c: &npb::ClaimReply,
        job_ad: &str,
        shadow: &str,
    ) -> xpb::ActivateReply {
        let inputs = vec![xpb::File {
            name: "in.txt".into(),
            data: b"input data\n".to_vec(),
            ..Default::default()
        }];
        self.activate_with(c, job_ad, shadow, inputs).await
    }

    async fn activate_with(
        &self,
        c: &npb::ClaimReply,
        job_ad: &str,
        shadow: &str,
        inputs: Vec<xpb::File>,
    ) -> xpb::ActivateReply {
        let req = xpb::ActivateRequest {
            slot: c.claimed_slot.clone(),
            claim_id: c.claim_id.clone(),
            job_ad: job_ad.into(),
            inputs,
            shadow_addr: shadow.into(),
            job: "1.0".into(),
        };
        self.execute()
            .await
            .activate_claim(req)
            .await
            .unwrap()
            .into_inner()
    }
}

/// A claim request as an access point forwards a leader's grant: signed, when the test pool
/// has credentials, with the test process's own key (its `harness` certificate holds the `cm`
/// role, so it signs as a leader would).
fn claim_request(
    slot: &str,
    claim_id: &str,
    term: u64,
    job_ad: &str,
    preempts: bool,
) -> npb::ClaimRequest {
    let submitter = "nobody@test";
    let signed = aerie_security::transport::transport()
        .grant_signer()
        .map(|s| {
            let now = aerie_security::transport::now_unix();
            let claims = GrantClaims::new(slot, claim_id, term, "test", submitter, now);
            let g = s.unwrap().sign(&claims).unwrap();
            npb::SignedGrant {
                payload: g.payload,
                signature: g.signature,
                leader_cert: g.leader_cert,
                proof: g.proof,
            }
        });
    npb::ClaimRequest {
        slot: slot.into(),
        claim_id: claim_id.into(),
        term,
        cycle: 1,
        job: "1.0".into(),
        submitter: submitter.into(),
        job_ad: job_ad.into(),
        carve_cpus: 1.0,
        carve_memory: 128.0,
        carve_disk: 1000.0,
        preempts,
        signed,
    }
}

/// A test access point's `Shadow`: every event goes to a channel.
struct Shadow {
    tx: mpsc::UnboundedSender<xpb::JobEventRequest>,
}

#[tonic::async_trait]
impl shadow_server::Shadow for Shadow {
    async fn job_event(
        &self,
        request: tonic::Request<xpb::JobEventRequest>,
    ) -> Result<tonic::Response<xpb::JobEventReply>, tonic::Status> {
        let _ = self.tx.send(request.into_inner());
        Ok(tonic::Response::new(xpb::JobEventReply {
            ok: true,
            error: String::new(),
        }))
    }
}

struct Events {
    addr: String,
    rx: Mutex<mpsc::UnboundedReceiver<xpb::JobEventRequest>>,
}

impl Events {
    async fn start() -> Events {
        let (tx, rx) = mpsc::unbounded_channel();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        tokio::spawn(
            aerie_security::testing::server()
                .add_service(shadow_server::ShadowServer::new(Shadow { tx }))
                .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener)),
        );
        Events {
            addr,
            rx: Mutex::new(rx),
        }
    }

    async fn next(&self) -> xpb::job_event_request::Event {
        let ev = tokio::time::timeout(Duration::from_secs(20), self.rx.lock().await.recv())
            .await
            .expect("no job event within 20 s")
            .expect("shadow channel closed");
        ev.event.expect("an event")
    }
}

use xpb::job_event_request::Event as Ev;

fn job(args: &str, extra: &str) -> String {
    format!(
        "MyType = \"Job\"\nClusterId = 1\nProcId = 0\nOwner = \"nobody\"\nUser = \"nobody@test\"\n\
         Cmd = \"/bin/sh\"\nTransferExecutable = false\nArguments = \"-c '{args}'\"\n\
         Out = \"_condor_stdout\"\nErr = \"_condor_stderr\"\nRequestCpus = 1\n\
         RequestMemory = 128\nRequestDisk = 1000\n{extra}"
    )
}

const LOOP: &str = "while true; do sleep 0.1; done";

async fn metrics_text(addr: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.write_all(b"GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).await.unwrap();
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn a_job_runs_and_its_exit_code_and_output_files_come_back() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let maddr = format!("127.0.0.1:{port}");
    let d = Daemon::start(STATIC, &["--metrics-listen", &maddr]);
    let shadow = Events::start().await;
    d.wait_state("slot1@node1.test", "Unclaimed", "Idle").await;
    let ad = d.ad("slot1@node1.test").unwrap();
    let limits = ad.eval_attr("AerieJobLimits");
    assert!(
        matches!(limits.as_str(), Some("rlimit" | "cgroup-v2")),
        "{limits:?}"
    );
    for attr in [
        "LoadAvg",
        "EnteredCurrentActivity",
        "Cpus",
        "Memory",
        "OpSys",
        "Arch",
    ] {
        assert!(ad.contains(attr), "slot ad lacks {attr}");
    }
    let job_ad = job("cat in.txt > out.txt; echo hello; exit 3", "");
    let c = d.claim("slot1@node1.test", &job_ad).await;
    assert_eq!(c.claimed_slot, "slot1@node1.test");
    let a = d.activate(&c, &job_ad, &shadow.addr).await;
    assert!(a.ok, "activation failed: {a:?}");
    assert_eq!(shadow.next().await, Ev::Started(true));
    let Ev::Exited(x) = shadow.next().await else {
        panic!("expected Exited")
    };
    assert_eq!(x.exit_code, Some(3));
    assert_eq!(x.exit_signal, None);
    let file = |n: &str| {
        x.outputs
            .iter()
            .find(|f| f.name == n)
            .map(|f| f.data.clone())
    };
    assert_eq!(file("out.txt").as_deref(), Some(&b"input data\n"[..]));
    assert_eq!(file("_condor_stdout").as_deref(), Some(&b"hello\n"[..]));
    assert!(x.usage.unwrap().wall_seconds >= 0.0);
    // The claim stays, idle, until released; then the slot is Unclaimed with a new capability.
    d.wait_state("slot1@node1.test", "Claimed", "Idle").await;
    d.release(&c).await;
    d.wait_state("slot1@node1.test", "Unclaimed", "Idle").await;
    assert_ne!(d.claim_id("slot1@node1.test"), c.claim_id);
    let m = metrics_text(&maddr).await;
    assert!(m.contains("aerie_node_jobs_started_total 1"), "{m}");
    assert!(m.contains("aerie_node_jobs_completed_total 1"), "{m}");
    assert!(m.contains("aerie_node_slots{"), "{m}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_directory_tree_goes_into_the_sandbox_and_an_output_directory_comes_back() {
    let d = Daemon::start(STATIC, &[]);
    let shadow = Events::start().await;
    d.wait_state("slot1@node1.test", "Unclaimed", "Idle").await;
    let file = |n: &str, data: &[u8], directory: bool| xpb::File {
        name: n.into(),
        data: data.to_vec(),
        executable: false,
        directory,
    };
    // A path that climbs out of the sandbox is refused before the job starts.
    let job_ad = job("true", "");
    let c = d.claim("slot1@node1.test", &job_ad).await;
    let a = d
        .activate_with(&c, &job_ad, &shadow.addr, vec![file("../x", b"x", false)])
        .await;
    // Answered with the hold reason, and reported as StartFailed.
    assert!(!a.ok);
    let Ev::StartFailed(f) = shadow.next().await else {
        panic!("expected StartFailed")
    };
    for why in [&a.hold_reason, &f.hold_reason] {
        assert!(
            why.contains("../x") && why.contains("not a plain relative path"),
            "{why}"
        );
    }
    d.release(&c).await;
    d.wait_state("slot1@node1.test", "Unclaimed", "Idle").await;
    let job_ad = job(
        "test -d data/empty && cat data/sub/b > data/sub/c && mkdir data/new",
        "TransferOutput = \"data\"",
    );
    let c = d.claim("slot1@node1.test", &job_ad).await;
    let inputs = vec![
        file("data", b"", true),
        file("data/empty", b"", true),
        file("data/sub/b", b"bee", false),
    ];
    let a = d.activate_with(&c, &job_ad, &shadow.addr, inputs).await;
    assert!(a.ok, "activation failed: {a:?}");
    assert_eq!(shadow.next().await, Ev::Started(true));
    let Ev::Exited(x) = shadow.next().await else {
        panic!("expected Exited")
    };
    assert_eq!(x.exit_code, Some(0), "{x:?}");
    assert_eq!(x.output_error, "");
    let names: Vec<(&str, bool)> = x
        .outputs
        .iter()
        .map(|f| (f.name.as_str(), f.directory))
        .collect();
    assert_eq!(
        names,
        [
            ("data", true),
            ("data/empty", true),
            ("data/new", true),
            ("data/sub", true),
            ("data/sub/b", false),
            ("data/sub/c", false),
            // The standard files come back whatever TransferOutput names, as in HTCondor.
            ("_condor_stdout", false),
            ("_condor_stderr", false)
        ]
    );
    assert_eq!(x.outputs[5].data, b"bee");
    d.release(&c).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_job_that_cannot_start_is_reported_with_a_hold_reason() {
    let d = Daemon::start(STATIC, &[]);
    let shadow = Events::start().await;
    d.wait_state("slot1@node1.test", "Unclaimed", "Idle").await;
    let job_ad = job("true", "").replace("/bin/sh", "/bin/no-such-program");
    let c = d.claim("slot1@node1.test", &job_ad).await;
    let a = d.activate(&c, &job_ad, &shadow.addr).await;
    assert!(!a.ok);
    assert!(
        a.hold_reason.contains("/bin/no-such-program"),
        "{}",
        a.hold_reason
    );
    let Ev::StartFailed(f) = shadow.next().await else {
        panic!("expected StartFailed")
    };
    assert!(
        f.hold_reason
            .starts_with("Error from slot1@node1.test: Failed to execute"),
        "{}",
        f.hold_reason
    );
    assert_eq!(f.hold_reason_code, 6);
    assert_eq!(f.hold_reason_subcode, 2);
    // The claim is idle again and takes the next job.
    d.wait_state("slot1@node1.test", "Claimed", "Idle").await;
    let ok = job("exit 0", "");
    assert!(d.activate(&c, &ok, &shadow.addr).await.ok);
}

/// Deactivates the claim's job (not fast) and waits for its Evicted event: its reason, and how
/// long it took.
async fn deactivate_until_evicted(
    d: &Daemon,
    c: &npb::ClaimReply,
    shadow: &Events,
) -> (String, Duration) {
    let t0 = Instant::now();
    let req = xpb::DeactivateRequest {
        slot: c.claimed_slot.clone(),
        claim_id: c.claim_id.clone(),
        fast: false,
    };
    let r = d.execute().await.deactivate_claim(req).await.unwrap();
    assert!(r.get_ref().ok, "{}", r.get_ref().error);
    let Ev::Evicted(e) = shadow.next().await else {
        panic!("expected Evicted")
    };
    (e.reason, t0.elapsed())
}

#[tokio::test(flavor = "multi_thread")]
async fn deactivation_sends_the_kill_sig_then_sigkill_to_a_job_that_ignores_it() {
    let d = Daemon::start(STATIC, &[]);
    let shadow = Events::start().await;
    d.wait_state("slot1@node1.test", "Unclaimed", "Idle").await;
    // A job that leaves on its KillSig: evicted long before its vacate time.
    let obeys = job(
        // V2 arguments: a quote inside single quotes is doubled.
        &format!("trap ''exit 7'' USR1; {LOOP}"),
        "KillSig = \"SIGUSR1\"\nJobMaxVacateTime = 60\n",
    );
    let c = d.claim("slot1@node1.test", &obeys).await;
    assert!(d.activate(&c, &obeys, &shadow.addr).await.ok);
    assert_eq!(shadow.next().await, Ev::Started(true));
    let (reason, took) = deactivate_until_evicted(&d, &c, &shadow).await;
    assert!(reason.contains("deactivated"), "{reason}");
    assert!(took < Duration::from_secs(10), "{took:?}");
    // The claim stays; a job ignoring its KillSig is SIGKILLed after JobMaxVacateTime.
    d.wait_state("slot1@node1.test", "Claimed", "Idle").await;
    let ignores = job(
        &format!("trap '''' USR1; {LOOP}"),
        "KillSig = \"SIGUSR1\"\nJobMaxVacateTime = 2\n",
    );
    assert!(d.activate(&c, &ignores, &shadow.addr).await.ok);
    assert_eq!(shadow.next().await, Ev::Started(true));
    // "Started" is the process's start, not its shell's first command: give the shell time
    // to set its trap, or an early SIGUSR1 kills it by default and the job leaves at once.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let (_, took) = deactivate_until_evicted(&d, &c, &shadow).await;
    assert!(
        took >= Duration::from_secs(2) && took < Duration::from_secs(10),
        "{took:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_claim_whose_lease_passes_is_dropped_and_its_job_evicted() {
    let d = Daemon::start(STATIC, &[]);
    let shadow = Events::start().await;
    d.wait_state("slot2@node1.test", "Unclaimed", "Idle").await;
    let ad = job(LOOP, "JobLeaseDuration = 3\n");
    let c = d.claim("slot2@node1.test", &ad).await;
    assert!(d.activate(&c, &ad, &shadow.addr).await.ok);
    assert_eq!(shadow.next().await, Ev::Started(true));
    // One keep-alive: the lease is the job's JobLeaseDuration.
    let ka = xpb::KeepAliveRequest {
        slot: c.claimed_slot.clone(),
        claim_id: c.claim_id.clone(),
    };
    let r = d
        .execute()
        .await
        .keep_alive(ka.clone())
        .await
        .unwrap()
        .into_inner();
    assert!(r.ok && r.lease_seconds == 3, "{r:?}");
    let Ev::Evicted(e) = shadow.next().await else {
        panic!("expected Evicted")
    };
    assert_eq!(e.reason, "claim lease expired");
    d.wait_state("slot2@node1.test", "Unclaimed", "Idle").await;
    let r = d.execute().await.keep_alive(ka).await.unwrap().into_inner();
    assert!(!r.ok && r.error.contains("no such claim"), "{r:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_second_claim_a_forged_one_and_an_older_term_are_refused() {
    let d = Daemon::start(STATIC, &[]);
    d.wait_state("slot1@node1.test", "Unclaimed", "Idle").await;
    let ad = job("true", "");
    let cid = d.claim_id("slot1@node1.test");
    let forged = d
        .claim_with("slot1@node1.test", "forged", 3, &ad, false)
        .await;
    assert!(
        !forged.ok && forged.error.contains("bad claim id"),
        "{forged:?}"
    );
    // A node without CMs has seen term 0: a claim may lead it by at most 3 terms, so a
    // forged far-future term cannot fence the slot against every real grant.
    let far = d
        .claim_with("slot1@node1.test", &cid, u64::MAX, &ad, false)
        .await;
    assert!(!far.ok && far.error.contains("implausible term"), "{far:?}");
    // The leader signed term 3; an access point that raises it in the signed text breaks
    // the signature, and one that drops the signature is refused outright (issue 16.6).
    let good = claim_request("slot1@node1.test", &cid, 3, &ad, false);
    if let Some(sg) = &good.signed {
        let mut tampered = good.clone();
        let text = String::from_utf8(sg.payload.clone()).unwrap();
        assert!(text.contains("\"term\":3"), "{text}");
        tampered.term = 4;
        if let Some(t) = tampered.signed.as_mut() {
            t.payload = text.replace("\"term\":3", "\"term\":4").into_bytes();
        }
        let r = d.send(tampered).await;
        assert!(!r.ok && r.error.contains("signature invalid"), "{r:?}");
        let unsigned = npb::ClaimRequest {
            signed: None,
            ..good.clone()
        };
        let r = d.send(unsigned).await;
        assert!(!r.ok && r.error.contains("unsigned grant"), "{r:?}");
        // The grant was delivered to the access point "test": a CM's certificate, or another
        // access point's, presenting it is refused (the test process's admin certificate,
        // standing in for the access point, may).
        let r = d.send_as("cm1", good.clone()).await;
        assert!(
            !r.ok && r.error.contains("wrong daemon") && r.error.contains("not an access point"),
            "{r:?}"
        );
        let r = d.send_as("ap1", good.clone()).await;
        assert!(
            !r.ok && r.error.contains("wrong daemon") && r.error.contains("\"ap1\""),
            "{r:?}"
        );
    }
    let first = d.claim_with("slot1@node1.test", &cid, 3, &ad, false).await;
    assert!(first.ok, "{first:?}");
    let second = d.claim_with("slot1@node1.test", &cid, 3, &ad, false).await;
    assert!(
        !second.ok && second.error.contains("already claimed"),
        "{second:?}"
    );
    let stale = d.claim_with("slot1@node1.test", &cid, 2, &ad, false).await;
    assert!(!stale.ok && stale.error.contains("stale term"), "{stale:?}");
    let bad = d
        .claim_with(
            "slot2@node1.test",
            &d.claim_id("slot2@node1.test"),
            3,
            "[[[",
            false,
        )
        .await;
    assert!(!bad.ok && bad.error.contains("job ad"), "{bad:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_preempting_claim_vacates_the_running_job_and_takes_the_slot() {
    let d = Daemon::start(STATIC, &[]);
    let shadow = Events::start().await;
    d.wait_state("slot1@node1.test", "Unclaimed", "Idle").await;
    let ad = job(LOOP, "");
    let c = d.claim("slot1@node1.test", &ad).await;
    assert!(d.activate(&c, &ad, &shadow.addr).await.ok);
    assert_eq!(shadow.next().await, Ev::Started(true));
    let better = job("true", "").replace("ClusterId = 1", "ClusterId = 2");
    let r = d
        .claim_with("slot1@node1.test", &c.claim_id, 2, &better, true)
        .await;
    assert!(r.ok, "{r:?}");
    assert_ne!(r.claim_id, c.claim_id);
    let Ev::Evicted(e) = shadow.next().await else {
        panic!("expected Evicted")
    };
    assert!(e.reason.contains("preempted"), "{}", e.reason);
    d.wait_state("slot1@node1.test", "Claimed", "Idle").await;
    assert_eq!(d.claim_id("slot1@node1.test"), r.claim_id);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_partitionable_slot_is_carved_on_claim_and_whole_again_on_release() {
    let d = Daemon::start("NUM_CPUS = 2\nMEMORY = 2048\nDISK = 1000000\n", &[]);
    let p = "slot1@node1.test";
    d.wait_state(p, "Unclaimed", "Idle").await;
    assert_eq!(d.ad(p).unwrap().eval_attr("Cpus").as_int(), Some(2));
    let ad = job("true", "");
    let c = d.claim(p, &ad).await;
    assert_eq!(c.claimed_slot, "slot1_1@node1.test");
    d.wait_state(&c.claimed_slot, "Claimed", "Idle").await;
    let cpus = |a: Option<&ClassAd>| a.and_then(|a| a.eval_attr("Cpus").as_int());
    d.wait_ad(p, "one cpu left", |a| cpus(a) == Some(1)).await;
    d.release(&c).await;
    d.wait_ad(&c.claimed_slot, "the dynamic slot gone", |a| a.is_none())
        .await;
    d.wait_ad(p, "both cpus back", |a| cpus(a) == Some(2)).await;
}

async fn drain(d: &Daemon, how: xpb::DrainHow) -> xpb::DrainReply {
    let req = xpb::DrainRequest {
        how: how as i32,
        reason: "test drain".into(),
        request_id: String::new(),
        ..Default::default()
    };
    d.execute().await.drain(req).await.unwrap().into_inner()
}

async fn cancel(d: &Daemon) {
    let r = d
        .execute()
        .await
        .cancel_drain(xpb::CancelDrainRequest::default())
        .await
        .unwrap()
        .into_inner();
    assert!(r.ok, "{}", r.error);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_graceful_drain_lets_the_job_finish_a_fast_one_kills_it_and_cancel_undoes_both() {
    let d = Daemon::start(
        &format!("{STATIC}MAXJOBRETIREMENTTIME = 60\nMachineMaxVacateTime = 2\n"),
        &[],
    );
    let shadow = Events::start().await;
    let (s1, s2) = ("slot1@node1.test", "slot2@node1.test");
    d.wait_state(s2, "Unclaimed", "Idle").await;
    let short = job("sleep 2; exit 0", "");
    let c = d.claim(s1, &short).await;
    assert!(d.activate(&c, &short, &shadow.addr).await.ok);
    assert_eq!(shadow.next().await, Ev::Started(true));
    let r = drain(&d, xpb::DrainHow::Graceful).await;
    assert!(r.ok, "{}", r.error);
    d.wait_state(s1, "Claimed", "Retiring").await;
    let ad = d.ad(s1).unwrap();
    assert_eq!(ad.eval_attr("DrainReason").as_str(), Some("test drain"));
    assert_eq!(
        ad.eval_attr("DrainingRequestId").as_str(),
        Some(r.request_id.as_str())
    );
    let again = drain(&d, xpb::DrainHow::Fast).await;
    assert!(!again.ok && again.error.contains("already"), "{again:?}");
    let Ev::Exited(x) = shadow.next().await else {
        panic!("expected the job to finish")
    };
    assert_eq!(x.exit_code, Some(0));
    d.wait_state(s1, "Drained", "Idle").await;
    d.wait_state(s2, "Drained", "Idle").await;
    let refused = d.claim_with(s2, &d.claim_id(s2), 1, &short, false).await;
    assert!(!refused.ok, "a drained slot took a claim");
    cancel(&d).await;
    d.wait_state(s1, "Unclaimed", "Idle").await;
    d.wait_state(s2, "Unclaimed", "Idle").await;

    let long = job(LOOP, "");
    let c = d.claim(s1, &long).await;
    assert!(d.activate(&c, &long, &shadow.addr).await.ok);
    assert_eq!(shadow.next().await, Ev::Started(true));
    let r = drain(&d, xpb::DrainHow::Fast).await;
    assert!(r.ok, "{}", r.error);
    let Ev::Evicted(e) = shadow.next().await else {
        panic!("expected Evicted")
    };
    assert_eq!(e.reason, "drained");
    d.wait_state(s1, "Drained", "Idle").await;
    cancel(&d).await;
    d.wait_state(s1, "Unclaimed", "Idle").await;
    d.wait_state(s2, "Unclaimed", "Idle").await;
}
