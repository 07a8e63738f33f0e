//! Every network input, fuzzed with a seeded mutator (issue 13): ads advertised to a collector,
//! ads relayed between CMs, admin commands proposed to Raft, grants delivered to an access
//! point and claims sent to a startd. Whatever arrives, nothing panics, the replicated state
//! still encodes and decodes (so a snapshot of it can be read back after a restart), and the
//! stores stay within their bounds.
//!
//! Deterministic (fixed seeds, a few thousand cases each) so that it runs in CI on stable Rust;
//! the cargo-fuzz targets of the same entry points are in `tests/fuzz/` (nightly, open-ended).
use aerie_cm::collector::relay::apply_relayed;
use aerie_cm::collector::service::SharedTable;
use aerie_cm::collector::{AdTable, CollectorParams};
use aerie_core::accountant::{AccountantCommand, Usage};
use aerie_core::state::{AdPut, AdRef, Command, DrainRequest, PoolState, Quota, Request};
use aerie_node::access_point::AccessPoint;
use aerie_node::startd::{ClaimSpec, Resources, RunningJob, Startd};
use aerie_proto::collector as cpb;
use std::sync::{Arc, RwLock};

/// xorshift64*: deterministic and dependency-free.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn pick<T: Clone>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len())].clone()
    }
    /// Integers where bugs live: the edges of the types and of time.
    fn edgy_i64(&mut self) -> i64 {
        let r = self.next() as i64;
        self.pick(&[
            0,
            1,
            -1,
            i64::MAX,
            i64::MIN,
            1_700_000_000,
            4_102_444_800,
            -86_400,
            r,
        ])
    }
    fn edgy_u64(&mut self) -> u64 {
        let r = self.next();
        self.pick(&[0, 1, u64::MAX, u64::MAX - 1, 3, r])
    }
    fn edgy_f64(&mut self) -> f64 {
        let r = (self.next() % 100_000) as f64 / 7.0;
        self.pick(&[
            0.0,
            -0.0,
            1.0,
            -1.0,
            0.5,
            1e308,
            -1e308,
            f64::MIN_POSITIVE,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            1e15,
            r,
        ])
    }
    /// A mutation of `s`: bytes flipped, tokens inserted, cut, spliced or repeated.
    fn mutate(&mut self, s: &str) -> String {
        const TOKENS: &[&str] = &[
            "\"",
            "\\",
            "=",
            "\n",
            "[",
            "]",
            "{",
            "}",
            ";",
            "(",
            ")",
            "+",
            "1e308",
            "-",
            "\0",
            "undefined",
            "error",
            "MyType",
            "Name",
            "\u{fffd}",
            "ClassAdLifetime = ",
            "Offline = true",
            "a0 = a1 + a1",
            "\"x\"",
        ];
        let mut b = s.as_bytes().to_vec();
        for _ in 0..=self.below(4) {
            let at = self.below(b.len() + 1);
            match self.below(6) {
                0 if !b.is_empty() => {
                    let i = self.below(b.len());
                    b[i] ^= 1 << self.below(8);
                }
                1 => {
                    let t = self.pick(TOKENS).as_bytes().to_vec();
                    b.splice(at..at, t);
                }
                2 => b.truncate(at),
                3 if !b.is_empty() => {
                    let from = self.below(b.len());
                    let to = (from + self.below(64)).min(b.len());
                    let chunk = b[from..to].to_vec();
                    b.splice(at..at, chunk);
                }
                4 => {
                    let n = self.below(3000);
                    b.splice(at..at, std::iter::repeat_n(b'(', n));
                }
                _ => {}
            }
        }
        String::from_utf8_lossy(&b).into_owned()
    }
}

const SLOT: &str = "MyType = \"Machine\"\nName = \"slot1@n1.pool\"\nMachine = \"n1.pool\"\n\
MyAddress = \"<10.0.0.1:9618>\"\nState = \"Unclaimed\"\nActivity = \"Idle\"\nCpus = 4\n\
Memory = 8192\nStart = true\nRequirements = START\nClaimId = \"<10.0.0.1:9618>#1#2\"\n\
ClassAdLifetime = 900\nChildCpus = { 1, 2 }\n";
const SUBMITTER: &str = "MyType = \"Submitter\"\nName = \"alice@pool\"\nScheddName = \"ap\"\n\
IdleJobs = 5\nRunningJobs = 0\nScheddIpAddr = \"<10.0.0.9:9618>\"\n";
const NEW_SYNTAX: &str = "[ MyType = \"Machine\"; Name = \"slot2@n2\"; Machine = \"n2\"; \
Offline = true; Cpus = 2; L = { [ a = 1 ], \"x\" } ]";

fn table() -> SharedTable {
    Arc::new(RwLock::new(AdTable::new(CollectorParams::default())))
}

#[test]
fn advertised_ads_never_panic_and_the_table_stays_bounded() {
    let t = table();
    let mut rng = Rng(0xad5);
    let seeds = [SLOT, SUBMITTER, NEW_SYNTAX];
    for i in 0..4000 {
        let seed = rng.pick(&seeds);
        let text = rng.mutate(seed);
        let now = 1_700_000_000 + i;
        let _ = t.write().unwrap().advertise_text(&text, now);
        if i % 500 == 0 {
            let mut w = t.write().unwrap();
            w.expire(now + rng.edgy_i64().rem_euclid(100_000));
        }
    }
    let w = t.read().unwrap();
    assert!(w.len() <= 4000, "{} ads from 4000 updates", w.len());
}

#[test]
fn relayed_ads_with_any_version_and_age_never_panic() {
    let t = table();
    let mut rng = Rng(0x7e1a);
    let seeds = [SLOT, SUBMITTER, NEW_SYNTAX];
    for _ in 0..3000 {
        let ad = cpb::RelayedAd {
            key: (rng.below(4) > 0).then(|| cpb::AdKey {
                ad_type: rng.mutate("Machine"),
                name: rng.mutate("slot1@n1.pool"),
                addr: rng.mutate("10.0.0.1"),
            }),
            version: (rng.below(4) > 0).then(|| cpb::AdVersion {
                time: rng.edgy_i64(),
                seq: rng.edgy_u64(),
                origin: rng.edgy_u64(),
            }),
            text: {
                let seed = rng.pick(&seeds);
                rng.mutate(seed)
            },
            invalidate: rng.below(5) == 0,
            age_seconds: rng.edgy_i64(),
        };
        let _ = apply_relayed(&t, &[ad]);
    }
    assert!(t.read().unwrap().len() <= 3000);
}

/// Commands of every kind with values at the edges; half of them also as mutated JSON.
fn command(rng: &mut Rng) -> Command {
    let name = rng.mutate("group_a.alice@pool");
    let f = rng.edgy_f64();
    let t = rng.edgy_i64();
    match rng.below(16) {
        0 => Command::Accountant(AccountantCommand::Tick {
            now: t,
            usage: vec![Usage {
                submitter: name,
                weighted_slots: f,
            }],
        }),
        1 => Command::Accountant(AccountantCommand::SetFactor { name, value: f }),
        2 => Command::Accountant(AccountantCommand::SetPriority { name, value: f }),
        3 => Command::Accountant(AccountantCommand::SetAccumulatedUsage { name, value: f }),
        4 => Command::Accountant(AccountantCommand::SetBeginUsageTime { name, time: t }),
        5 => Command::SetQuota {
            group: name,
            quota: Some(if rng.below(2) == 0 {
                Quota::Static(f)
            } else {
                Quota::Dynamic(f)
            }),
        },
        6 => Command::SetLimit {
            name,
            limit: Some(f),
        },
        7 => Command::RequestDrain(DrainRequest {
            machine: name,
            how: rng.mutate("graceful"),
            reason: rng.mutate("why"),
            time: t,
            request_id: rng.mutate("1"),
            start_expr: rng.mutate("Owner == \"x\""),
            check_expr: String::new(),
            resume_on_completion: rng.below(2) == 0,
        }),
        8 => Command::CancelDrain { machine: name },
        9 => Command::PutAd {
            ad_type: rng.mutate("Machine"),
            name,
            text: rng.mutate(NEW_SYNTAX),
            time: t,
        },
        10 => Command::PutAds {
            ads: vec![AdPut {
                ad_type: rng.mutate("Machine"),
                name,
                text: rng.mutate(SLOT),
                time: t,
            }],
        },
        11 => Command::RemoveAds {
            ads: vec![AdRef {
                ad_type: rng.mutate("Machine"),
                name,
            }],
        },
        12 => Command::SetFeatureVersion {
            version: rng.edgy_u64() as u32,
        },
        13 => Command::Accountant(AccountantCommand::Delete { name }),
        14 => Command::RequestCycle,
        _ => Command::Accountant(AccountantCommand::ResetAll),
    }
}

#[test]
fn admin_commands_never_panic_and_the_state_always_reads_back() {
    let mut state = PoolState::default();
    let mut rng = Rng(0xad417);
    for i in 0..3000 {
        let cmd = command(&mut rng);
        let req = Request {
            v: 1,
            cmd,
            audit: None,
        };
        if i % 2 == 0 {
            let _ = state.apply(&req);
        } else {
            // The same command as bytes off the wire, mutated: it decodes or is refused.
            let json = serde_json::to_string(&req).unwrap_or_default();
            if let Ok(r) = serde_json::from_str::<Request>(&rng.mutate(&json)) {
                let _ = state.apply(&r);
            }
        }
        if i % 100 == 0 {
            let bytes = serde_json::to_vec(&state).expect("the state encodes");
            let back: PoolState = serde_json::from_slice(&bytes).unwrap_or_else(|e| {
                panic!("a snapshot of the state would not read back after command {i}: {e}")
            });
            assert_eq!(
                serde_json::to_vec(&back).expect("encodes"),
                bytes,
                "the state changed through a snapshot"
            );
        }
    }
}

#[test]
fn grants_for_any_job_and_term_never_panic() {
    let mut ap = AccessPoint::new(
        &["alice".to_string(), "bob".to_string()],
        &[],
        "pool",
        Vec::new(),
        1,
    );
    for _ in 0..50 {
        ap.add_job(0);
    }
    let mut rng = Rng(0x9a47);
    for _ in 0..3000 {
        let seed = rng.pick(&["1.0", "23.0", "4.17", "99999999999999999999.0"]);
        let job = rng.mutate(seed);
        if let Ok(t) = ap.begin_grant(rng.edgy_u64(), &job) {
            if rng.below(2) == 0 {
                ap.abort_grant(t.job);
            } else {
                ap.confirm_grant(t.job, rng.edgy_u64(), &rng.mutate("slot1@x"), "c", "a");
            }
        }
    }
}

#[test]
fn claims_with_any_capability_term_and_size_never_panic_or_overcommit() {
    let mut startd = Startd::new(7, "10.0.0.1:9618", 0);
    let total = Resources {
        cpus: 8.0,
        memory: 16384.0,
        disk: 1e6,
    };
    startd.add_partitionable("n1", 1, total);
    startd.add_static("n1", 2, total);
    let mut rng = Rng(0xc1a1);
    for i in 0..3000 {
        let ids = startd.claim_ids();
        let slot = rng
            .pick(&["slot1@n1", "slot2@n1", "slot1_1@n1", "nope"])
            .to_string();
        let claim_id = match ids.get(&slot) {
            Some(id) if rng.below(3) > 0 => id.clone(),
            _ => rng.mutate("<10.0.0.1:9618>#1"),
        };
        let spec = ClaimSpec {
            slot,
            claim_id,
            term: rng.edgy_u64(),
            job: RunningJob {
                job: rng.mutate("1.0"),
                submitter: rng.mutate("alice@pool"),
                user: rng.mutate("alice@pool"),
                grouped: false,
                concurrency_limits: (rng.below(3) == 0).then(|| rng.mutate("sw:2")),
                term: rng.edgy_u64(),
                cycle: rng.edgy_u64(),
                start: rng.edgy_i64(),
            },
            carve: Resources {
                cpus: rng.edgy_f64(),
                memory: rng.edgy_f64(),
                disk: rng.edgy_f64(),
            },
        };
        if let Ok(c) = startd.request_claim(spec) {
            if rng.below(2) == 0 {
                let _ = startd.release(&c.slot, &c.claim_id, i);
            }
        }
        // Whatever was asked, what is carved never exceeds the machine.
        let used: f64 = startd
            .slots()
            .filter(|s| matches!(s.kind, aerie_node::startd::SlotKind::Dynamic { .. }))
            .map(|s| s.advertised().cpus)
            .sum();
        assert!(
            used <= total.cpus || used.is_nan(),
            "dynamic slots hold {used} of {} cpus",
            total.cpus
        );
        assert!(!used.is_nan(), "a claim carved a NaN-sized slot");
    }
}
