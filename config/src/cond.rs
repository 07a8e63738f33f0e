//! `if` / `elif` conditions, as HTCondor 23.9.6 evaluates them: a number (non-zero is true),
//! `true`/`false`/`yes`/`no`/`t`/`f`, `defined NAME`, `defined use CATEGORY[:TEMPLATE]`,
//! `version <op> X.Y[.Z]`, each optionally negated with `!`, after macro expansion (a value that
//! expands to nothing is false). Anything else, comparisons of numbers included, is rejected
//! with HTCondor's own reason ("complex conditionals are not supported"), so a file Aerie
//! accepts is a file HTCondor accepts.

/// The HTCondor version `if version ...` compares against.
pub const HTCONDOR_VERSION: (i64, i64, i64) = (23, 9, 6);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    Empty,
    Number,
    Bool,
    Identifier,
    Version,
    IfDef,
    Macro,
    Complex,
}

fn matches_literal(s: &str, lit: &str, no_trailing: bool) -> bool {
    let t = s.trim_start_matches(|c: char| c.is_ascii_whitespace());
    let Some(head) = t.get(..lit.len()) else {
        return false;
    };
    if !head.eq_ignore_ascii_case(lit) {
        return false;
    }
    let rest = &t[lit.len()..];
    if no_trailing {
        rest.trim().is_empty()
    } else {
        !rest
            .as_bytes()
            .first()
            .is_some_and(|c| c.is_ascii_alphanumeric())
    }
}

const SPACE: u32 = 0x01;
const DIGIT: u32 = 0x02;
const ALPHA: u32 = 0x04;
const IDENT: u32 = 0x08;
const CMP: u32 = 0x10;
const SUM: u32 = 0x20;
const LOGIC: u32 = 0x40;
const GROUP: u32 = 0x80;
const MONEY: u32 = 0x100;
const COLON: u32 = 0x200;
const OTHER: u32 = 0x400;
const FLOAT: u32 = 0x1000;
const MACRO: u32 = 0x2000;

fn characterize(expr: &str, keyword_check: bool) -> Class {
    let e = expr.trim_start_matches(|c: char| c.is_ascii_whitespace());
    if e.is_empty() {
        return Class::Empty;
    }
    let begin = e;
    let b = e.as_bytes();
    let mut i = if b[0] == b'-' { 1 } else { 0 };
    let mut set = 0u32;
    while i < b.len() {
        let ch = b[i];
        i += 1;
        let next = b.get(i).copied();
        match ch {
            b'0'..=b'9' => set |= DIGIT,
            b'.' => {
                if set == DIGIT || next.is_none() || next.is_some_and(|c| c.is_ascii_digit()) {
                    set |= FLOAT
                } else {
                    set |= IDENT
                }
            }
            b'e' | b'E' => {
                if set & !FLOAT == DIGIT {
                    set |= FLOAT
                } else {
                    set |= ALPHA
                }
            }
            b'-' | b'+' => {
                if set != DIGIT | FLOAT {
                    set |= SUM
                }
            }
            b'a'..=b'z' | b'A'..=b'Z' => set |= ALPHA,
            b'_' | b'/' => set |= IDENT,
            b'<'..=b'>' => set |= CMP,
            b'!' if next == Some(b'=') => set |= CMP,
            b'$' => {
                set |= MONEY;
                if next == Some(b'(') {
                    set |= MACRO
                }
            }
            c if c.is_ascii_whitespace() => {
                if next.is_some_and(|n| !n.is_ascii_whitespace()) {
                    set |= SPACE
                }
            }
            b'&' | b'|' => set |= LOGIC,
            b'{'..=b'}' | b'(' | b')' | b'[' | b']' => set |= GROUP,
            b':' => set |= COLON,
            _ => set |= OTHER,
        }
    }
    match set {
        0 => return Class::Empty,
        DIGIT => return Class::Number,
        x if x == DIGIT | FLOAT => return Class::Number,
        ALPHA => {
            if matches_literal(expr, "false", true) || matches_literal(expr, "true", true) {
                return Class::Bool;
            }
            if keyword_check {
                if matches_literal(begin, "version", true) {
                    return Class::Version;
                }
                if matches_literal(begin, "defined", true) {
                    return Class::IfDef;
                }
            }
            return Class::Identifier;
        }
        x if x == ALPHA | DIGIT
            || x == ALPHA | DIGIT | FLOAT
            || x == ALPHA | IDENT
            || x == ALPHA | IDENT | DIGIT
            || x == ALPHA | IDENT | DIGIT | FLOAT =>
        {
            return Class::Identifier
        }
        x if x == ALPHA | SPACE | CMP | DIGIT || x == ALPHA | SPACE | CMP | DIGIT | FLOAT => {
            if keyword_check && matches_literal(begin, "version", false) {
                return Class::Version;
            }
            return Class::Complex;
        }
        x if x == ALPHA | SPACE
            || x == ALPHA | SPACE | COLON
            || x == ALPHA | SPACE | IDENT
            || x == ALPHA | SPACE | IDENT | COLON
            || x == ALPHA | SPACE | DIGIT
            || x == ALPHA | SPACE | DIGIT | IDENT
            || x == ALPHA | SPACE | DIGIT | FLOAT
            || x == ALPHA | SPACE | DIGIT | IDENT | FLOAT =>
        {
            if keyword_check && matches_literal(begin, "defined", false) {
                return Class::IfDef;
            }
            return Class::Complex;
        }
        _ => {}
    }
    if set & MACRO != 0 && set & !(MONEY | IDENT | ALPHA | DIGIT | MACRO | COLON) == 0 {
        return Class::Macro;
    }
    let _ = (SUM, LOGIC, GROUP, OTHER);
    Class::Complex
}

fn crufty_bool(expr: &str) -> Option<bool> {
    if matches_literal(expr, "yes", true) || matches_literal(expr, "t", true) {
        Some(true)
    } else if matches_literal(expr, "no", true) || matches_literal(expr, "f", true) {
        Some(false)
    } else {
        None
    }
}

/// What a condition needs to look up.
pub(crate) trait CondEnv {
    /// The raw value of a knob (prefix rules and defaults applied), `None` if undefined.
    fn lookup_raw(&self, name: &str) -> Option<String>;
    /// Whether a metaknob category exists, and (when `template` is given) the template.
    fn has_metaknob(&self, category: &str, template: Option<&str>) -> bool;
    /// Expands macros in the condition text.
    fn expand(&self, text: &str) -> Result<String, String>;
}

fn parse_version_literal(s: &str) -> Option<(i64, i64, i64)> {
    let s = s.trim();
    let s = s.strip_prefix(['v', 'V']).unwrap_or(s);
    // sscanf("%d.%d.%d"): leading integer fields separated by dots
    let mut fields = Vec::new();
    let mut rest = s;
    for _ in 0..3 {
        let digits: String = rest
            .chars()
            .take_while(|c| c.is_ascii_digit() || (*c == '-' && fields.is_empty()))
            .collect();
        if digits.is_empty() {
            break;
        }
        fields.push(digits.parse::<i64>().ok()?);
        rest = &rest[digits.len()..];
        match rest.strip_prefix('.') {
            Some(r) => rest = r,
            None => break,
        }
    }
    if fields.len() >= 2 && fields[0] >= 6 {
        Some((
            fields[0],
            fields[1],
            fields.get(2).copied().unwrap_or(HTCONDOR_VERSION.2),
        ))
    } else {
        None
    }
}

fn evaluate(expr: &str, env: &dyn CondEnv) -> Result<bool, String> {
    let class = characterize(expr, true);
    match class {
        Class::Number => {
            let v: f64 = expr.trim().parse().unwrap_or(0.0);
            return Ok(v != 0.0);
        }
        Class::Bool => return Ok(matches_literal(expr, "true", true)),
        Class::Identifier => {
            if let Some(b) = crufty_bool(expr) {
                return Ok(b);
            }
        }
        Class::Version => {
            let mut p = expr.trim_start()[7..].trim_start();
            let negated = p.starts_with('!');
            if negated {
                p = &p[1..];
            }
            let mut op = 0i32;
            let mut or_equal = false;
            if let Some(c) = p.bytes().next().filter(|c| (b'<'..=b'>').contains(c)) {
                op = c as i32 - b'=' as i32;
                p = &p[1..];
            }
            if p.starts_with('=') {
                or_equal = true;
                p = &p[1..];
            }
            let v = parse_version_literal(p).ok_or("the version literal is invalid")?;
            let cmp = match HTCONDOR_VERSION.cmp(&v) {
                std::cmp::Ordering::Less => -1,
                std::cmp::Ordering::Equal => 0,
                std::cmp::Ordering::Greater => 1,
            };
            let r = cmp == op || (or_equal && cmp == 0);
            return Ok(if negated { !r } else { r });
        }
        Class::IfDef => {
            let rest = expr.trim_start()[7..].trim_start();
            if rest.is_empty() {
                return Ok(false);
            }
            match characterize(rest, false) {
                Class::Identifier => {
                    let v = env.lookup_raw(rest.trim());
                    if v.is_none() && crufty_bool(rest).is_some() {
                        return Ok(true);
                    }
                    return Ok(v.is_some_and(|v| !v.is_empty()));
                }
                Class::Number | Class::Bool => return Ok(true),
                _ => {}
            }
            if rest
                .get(..4)
                .is_some_and(|h| h.eq_ignore_ascii_case("use "))
            {
                let what = rest[4..].trim_start();
                if what.trim_end().contains([' ', '\t', '\r']) {
                    return Err(
                        "defined use meta argument with internal spaces will never match".into(),
                    );
                }
                let what = what.trim_end();
                let (cat, tpl) = match what.split_once(':') {
                    Some((c, t)) if !t.is_empty() => (c, Some(t)),
                    Some((c, _)) => (c, None),
                    None => (what, None),
                };
                return Ok(env.has_metaknob(cat, tpl));
            }
            return Err("defined argument must be param name, boolean, or number".into());
        }
        _ => {}
    }
    if class == Class::Complex {
        Err("complex conditionals are not supported".into())
    } else {
        Err("expression is not a conditional".into())
    }
}

/// Evaluates the text after `if`/`elif`. The error is HTCondor's reason.
pub(crate) fn test_condition(expr: &str, env: &dyn CondEnv) -> Result<bool, String> {
    let mut text = expr.to_string();
    let expanded = text.contains('$');
    if expanded {
        text = env.expand(&text)?;
        text.truncate(text.trim_end().len());
    }
    let mut e = text.trim_start();
    let mut inverted = false;
    if let Some(r) = e.strip_prefix('!') {
        inverted = true;
        e = r.trim_start();
    }
    let value = if expanded && e.is_empty() {
        false
    } else {
        evaluate(e, env)?
    };
    Ok(value != inverted)
}

/// One level of `if` nesting.
#[derive(Debug, Clone, Copy)]
struct Frame {
    /// Whether the lines of the current branch are used.
    active: bool,
    /// Whether some branch of this `if` was already taken.
    taken: bool,
    /// Whether `else` was seen.
    in_else: bool,
}

/// The stack of open `if` blocks.
#[derive(Debug, Default)]
pub(crate) struct IfStack {
    frames: Vec<Frame>,
}

/// HTCondor keeps its if state in a 64-bit mask, so 63 levels.
const MAX_IF_DEPTH: usize = 63;

impl IfStack {
    pub fn enabled(&self) -> bool {
        self.frames.last().is_none_or(|f| f.active)
    }
    pub fn inside_if(&self) -> bool {
        !self.frames.is_empty()
    }
    fn outer_enabled(&self) -> bool {
        let n = self.frames.len();
        n < 2 || self.frames[n - 2].active
    }

    /// Handles `line` if it is an if/elif/else/endif line: `None` if it is not one, else the
    /// result (an error message when the line is wrong).
    pub fn handle(&mut self, line: &str, env: &dyn CondEnv) -> Option<Result<(), String>> {
        let kw = |k: &str| {
            line.get(..k.len())
                .is_some_and(|h| h.eq_ignore_ascii_case(k))
                && line[k.len()..]
                    .chars()
                    .next()
                    .is_none_or(|c| c.is_ascii_whitespace())
        };
        if kw("if") {
            let expr = line[2..].trim_start();
            let mut bb = self.enabled();
            if bb {
                match test_condition(expr, env) {
                    Ok(v) => bb = v,
                    Err(reason) => {
                        return Some(Err(format!(
                            "{expr} is not a valid if condition because {reason}"
                        )))
                    }
                }
            }
            if self.frames.len() >= MAX_IF_DEPTH {
                return Some(Err("if nesting too deep!".into()));
            }
            let parent = self.enabled();
            self.frames.push(Frame {
                active: parent && bb,
                taken: bb,
                in_else: false,
            });
            return Some(Ok(()));
        }
        if kw("else") {
            let outer = self.outer_enabled();
            return Some(match self.frames.last_mut() {
                None => Err("else without matching if".into()),
                Some(f) if f.in_else => Err("else is not allowed after else".into()),
                Some(f) => {
                    f.in_else = true;
                    f.active = outer && !f.taken;
                    f.taken = true;
                    Ok(())
                }
            });
        }
        if kw("elif") {
            let expr = line[4..].trim_start();
            let outer = self.outer_enabled();
            let Some(f) = self.frames.last().copied() else {
                return Some(Err("elif without matching if".into()));
            };
            if f.in_else {
                return Some(Err("elif is not allowed after else".into()));
            }
            let mut bb = false;
            if !f.taken && outer {
                match test_condition(expr, env) {
                    Ok(v) => bb = v,
                    Err(reason) => {
                        return Some(Err(format!(
                            "{expr} is not a valid elif condition because {reason}"
                        )))
                    }
                }
            }
            if let Some(f) = self.frames.last_mut() {
                f.active = outer && bb;
                f.taken |= bb;
            }
            return Some(Ok(()));
        }
        if kw("endif") {
            return Some(match self.frames.pop() {
                None => Err("endif without matching if".into()),
                Some(_) => Ok(()),
            });
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct E;
    impl CondEnv for E {
        fn lookup_raw(&self, name: &str) -> Option<String> {
            match name.to_ascii_uppercase().as_str() {
                "X" => Some("5".into()),
                "EMPTY" => Some(String::new()),
                _ => None,
            }
        }
        fn has_metaknob(&self, category: &str, template: Option<&str>) -> bool {
            category.eq_ignore_ascii_case("ROLE")
                && template.is_none_or(|t| t.eq_ignore_ascii_case("CentralManager"))
        }
        fn expand(&self, text: &str) -> Result<String, String> {
            Ok(text.replace("$(X)", "5").replace("$(NOPE)", ""))
        }
    }

    #[test]
    fn simple_conditions() {
        let t = |s: &str| test_condition(s, &E);
        assert_eq!(t("true"), Ok(true));
        assert_eq!(t("FALSE"), Ok(false));
        assert_eq!(t("yes"), Ok(true));
        assert_eq!(t("f"), Ok(false));
        assert_eq!(t("3"), Ok(true));
        assert_eq!(t("0"), Ok(false));
        assert_eq!(t("1.5"), Ok(true));
        assert_eq!(t("$(X)"), Ok(true));
        assert_eq!(t("$(NOPE)"), Ok(false));
        assert_eq!(t("! $(NOPE)"), Ok(true));
        assert_eq!(t("defined X"), Ok(true));
        assert_eq!(t("defined EMPTY"), Ok(false));
        assert_eq!(t("! defined NOPE"), Ok(true));
        assert_eq!(t("defined use ROLE:CentralManager"), Ok(true));
        assert_eq!(t("defined use ROLE:Bogus"), Ok(false));
        assert_eq!(t("defined use ROLE"), Ok(true));
    }

    #[test]
    fn versions() {
        let t = |s: &str| test_condition(s, &E);
        assert_eq!(t("version >= 23.0"), Ok(true));
        assert_eq!(t("version > 23.9.6"), Ok(false));
        assert_eq!(t("version == 23.9.6"), Ok(true));
        assert_eq!(t("version < 24.0.0"), Ok(true));
        assert_eq!(t("version >= 99.1.0"), Ok(false));
        assert!(t("version >= 5.1").unwrap_err().contains("version literal"));
    }

    #[test]
    fn unsupported_conditions_are_errors_with_htcondor_reason() {
        assert_eq!(
            test_condition("$(X) > 3", &E),
            Err("complex conditionals are not supported".into())
        );
        assert_eq!(
            test_condition("SOME_NAME", &E),
            Err("expression is not a conditional".into())
        );
    }

    #[test]
    fn if_stack_branches() {
        let mut s = IfStack::default();
        assert!(s.handle("A = 1", &E).is_none());
        s.handle("if false", &E).unwrap().unwrap();
        assert!(!s.enabled());
        s.handle("elif true", &E).unwrap().unwrap();
        assert!(s.enabled());
        s.handle("elif true", &E).unwrap().unwrap();
        assert!(!s.enabled());
        s.handle("else", &E).unwrap().unwrap();
        assert!(!s.enabled());
        assert!(s.handle("else", &E).unwrap().is_err());
        s.handle("endif", &E).unwrap().unwrap();
        assert!(s.enabled());
        assert_eq!(
            s.handle("endif", &E).unwrap(),
            Err("endif without matching if".into())
        );
        // nested: inner branches stay off while the outer one is off
        s.handle("if false", &E).unwrap().unwrap();
        s.handle("if true", &E).unwrap().unwrap();
        assert!(!s.enabled());
        s.handle("else", &E).unwrap().unwrap();
        assert!(!s.enabled());
        s.handle("endif", &E).unwrap().unwrap();
        s.handle("else", &E).unwrap().unwrap();
        assert!(s.enabled());
    }
}
