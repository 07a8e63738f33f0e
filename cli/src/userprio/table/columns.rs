//! The columns of the table and the detail flags that choose them: one flag a column (HTCondor's
//! `Detail*` flags of `condor_userprio`), and the groups the command line asks for
//! (`-priority`, `-usage`, `-quotas`, `-most`, `-all`). A record's flags say which columns it
//! has data for.

/// Column `Group Id`: a group's number, a submitter's group's number (`-groupid`).
pub const GROUP_ID: u32 = 0x0001;
/// Column `Group Order`: the key groups are listed by (`-order`).
pub const ORDER: u32 = 0x0002;
/// Column `Group Sort Key`: `GroupSortKey` (`-sortkey`).
pub const SORT_KEY: u32 = 0x0004;
/// Column `Effective Quota`: `EffectiveQuota`.
pub const EFF_QUOTA: u32 = 0x0008;
/// Column `Config Quota`: `ConfigQuota`.
pub const CFG_QUOTA: u32 = 0x0010;
/// Column `Use Surplus`: `SurplusPolicy` (`-surplus`).
pub const SURPLUS: u32 = 0x0020;
/// Column `Subtree Quota`: `SubtreeQuota`.
pub const TREE_QUOTA: u32 = 0x0040;
/// Column `Effective Priority`: `Priority`.
pub const PRIORITY: u32 = 0x0080;
/// Column `Real Priority`: `Priority` over `PriorityFactor`.
pub const REAL_PRIO: u32 = 0x0100;
/// Column `Priority Factor`: `PriorityFactor`.
pub const FACTOR: u32 = 0x0200;
/// Column `Wghted In Use`: `WeightedResourcesUsed` (else `ResourcesUsed`).
pub const RES_USED: u32 = 0x0400;
/// Column `Total Usage (wghted-hrs)`: `WeightedAccumulatedUsage` in hours.
pub const WT_RES_USED: u32 = 0x0800;
/// Column `Usage Start Time`: `BeginUsageTime`.
pub const USE_TIME1: u32 = 0x1000;
/// Column `Last Usage Time`: `LastUsageTime`.
pub const USE_TIME2: u32 = 0x2000;
/// Column `Time Since Last Usage`: the last update less `LastUsageTime`.
pub const USE_DELTA_T: u32 = 0x4000;
/// Column `Weighted Requested`: `Requested`.
pub const REQUESTED: u32 = 0x8000;
/// Column `Submitter Ceiling`: `Ceiling`.
pub const CEILING: u32 = 0x10000;
/// Not a column: the record has a name (every record does).
pub(super) const NAME: u32 = 0x20000;

/// `-priority`: the priority columns.
pub const PRIOS: u32 = PRIORITY | FACTOR | REAL_PRIO;
/// The usage columns (`-usage` adds the usage times).
pub const USAGE: u32 = RES_USED | WT_RES_USED;
/// `-quotas`: the group quota columns.
pub const QUOTAS: u32 = EFF_QUOTA | CFG_QUOTA | TREE_QUOTA | SURPLUS | REQUESTED;
/// `-most`, and the columns shown when none are asked for.
pub const MOST: u32 =
    CFG_QUOTA | SURPLUS | PRIORITY | FACTOR | USAGE | USE_DELTA_T | REQUESTED | CEILING;
/// `-all`: every column but the group id, order and sort key.
pub const ALL: u32 = MOST | QUOTAS | PRIOS | USE_TIME1 | USE_TIME2;

/// One column: its flag, its width and its two-line heading.
pub(super) struct Column {
    /// The detail flag that shows it.
    pub flag: u32,
    /// Width in characters (headings are centred in it, cells padded to it).
    pub width: usize,
    /// The heading's first and second line.
    pub title: [&'static str; 2],
}

const fn column(flag: u32, width: usize, line1: &'static str, line2: &'static str) -> Column {
    Column {
        flag,
        width,
        title: [line1, line2],
    }
}

/// Every column, in display order.
pub(super) const COLUMNS: &[Column] = &[
    column(GROUP_ID, 5, "Group", "Id"),
    column(ORDER, 9, "Group", "Order"),
    column(SORT_KEY, 9, "Group", "Sort Key"),
    column(EFF_QUOTA, 9, "Effective", "Quota"),
    column(CFG_QUOTA, 9, "Config", "Quota"),
    column(SURPLUS, 7, "Use", "Surplus"),
    column(TREE_QUOTA, 9, "Subtree", "Quota"),
    column(PRIORITY, 12, "Effective", "Priority"),
    column(REAL_PRIO, 8, "Real", "Priority"),
    column(FACTOR, 9, "Priority", "Factor"),
    column(RES_USED, 6, "Wghted", "In Use"),
    column(WT_RES_USED, 12, "Total Usage", "(wghted-hrs)"),
    column(USE_TIME1, 16, "Usage", "Start Time"),
    column(USE_TIME2, 16, "Last", "Usage Time"),
    column(USE_DELTA_T, 10, "Time Since", "Last Usage"),
    column(REQUESTED, 10, "Weighted", "Requested"),
    column(CEILING, 9, "Submitter", "Ceiling"),
];

/// The columns `detail` shows, in display order.
pub(super) fn shown(detail: u32) -> impl Iterator<Item = &'static Column> {
    COLUMNS.iter().filter(move |c| c.flag & detail != 0)
}
