//! The layout of the table: which rows show, how groups and their submitters are numbered
//! and ordered, the sort, the headings, the rows and the footer.
use super::cells::{center, date_cell, delta_cell, format_date, left, num, right};
use super::columns::*;
use aerie_core::accountant::AccountingRecord;

const MAX_NAME_WIDTH: usize = 99;
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
    pub hier: bool,
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

#[derive(Debug, Clone, Copy, PartialEq)]
enum Surplus {
    Unset,
    No,
    Regroup,
    ByQuota,
    Unknown,
}

impl Surplus {
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
    has: u32,
    eff_quota: f64,
    cfg_quota: f64,
    subtree_quota: f64,
    ceiling: f64,
    sort_key: f64,
    surplus: Surplus,
    index: usize,
    group_id: i64,
    display_order: f64,
}

#[derive(Clone, Copy, PartialEq)]
enum Order {
    ByColumn1,
    GroupsFirstByIndex,
    HierByGroupId,
    HierByDisplayOrder,
    GroupsFirstByName,
}

fn less(a: &Line, b: &Line, detail: u32, order: Order, none_last: bool) -> bool {
    match order {
        Order::HierByGroupId | Order::HierByDisplayOrder => {
            if a.group_id != b.group_id {
                if none_last {
                    if a.group_id == 0 {
                        return false;
                    }
                    if b.group_id == 0 {
                        return true;
                    }
                }
                if order == Order::HierByDisplayOrder && a.display_order != b.display_order {
                    return a.display_order < b.display_order;
                }
                return a.group_id < b.group_id;
            }
            if a.is_group != b.is_group {
                return a.is_group;
            }
        }
        Order::GroupsFirstByName => {
            if a.is_group != b.is_group {
                return a.is_group;
            }
            if a.is_group {
                if none_last {
                    if a.group_id == 0 {
                        return false;
                    }
                    if b.group_id == 0 {
                        return true;
                    }
                }
                return a.name < b.name;
            }
        }
        Order::GroupsFirstByIndex => {
            if a.is_group || b.is_group {
                return a.index < b.index;
            }
        }
        Order::ByColumn1 => {}
    }
    if detail & PRIORITY != 0 {
        a.priority < b.priority
    } else if detail & USAGE != 0 {
        a.acc_usage < b.acc_usage
    } else {
        a.name < b.name
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

fn is_none_group(name: &str) -> bool {
    name == "<none>" || name == "."
}

/// Renders the table. `last_update` is the time of the last priority update (Unix seconds).
pub fn render(recs: &[AccountingRecord], opts: &Opts, last_update: i64) -> String {
    let mut out = String::new();
    let n = recs.len();
    if n == 0 {
        return out;
    }
    let mut detail = if opts.detail == 0 { MOST } else { opts.detail };
    let mut hier = opts.hier;
    let mut hide_groups = false;
    let mut hide_users = false;
    if detail & !PRIOS == 0 {
        if !opts.dash_hier {
            hier = false;
        }
        hide_groups = !hier;
    }
    let min_last = opts.min_last_usage;

    // Collect.
    let mut global_surplus = Surplus::Unset;
    let mut avail = 0u32;
    let mut users_have_quotas = false;
    let mut need_fixup = false;
    let mut lines: Vec<Line> = Vec::with_capacity(n);
    for (i0, r) in recs.iter().enumerate() {
        let i = i0 + 1;
        let mut has = PRIORITY | NAME;
        let is_group = r.is_accounting_group.unwrap_or(false);
        let factor = r.priority_factor.unwrap_or(0.0);
        if r.priority_factor.is_some() {
            has |= FACTOR;
            if factor > 0.0 {
                has |= REAL_PRIO;
            }
        }
        if r.weighted_accumulated_usage.is_some() {
            has |= USAGE;
        }
        if r.ceiling.is_some() {
            has |= CEILING;
        }
        if r.requested.is_some() {
            has |= REQUESTED;
        }
        if r.begin_usage_time.is_some() {
            has |= USE_TIME1;
        }
        if r.last_usage_time.is_some() {
            has |= USE_TIME2 | USE_DELTA_T;
        }
        if r.resources_used.is_some() {
            has |= USAGE;
        }
        let wt_res = match r.weighted_resources_used {
            Some(w) => {
                has |= WT_RES_USED;
                w
            }
            None => r.resources_used.unwrap_or(0) as f64,
        };
        let acct_group = r
            .accounting_group
            .clone()
            .unwrap_or_else(|| "<none>".into());
        if r.effective_quota.is_some() {
            has |= EFF_QUOTA;
        }
        if r.config_quota.is_some() {
            has |= CFG_QUOTA;
        }
        let mut group_id = 0i64;
        let mut surplus = Surplus::Unset;
        let mut sort_key = 0.0;
        if is_group {
            group_id = -(i as i64);
            if is_none_group(&r.name) {
                group_id = 0;
            }
            if let Some(p) = &r.surplus_policy {
                has |= SURPLUS;
                surplus = match p.to_ascii_lowercase().as_str() {
                    "regroup" => {
                        global_surplus = Surplus::Regroup;
                        Surplus::Regroup
                    }
                    "byquota" => {
                        global_surplus = Surplus::ByQuota;
                        Surplus::ByQuota
                    }
                    "no" => Surplus::No,
                    _ => Surplus::Unknown,
                };
            }
            if let Some(k) = r.group_sort_key {
                has |= SORT_KEY;
                sort_key = k;
            }
            if r.subtree_quota.is_some() {
                has |= TREE_QUOTA;
            }
            // A group's priority means nothing to an admin: not shown.
            has &= !PRIORITY;
        } else {
            if !is_none_group(&acct_group) {
                group_id = -(n as i64) * 2;
                need_fixup = true;
            }
            if has & (EFF_QUOTA | CFG_QUOTA) != 0 {
                users_have_quotas = true;
            }
        }
        if group_id != 0 {
            has |= GROUP_ID;
        }
        let mut last_usage = r.last_usage_time.unwrap_or(min_last);
        if last_usage == 0 {
            last_usage = -1;
        }
        avail |= has;
        lines.push(Line {
            name: r.name.clone(),
            priority: r.priority.unwrap_or(0.0),
            wt_res,
            acc_usage: r.weighted_accumulated_usage.unwrap_or(-1.0),
            requested: r.requested.unwrap_or(0.0),
            factor,
            begin_usage: r.begin_usage_time.unwrap_or(0),
            last_usage,
            acct_group,
            is_group,
            has,
            eff_quota: r.effective_quota.unwrap_or(0.0),
            cfg_quota: r.config_quota.unwrap_or(0.0),
            subtree_quota: r.subtree_quota.unwrap_or(0.0),
            ceiling: r.ceiling.unwrap_or(-1.0),
            sort_key,
            surplus,
            index: i,
            group_id,
            display_order: 0.0,
        });
    }
    // Columns without data anywhere are not shown.
    if avail & USAGE == 0 {
        detail &= !USAGE;
    }
    if avail & FACTOR == 0 {
        detail &= !FACTOR;
    }
    if avail & USE_TIME1 == 0 {
        detail &= !USE_TIME1;
    }
    if avail & USE_TIME2 == 0 {
        detail &= !(USE_TIME2 | USE_DELTA_T);
    }
    if !opts.dash_quota && avail & QUOTAS == 0 {
        detail &= !QUOTAS;
    }

    if need_fixup {
        let d = detail;
        sort_lines(&mut lines, &|a, b| {
            less(a, b, d, Order::GroupsFirstByName, true)
        });
        let mut groups = 0usize;
        let mut ix_none = 0usize;
        for i in 0..lines.len() {
            if !lines[i].is_group {
                break;
            }
            groups += 1;
            if lines[i].group_id < 0 {
                lines[i].group_id = groups as i64;
            } else {
                ix_none = i;
            }
            let l = &mut lines[i];
            l.display_order = if detail & PRIORITY != 0 {
                if avail & SORT_KEY != 0 {
                    l.sort_key
                } else if l.group_id != 0 {
                    l.priority
                } else {
                    FLT_MAX
                }
            } else if detail & USAGE != 0 {
                l.acc_usage / 3600.0
            } else if l.group_id != 0 {
                l.group_id as f64 as f32 as f64
            } else {
                FLT_MAX
            };
            l.has |= ORDER;
            avail |= ORDER;
        }
        for i in groups..lines.len() {
            if lines[i].group_id >= 0 {
                if ix_none < lines.len() {
                    lines[i].display_order = lines[ix_none].display_order;
                    lines[i].has |= lines[ix_none].has & ORDER;
                }
                continue;
            }
            if let Some(j) = (0..groups).find(|&j| lines[j].name == lines[i].acct_group) {
                lines[i].group_id = lines[j].group_id;
                lines[i].display_order = lines[j].display_order;
                lines[i].has |= lines[j].has & ORDER;
            }
        }
    }

    // ProcessInfo.
    let mut hide_none_if_possible = true;
    let mut all_users_in_none = true;
    for l in &lines {
        if l.last_usage < min_last {
            continue;
        }
        if l.group_id > 0 {
            all_users_in_none = false;
            hide_none_if_possible = false;
            break;
        }
    }
    if avail & GROUP_ID == 0 || (hide_none_if_possible && all_users_in_none) {
        hier = false;
    }
    if (hide_groups || all_users_in_none) && !opts.dash_quota && !users_have_quotas {
        detail &= !QUOTAS;
    }
    if detail & QUOTAS != 0 && detail & !QUOTAS == 0 && !users_have_quotas {
        hide_users = true;
    }
    let mut order = Order::ByColumn1;
    let mut none_last = false;
    if hier {
        none_last = global_surplus == Surplus::Regroup;
        order = if detail & (PRIORITY | USAGE) != 0 {
            Order::HierByDisplayOrder
        } else {
            Order::HierByGroupId
        };
    } else if opts.group_order {
        order = Order::GroupsFirstByIndex;
    }
    let d = detail;
    sort_lines(&mut lines, &|a, b| less(a, b, d, order, none_last));

    // PrintInfo.
    let mut max_name = 10usize;
    for l in &lines {
        if l.last_usage >= min_last {
            let mut len = l.name.chars().count() as i64;
            if hier && !l.is_group {
                len += 2;
                if l.group_id != 0 {
                    len -= l.acct_group.chars().count() as i64;
                }
            }
            max_name = max_name.max(len.max(0) as usize);
        }
    }
    out.push_str(&format!(
        "Last Priority Update: {}\n",
        format_date(last_update)
    ));
    let count_str = format!("Number of users: {n}");
    max_name = max_name.min(MAX_NAME_WIDTH).max(count_str.len());
    if hier {
        max_name += 2;
    }
    let cols: Vec<&(u32, usize, &str, &str)> =
        COLUMNS.iter().filter(|c| c.0 & detail != 0).collect();
    let mut line = left(if hier { "Group" } else { "" }, max_name);
    for c in &cols {
        line.push(' ');
        line.push_str(&center(c.2, c.1));
    }
    out.push_str(&line);
    out.push('\n');
    let title2 = match (hide_users, hier) {
        (true, true) => "Name",
        (true, false) => "Group Name",
        (false, true) => "  User Name",
        (false, false) => "User Name",
    };
    let mut line = left(title2, max_name);
    for c in &cols {
        line.push(' ');
        line.push_str(&center(c.3, c.1));
    }
    out.push_str(&line);
    out.push('\n');
    let dashes = |out: &mut String| {
        let mut line = "-".repeat(max_name);
        for c in &cols {
            line.push(' ');
            line.push_str(&"-".repeat(c.1));
        }
        out.push_str(&line);
        out.push('\n');
    };
    dashes(&mut out);

    let mut users = 0usize;
    let (mut tot_wt, mut tot_acc) = (0.0f64, 0.0f64);
    for l in &lines {
        if l.last_usage < min_last {
            continue;
        }
        if !l.is_group {
            users += 1;
            if hide_users {
                continue;
            }
        } else {
            if hide_groups || (!hier && hide_none_if_possible && l.group_id == 0) {
                continue;
            }
            hide_none_if_possible = false;
        }
        let mut line = if !hier || l.is_group {
            left(&l.name, max_name)
        } else {
            let short = if l.group_id > 0 {
                l.name.get(l.acct_group.len() + 1..).unwrap_or("")
            } else {
                l.name.as_str()
            };
            format!("  {}", left(short, max_name.saturating_sub(2)))
        };
        for &&(flag, w, _, _) in &cols {
            line.push(' ');
            if l.has & flag == 0 {
                if l.is_group && flag & (QUOTAS | SORT_KEY) != 0 {
                    line.push_str(&right("n/d", w));
                } else {
                    line.push_str(&" ".repeat(w));
                }
                continue;
            }
            let cell = match flag {
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
                SORT_KEY => {
                    if l.sort_key < 3.40282001e38 {
                        num(l.sort_key, w, 2)
                    } else {
                        right("<last>", w)
                    }
                }
                PRIORITY => num(l.priority, w, 2),
                REAL_PRIO => num(
                    if l.factor > 0.0 {
                        l.priority / l.factor
                    } else {
                        0.0
                    },
                    w,
                    2,
                ),
                FACTOR => {
                    if l.factor > 0.0 {
                        num(l.factor, w, 2)
                    } else {
                        " ".repeat(w)
                    }
                }
                RES_USED => num(l.wt_res, w, 0),
                REQUESTED => num(l.requested, w, 0),
                WT_RES_USED => num(l.acc_usage / 3600.0, w, 2),
                USE_TIME1 => date_cell(l.begin_usage, w),
                USE_TIME2 => date_cell(l.last_usage, w),
                USE_DELTA_T => delta_cell(last_update - l.last_usage, w),
                CEILING => {
                    if l.ceiling > -1.0 {
                        num(l.ceiling, w, 2)
                    } else {
                        " ".repeat(w)
                    }
                }
                _ => " ".repeat(w),
            };
            line.push_str(&cell);
        }
        out.push_str(&line);
        out.push('\n');
        if !l.is_group {
            tot_wt += l.wt_res;
            tot_acc += l.acc_usage;
        }
    }
    dashes(&mut out);
    let mut line = left(&format!("Number of users: {users}"), max_name);
    for &&(flag, w, _, _) in &cols {
        line.push(' ');
        let cell = match flag {
            SURPLUS => left(global_surplus.text(), w),
            RES_USED => num(tot_wt, w, 0),
            WT_RES_USED => num(tot_acc / 3600.0, w, 2),
            USE_TIME1 => date_cell(0, w),
            USE_TIME2 => date_cell(min_last, w),
            USE_DELTA_T => {
                if min_last <= 0 {
                    " ".repeat(w)
                } else {
                    delta_cell(last_update - min_last, w)
                }
            }
            _ => " ".repeat(w),
        };
        line.push_str(&cell);
    }
    out.push_str(&line);
    out.push('\n');
    out
}
