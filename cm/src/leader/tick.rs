//! Step 3 of a cycle: who uses which slots, for the accountant's tick.
//!
//! HTCondor's rule (the accountant's `CheckMatches`, and the negotiator cycle's own usage
//! count in `aerie_core::negotiator`): every slot in state `Claimed` (or `Preempting`) that is not
//! a partitionable slot charges its `SlotWeight` (else `Cpus`, else 1; 1 when slot weights are
//! off) to the slot's `AccountingGroup` if it has one, else to its `RemoteUser`.
use aerie_core::accountant::{bounded_slot_weight, Usage};
use classad::{ClassAd, Value};
use std::collections::BTreeMap;

fn num(ad: &ClassAd, name: &str) -> Option<f64> {
    match ad.eval_attr(name) {
        Value::Int(i) => Some(i as f64),
        Value::Real(r) if r.is_finite() => Some(r),
        _ => None,
    }
}

fn nonempty_str(ad: &ClassAd, name: &str) -> Option<String> {
    super::snapshot::attr_str(ad, name).filter(|s| !s.is_empty())
}

/// The weight a slot charges, bounded ([`bounded_slot_weight`]) so that no slot ad can make a
/// submitter's usage unbounded.
pub fn slot_weight(ad: &ClassAd, use_slot_weights: bool) -> f64 {
    if !use_slot_weights {
        return 1.0;
    }
    num(ad, "SlotWeight")
        .or_else(|| num(ad, "Cpus"))
        .filter(|w| *w >= 0.0)
        .map(bounded_slot_weight)
        .unwrap_or(1.0)
}

/// Weighted slots in use per submitter, sorted by name. A slot whose user name the
/// accountant would refuse (empty, spaces) is skipped with a warning rather than failing the
/// whole tick.
pub fn claimed_usage(slots: &[ClassAd], use_slot_weights: bool) -> Vec<Usage> {
    let mut per: BTreeMap<String, f64> = BTreeMap::new();
    for ad in slots {
        let state = super::snapshot::attr_str(ad, "State").unwrap_or_default();
        if state != "Claimed" && state != "Preempting" {
            continue;
        }
        if matches!(ad.eval_attr("PartitionableSlot"), Value::Bool(true)) {
            continue;
        }
        let Some(who) =
            nonempty_str(ad, "AccountingGroup").or_else(|| nonempty_str(ad, "RemoteUser"))
        else {
            continue;
        };
        if who.chars().any(|c| c.is_whitespace() || c.is_control()) {
            tracing::warn!(
                slot = super::snapshot::attr_str(ad, "Name").unwrap_or_default(),
                user = who,
                "claimed slot names a user with spaces; its usage is not charged"
            );
            continue;
        }
        *per.entry(who).or_insert(0.0) += slot_weight(ad, use_slot_weights);
    }
    per.into_iter()
        .map(|(submitter, weighted_slots)| Usage {
            submitter,
            weighted_slots,
        })
        .collect()
}

/// What [`tick_time`] found of the leader's clock.
#[derive(Debug, Clone, PartialEq)]
pub struct Clock {
    /// The leader's clock minus the time the tick carries (seconds): positive when the clock
    /// is ahead of the ledger (a jump forward), negative when behind.
    pub offset: i64,
    /// Why the clock was not taken as it is, for the log.
    pub warning: Option<String>,
}

/// How far (seconds) the wall clock may wander from the monotonic measure of a term before
/// a tick says so in the log (NTP's small steps are not worth a warning every cycle).
pub const CLOCK_TOLERANCE: i64 = 10;

/// Where this CM's monotonic clock stood at its first tick of a term, and the time that tick
/// carried: the later ticks of the term carry that time plus the monotonic time since, so a
/// step of the wall clock (NTP, `date -s`) while it leads charges nothing
/// ([`tick_time`]'s `steady`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Anchor {
    /// The term of the tick.
    pub term: u64,
    /// The time the tick carried (Unix seconds).
    pub time: i64,
    /// The monotonic clock when the tick's time was read.
    pub at: std::time::Instant,
}

impl Anchor {
    /// The time a tick of `term` at monotonic instant `now` carries by this anchor: `None`
    /// for another term (the new leader reads its wall clock, bounded by [`tick_time`]).
    pub fn steady(&self, term: u64, now: std::time::Instant) -> Option<i64> {
        (self.term == term).then(|| {
            let elapsed = now.saturating_duration_since(self.at).as_secs();
            self.time
                .saturating_add(i64::try_from(elapsed).unwrap_or(i64::MAX))
        })
    }
}

/// The time the next accountant tick carries, never earlier than any committed time
/// (`state_now`, the last tick).
///
/// Within a term after its first tick, `steady` is the time the monotonic clock measured
/// since that tick ([`Anchor::steady`]) and is taken whatever the wall clock `wall` says: the
/// wall clock only feeds the `offset` reported (and a warning past [`CLOCK_TOLERANCE`]). A
/// leader whose clock is stepped an hour forward and back while it leads thus charges the
/// time that really passed, not an hour of usage followed by an hour without accounting.
///
/// At a term's first tick (`steady` is `None`: nothing measured this term yet) the leader's
/// clock `wall` is taken, but never more than `max_step` seconds after the last tick: a new
/// leader whose clock is a day ahead charges at most `max_step` once, instead of a day.
pub fn tick_time(
    wall: i64,
    state_now: i64,
    last_tick: Option<i64>,
    max_step: i64,
    steady: Option<i64>,
) -> (i64, Clock) {
    let floor = last_tick.map_or(state_now, |t| t.max(state_now));
    if let Some(measured) = steady {
        let now = measured.max(floor);
        let offset = wall.saturating_sub(now);
        let warning = (offset.saturating_abs() > CLOCK_TOLERANCE).then(|| {
            format!(
                "the leader's clock is {offset} s off the time its monotonic clock measured \
                 this term: the tick keeps the measured time (was the clock stepped?)"
            )
        });
        return (now, Clock { offset, warning });
    }
    let now = match last_tick {
        Some(last) if wall.saturating_sub(last) > max_step => last.saturating_add(max_step),
        _ => wall,
    }
    .max(floor);
    let offset = wall.saturating_sub(now);
    let warning = if wall < floor {
        Some(format!(
            "the leader's clock is {} s behind the ledger's time: the tick keeps the ledger's",
            floor.saturating_sub(wall)
        ))
    } else if now < wall {
        Some(format!(
            "the leader's clock is {offset} s ahead of the last tick: this tick charges at most \
             {max_step} s (is a clock wrong?)"
        ))
    } else {
        None
    };
    (now, Clock { offset, warning })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ad(text: &str) -> ClassAd {
        classad::parse_old_ads_strict(text).unwrap().remove(0)
    }

    #[test]
    fn claimed_slots_charge_group_else_user_with_their_weight() {
        let slots = vec![
            ad("Name = \"s1\"\nState = \"Claimed\"\nRemoteUser = \"alice@p\"\nSlotWeight = 2\n"),
            ad("Name = \"s2\"\nState = \"Claimed\"\nRemoteUser = \"alice@p\"\nCpus = 4\n"),
            ad("Name = \"s3\"\nState = \"Claimed\"\nRemoteUser = \"bob@p\"\nAccountingGroup = \"group_a.bob@p\"\nSlotWeight = Cpus * 2\nCpus = 3\n"),
            ad("Name = \"s4\"\nState = \"Preempting\"\nRemoteUser = \"carol@p\"\n"),
            // Not charged: idle, partitionable, unnamed, bad name.
            ad("Name = \"s5\"\nState = \"Unclaimed\"\nRemoteUser = \"dave@p\"\n"),
            ad("Name = \"s6\"\nState = \"Claimed\"\nPartitionableSlot = true\nRemoteUser = \"erin@p\"\n"),
            ad("Name = \"s7\"\nState = \"Claimed\"\n"),
            ad("Name = \"s8\"\nState = \"Claimed\"\nRemoteUser = \"bad user\"\n"),
        ];
        let u = claimed_usage(&slots, true);
        let got: Vec<(&str, f64)> = u
            .iter()
            .map(|x| (x.submitter.as_str(), x.weighted_slots))
            .collect();
        assert_eq!(
            got,
            vec![("alice@p", 6.0), ("carol@p", 1.0), ("group_a.bob@p", 6.0)]
        );
        // Without slot weights every slot counts 1.
        let u = claimed_usage(&slots, false);
        assert_eq!(u[0].weighted_slots, 2.0);
    }

    /// Issue 13's poison pill: claimed slots advertising `SlotWeight = 1e308` used to make a
    /// submitter's accumulated usage infinite, which JSON writes as `null`, so the next
    /// snapshot could not be read and the CM could not restart.
    #[test]
    fn an_absurd_slot_weight_cannot_poison_the_replicated_ledger() {
        use aerie_core::accountant::{AccountantCommand, MAX_SLOT_WEIGHT};
        use aerie_core::state::{Command, PoolState, Request};
        let slots: Vec<ClassAd> = (0..2)
            .map(|i| {
                ad(&format!(
                    "Name = \"s{i}\"\nState = \"Claimed\"\nRemoteUser = \"mallory@p\"\nSlotWeight = 1e308\n"
                ))
            })
            .collect();
        let usage = claimed_usage(&slots, true);
        assert_eq!(usage[0].weighted_slots, 2.0 * MAX_SLOT_WEIGHT);
        let mut state = PoolState::default();
        for now in [1_000, 1_000 + 86_400 * 365] {
            let r = state.apply(&Request::new(Command::Accountant(
                AccountantCommand::Tick {
                    now,
                    usage: usage.clone(),
                },
            )));
            assert!(r.ok, "{r:?}");
        }
        let rec = state.accountant.record("mallory@p").expect("charged");
        assert!(rec.accumulated_usage.is_finite() && rec.accumulated_usage > 0.0);
        let json = serde_json::to_string(&state).expect("encode");
        let back: PoolState = serde_json::from_str(&json).expect("the state reads back");
        assert_eq!(back, state);
    }

    /// Issue 13.10: a new leader's clock a day ahead charges at most one step, and a clock
    /// behind never takes the ledger back.
    #[test]
    fn the_tick_time_is_bounded_whatever_the_clock_says() {
        let (t0, step) = (1_700_000_000, 600);
        assert_eq!(tick_time(t0 + 60, t0, Some(t0), step, None).0, t0 + 60);
        let (now, c) = tick_time(t0 + 86_400, t0, Some(t0), step, None);
        assert_eq!(now, t0 + 600);
        assert_eq!(c.offset, 86_400 - 600);
        assert!(c.warning.unwrap().contains("ahead"));
        let (now, c) = tick_time(t0 - 300, t0, Some(t0), step, None);
        assert_eq!(now, t0);
        assert!(c.warning.unwrap().contains("behind"));
        // Measured time never takes the ledger back either.
        assert_eq!(
            tick_time(t0, t0 + 5, Some(t0 + 5), step, Some(t0)).0,
            t0 + 5
        );
        // The first tick takes the clock as it is.
        assert_eq!(
            tick_time(t0, 0, None, step, None),
            (
                t0,
                Clock {
                    offset: 0,
                    warning: None
                }
            )
        );
        // Extremes do not overflow.
        assert_eq!(
            tick_time(i64::MAX, 0, Some(i64::MAX - 1), step, None).0,
            i64::MAX
        );
        assert_eq!(
            tick_time(i64::MIN, 0, Some(0), step, Some(i64::MAX)).0,
            i64::MAX
        );
    }

    /// Found with jepsen's clock-jump-leader (issue 17): bounding each tick to `max_step`
    /// only spread the damage. A leader (60 s cycles) whose wall clock was stepped an hour
    /// forward for ten minutes caught up in six cycles and charged an hour of usage that
    /// never happened; once set right, the ledger stood an hour ahead and charged nothing
    /// for an hour. Within a term the leader now measures with its monotonic clock.
    #[test]
    fn a_leader_whose_clock_jumps_an_hour_charges_only_the_time_that_passed() {
        use std::time::{Duration, Instant};
        let (t0, step, cycle) = (1_700_000_000_i64, 600, 60_i64);
        let mono0 = Instant::now();
        let mut ledger = t0 - cycle;
        let mut anchor: Option<Anchor> = None;
        let mut charged = Vec::new();
        // 30 cycles: the clock is right, an hour ahead for cycles 5..15, an hour behind for
        // 20..25, right again.
        for k in 0..30_i64 {
            let skew = match k {
                5..15 => 3_600,
                20..25 => -3_600,
                _ => 0,
            };
            let mono = mono0 + Duration::from_secs((k * cycle) as u64);
            let wall = t0 + k * cycle + skew;
            let steady = anchor.and_then(|a| a.steady(7, mono));
            let (now, c) = tick_time(wall, ledger, Some(ledger), step, steady);
            assert_eq!(c.offset, skew, "cycle {k}");
            assert_eq!(c.warning.is_some(), skew != 0, "cycle {k}");
            charged.push(now - ledger);
            ledger = now;
            anchor.get_or_insert(Anchor {
                term: 7,
                time: now,
                at: mono,
            });
        }
        // Every tick charged one cycle's worth, jumps or not, and the ledger kept real time.
        assert!(charged.iter().all(|c| *c == cycle), "{charged:?}");
        assert_eq!(ledger, t0 + 29 * cycle);
        // The anchor belongs to its term: a new term reads the wall clock again.
        let a = anchor.unwrap();
        assert_eq!(a.steady(8, mono0), None);
        assert_eq!(
            a.steady(7, mono0 + Duration::from_secs(90)),
            Some(a.time + 90)
        );
    }
}
