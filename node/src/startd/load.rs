//! How a machine's load average and keyboard and console idle times are shared among its
//! slots, as HTCondor 23.9.6's `ResMgr::assign_load_and_idle`
//! (`src/condor_startd.V6/ResMgr.cpp`) shares them.
//!
//! The slots are visited in state order (Owner, Unclaimed, Matched, Claimed, Preempting...),
//! claimed and preempting slots by rank, then by slot id. Each takes an owner load (the
//! machine's load not caused by jobs) of 1.0 until less than 1.0 is left, which the next takes;
//! the rest get 0. The first `SLOTS_CONNECTED_TO_CONSOLE` non-partitionable slots get the
//! machine's `ConsoleIdle` and the first `SLOTS_CONNECTED_TO_KEYBOARD` its `KeyboardIdle`; the
//! others get the startd's age plus `DISCONNECTED_KEYBOARD_IDLE_BOOST`, so a desktop policy
//! sees a slot with no keyboard as long idle. Partitionable slots do not count against the
//! numbers but get the values current when they are visited.
use super::machine::Idle;
use std::cmp::Ordering;

/// What the sharing needs to know of one slot.
#[derive(Clone, Debug, PartialEq)]
pub struct SlotActivity {
    /// `SlotID`.
    pub id: u32,
    /// The k of a dynamic slot `slotN_k`, 0 otherwise.
    pub sub_id: u32,
    /// `State` (`Owner`, `Unclaimed`, `Claimed`...).
    pub state: String,
    /// The claim's rank (the slot's `CurrentRank`); orders claimed and preempting slots.
    pub rank: f64,
    /// A partitionable slot.
    pub partitionable: bool,
    /// The load of its jobs (`CondorLoadAvg`).
    pub condor_load: f64,
}

/// The startd-wide settings of the sharing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Connected {
    /// `SLOTS_CONNECTED_TO_CONSOLE` (default 0).
    pub console_slots: u32,
    /// `SLOTS_CONNECTED_TO_KEYBOARD` (default 0).
    pub keyboard_slots: u32,
    /// The idle time of a slot with no keyboard: seconds since the startd started plus
    /// `DISCONNECTED_KEYBOARD_IDLE_BOOST` (default 1200).
    pub disconnected_idle: i64,
}

impl Connected {
    /// From the configuration (`SLOTS_CONNECTED_TO_CONSOLE`, `SLOTS_CONNECTED_TO_KEYBOARD`,
    /// `DISCONNECTED_KEYBOARD_IDLE_BOOST`) for a startd `age` seconds old.
    pub fn from_config(
        cfg: &aerie_config::Config,
        age: i64,
    ) -> Result<Connected, aerie_config::ConfigError> {
        let count = |knob: &str| -> Result<u32, aerie_config::ConfigError> {
            let v = cfg.int_or(knob, 0)?;
            u32::try_from(v).map_err(|_| {
                aerie_config::ConfigError::new(format!("{knob} is {v}; it must be 0 or more"))
                    .with_knob(knob)
            })
        };
        Ok(Connected {
            console_slots: count("SLOTS_CONNECTED_TO_CONSOLE")?,
            keyboard_slots: count("SLOTS_CONNECTED_TO_KEYBOARD")?,
            disconnected_idle: age.max(0) + cfg.int_or("DISCONNECTED_KEYBOARD_IDLE_BOOST", 1200)?,
        })
    }
}

/// One slot's share.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SlotLoad {
    /// Owner load: `LoadAvg` is this plus the slot's `CondorLoadAvg`.
    pub owner: f64,
    /// `CondorLoadAvg`.
    pub condor: f64,
    /// `KeyboardIdle`; `None` when the machine's idle times are not known (the simulator).
    pub keyboard_idle: Option<i64>,
    /// `ConsoleIdle`; `None` when unknown, and then the ad has none.
    pub console_idle: Option<i64>,
}

/// HTCondor's `State` enum order.
fn state_order(s: &str) -> u32 {
    match s {
        "Owner" => 1,
        "Unclaimed" => 2,
        "Matched" => 3,
        "Claimed" => 4,
        "Preempting" => 5,
        "Backfill" => 8,
        "Drained" => 9,
        _ => 0,
    }
}

/// Shares `machine_load` (the 1-minute load average) and `idle` among `slots`; the result is
/// in the order of `slots`.
pub fn assign_load_and_idle(
    slots: &[SlotActivity],
    machine_load: f64,
    idle: Option<Idle>,
    connected: Connected,
) -> Vec<SlotLoad> {
    let mut order: Vec<usize> = (0..slots.len()).collect();
    order.sort_by(|&a, &b| {
        let (x, y) = (&slots[a], &slots[b]);
        let (sx, sy) = (state_order(&x.state), state_order(&y.state));
        sx.cmp(&sy)
            .then_with(|| {
                if sx == 4 || sx == 5 {
                    x.rank.partial_cmp(&y.rank).unwrap_or(Ordering::Equal)
                } else {
                    Ordering::Equal
                }
            })
            .then_with(|| (x.id, x.sub_id).cmp(&(y.id, y.sub_id)))
    });
    let condor: f64 = slots.iter().map(|s| s.condor_load).sum();
    let mut owner_left = (machine_load - condor).max(0.0);
    let mut console = idle.and_then(|i| i.console);
    let mut keyboard = idle.map(|i| i.keyboard);
    let (mut num_console, mut num_keyboard) = (
        connected.console_slots as i64,
        connected.keyboard_slots as i64,
    );
    let mut out = vec![
        SlotLoad {
            owner: 0.0,
            condor: 0.0,
            keyboard_idle: None,
            console_idle: None,
        };
        slots.len()
    ];
    for i in order {
        let s = &slots[i];
        let owner = owner_left.min(1.0);
        owner_left -= owner;
        if idle.is_some() && !s.partitionable {
            num_console -= 1;
            if num_console < 0 {
                console = Some(connected.disconnected_idle);
            }
            num_keyboard -= 1;
            if num_keyboard < 0 {
                keyboard = Some(console.unwrap_or(-1));
            }
        }
        out[i] = SlotLoad {
            owner,
            condor: s.condor_load,
            keyboard_idle: keyboard,
            console_idle: console,
        };
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slot(id: u32, state: &str, partitionable: bool, condor: f64) -> SlotActivity {
        SlotActivity {
            id,
            sub_id: 0,
            state: state.into(),
            rank: 0.0,
            partitionable,
            condor_load: condor,
        }
    }

    const NO_KEYBOARD: Connected = Connected {
        console_slots: 0,
        keyboard_slots: 0,
        disconnected_idle: 1200,
    };

    #[test]
    fn owner_load_goes_a_core_at_a_time_to_unclaimed_slots_first() {
        // The reference startd's "static" fixture: TotalLoadAvg 1.82 over four idle slots gave
        // LoadAvg 1.0, 0.82, 0.0, 0.0.
        let slots: Vec<_> = (1..=4).map(|i| slot(i, "Unclaimed", false, 0.0)).collect();
        let l = assign_load_and_idle(&slots, 1.82, None, NO_KEYBOARD);
        let owner: Vec<f64> = l
            .iter()
            .map(|s| (s.owner * 100.0).round() / 100.0)
            .collect();
        assert_eq!(owner, vec![1.0, 0.82, 0.0, 0.0]);
        // A claimed slot running a job comes after the unclaimed ones; its job's load is not
        // owner load.
        let slots = vec![
            slot(1, "Claimed", false, 1.0),
            slot(2, "Unclaimed", false, 0.0),
        ];
        let l = assign_load_and_idle(&slots, 2.5, None, NO_KEYBOARD);
        assert_eq!((l[0].owner, l[0].condor), (0.5, 1.0));
        assert_eq!(l[1].owner, 1.0);
    }

    #[test]
    fn slots_without_a_keyboard_look_idle_since_the_startd_started_plus_the_boost() {
        // The reference startd's "pslot" fixture: the partitionable slot1 got the machine's
        // idle times, the static slot2 got 1200 (a startd a few seconds old).
        let idle = Some(Idle {
            keyboard: 560_107,
            console: Some(560_107),
        });
        let slots = vec![
            slot(1, "Unclaimed", true, 0.0),
            slot(2, "Unclaimed", false, 0.0),
        ];
        let l = assign_load_and_idle(&slots, 0.0, idle, NO_KEYBOARD);
        assert_eq!(
            (l[0].keyboard_idle, l[0].console_idle),
            (Some(560_107), Some(560_107))
        );
        assert_eq!(
            (l[1].keyboard_idle, l[1].console_idle),
            (Some(1200), Some(1200))
        );
    }

    #[test]
    fn connected_slots_see_the_machine_keyboard_and_console() {
        let idle = Some(Idle {
            keyboard: 30,
            console: Some(300),
        });
        let c = Connected {
            console_slots: 2,
            keyboard_slots: 1,
            disconnected_idle: 5000,
        };
        let slots: Vec<_> = (1..=3).map(|i| slot(i, "Unclaimed", false, 0.0)).collect();
        let l = assign_load_and_idle(&slots, 0.0, idle, c);
        let got: Vec<_> = l
            .iter()
            .map(|s| (s.keyboard_idle, s.console_idle))
            .collect();
        assert_eq!(
            got,
            vec![
                (Some(30), Some(300)),
                (Some(300), Some(300)),
                (Some(5000), Some(5000))
            ]
        );
        // The settings come from the configuration.
        let cfg = aerie_config::Config::parse_str(
            "SLOTS_CONNECTED_TO_CONSOLE = 2\nSLOTS_CONNECTED_TO_KEYBOARD = 1\n\
             DISCONNECTED_KEYBOARD_IDLE_BOOST = 4000\n",
            "t.conf",
            &aerie_config::LoadOptions {
                local_config: false,
                env_overrides: false,
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(Connected::from_config(&cfg, 1000).unwrap(), c);
        // Unknown idle times (the simulator) stay unknown.
        let l = assign_load_and_idle(&slots, 0.0, None, c);
        assert!(l
            .iter()
            .all(|s| s.keyboard_idle.is_none() && s.console_idle.is_none()));
    }
}
