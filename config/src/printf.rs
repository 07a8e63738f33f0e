//! A small C `printf` for the format argument of `$INT(X,fmt)`, `$REAL(X,fmt)` and
//! `$STRING(X,fmt)` (HTCondor hands the format to C's printf, src/condor_utils/config.cpp):
//! one conversion with flags, width and precision. The digits of a real are
//! [`classad::printf`]'s, the one implementation of C's floating-point conversions; this
//! module adds the field around them (sign flags, width, padding).
use classad::printf::{Conversion, Spec as FloatSpec};

/// `%.16G`: how `$REAL(X)` prints without a format.
pub const REAL_DEFAULT: FloatSpec = FloatSpec::new(Conversion::General, 16).upper();

struct Spec {
    prefix: String,
    suffix: String,
    left: bool,
    plus: bool,
    space: bool,
    zero: bool,
    alt: bool,
    width: usize,
    prec: Option<usize>,
    conv: u8,
}

fn parse(fmt: &str) -> Option<Spec> {
    let b = fmt.as_bytes();
    let mut i = 0;
    let mut prefix = String::new();
    let mut spec: Option<Spec> = None;
    let mut suffix = String::new();
    while i < b.len() {
        if b[i] == b'%' {
            if b.get(i + 1) == Some(&b'%') {
                if spec.is_some() {
                    suffix.push('%')
                } else {
                    prefix.push('%')
                }
                i += 2;
                continue;
            }
            if spec.is_some() {
                return None; // more than one conversion
            }
            i += 1;
            let (mut left, mut plus, mut space, mut zero, mut alt) =
                (false, false, false, false, false);
            while i < b.len() && b"-+ 0#".contains(&b[i]) {
                match b[i] {
                    b'-' => left = true,
                    b'+' => plus = true,
                    b' ' => space = true,
                    b'0' => zero = true,
                    _ => alt = true,
                }
                i += 1;
            }
            let mut width = 0usize;
            while i < b.len() && b[i].is_ascii_digit() {
                width = width.checked_mul(10)?.checked_add((b[i] - b'0') as usize)?;
                i += 1;
            }
            let mut prec = None;
            if i < b.len() && b[i] == b'.' {
                i += 1;
                let mut p = 0usize;
                while i < b.len() && b[i].is_ascii_digit() {
                    p = p.checked_mul(10)?.checked_add((b[i] - b'0') as usize)?;
                    i += 1;
                }
                prec = Some(p);
            }
            if width > 4096 || prec.unwrap_or(0) > 4096 {
                return None;
            }
            while i < b.len() && b"lhqLjzt".contains(&b[i]) {
                i += 1;
            }
            let conv = *b.get(i)?;
            i += 1;
            spec = Some(Spec {
                prefix: std::mem::take(&mut prefix),
                suffix: String::new(),
                left,
                plus,
                space,
                zero,
                alt,
                width,
                prec,
                conv,
            });
            continue;
        }
        let ch = fmt[i..].chars().next()?;
        if spec.is_some() {
            suffix.push(ch)
        } else {
            prefix.push(ch)
        }
        i += ch.len_utf8();
    }
    let mut s = spec?;
    s.suffix = suffix;
    Some(s)
}

fn pad(spec: &Spec, body: String, numeric: bool) -> String {
    let mut out = spec.prefix.clone();
    let len = body.chars().count();
    if len >= spec.width {
        out.push_str(&body);
    } else if spec.left {
        out.push_str(&body);
        out.push_str(&" ".repeat(spec.width - len));
    } else if spec.zero && numeric {
        let (sign, digits) = match body.chars().next() {
            Some(c @ ('-' | '+' | ' ')) => (c.to_string(), body[1..].to_string()),
            _ => (String::new(), body.clone()),
        };
        out.push_str(&sign);
        out.push_str(&"0".repeat(spec.width - len));
        out.push_str(&digits);
    } else {
        out.push_str(&" ".repeat(spec.width - len));
        out.push_str(&body);
    }
    out.push_str(&spec.suffix);
    out
}

fn sign(spec: &Spec, neg: bool) -> &'static str {
    if neg {
        "-"
    } else if spec.plus {
        "+"
    } else if spec.space {
        " "
    } else {
        ""
    }
}

/// Formats an integer with a C format holding one integer conversion.
pub fn format_int(fmt: &str, v: i64) -> Option<String> {
    let spec = parse(fmt)?;
    let body = match spec.conv {
        b'd' | b'i' => {
            let mut digits = v.unsigned_abs().to_string();
            if let Some(p) = spec.prec {
                while digits.len() < p {
                    digits.insert(0, '0')
                }
            }
            format!("{}{}", sign(&spec, v < 0), digits)
        }
        b'u' => (v as u64).to_string(),
        b'x' => format!(
            "{}{:x}",
            if spec.alt && v != 0 { "0x" } else { "" },
            v as u64
        ),
        b'X' => format!(
            "{}{:X}",
            if spec.alt && v != 0 { "0X" } else { "" },
            v as u64
        ),
        b'o' => format!("{}{:o}", if spec.alt { "0" } else { "" }, v as u64),
        _ => return None,
    };
    Some(pad(&spec, body, true))
}

/// Formats a real with a C format holding one floating-point conversion.
pub fn format_real(fmt: &str, v: f64) -> Option<String> {
    let spec = parse(fmt)?;
    let float = FloatSpec::from_letter(spec.conv, spec.prec.unwrap_or(6))?;
    let float = if spec.alt { float.alternate() } else { float };
    let mut body = float.format(v);
    if !body.starts_with('-') {
        body.insert_str(0, sign(&spec, false));
    }
    // C pads `inf` and `nan` with spaces even under the `0` flag.
    Some(pad(&spec, body, v.is_finite()))
}

/// Formats a string with a C format holding one `%s`.
pub fn format_str(fmt: &str, v: &str) -> Option<String> {
    let spec = parse(fmt)?;
    if spec.conv != b's' {
        return None;
    }
    let body: String = match spec.prec {
        Some(p) => v.chars().take(p).collect(),
        None => v.to_string(),
    };
    Some(pad(&spec, body, false))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn g_format_matches_c() {
        let g = |prec| FloatSpec::new(Conversion::General, prec);
        assert_eq!(REAL_DEFAULT.format(1.0), "1");
        assert_eq!(REAL_DEFAULT.format(0.1), "0.1");
        assert_eq!(REAL_DEFAULT.format(1e10), "10000000000");
        assert_eq!(REAL_DEFAULT.format(1e100), "1E+100");
        assert_eq!(g(3).format(123456.789), "1.23e+05");
        assert_eq!(g(6).format(0.0001), "0.0001");
        assert_eq!(g(6).format(0.00001), "1e-05");
    }

    #[test]
    fn conversions() {
        assert_eq!(format_int("%05d", -42).unwrap(), "-0042");
        assert_eq!(format_int("<%x>", 255).unwrap(), "<ff>");
        assert_eq!(format_int("%-4d|", 7).unwrap(), "7   |");
        assert_eq!(format_real("%.2f", 1.23456).unwrap(), "1.23");
        assert_eq!(format_real("%e", 1234.5).unwrap(), "1.234500e+03");
        assert_eq!(format_str("[%5s]", "ab").unwrap(), "[   ab]");
        assert!(format_int("%s", 1).is_none());
        assert!(format_int("%d %d", 1).is_none());
        assert!(format_real("no conversion", 1.0).is_none());
    }
}
