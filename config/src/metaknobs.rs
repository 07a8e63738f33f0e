//! The metaknob templates of `use CATEGORY : TEMPLATE(args)`. The template texts are those of
//! HTCondor 23.9.6, as its `condor_config_val use CATEGORY:TEMPLATE` prints them (a data table,
//! `data/htcondor-23.9.6-metaknobs.txt`); they are parsed with the ordinary config syntax after
//! their `$(N)` arguments are filled in.
use std::collections::HashMap;
use std::sync::OnceLock;

const DATA: &str = include_str!("data/htcondor-23.9.6-metaknobs.txt");

/// One template.
#[derive(Debug, Clone)]
pub struct Template {
    /// Category as HTCondor names it in messages (upper case): `ROLE`, `FEATURE`, `POLICY`, `SECURITY`.
    pub category: String,
    /// Template name as HTCondor spells it (`CentralManager`).
    pub name: String,
    /// The template text, one statement per line.
    pub text: String,
}

struct Table {
    by_key: HashMap<(String, String), Template>,
    categories: Vec<String>,
}

fn table() -> &'static Table {
    static T: OnceLock<Table> = OnceLock::new();
    T.get_or_init(|| {
        let mut by_key = HashMap::new();
        let mut categories: Vec<String> = Vec::new();
        let mut current: Option<Template> = None;
        for line in DATA.lines() {
            if let Some(h) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
                if let Some(t) = current.take() {
                    by_key.insert(
                        (t.category.to_ascii_uppercase(), t.name.to_ascii_uppercase()),
                        t,
                    );
                }
                let (cat, name) = h.split_once(':').unwrap_or((h, ""));
                if !categories.iter().any(|c| c.eq_ignore_ascii_case(cat)) {
                    categories.push(cat.to_string());
                }
                current = Some(Template {
                    category: cat.to_ascii_uppercase(),
                    name: name.to_string(),
                    text: String::new(),
                });
            } else if let Some(t) = current.as_mut() {
                t.text.push_str(line);
                t.text.push('\n');
            }
        }
        if let Some(t) = current.take() {
            by_key.insert(
                (t.category.to_ascii_uppercase(), t.name.to_ascii_uppercase()),
                t,
            );
        }
        Table { by_key, categories }
    })
}

/// True if `category` is a metaknob category (case-insensitive).
pub fn is_category(category: &str) -> bool {
    table()
        .categories
        .iter()
        .any(|c| c.eq_ignore_ascii_case(category))
}

/// The template `category:name` (both case-insensitive).
pub fn lookup(category: &str, name: &str) -> Option<&'static Template> {
    table()
        .by_key
        .get(&(category.to_ascii_uppercase(), name.to_ascii_uppercase()))
}

/// Names of the templates of a category, sorted case-insensitively.
pub fn templates(category: &str) -> Vec<&'static str> {
    let mut v: Vec<&str> = table()
        .by_key
        .values()
        .filter(|t| t.category.eq_ignore_ascii_case(category))
        .map(|t| t.name.as_str())
        .collect();
    v.sort_by_key(|n| n.to_ascii_lowercase());
    v
}

/// One `name(args)` item of a `use` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UseItem {
    pub name: String,
    pub args: Option<String>,
}

/// Splits the right-hand side of a `use` line into templates: names separated by commas
/// and/or whitespace, each optionally followed by `(args)` (nested `()` and `[]` allowed).
pub(crate) fn parse_use_list(rhs: &str) -> Vec<UseItem> {
    let b = rhs.as_bytes();
    let mut i = 0;
    let mut out = Vec::new();
    loop {
        while i < b.len() && (b[i].is_ascii_whitespace() || b[i] == b',') {
            i += 1;
        }
        let start = i;
        while i < b.len() && !b[i].is_ascii_whitespace() && b[i] != b',' && b[i] != b'(' {
            i += 1;
        }
        if i == start {
            break;
        }
        let name = rhs[start..i].to_string();
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        let mut args = None;
        if i < b.len() && b[i] == b'(' {
            if let Some(close) = close_paren(b, i, 25) {
                args = Some(rhs[i + 1..close].to_string());
                i = close;
            }
            i += 1;
        }
        out.push(UseItem { name, args });
    }
    out
}

fn close_paren(b: &[u8], open: usize, depth: u32) -> Option<usize> {
    if depth == 0 {
        return None;
    }
    let close = match b[open] {
        b'(' => b')',
        b'[' => b']',
        _ => return None,
    };
    let mut i = open + 1;
    while i < b.len() {
        if b[i] == close {
            return Some(i);
        }
        if b[i] == b'(' || b[i] == b'[' {
            i = close_paren(b, i, depth - 1)?;
        }
        i += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_has_the_templates_the_seeds_name() {
        assert!(
            is_category("role")
                && is_category("FEATURE")
                && is_category("Policy")
                && is_category("security")
        );
        let cm = lookup("ROLE", "centralmanager").unwrap();
        assert_eq!(cm.name, "CentralManager");
        assert_eq!(
            cm.text.trim(),
            "DAEMON_LIST=$(DAEMON_LIST) COLLECTOR NEGOTIATOR"
        );
        for (c, n) in [
            ("ROLE", "Execute"),
            ("ROLE", "Submit"),
            ("ROLE", "Personal"),
            ("FEATURE", "PartitionableSlot"),
            ("FEATURE", "AssignAccountingGroup"),
            ("FEATURE", "GPUs"),
            ("FEATURE", "ganglia"),
            ("FEATURE", "adstash"),
            ("POLICY", "Always_Run_Jobs"),
            ("POLICY", "Desktop"),
            ("POLICY", "UWCS_Desktop"),
            ("POLICY", "Preempt_If"),
        ] {
            assert!(lookup(c, n).is_some(), "{c}:{n}");
        }
        assert!(lookup("ROLE", "Bogus").is_none());
        assert_eq!(templates("role").len(), 7);
    }

    #[test]
    fn use_lists() {
        assert_eq!(
            parse_use_list(" Execute Submit, PartitionableSlot(2, cpus=4) GPUs(x(y), [z])"),
            vec![
                UseItem {
                    name: "Execute".into(),
                    args: None
                },
                UseItem {
                    name: "Submit".into(),
                    args: None
                },
                UseItem {
                    name: "PartitionableSlot".into(),
                    args: Some("2, cpus=4".into())
                },
                UseItem {
                    name: "GPUs".into(),
                    args: Some("x(y), [z]".into())
                },
            ]
        );
    }
}
