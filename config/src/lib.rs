//! The HTCondor configuration language, as HTCondor 23.9.6 reads it, and the catalogue of every
//! knob Aerie reads.
//!
//! ```no_run
//! use aerie_config::{Config, LoadOptions};
//! let cfg = Config::load("/etc/aerie/aerie.conf", &LoadOptions::for_subsystem("NEGOTIATOR")).unwrap();
//! let halflife = cfg.duration("PRIORITY_HALFLIFE").unwrap();          // Some(86400 s)
//! let groups = cfg.list("GROUP_NAMES").unwrap();
//! let quota = cfg.group_quota("group_physics.hep").unwrap();          // GROUP_QUOTA_group_physics.hep
//! let limit = cfg.concurrency_limit("LARGE.SWLICENSE").unwrap();
//! ```
//!
//! Reading: [`Config::load`] / [`Config::parse_str`]; looking up: [`Config::expanded`] (exactly
//! what `condor_config_val` prints), [`Config::bool`], [`Config::int`], [`Config::real`],
//! [`Config::string`], [`Config::list`], [`Config::duration`], [`Config::expr`]; user-built
//! names: [`Config::names_with_prefix`], [`Config::group_quota`] and friends; reloading with
//! fallback to the previous configuration: [`ConfigHandle`].
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod catalogue;
mod cond;
mod config;
pub mod defaults;
mod error;
mod expand;
mod load;
pub mod metaknobs;
mod names;
mod numeric;
mod pathfn;
mod printf;
mod reload;
mod source;

pub use catalogue::{Area, DefaultKind, Knob, KnobType, CATALOGUE};
pub use cond::HTCONDOR_VERSION;
pub use config::{parse_duration, split_list, Config, Context, Entry, Found, Origin};
pub use error::{ConfigError, Location};
pub use expand::{expand_macros, expand_self_references, MacroEnv};
pub use load::{LoadOptions, MAX_NESTING_DEPTH};
pub use names::{concurrency_limit_name_is_valid, default_config_path};
pub use reload::ConfigHandle;
