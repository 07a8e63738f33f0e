//! The columns of the table and the detail flags that choose them (HTCondor's `Detail*`
//! flags of `condor_userprio`, with the command-line groups `-priority`, `-usage`, `-quotas`,
//! `-most` and `-all`).
/// Column/detail flags.
pub const GROUP_ID: u32 = 0x0001;
pub const ORDER: u32 = 0x0002;
pub const SORT_KEY: u32 = 0x0004;
pub const EFF_QUOTA: u32 = 0x0008;
pub const CFG_QUOTA: u32 = 0x0010;
pub const SURPLUS: u32 = 0x0020;
pub const TREE_QUOTA: u32 = 0x0040;
pub const PRIORITY: u32 = 0x0080;
pub const REAL_PRIO: u32 = 0x0100;
pub const FACTOR: u32 = 0x0200;
pub const RES_USED: u32 = 0x0400;
pub const WT_RES_USED: u32 = 0x0800;
pub const USE_TIME1: u32 = 0x1000;
pub const USE_TIME2: u32 = 0x2000;
pub const USE_DELTA_T: u32 = 0x4000;
pub const REQUESTED: u32 = 0x8000;
pub const CEILING: u32 = 0x10000;
pub(super) const NAME: u32 = 0x20000;

pub const PRIOS: u32 = PRIORITY | FACTOR | REAL_PRIO;
pub const USAGE: u32 = RES_USED | WT_RES_USED;
pub const QUOTAS: u32 = EFF_QUOTA | CFG_QUOTA | TREE_QUOTA | SURPLUS | REQUESTED;
pub const MOST: u32 =
    CFG_QUOTA | SURPLUS | PRIORITY | FACTOR | USAGE | USE_DELTA_T | REQUESTED | CEILING;
pub const ALL: u32 = MOST | QUOTAS | PRIOS | USE_TIME1 | USE_TIME2;

/// Columns in display order: flag, width, heading line 1, heading line 2.
pub(super) const COLUMNS: &[(u32, usize, &str, &str)] = &[
    (GROUP_ID, 5, "Group", "Id"),
    (ORDER, 9, "Group", "Order"),
    (SORT_KEY, 9, "Group", "Sort Key"),
    (EFF_QUOTA, 9, "Effective", "Quota"),
    (CFG_QUOTA, 9, "Config", "Quota"),
    (SURPLUS, 7, "Use", "Surplus"),
    (TREE_QUOTA, 9, "Subtree", "Quota"),
    (PRIORITY, 12, "Effective", "Priority"),
    (REAL_PRIO, 8, "Real", "Priority"),
    (FACTOR, 9, "Priority", "Factor"),
    (RES_USED, 6, "Wghted", "In Use"),
    (WT_RES_USED, 12, "Total Usage", "(wghted-hrs)"),
    (USE_TIME1, 16, "Usage", "Start Time"),
    (USE_TIME2, 16, "Last", "Usage Time"),
    (USE_DELTA_T, 10, "Time Since", "Last Usage"),
    (REQUESTED, 10, "Weighted", "Requested"),
    (CEILING, 9, "Submitter", "Ceiling"),
];
