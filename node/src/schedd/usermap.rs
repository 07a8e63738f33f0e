//! HTCondor's ClassAd user map files (`CLASSAD_USER_MAPFILE_<name>`, read by the
//! `usermap()` ClassAd function; src/condor_utils/MapFile.cpp, `ParseCanonicalizationFile`),
//! pure: lines of three whitespace-separated fields, the method (`*` for user maps), the
//! principal (a literal name, or a regular expression between slashes, optionally followed by
//! `i` for a caseless match) and the mapped value (for an accounting-group map, one group or a
//! comma-separated list whose first entry is the default). A field may be quoted with `"`;
//! blank lines and lines whose first field starts with `#` are comments. The first line that
//! matches wins; `\1`..`\9` in the value name the regular expression's groups.
//!
//! HTCondor logs and skips a line it cannot read; Aerie refuses the whole file, naming the
//! file and the line, so a typo cannot silently leave users unmapped.
use regex::Regex;
use std::path::Path;

#[derive(Clone, Debug)]
enum Principal {
    Literal(String),
    Pattern(Regex),
}

#[derive(Clone, Debug)]
struct Entry {
    principal: Principal,
    value: String,
}

/// A user map: the `*` lines of a map file, in order.
#[derive(Clone, Debug, Default)]
pub struct UserMap {
    entries: Vec<Entry>,
}

/// One field of a map file line from byte `at`: its text and where the rest starts; `regex`
/// when the field may be a `/.../` expression (the principal), with its flags.
fn field(line: &str, at: usize, regex: bool) -> (String, usize, Option<String>) {
    let b = line.as_bytes();
    let mut i = at;
    while i < b.len() && matches!(b[i], b' ' | b'\t') {
        i += 1;
    }
    let end_ch = match b.get(i) {
        Some(b'"') => Some(b'"'),
        Some(b'/') if regex => Some(b'/'),
        _ => None,
    };
    let mut out = String::new();
    let Some(end) = end_ch else {
        let start = i;
        while i < b.len() && !matches!(b[i], b' ' | b'\t') {
            i += 1;
        }
        return (line[start..i].to_string(), i, None);
    };
    i += 1;
    let mut flags = None;
    let mut chars = line[i..].char_indices().peekable();
    let mut consumed = line.len();
    while let Some((k, c)) = chars.next() {
        if c as u32 == end as u32 {
            let mut j = i + k + 1;
            if end == b'/' {
                let mut f = String::new();
                while j < b.len() && matches!(b[j], b'i' | b'U') {
                    f.push(b[j] as char);
                    j += 1;
                }
                flags = Some(f);
            }
            consumed = j;
            break;
        }
        if c == '\\' {
            match chars.peek() {
                Some((_, n)) if *n as u32 == end as u32 => {
                    out.push(*n);
                    chars.next();
                    continue;
                }
                _ => {}
            }
        }
        out.push(c);
    }
    // An unterminated quote or expression runs to the end of the line, as HTCondor's.
    if end == b'/' && flags.is_none() {
        flags = Some(String::new());
    }
    (out, consumed, flags)
}

impl UserMap {
    /// Reads the map file at `path`.
    pub fn load(path: &Path) -> Result<UserMap, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("map file {}: {e}", path.display()))?;
        UserMap::parse(&text, &path.display().to_string())
    }

    /// Parses map file text; `source` names it in errors ("FILE, line N: ...").
    pub fn parse(text: &str, source: &str) -> Result<UserMap, String> {
        let mut entries = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let err = |m: String| format!("{source}, line {}: {m}", n + 1);
            let (method, at, _) = field(line, 0, false);
            if method.is_empty() || method.starts_with('#') {
                continue;
            }
            let (principal, at, flags) = field(line, at, true);
            let (value, _, _) = field(line, at, false);
            if principal.is_empty() || value.is_empty() {
                return Err(err(format!(
                    "expected three fields (method, user, value), found {line:?}"
                )));
            }
            if method != "*" {
                // Another method's line (a security map's): not a user map entry.
                continue;
            }
            let principal = match flags {
                Some(f) => {
                    let mut p = String::new();
                    if f.contains('i') {
                        p.push_str("(?i)");
                    }
                    if f.contains('U') {
                        p.push_str("(?U)");
                    }
                    p.push_str(&principal);
                    Principal::Pattern(
                        Regex::new(&p)
                            .map_err(|e| err(format!("regular expression /{principal}/: {e}")))?,
                    )
                }
                None => Principal::Literal(principal),
            };
            entries.push(Entry { principal, value });
        }
        Ok(UserMap { entries })
    }

    /// The value `user` maps to: the first matching line's, its `\N` replaced by the
    /// expression's groups.
    pub fn lookup(&self, user: &str) -> Option<String> {
        self.entries.iter().find_map(|e| match &e.principal {
            Principal::Literal(p) => (p == user).then(|| e.value.clone()),
            Principal::Pattern(re) => {
                let caps = re.captures(user)?;
                let mut out = String::new();
                let mut it = e.value.chars().peekable();
                while let Some(c) = it.next() {
                    match (c, it.peek().and_then(|d| d.to_digit(10))) {
                        ('\\', Some(g)) => {
                            it.next();
                            out.push_str(caps.get(g as usize).map_or("", |m| m.as_str()));
                        }
                        _ => out.push(c),
                    }
                }
                Some(out)
            }
        })
    }

    /// The 3-argument `usermap(map, user, preferred)`: the entry of `user`'s list equal to
    /// `preferred` ignoring case, else the list's first; `None` when `user` is not mapped or
    /// the list is empty (src/condor_utils/compat_classad.cpp, `userMap_func`).
    pub fn pick(&self, user: &str, preferred: Option<&str>) -> Option<String> {
        let list = self.lookup(user)?;
        let items: Vec<&str> = list
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .collect();
        preferred
            .and_then(|p| items.iter().find(|i| i.eq_ignore_ascii_case(p)))
            .or(items.first())
            .map(|s| s.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The seed's example (§1.12 of the seeds' inventory).
    const SEED: &str = "* Alice     group_physics\n\
                        * Bob       group_atlas\n\
                        * Carol group_physics\n\
                        * /^student_.*/     group_students\n";

    #[test]
    fn the_seed_map_maps_names_and_patterns() {
        let m = UserMap::parse(SEED, "groups.map").unwrap();
        assert_eq!(m.lookup("Alice").as_deref(), Some("group_physics"));
        assert_eq!(m.lookup("Bob").as_deref(), Some("group_atlas"));
        assert_eq!(m.lookup("Carol").as_deref(), Some("group_physics"));
        assert_eq!(m.lookup("student_17").as_deref(), Some("group_students"));
        // Literal names match exactly, as HTCondor's map files do.
        assert_eq!(m.lookup("alice"), None);
        assert_eq!(m.lookup("a_student_17"), None);
    }

    #[test]
    fn lists_give_the_preferred_group_or_the_first() {
        let m = UserMap::parse(
            "# groups\n\n* alice group_a,group_b,group_c\n* /^(.*)_ext$/i g_\\1\n",
            "m",
        )
        .unwrap();
        assert_eq!(m.pick("alice", None).as_deref(), Some("group_a"));
        assert_eq!(m.pick("alice", Some("GROUP_C")).as_deref(), Some("group_c"));
        assert_eq!(m.pick("alice", Some("group_z")).as_deref(), Some("group_a"));
        assert_eq!(m.pick("bob", Some("group_a")), None);
        assert_eq!(m.pick("bob_EXT", None).as_deref(), Some("g_bob"));
    }

    #[test]
    fn quoted_fields_other_methods_and_bad_lines() {
        let m = UserMap::parse("GSI \"/CN=x y\" x\n* \"a b\" g\n", "m").unwrap();
        assert_eq!(m.lookup("a b").as_deref(), Some("g"));
        assert_eq!(m.lookup("/CN=x y"), None);
        let e = UserMap::parse("* alice g\n* bob\n", "/etc/groups.map").unwrap_err();
        assert!(
            e.starts_with("/etc/groups.map, line 2: expected three fields"),
            "{e}"
        );
        let e = UserMap::parse("* /a(/ g\n", "m").unwrap_err();
        assert!(e.starts_with("m, line 1: regular expression /a(/"), "{e}");
    }
}
