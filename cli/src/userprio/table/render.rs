//! The layout of the table, as `condor_userprio`'s CollectInfo, ProcessInfo and PrintInfo
//! decide it: a row for each record, group numbering (submitters take their group's number
//! and order), which columns and rows show, the sort, then the heading, the group and
//! submitter rows and the footer with the totals.
use super::cells::{blank, center, date_cell, delta_cell, format_date, left, num, right};
use super::columns::*;
use aerie_core::accountant::AccountingRecord;

/// The widest the name column gets.
const MAX_NAME_WIDTH: usize = 99;
/// C's `FLT_MAX`: the order of the `<none>` group, which lists last.
const FLT_MAX: f64 = f32::MAX as f64;

/// Display options (the `condor_userprio` flags that shape the table).
#[derive(Debug, Clone)]
pub struct Opts {
    /// Requested columns; 0 means the default (`-most`).
    pub detail: u32,
    /// `-quotas` or `-surplus` given.
    pub dash_quota: bool,
    /// `-hierarchical`/`-flat`/`-grouporder` given.
    pub dash_hier: bool,
    /// Submitters under their groups (`-hierarchical`, the default) rather than one list.
    pub hier: bool,
    /// `-grouporder`: groups first, in the order of the accounting ad.
    pub group_order: bool,
    /// Show records last used at or after this time (-1: everyone).
    pub min_last_usage: i64,
}

impl Default for Opts {
    fn default() -> Self {
        Opts {
            detail: 0,
            dash_quota: false,
            dash_hier: false,
            hier: true,
            group_order: false,
            min_last_usage: -1,
        }
    }
}

/// A group's surplus policy as the `Use Surplus` column shows it.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Surplus {
    Unset,
    No,
    Regroup,
    ByQuota,
    Unknown,
}

impl Surplus {
    /// The `SurplusPolicy` attribute's value (any case).
    fn of(policy: &str) -> Surplus {
        match policy.to_ascii_lowercase().as_str() {
            "regroup" => Surplus::Regroup,
            "byquota" => Surplus::ByQuota,
            "no" => Surplus::No,
            _ => Surplus::Unknown,
        }
    }

    fn text(self) -> &'static str {
        match self {
            Surplus::Unset => "",
            Surplus::No => "no",
            Surplus::Regroup => "Regroup",
            Surplus::ByQuota => "ByQuota",
            Surplus::Unknown => "n/a",
        }
    }
}

/// One row: a record with the defaults of what it lacks and its place among the groups
/// (HTCondor's `LineRec`).
#[derive(Debug, Clone)]
struct Line {
    name: String,
    priority: f64,
    wt_res: f64,
    acc_usage: f64,
    requested: f64,
    factor: f64,
    begin_usage: i64,
    last_usage: i64,
    acct_group: String,
    is_group: bool,
    /// The columns the record has data for.
    has: u32,
    eff_quota: f64,
    cfg_quota: f64,
    subtree_quota: f64,
    ceiling: f64,
    sort_key: f64,
    surplus: Surplus,
    /// Position in the accounting ad, from 1.
    index: usize,
    /// 0 for `<none>` and its submitters, the group's number from 1 once numbered.
    group_id: i64,
    display_order: f64,
}

fn is_none_group(name: &str) -> bool {
    name == "<none>" || name == "."
}

impl Line {
    /// The row of record number `index` (from 1) of `n`.
    fn of(r: &AccountingRecord, index: usize, n: usize) -> Line {
        let is_group = r.is_accounting_group.unwrap_or(false);
        let factor = r.priority_factor.unwrap_or(0.0);
        let acct_group = r
            .accounting_group
            .clone()
            .unwrap_or_else(|| "<none>".into());
        let mut has = PRIORITY | NAME;
        for (present, columns) in [
            (r.priority_factor.is_some(), FACTOR),
            (factor > 0.0, REAL_PRIO),
            (r.weighted_accumulated_usage.is_some(), USAGE),
            (r.resources_used.is_some(), USAGE),
            (r.weighted_resources_used.is_some(), WT_RES_USED),
            (r.ceiling.is_some(), CEILING),
            (r.requested.is_some(), REQUESTED),
            (r.begin_usage_time.is_some(), USE_TIME1),
            (r.last_usage_time.is_some(), USE_TIME2 | USE_DELTA_T),
            (r.effective_quota.is_some(), EFF_QUOTA),
            (r.config_quota.is_some(), CFG_QUOTA),
        ] {
            if present {
                has |= columns;
            }
        }
        let mut group_id = 0;
        let mut surplus = Surplus::Unset;
        if is_group {
            if !is_none_group(&r.name) {
                group_id = -(index as i64);
            }
            if let Some(p) = &r.surplus_policy {
                has |= SURPLUS;
                surplus = Surplus::of(p);
            }
            if r.group_sort_key.is_some() {
                has |= SORT_KEY;
            }
            if r.subtree_quota.is_some() {
                has |= TREE_QUOTA;
            }
            // A group's priority means nothing to an admin: not shown.
            has &= !PRIORITY;
        } else if !is_none_group(&acct_group) {
            // In a group: Rows::number_groups gives it its group's number.
            group_id = -(n as i64) * 2;
        }
        if group_id != 0 {
            has |= GROUP_ID;
        }
        Line {
            name: r.name.clone(),
            priority: r.priority.unwrap_or(0.0),
            wt_res: r
                .weighted_resources_used
                .unwrap_or(r.resources_used.unwrap_or(0) as f64),
            acc_usage: r.weighted_accumulated_usage.unwrap_or(-1.0),
            requested: r.requested.unwrap_or(0.0),
            factor,
            begin_usage: r.begin_usage_time.unwrap_or(0),
            // condor_userprio reads a missing LastUsageTime as 0, and 0 as -1 ("never"): such
            // a row is past every -activefrom and shown only with -allusers.
            last_usage: match r.last_usage_time.unwrap_or(0) {
                0 => -1,
                t => t,
            },
            acct_group,
            is_group,
            has,
            eff_quota: r.effective_quota.unwrap_or(0.0),
            cfg_quota: r.config_quota.unwrap_or(0.0),
            subtree_quota: r.subtree_quota.unwrap_or(0.0),
            ceiling: r.ceiling.unwrap_or(-1.0),
            sort_key: if is_group {
                r.group_sort_key.unwrap_or(0.0)
            } else {
                0.0
            },
            surplus,
            index,
            group_id,
            display_order: 0.0,
        }
    }

    /// A group's order among the groups: by sort key or priority when priorities show, by
    /// usage when usage does, else by number; `<none>` last.
    fn group_order(&self, detail: u32, avail: u32) -> f64 {
        if detail & PRIORITY != 0 {
            if avail & SORT_KEY != 0 {
                self.sort_key
            } else if self.group_id != 0 {
                self.priority
            } else {
                FLT_MAX
            }
        } else if detail & USAGE != 0 {
            self.acc_usage / 3600.0
        } else if self.group_id != 0 {
            self.group_id as f64 as f32 as f64
        } else {
            FLT_MAX
        }
    }

    /// Takes the number and order of the group it is listed under.
    fn join(&mut self, group_id: i64, display_order: f64, has: u32) {
        self.group_id = group_id;
        self.display_order = display_order;
        self.has |= has & ORDER;
    }
}

/// How rows are sorted.
#[derive(Clone, Copy, PartialEq)]
enum RowOrder {
    /// By the first data column (priority, usage, else name).
    ByColumn1,
    /// Groups first in the ad's order (`-grouporder`).
    GroupsFirstByIndex,
    /// Each group followed by its submitters, groups by number.
    HierByGroupId,
    /// Each group followed by its submitters, groups by their order.
    HierByDisplayOrder,
    /// Groups first by name (to number them).
    GroupsFirstByName,
}

/// The sort: an order, whether `<none>` goes last, and the columns shown (which pick the key
/// within a group).
struct Sort {
    order: RowOrder,
    none_last: bool,
    detail: u32,
}

impl Sort {
    /// Whether `a` lists before `b`.
    fn less(&self, a: &Line, b: &Line) -> bool {
        let none_last = |a: &Line, b: &Line| -> Option<bool> {
            if !self.none_last {
                None
            } else if a.group_id == 0 {
                Some(false)
            } else if b.group_id == 0 {
                Some(true)
            } else {
                None
            }
        };
        match self.order {
            RowOrder::HierByGroupId | RowOrder::HierByDisplayOrder => {
                if a.group_id != b.group_id {
                    if let Some(x) = none_last(a, b) {
                        return x;
                    }
                    if self.order == RowOrder::HierByDisplayOrder
                        && a.display_order != b.display_order
                    {
                        return a.display_order < b.display_order;
                    }
                    return a.group_id < b.group_id;
                }
                if a.is_group != b.is_group {
                    return a.is_group;
                }
            }
            RowOrder::GroupsFirstByName => {
                if a.is_group != b.is_group {
                    return a.is_group;
                }
                if a.is_group {
                    return none_last(a, b).unwrap_or(a.name < b.name);
                }
            }
            RowOrder::GroupsFirstByIndex => {
                if a.is_group || b.is_group {
                    return a.index < b.index;
                }
            }
            RowOrder::ByColumn1 => {}
        }
        if self.detail & PRIORITY != 0 {
            a.priority < b.priority
        } else if self.detail & USAGE != 0 {
            a.acc_usage < b.acc_usage
        } else {
            a.name < b.name
        }
    }

    /// Sorts `v`, keeping equal rows in their order.
    fn apply(&self, v: &mut Vec<Line>) {
        sort_lines(v, &|a, b| self.less(a, b));
    }
}

/// A stable merge sort on a "less" predicate; never panics, whatever the predicate does.
fn sort_lines(v: &mut Vec<Line>, lt: &dyn Fn(&Line, &Line) -> bool) {
    if v.len() <= 1 {
        return;
    }
    let right = v.split_off(v.len() / 2);
    let mut left = std::mem::take(v);
    let mut right = right;
    sort_lines(&mut left, lt);
    sort_lines(&mut right, lt);
    let mut out = Vec::with_capacity(left.len() + right.len());
    let mut li = left.into_iter().peekable();
    let mut ri = right.into_iter().peekable();
    loop {
        match (li.peek(), ri.peek()) {
            (Some(l), Some(r)) => {
                if lt(r, l) {
                    out.push(ri.next().expect("peeked"));
                } else {
                    out.push(li.next().expect("peeked"));
                }
            }
            (Some(_), None) => out.push(li.next().expect("peeked")),
            (None, Some(_)) => out.push(ri.next().expect("peeked")),
            (None, None) => break,
        }
    }
    *v = out;
}

/// The rows, with what they say about the whole table (HTCondor's CollectInfo).
struct Rows {
    lines: Vec<Line>,
    /// The columns some record has data for.
    avail: u32,
    /// The footer's surplus policy: the last group's `regroup` or `byquota`.
    global_surplus: Surplus,
    /// Some submitter carries a quota.
    users_have_quotas: bool,
    /// Some submitter is in a group other than `<none>`, so groups need numbers.
    need_group_ids: bool,
}

impl Rows {
    fn collect(recs: &[AccountingRecord]) -> Rows {
        let n = recs.len();
        let lines: Vec<Line> = recs
            .iter()
            .enumerate()
            .map(|(i, r)| Line::of(r, i + 1, n))
            .collect();
        Rows {
            avail: lines.iter().fold(0, |a, l| a | l.has),
            global_surplus: lines
                .iter()
                .rev()
                .map(|l| l.surplus)
                .find(|s| matches!(s, Surplus::Regroup | Surplus::ByQuota))
                .unwrap_or(Surplus::Unset),
            users_have_quotas: lines
                .iter()
                .any(|l| !l.is_group && l.has & (EFF_QUOTA | CFG_QUOTA) != 0),
            need_group_ids: lines.iter().any(|l| !l.is_group && l.group_id != 0),
            lines,
        }
    }

    /// Numbers the groups 1, 2, ... by name (`<none>` keeps 0), gives each its order, and
    /// each submitter the number and order of its group (`<none>`'s submitters: those of the
    /// `<none>` group, else of the first row).
    fn number_groups(&mut self, detail: u32) {
        let sort = Sort {
            order: RowOrder::GroupsFirstByName,
            none_last: true,
            detail,
        };
        sort.apply(&mut self.lines);
        let groups = self.lines.iter().take_while(|l| l.is_group).count();
        let mut ix_none = 0;
        for (i, l) in self.lines[..groups].iter_mut().enumerate() {
            if l.group_id < 0 {
                l.group_id = i as i64 + 1;
            } else {
                ix_none = i;
            }
            l.display_order = l.group_order(detail, self.avail);
            l.has |= ORDER;
            self.avail |= ORDER;
        }
        let (none_order, none_has) = (self.lines[ix_none].display_order, self.lines[ix_none].has);
        let (group_lines, submitters) = self.lines.split_at_mut(groups);
        for l in submitters {
            if l.group_id >= 0 {
                l.join(l.group_id, none_order, none_has);
            } else if let Some(g) = group_lines.iter().find(|g| g.name == l.acct_group) {
                l.join(g.group_id, g.display_order, g.has);
            }
        }
    }
}

/// What the table shows (HTCondor's ProcessInfo and the flags before it).
struct Layout {
    /// The columns shown.
    detail: u32,
    /// Submitters under their groups.
    hier: bool,
    hide_groups: bool,
    hide_users: bool,
    /// Leave out the `<none>` group's row until another group's row shows.
    hide_none: bool,
    /// Leave out records last used before this.
    min_last: i64,
}

impl Layout {
    /// What the options ask for: priorities alone show no groups unless asked to.
    fn asked(opts: &Opts) -> Layout {
        let detail = if opts.detail == 0 { MOST } else { opts.detail };
        let mut hier = opts.hier;
        let mut hide_groups = false;
        if detail & !PRIOS == 0 {
            if !opts.dash_hier {
                hier = false;
            }
            hide_groups = !hier;
        }
        Layout {
            detail,
            hier,
            hide_groups,
            hide_users: false,
            hide_none: true,
            min_last: opts.min_last_usage,
        }
    }

    /// Columns without data anywhere are not shown (the quota columns unless `-quotas`).
    fn drop_empty_columns(&mut self, avail: u32, dash_quota: bool) {
        let mut without = |needs: u32, columns: u32| {
            if avail & needs == 0 {
                self.detail &= !columns;
            }
        };
        without(USAGE, USAGE);
        without(FACTOR, FACTOR);
        without(USE_TIME1, USE_TIME1);
        without(USE_TIME2, USE_TIME2 | USE_DELTA_T);
        if !dash_quota {
            without(QUOTAS, QUOTAS);
        }
    }

    /// Once groups are numbered: no hierarchy when no shown row is in a group, no quota
    /// columns when they say nothing, no submitter rows when only quotas show. Returns the
    /// sort.
    fn settle(&mut self, rows: &Rows, opts: &Opts) -> Sort {
        let all_users_in_none = !rows
            .lines
            .iter()
            .any(|l| l.last_usage >= self.min_last && l.group_id > 0);
        self.hide_none = all_users_in_none;
        if rows.avail & GROUP_ID == 0 || all_users_in_none {
            self.hier = false;
        }
        let quiet_quotas = !opts.dash_quota && !rows.users_have_quotas;
        if (self.hide_groups || all_users_in_none) && quiet_quotas {
            self.detail &= !QUOTAS;
        }
        if self.detail & QUOTAS != 0 && self.detail & !QUOTAS == 0 && !rows.users_have_quotas {
            self.hide_users = true;
        }
        let (order, none_last) = if self.hier {
            let order = if self.detail & (PRIORITY | USAGE) != 0 {
                RowOrder::HierByDisplayOrder
            } else {
                RowOrder::HierByGroupId
            };
            (order, rows.global_surplus == Surplus::Regroup)
        } else if opts.group_order {
            (RowOrder::GroupsFirstByIndex, false)
        } else {
            (RowOrder::ByColumn1, false)
        };
        Sort {
            order,
            none_last,
            detail: self.detail,
        }
    }
}

/// Renders the table. `last_update` is the time of the last priority update (Unix seconds).
pub fn render(recs: &[AccountingRecord], opts: &Opts, last_update: i64) -> String {
    if recs.is_empty() {
        return String::new();
    }
    let mut rows = Rows::collect(recs);
    let mut layout = Layout::asked(opts);
    layout.drop_empty_columns(rows.avail, opts.dash_quota);
    if rows.need_group_ids {
        rows.number_groups(layout.detail);
    }
    layout.settle(&rows, opts).apply(&mut rows.lines);
    let table = Table::new(&layout, &rows.lines, recs.len(), last_update);
    let mut out = table.heading(&layout);
    let mut totals = Totals::default();
    let mut hide_none = layout.hide_none;
    for l in rows
        .lines
        .iter()
        .filter(|l| l.last_usage >= layout.min_last)
    {
        if l.is_group {
            if layout.hide_groups || (!layout.hier && hide_none && l.group_id == 0) {
                continue;
            }
            hide_none = false;
            out.push_str(&table.group_row(l));
        } else {
            totals.users += 1;
            if layout.hide_users {
                continue;
            }
            out.push_str(&table.submitter_row(l));
            totals.weighted_in_use += l.wt_res;
            totals.usage += l.acc_usage;
        }
    }
    out.push_str(&table.rule());
    out.push_str(&table.totals(&totals, rows.global_surplus, layout.min_last));
    out
}

/// The footer's sums over the submitters listed.
#[derive(Default)]
struct Totals {
    /// Submitters shown (counted even when their rows are hidden).
    users: usize,
    weighted_in_use: f64,
    /// Weighted seconds.
    usage: f64,
}

/// The printed table: its columns, the width of the name column and the time it is as of.
struct Table {
    cols: Vec<&'static Column>,
    name_width: usize,
    hier: bool,
    last_update: i64,
}

impl Table {
    /// The name column fits the longest shown name (a submitter's without its group's prefix
    /// under the hierarchy), at least 10, at most 99, and at least the footer's "Number of
    /// users: N" for all `n` records.
    fn new(layout: &Layout, lines: &[Line], n: usize, last_update: i64) -> Table {
        let longest = lines
            .iter()
            .filter(|l| l.last_usage >= layout.min_last)
            .map(|l| {
                let mut len = l.name.chars().count() as i64;
                if layout.hier && !l.is_group {
                    len += 2;
                    if l.group_id != 0 {
                        len -= l.acct_group.chars().count() as i64;
                    }
                }
                len.max(0) as usize
            })
            .fold(10, usize::max);
        let count = format!("Number of users: {n}").len();
        let mut name_width = longest.min(MAX_NAME_WIDTH).max(count);
        if layout.hier {
            name_width += 2;
        }
        Table {
            cols: shown(layout.detail).collect(),
            name_width,
            hier: layout.hier,
            last_update,
        }
    }

    /// One line: `first` (already as wide as the name column), then a cell per column.
    fn line(&self, first: &str, cell: impl Fn(&Column) -> String) -> String {
        let mut line = first.to_string();
        for c in &self.cols {
            line.push(' ');
            line.push_str(&cell(c));
        }
        line.push('\n');
        line
    }

    /// The last update, the two heading lines and the rule under them.
    fn heading(&self, layout: &Layout) -> String {
        let w = self.name_width;
        let title = match (layout.hide_users, layout.hier) {
            (true, true) => "Name",
            (true, false) => "Group Name",
            (false, true) => "  User Name",
            (false, false) => "User Name",
        };
        let group = if layout.hier { "Group" } else { "" };
        format!("Last Priority Update: {}\n", format_date(self.last_update))
            + &self.line(&left(group, w), |c| center(c.title[0], c.width))
            + &self.line(&left(title, w), |c| center(c.title[1], c.width))
            + &self.rule()
    }

    /// Dashes under each column.
    fn rule(&self) -> String {
        self.line(&"-".repeat(self.name_width), |c| "-".repeat(c.width))
    }

    /// A group's row: its full name; `n/d` for the group columns it has no data for.
    fn group_row(&self, l: &Line) -> String {
        self.line(&left(&l.name, self.name_width), |c| {
            if l.has & c.flag == 0 && c.flag & (QUOTAS | SORT_KEY) != 0 {
                right("n/d", c.width)
            } else {
                self.cell(l, c)
            }
        })
    }

    /// A submitter's row: under the hierarchy, indented and without its group's prefix.
    fn submitter_row(&self, l: &Line) -> String {
        let name = if !self.hier {
            left(&l.name, self.name_width)
        } else {
            let short = if l.group_id > 0 {
                l.name.get(l.acct_group.len() + 1..).unwrap_or("")
            } else {
                l.name.as_str()
            };
            format!("  {}", left(short, self.name_width.saturating_sub(2)))
        };
        self.line(&name, |c| self.cell(l, c))
    }

    /// The row's value in column `c` (blank when it has no data for it).
    fn cell(&self, l: &Line, c: &Column) -> String {
        let w = c.width;
        if l.has & c.flag == 0 {
            return blank(w);
        }
        match c.flag {
            GROUP_ID => num(l.group_id as f64, w, 0),
            ORDER => num(l.display_order, w, 2),
            SURPLUS => left(
                if l.group_id != 0 {
                    l.surplus.text()
                } else {
                    "yes"
                },
                w,
            ),
            EFF_QUOTA => num(l.eff_quota, w, 2),
            CFG_QUOTA => num(l.cfg_quota, w, 2),
            TREE_QUOTA => num(l.subtree_quota, w, 2),
            SORT_KEY if l.sort_key < 3.40282001e38 => num(l.sort_key, w, 2),
            SORT_KEY => right("<last>", w),
            PRIORITY => num(l.priority, w, 2),
            REAL_PRIO if l.factor > 0.0 => num(l.priority / l.factor, w, 2),
            REAL_PRIO => num(0.0, w, 2),
            FACTOR if l.factor > 0.0 => num(l.factor, w, 2),
            RES_USED => num(l.wt_res, w, 0),
            REQUESTED => num(l.requested, w, 0),
            WT_RES_USED => num(l.acc_usage / 3600.0, w, 2),
            USE_TIME1 => date_cell(l.begin_usage, w),
            USE_TIME2 => date_cell(l.last_usage, w),
            USE_DELTA_T => delta_cell(self.last_update - l.last_usage, w),
            CEILING if l.ceiling > -1.0 => num(l.ceiling, w, 2),
            _ => blank(w),
        }
    }

    /// The footer: the number of submitters, the surplus policy, the usage totals and the
    /// time the table starts from (`-activefrom`, one day ago by default).
    fn totals(&self, t: &Totals, surplus: Surplus, min_last: i64) -> String {
        let first = left(&format!("Number of users: {}", t.users), self.name_width);
        self.line(&first, |c| {
            let w = c.width;
            match c.flag {
                SURPLUS => left(surplus.text(), w),
                RES_USED => num(t.weighted_in_use, w, 0),
                WT_RES_USED => num(t.usage / 3600.0, w, 2),
                USE_TIME1 => date_cell(0, w),
                USE_TIME2 => date_cell(min_last, w),
                USE_DELTA_T if min_last > 0 => delta_cell(self.last_update - min_last, w),
                _ => blank(w),
            }
        })
    }
}
