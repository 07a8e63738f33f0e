//! C printf's floating-point conversions `%e`, `%f` and `%g` (and their upper-case forms), as
//! glibc prints them: the one implementation behind every number HTCondor formats with printf
//! and Aerie has to print the same way. libclassad unparses reals with `%1.15E` (new syntax)
//! and `%.16G` (old syntax), and the seconds of a relative time with `%g`
//! (src/classad/sink.cpp); HTCondor's configuration prints `$REAL(x)` with `%.16G` and
//! `$REAL(x, fmt)` with the user's format (src/condor_utils/config.cpp).
//!
//! What it keeps from C that Rust's own formatting does not: the exponent has a sign and at
//! least two digits (`1e+21`, not `1e21`); `%g` picks `%e` or `%f` by the exponent and drops
//! trailing zeros; every negative value prints its `-`, including `-0.0` (`-0`) and a NaN whose
//! sign bit is set (`-nan`); infinities and NaNs print as `inf` and `nan` (`INF`, `NAN`
//! upper-case). Digits are exact and ties round to even, as glibc's are. Field width and the
//! `+`, space, `0` and `-` flags are left to the caller, which pads the returned text.
//!
//! ```
//! use classad::printf::{Conversion, Spec};
//! assert_eq!(Spec::new(Conversion::General, 6).format(-0.0), "-0");
//! assert_eq!(Spec::new(Conversion::Exponent, 15).upper().format(0.1), "1.000000000000000E-01");
//! assert_eq!(Spec::new(Conversion::General, 3).alternate().format(2.0), "2.00");
//! ```

/// Which floating-point conversion, by what C's printf(3) calls it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Conversion {
    /// `%e`: `[-]d.ddde±dd`, the precision counting digits after the point.
    Exponent,
    /// `%f`: `[-]ddd.ddd`, the precision counting digits after the point.
    Fixed,
    /// `%g`: `%e` when the decimal exponent is below -4 or not below the precision, `%f`
    /// otherwise; the precision counts significant digits (0 means 1), and trailing zeros
    /// are dropped.
    General,
}

/// One floating-point conversion with the parts of a printf format that change its text:
/// `%.16G` is `Spec::new(Conversion::General, 16).upper()`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Spec {
    /// The conversion.
    pub conversion: Conversion,
    /// The precision (C's default, when a format gives none, is 6).
    pub precision: usize,
    /// Upper-case `E`, `INF` and `NAN` (`%E`, `%F`, `%G`).
    pub upper: bool,
    /// The `#` flag: the point is always printed, and `%g` keeps its trailing zeros.
    pub alternate: bool,
}

impl Spec {
    /// A lower-case conversion without the `#` flag.
    pub const fn new(conversion: Conversion, precision: usize) -> Spec {
        Spec {
            conversion,
            precision,
            upper: false,
            alternate: false,
        }
    }

    /// The conversion a printf letter names (`e`, `E`, `f`, `F`, `g`, `G`), or `None` for any
    /// other letter.
    pub fn from_letter(letter: u8, precision: usize) -> Option<Spec> {
        let conversion = match letter.to_ascii_lowercase() {
            b'e' => Conversion::Exponent,
            b'f' => Conversion::Fixed,
            b'g' => Conversion::General,
            _ => return None,
        };
        Some(Spec {
            upper: letter.is_ascii_uppercase(),
            ..Spec::new(conversion, precision)
        })
    }

    /// The same conversion, upper-case.
    pub const fn upper(self) -> Spec {
        Spec {
            upper: true,
            ..self
        }
    }

    /// The same conversion with the `#` flag.
    pub const fn alternate(self) -> Spec {
        Spec {
            alternate: true,
            ..self
        }
    }

    /// `x` as printf prints it with this conversion: a `-` for any value whose sign bit is set,
    /// then the digits; no padding and no `+` or space for positive values.
    pub fn format(&self, x: f64) -> String {
        let mut out = String::new();
        if x.is_sign_negative() {
            out.push('-');
        }
        let a = x.abs();
        if !a.is_finite() {
            let word = if a.is_nan() { "nan" } else { "inf" };
            out.push_str(&self.case(word.to_string()));
            return out;
        }
        let digits = match self.conversion {
            Conversion::Exponent => self.exponent(a, self.precision),
            Conversion::Fixed => self.fixed(a, self.precision),
            Conversion::General => self.general(a),
        };
        out.push_str(&digits);
        out
    }

    /// `%e` of a finite non-negative `a` with `precision` digits after the point.
    fn exponent(&self, a: f64, precision: usize) -> String {
        let rust = format!("{:.*e}", precision, a);
        let (mantissa, exp) = rust.split_once('e').unwrap_or((&rust, "0"));
        let exp: i32 = exp.parse().unwrap_or(0);
        let point = if self.alternate && precision == 0 {
            "."
        } else {
            ""
        };
        let sign = if exp < 0 { '-' } else { '+' };
        self.case(format!("{mantissa}{point}e{sign}{:02}", exp.unsigned_abs()))
    }

    /// `%f` of a finite non-negative `a` with `precision` digits after the point.
    fn fixed(&self, a: f64, precision: usize) -> String {
        let mut s = format!("{:.*}", precision, a);
        if self.alternate && precision == 0 {
            s.push('.');
        }
        s
    }

    /// `%g` of a finite non-negative `a`.
    fn general(&self, a: f64) -> String {
        let p = self.precision.max(1);
        // The exponent `%e` would print with p significant digits (after its rounding).
        let rust = format!("{:.*e}", p - 1, a);
        let exp: i32 = rust
            .split_once('e')
            .and_then(|(_, e)| e.parse().ok())
            .unwrap_or(0);
        let s = if exp < -4 || exp >= p as i32 {
            self.exponent(a, p - 1)
        } else {
            self.fixed(a, (p as i32 - 1 - exp) as usize)
        };
        if self.alternate {
            return s;
        }
        // Without `#`, trailing zeros of the fraction go, and the point with them.
        let (mantissa, exp) = s.split_at(s.find(['e', 'E']).unwrap_or(s.len()));
        let mantissa = if mantissa.contains('.') {
            mantissa.trim_end_matches('0').trim_end_matches('.')
        } else {
            mantissa
        };
        format!("{mantissa}{exp}")
    }

    fn case(&self, s: String) -> String {
        if self.upper {
            s.to_ascii_uppercase()
        } else {
            s
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `printf` of glibc 2.36 (gcc 12, Debian bookworm) prints: each row is a format,
    /// the value and C's output, checked with a C program calling printf(fmt, value).
    const GLIBC: &[(&str, f64, &str)] = &[
        ("%g", -0.0, "-0"),
        ("%g", 0.0, "0"),
        ("%G", -0.0, "-0"),
        ("%.16G", -0.0, "-0"),
        ("%.1g", -0.0, "-0"),
        ("%#g", -0.0, "-0.00000"),
        ("%e", -0.0, "-0.000000e+00"),
        ("%f", -0.0, "-0.000000"),
        ("%.15E", -0.0, "-0.000000000000000E+00"),
        ("%g", 1e-5, "1e-05"),
        ("%.1g", 1e-5, "1e-05"),
        ("%.16G", 1e-5, "1E-05"),
        ("%.15E", 1e-5, "1.000000000000000E-05"),
        ("%G", 1e-5, "1E-05"),
        ("%g", 0.0001, "0.0001"),
        ("%f", 1e-5, "0.000010"),
        ("%e", 1e-5, "1.000000e-05"),
        ("%g", 123456789.0, "1.23457e+08"),
        ("%.1g", 123456789.0, "1e+08"),
        ("%.3g", 123456789.0, "1.23e+08"),
        ("%.9g", 123456789.0, "123456789"),
        ("%.16G", 123456789.0, "123456789"),
        ("%#.9g", 123456789.0, "123456789."),
        ("%.0f", 123456789.0, "123456789"),
        ("%#.0f", 123456789.0, "123456789."),
        ("%.0e", 123456789.0, "1e+08"),
        ("%#.0e", 123456789.0, "1.e+08"),
        ("%.15E", 123456789.0, "1.234567890000000E+08"),
        ("%g", 1e21, "1e+21"),
        ("%.16G", 1e21, "1E+21"),
        ("%.21g", 1e21, "1e+21"),
        ("%.22g", 1e21, "1000000000000000000000"),
        ("%f", 1e21, "1000000000000000000000.000000"),
        ("%e", 1e21, "1.000000e+21"),
        ("%g", 1e100, "1e+100"),
        ("%g", 1e-300, "1e-300"),
        ("%g", f64::NAN, "nan"),
        ("%G", f64::NAN, "NAN"),
        ("%f", f64::NAN, "nan"),
        ("%e", f64::NAN, "nan"),
        ("%.16G", f64::NAN, "NAN"),
        ("%g", -f64::NAN, "-nan"),
        ("%G", -f64::NAN, "-NAN"),
        ("%g", f64::INFINITY, "inf"),
        ("%G", f64::INFINITY, "INF"),
        ("%g", f64::NEG_INFINITY, "-inf"),
        ("%.3f", f64::INFINITY, "inf"),
        ("%E", f64::NEG_INFINITY, "-INF"),
        ("%.2f", 0.125, "0.12"),
        ("%.0f", 0.5, "0"),
        ("%.0f", 2.5, "2"),
        ("%.1e", 1.25, "1.2e+00"),
        ("%g", 0.5, "0.5"),
        ("%g", 100000.0, "100000"),
        ("%g", 1000000.0, "1e+06"),
        ("%#g", 1.5, "1.50000"),
        ("%#.3g", 2.0, "2.00"),
        ("%.0g", 2.5, "2"),
        ("%.20g", 1.0 / 3.0, "0.33333333333333331483"),
        ("%.16G", 0.1, "0.1"),
        ("%.17g", 0.1, "0.10000000000000001"),
        ("%g", 9.9999949999e-5, "9.99999e-05"),
        ("%g", 9.99999951e-5, "0.0001"),
        ("%g", 999999.5, "1e+06"),
    ];

    /// Reads a `%[#][.prec]c` format of the table.
    fn spec(fmt: &str) -> Spec {
        let body = fmt.strip_prefix('%').expect("a format");
        let (alternate, body) = match body.strip_prefix('#') {
            Some(rest) => (true, rest),
            None => (false, body),
        };
        let (precision, letter) = match body.strip_prefix('.') {
            Some(rest) => (
                rest[..rest.len() - 1].parse().expect("a precision"),
                rest.as_bytes()[rest.len() - 1],
            ),
            None => (6, body.as_bytes()[0]),
        };
        let s = Spec::from_letter(letter, precision).expect("a float conversion");
        if alternate {
            s.alternate()
        } else {
            s
        }
    }

    #[test]
    fn formats_as_glibc_printf() {
        let wrong: Vec<String> = GLIBC
            .iter()
            .filter_map(|&(fmt, x, c)| {
                let ours = spec(fmt).format(x);
                (ours != c).then(|| format!("{fmt} of {x:?}: C {c:?}, ours {ours:?}"))
            })
            .collect();
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }

    #[test]
    fn only_float_letters_are_conversions() {
        assert_eq!(Spec::from_letter(b'd', 6), None);
        assert_eq!(
            Spec::from_letter(b'G', 16),
            Some(Spec::new(Conversion::General, 16).upper())
        );
    }
}
