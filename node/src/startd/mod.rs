//! The startd: an execute node's slots, their claims and their ads.
//!
//! * [`claim`] (re-exported here): the pure slot and claim core the simulator and the real
//!   node share: slots static, partitionable and dynamic, one claim per slot, the term fence;
//! * [`machine`]: what the machine has (cores, memory, disk, platform, load, idle times),
//!   detected as HTCondor's `condor_sysapi` detects it;
//! * [`layout`]: the slots HTCondor's configuration makes of the machine (`NUM_CPUS`,
//!   `SLOT_TYPE_<N>`, partitionable slots, consumption policies, `STARTD_ATTRS`...);
//! * [`load`]: how the machine's load and idle times are shared among its slots;
//! * [`ad`]: a slot's `Machine` ad;
//! * [`term`]: which claim terms the node believes, and the newest one kept across restarts.
//!
//! The policy state machine (which `State` and `Activity` a slot is in) is not here: the ad
//! takes its answer as a plain input ([`ad::PolicyState`]).
pub mod ad;
mod claim;
pub mod layout;
pub mod load;
pub mod machine;
pub mod term;

pub use claim::*;
