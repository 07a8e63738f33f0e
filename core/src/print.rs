//! condor_status's print formats for one ad, shared by `cmctl` (which prints ads it parsed)
//! and the collector (which renders `-long` and `-af` for `Collector.QueryStream`, so the
//! client writes the bytes without parsing 50,000 ads).
//!
//! HTCondor prints `-long` with `fPrintAd` (src/condor_utils/compat_classad.cpp: one
//! `Name = expr` line per attribute in old syntax, the attributes sorted by name), and
//! `-autoformat` with its print mask (src/condor_utils/ad_printmask.cpp: each value evaluated,
//! strings unquoted, separated by spaces). Both ends call the same functions here, so a text
//! rendered by a CM is byte for byte what `cmctl` prints from the ads.
use classad::{ClassAd, Expr, Value};

/// A real as condor_status prints it in `-af` and `-json`: shortest form with at least one
/// decimal (`1.0`, `0.1`, `123456.789`), exponent form for large and tiny values (`1E+20`).
pub fn real(r: f64) -> String {
    if !r.is_finite() {
        return if r.is_nan() {
            "real(\"NaN\")".into()
        } else if r > 0.0 {
            "real(\"INF\")".into()
        } else {
            "real(\"-INF\")".into()
        };
    }
    let a = r.abs();
    if a != 0.0 && !(1e-5..1e15).contains(&a) {
        let e = format!("{r:E}");
        return match e.split_once('E') {
            Some((m, x)) if !x.starts_with('-') => format!("{m}E+{x}"),
            _ => e,
        };
    }
    if r.fract() == 0.0 {
        format!("{r:.1}")
    } else {
        format!("{r}")
    }
}

/// A value as condor_status prints it in tables and `-af`: strings unquoted, reals short.
pub fn value_text(v: Value) -> String {
    match v {
        Value::Str(s) => s.to_string(),
        Value::Undefined => "undefined".into(),
        Value::Real(r) => real(r),
        other => other.to_string(),
    }
}

/// Appends one `-af` line: the attributes' values (each evaluated in `ad`) separated by
/// spaces, then a newline.
pub fn autoformat_line(out: &mut String, ad: &ClassAd, attrs: &[String]) {
    for (i, name) in attrs.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        out.push_str(&value_text(ad.eval_attr(name)));
    }
    out.push('\n');
}

/// Appends one `-long` ad: its attributes (`name`, expression) sorted by name
/// case-insensitively, one `Name = expr` line each in old syntax, then a blank line.
/// The attributes come as an iterator so a caller can add one (the collector's
/// `LastHeardFrom`) without copying the ad.
pub fn long_ad<'a>(out: &mut String, attrs: impl Iterator<Item = (&'a str, &'a Expr)>) {
    LongWriter::default().write(out, attrs)
}

/// [`long_ad`] for a run of ads, remembering the sorted order of the last ad's attribute
/// names: the next ad with the same names in the same order (a pool's slot ads, made by one
/// startd's code) is not sorted again, which was a third of rendering a slot ad.
#[derive(Debug, Default)]
pub struct LongWriter {
    /// The last ad's attribute names, in its own order.
    names: Vec<String>,
    /// Indices into `names`, sorted by name case-insensitively.
    order: Vec<usize>,
}

impl LongWriter {
    /// Appends one ad as [`long_ad`] does.
    pub fn write<'a>(
        &mut self,
        out: &mut String,
        attrs: impl Iterator<Item = (&'a str, &'a Expr)>,
    ) {
        let attrs: Vec<(&str, &Expr)> = attrs.collect();
        let same = attrs.len() == self.names.len()
            && attrs.iter().zip(&self.names).all(|((n, _), m)| *n == m);
        if !same {
            let lower = |s: &'a str| s.bytes().map(|c| c.to_ascii_lowercase());
            self.order = (0..attrs.len()).collect();
            self.order
                .sort_unstable_by(|&a, &b| lower(attrs[a].0).cmp(lower(attrs[b].0)));
            self.names = attrs.iter().map(|(n, _)| n.to_string()).collect();
        }
        for &i in &self.order {
            let (name, e) = attrs[i];
            out.push_str(name);
            out.push_str(" = ");
            classad::format::unparse_expr_old(out, e);
            out.push('\n');
        }
        out.push('\n');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ad(text: &str) -> ClassAd {
        classad::parse_old_ads(text).expect("parses").remove(0)
    }

    #[test]
    fn long_sorts_attributes_by_name_ignoring_case_and_ends_with_a_blank_line() {
        let a = ad("b = 2\nName = \"x\"\nA = \"q\\\"uote\"\nc = B + 1\n");
        let mut out = String::new();
        long_ad(&mut out, a.iter());
        assert_eq!(out, "A = \"q\\\"uote\"\nb = 2\nc = B + 1\nName = \"x\"\n\n");
    }

    #[test]
    fn long_prints_each_line_as_old_syntax_does() {
        let a = ad("Requirements = START && (X =?= 1)\nR = 0.5\nL = { 1, \"a\" }\n");
        let mut out = String::new();
        long_ad(&mut out, a.iter());
        let mut lines: Vec<&str> = Vec::new();
        let text = a.to_old_syntax();
        lines.extend(text.lines());
        lines.sort_by_key(|l| l.split(" = ").next().unwrap_or("").to_ascii_lowercase());
        assert_eq!(out, format!("{}\n\n", lines.join("\n")));
    }

    #[test]
    fn a_long_writer_sorts_each_ad_s_own_names() {
        let first = ad("b = 1\na = 2\n");
        let same_names = ad("b = 3\na = 4\n");
        let other = ad("c = 5\nB = 6\nA = 7\n");
        let mut w = LongWriter::default();
        let mut out = String::new();
        for a in [&first, &same_names, &other, &first] {
            w.write(&mut out, a.iter());
        }
        assert_eq!(
            out,
            "a = 2\nb = 1\n\na = 4\nb = 3\n\nA = 7\nB = 6\nc = 5\n\na = 2\nb = 1\n\n"
        );
    }

    #[test]
    fn autoformat_unquotes_strings_and_shortens_reals() {
        let a = ad("Name = \"slot1@h\"\nLoad = 0.25\nCpus = 4\nT = 2.0\n");
        let mut out = String::new();
        autoformat_line(
            &mut out,
            &a,
            &["Name", "Load", "Cpus", "T", "Missing"].map(String::from),
        );
        assert_eq!(out, "slot1@h 0.25 4 2.0 undefined\n");
    }

    #[test]
    fn reals_print_as_condor_status_does() {
        assert_eq!(real(1.0), "1.0");
        assert_eq!(real(123456.789), "123456.789");
        assert_eq!(real(1e20), "1E+20");
        assert_eq!(real(f64::NAN), "real(\"NaN\")");
    }
}
