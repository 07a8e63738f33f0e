//! Unparsing (printing) exactly as libclassad's ClassAdUnParser / PrettyPrint do
//! (src/classad/sink.cpp); its numbers go through C printf's formats (`%1.15E`, `%.16G`, `%g`,
//! see [`crate::printf`]).
use crate::ad::ClassAd;
use crate::expr::{Expr, UnOp};
use crate::printf::{Conversion, Spec};
use crate::value::Value;
use std::fmt::Write;

/// Printing mode.
#[derive(Clone, Copy)]
struct Style {
    /// Old ClassAd syntax: no string escapes except the quote, `=?=`/`=!=`, reals `%.16G`.
    old: bool,
    /// PrettyPrint (what the `unparse()` builtin uses): ads and lists spread over lines.
    pretty: bool,
}

struct Printer {
    style: Style,
    indent: usize,
}

/// Append `v` in new syntax (what [`Value`]'s `Display` prints).
pub fn unparse_value(buf: &mut String, v: &Value) {
    Printer {
        style: Style {
            old: false,
            pretty: false,
        },
        indent: 0,
    }
    .value(buf, v)
}

/// Append `e` in new syntax, on one line (what [`Expr`]'s `Display` prints).
pub fn unparse_expr(buf: &mut String, e: &Expr) {
    Printer {
        style: Style {
            old: false,
            pretty: false,
        },
        indent: 0,
    }
    .expr(buf, e)
}

/// Old-syntax right-hand side, as `condor_status -long` prints attribute values.
pub fn unparse_expr_old(buf: &mut String, e: &Expr) {
    Printer {
        style: Style {
            old: true,
            pretty: false,
        },
        indent: 0,
    }
    .expr(buf, e)
}

/// PrettyPrint, as the `unparse()` builtin renders an attribute's expression.
pub fn unparse_expr_pretty(buf: &mut String, e: &Expr) {
    Printer {
        style: Style {
            old: false,
            pretty: true,
        },
        indent: 0,
    }
    .expr(buf, e)
}

/// Append `ad` in new syntax, on one line: `[ a = 1; b = "x" ]`.
pub fn unparse_ad(buf: &mut String, ad: &ClassAd) {
    Printer {
        style: Style {
            old: false,
            pretty: false,
        },
        indent: 0,
    }
    .ad(buf, ad)
}

/// `"..."` with libclassad's escapes (new syntax).
pub fn quote_string(buf: &mut String, s: &str) {
    escape_into(buf, s, '"', false);
}

fn escape_into(buf: &mut String, s: &str, delim: char, old: bool) {
    buf.push(delim);
    if old {
        for c in s.chars() {
            if c == delim {
                buf.push('\\');
            }
            buf.push(c);
        }
        buf.push(delim);
        return;
    }
    for &b in s.as_bytes() {
        let c = b as char;
        if b < 0x80 && c == delim {
            buf.push('\\');
            buf.push(c);
            continue;
        }
        match b {
            0x07 => buf.push_str("\\a"),
            0x08 => buf.push_str("\\b"),
            0x0c => buf.push_str("\\f"),
            b'\n' => buf.push_str("\\n"),
            b'\r' => buf.push_str("\\r"),
            b'\t' => buf.push_str("\\t"),
            0x0b => buf.push_str("\\v"),
            b'\\' => buf.push_str("\\\\"),
            0x20..=0x7e => buf.push(c),
            _ => {
                let _ = write!(buf, "\\{:03o}", b);
            }
        }
    }
    buf.push(delim);
}

/// An attribute name in old syntax: as [`unparse_name`], but quoted names are written raw
/// with only the quote escaped, as libclassad's printOld does.
pub fn unparse_name_old(buf: &mut String, name: &str) {
    let mut new = String::new();
    unparse_name(&mut new, name);
    if new.starts_with('\'') {
        escape_into(buf, name, '\'', true);
    } else {
        buf.push_str(&new);
    }
}

/// An attribute name, quoted with `'...'` when it is not a plain identifier or is reserved.
pub fn unparse_name(buf: &mut String, name: &str) {
    let mut inner = String::new();
    escape_into(&mut inner, name, '\'', false);
    let inner = &inner[1..inner.len() - 1];
    let bytes = inner.as_bytes();
    let plain = !bytes.is_empty()
        && (bytes[0].is_ascii_alphabetic() || bytes[0] == b'_')
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || *b == b'_');
    let reserved = [
        "error",
        "false",
        "is",
        "isnt",
        "parent",
        "true",
        "undefined",
    ]
    .iter()
    .any(|r| inner.eq_ignore_ascii_case(r));
    if plain && !reserved {
        buf.push_str(inner);
    } else {
        buf.push('\'');
        buf.push_str(inner);
        buf.push('\'');
    }
}

/// `%1.15E`: a real in new syntax.
const REAL_NEW: Spec = Spec::new(Conversion::Exponent, 15).upper();
/// `%.16G`: a real in old syntax.
const REAL_OLD: Spec = Spec::new(Conversion::General, 16).upper();
/// `%g`: the seconds of a relative time, when they have a fraction.
const SECONDS: Spec = Spec::new(Conversion::General, 6);

/// A real as libclassad prints it in new syntax (`%1.15E`, `0.0`, `real("INF")`...).
pub fn real_new(buf: &mut String, r: f64) {
    if r == 0.0 {
        buf.push_str(if r.is_sign_negative() { "-0.0" } else { "0.0" });
    } else if r.is_nan() {
        buf.push_str("real(\"NaN\")");
    } else if r.is_infinite() {
        buf.push_str(if r < 0.0 {
            "real(\"-INF\")"
        } else {
            "real(\"INF\")"
        });
    } else {
        buf.push_str(&REAL_NEW.format(r));
    }
}

fn real_old(buf: &mut String, r: f64) {
    if r == 0.0 || r.is_nan() || r.is_infinite() {
        return real_new(buf, r);
    }
    let s = REAL_OLD.format(r);
    buf.push_str(&s);
    if !s.contains(['.', 'E', 'e']) {
        buf.push_str(".0");
    }
}

/// Days since 1970-01-01 to (year, month 1-12, day 1-31), proleptic Gregorian.
pub fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// `2020-01-01T00:00:00+01:00`, as libclassad prints absolute times.
pub fn abs_time_string(buf: &mut String, secs: i64, offset: i32) {
    let t = secs.saturating_add(offset as i64);
    let days = t.div_euclid(86_400);
    let rem = t.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    let _ = write!(
        buf,
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
        y,
        m,
        d,
        rem / 3600,
        (rem / 60) % 60,
        rem % 60
    );
    let (sign, tz) = if offset > 0 {
        ('+', offset)
    } else {
        ('-', -offset)
    };
    let _ = write!(buf, "{}{:02}:{:02}", sign, tz / 3600, (tz / 60) % 60);
}

fn g_pad2(x: f64) -> String {
    let s = SECONDS.format(x);
    if s.len() < 2 {
        format!("0{}", s)
    } else {
        s
    }
}

/// `[-][D+]HH:MM:SS` with libclassad's dropping of leading zero fields.
pub fn rel_time_string(buf: &mut String, rsecs: f64) {
    let mut r = rsecs;
    if r < 0.0 {
        buf.push('-');
        r = -r;
    }
    let frac = r - r.floor();
    // C: (int) rsecs. Beyond i32 (68 years) that cast wraps to a negative count that printed
    // as `-5+-03:-12:...`, which no parser reads back (parse_eval fuzz target); there we keep
    // the whole count instead.
    let total = if r < 2_147_483_648.0 {
        r as i64 as i32 as i64
    } else {
        r as i64
    };
    let hrs = total % 86_400;
    let mins = hrs % 3600;
    let secs = (mins % 60) as f64 + frac;
    let days = total / 86_400;
    let hrs = hrs / 3600;
    let mins = mins / 60;
    if days != 0 {
        if frac == 0.0 {
            let _ = write!(buf, "{}+{:02}:{:02}:{:02}", days, hrs, mins, secs as i64);
        } else {
            let _ = write!(buf, "{}+{:02}:{:02}:{}", days, hrs, mins, g_pad2(secs));
        }
    } else if hrs != 0 {
        if frac == 0.0 {
            let _ = write!(buf, "{:02}:{:02}:{:02}", hrs, mins, secs as i64);
        } else {
            let _ = write!(buf, "{:02}:{:02}:{}", hrs, mins, g_pad2(secs));
        }
    } else if mins != 0 {
        if frac == 0.0 {
            let _ = write!(buf, "{:02}:{:02}", mins, secs as i64);
        } else {
            let _ = write!(buf, "{:02}:{}", mins, g_pad2(secs));
        }
    } else if frac == 0.0 {
        let _ = write!(buf, "{:02}", secs as i64);
    } else {
        buf.push_str(&g_pad2(secs));
    }
}

impl Printer {
    fn string(&self, buf: &mut String, s: &str) {
        escape_into(buf, s, '"', self.style.old);
    }

    /// An attribute name; old syntax reads quoted names raw (only `\'` is special), so it
    /// must not get new-syntax escapes such as `\001` (found by the old_ads fuzz target).
    fn name(&self, buf: &mut String, name: &str) {
        if self.style.old {
            unparse_name_old(buf, name)
        } else {
            unparse_name(buf, name)
        }
    }

    fn real(&self, buf: &mut String, r: f64) {
        if self.style.old {
            real_old(buf, r)
        } else {
            real_new(buf, r)
        }
    }

    fn value(&mut self, buf: &mut String, v: &Value) {
        match v {
            Value::Undefined => buf.push_str("undefined"),
            Value::Error => buf.push_str("error"),
            Value::Bool(b) => buf.push_str(if *b { "true" } else { "false" }),
            Value::Int(i) => {
                let _ = write!(buf, "{}", i);
            }
            Value::Real(r) => self.real(buf, *r),
            Value::Str(s) => self.string(buf, s),
            Value::AbsTime { secs, offset_secs } => {
                buf.push_str("absTime(\"");
                abs_time_string(buf, *secs, *offset_secs);
                buf.push_str("\")");
            }
            Value::RelTime(r) => {
                buf.push_str("relTime(\"");
                rel_time_string(buf, *r);
                buf.push_str("\")");
            }
            // A literal's list prints its element expressions, as libclassad prints the
            // ExprList a list value is.
            Value::List(l) => match l.exprs() {
                Some(e) => self.list(buf, &e.items, Self::expr),
                None => self.list(buf, l.values(), Self::value),
            },
            Value::Ad(ad) => self.ad(buf, ad),
        }
    }

    /// `{ a,b }` (or pretty-printed), each item printed by `item`.
    fn list<T>(&mut self, buf: &mut String, items: &[T], item: fn(&mut Self, &mut String, &T)) {
        self.list_open(buf);
        for (i, x) in items.iter().enumerate() {
            self.list_item(buf);
            item(self, buf, x);
            if i + 1 != items.len() {
                buf.push(',');
            }
        }
        self.list_close(buf);
    }

    fn list_open(&mut self, buf: &mut String) {
        if self.style.pretty {
            self.indent += 3;
            buf.push('\n');
            buf.extend(std::iter::repeat_n(' ', self.indent));
            buf.push('{');
            self.indent += 3;
        } else {
            buf.push_str("{ ");
        }
    }
    fn list_item(&mut self, buf: &mut String) {
        if self.style.pretty {
            buf.push('\n');
            buf.extend(std::iter::repeat_n(' ', self.indent));
        }
    }
    fn list_close(&mut self, buf: &mut String) {
        if self.style.pretty {
            self.indent -= 3;
            buf.push('\n');
            buf.extend(std::iter::repeat_n(' ', self.indent));
            buf.push('}');
            self.indent -= 3;
        } else {
            buf.push_str(" }");
        }
    }

    fn ad(&mut self, buf: &mut String, ad: &ClassAd) {
        // libclassad keeps attributes sorted by name length, then case-insensitively, and prints
        // them in that order.
        let mut entries: Vec<&crate::ad::Attr> = ad.entries().iter().map(|a| &**a).collect();
        entries.sort_by(|a, b| {
            let (x, y) = (a.name.as_str(), b.name.as_str());
            x.len()
                .cmp(&y.len())
                .then_with(|| crate::eval::ops::strcasecmp(x, y))
        });
        if self.style.pretty {
            self.indent += 4;
            buf.push('\n');
            buf.extend(std::iter::repeat_n(' ', self.indent));
            buf.push('[');
            self.indent += 4;
        } else {
            buf.push_str("[ ");
        }
        for (i, a) in entries.iter().enumerate() {
            if self.style.pretty {
                buf.push('\n');
                buf.extend(std::iter::repeat_n(' ', self.indent));
            }
            self.name(buf, a.name.as_str());
            buf.push_str(" = ");
            self.expr(buf, &a.expr);
            if i + 1 != entries.len() {
                buf.push_str("; ");
            }
        }
        if self.style.pretty {
            self.indent -= 4;
            buf.push('\n');
            buf.extend(std::iter::repeat_n(' ', self.indent));
            buf.push(']');
            self.indent -= 4;
        } else {
            buf.push_str(" ]");
        }
    }

    fn expr(&mut self, buf: &mut String, e: &Expr) {
        stacker::maybe_grow(128 * 1024, 2 * 1024 * 1024, || self.expr_inner(buf, e))
    }

    fn expr_inner(&mut self, buf: &mut String, e: &Expr) {
        match e {
            Expr::Lit(v) => self.value(buf, v),
            Expr::OldAbsTimeLit { secs, offset_secs } => self.value(
                buf,
                &Value::AbsTime {
                    secs: *secs,
                    offset_secs: *offset_secs,
                },
            ),
            Expr::RelTimeLit(r) => {
                buf.push_str("relTime(\"");
                rel_time_string(buf, *r);
                buf.push_str("\")");
            }
            Expr::Attr(n) => self.name(buf, n.as_str()),
            Expr::Abs(n) => {
                buf.push('.');
                self.name(buf, n.as_str());
            }
            Expr::Scoped(_, prefix, n) => {
                self.name(buf, prefix.as_str());
                buf.push('.');
                // Quoted when needed: `MY.'a b'` (found by the parse_eval fuzz target).
                self.name(buf, n.as_str());
            }
            Expr::Select(base, n) => {
                // libclassad prints `(100).X` as `100.X`, which no parser reads back (a
                // malformed real); we print the same (differential parity; classad/fuzz/README.md).
                self.expr(buf, base);
                buf.push('.');
                // `x.''` and `x.'a b'` must stay quoted to parse again (parse_eval fuzz target).
                self.name(buf, n.as_str());
            }
            Expr::Index(a, b) => {
                self.expr(buf, a);
                buf.push('[');
                self.expr(buf, b);
                buf.push(']');
            }
            Expr::Unary(op, a) => {
                buf.push_str(match op {
                    UnOp::Plus => " +",
                    UnOp::Minus => " -",
                    UnOp::Not => " !",
                    UnOp::BitNot => " ~",
                });
                self.expr(buf, a);
            }
            Expr::Binary(op, a, b) => {
                self.expr(buf, a);
                if self.style.old && *op == crate::expr::BinOp::Is {
                    buf.push_str(" =?= ");
                } else if self.style.old && *op == crate::expr::BinOp::Isnt {
                    buf.push_str(" =!= ");
                } else {
                    buf.push_str(op.text());
                }
                self.expr(buf, b);
            }
            Expr::Cond(c, m, x) => {
                self.expr(buf, c);
                match m {
                    Some(m) => {
                        buf.push_str(" ? ");
                        self.expr(buf, m);
                        buf.push_str(" : ");
                    }
                    None => buf.push_str(" ?: "),
                }
                self.expr(buf, x);
            }
            Expr::Paren(a) => {
                buf.push('(');
                self.expr(buf, a);
                buf.push(')');
            }
            Expr::Call(c) => {
                // A name that is not a plain identifier came quoted (`'='(x)`); libclassad
                // prints it bare, which cannot be read back, so it keeps its quotes here.
                unparse_name(buf, &c.name);
                buf.push('(');
                for (i, a) in c.args.iter().enumerate() {
                    self.expr(buf, a);
                    if i + 1 != c.args.len() {
                        buf.push(',');
                    }
                }
                buf.push(')');
            }
            Expr::List(l) => self.list(buf, l, Self::expr),
            Expr::Ad(ad) => self.ad(buf, ad),
        }
    }
}
