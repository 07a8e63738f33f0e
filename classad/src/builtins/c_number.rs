//! What C does to numbers that libclassad's functions inherit and several families share:
//! strtod(3)'s longest-prefix parse of a string, and the (int) and (long long) casts of a
//! double, whose out-of-range results on x86-64 are the "integer indefinite" value (the most
//! negative integer).
/// C strtod on a prefix of `s`: the number and whether any characters were consumed.
pub fn strtod(s: &str) -> (f64, bool) {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() && (b[i].is_ascii_whitespace() || b[i] == 0x0b) {
        i += 1;
    }
    let start = i;
    let mut j = i;
    if j < b.len() && (b[j] == b'+' || b[j] == b'-') {
        j += 1;
    }
    let rest = &s[j..];
    let lower: String = rest
        .chars()
        .take(8)
        .collect::<String>()
        .to_ascii_lowercase();
    let neg = j > start && b[start] == b'-';
    if lower.starts_with("inf") {
        let v = if neg {
            f64::NEG_INFINITY
        } else {
            f64::INFINITY
        };
        return (v, true);
    }
    if lower.starts_with("nan") {
        return (f64::NAN, true);
    }
    if lower.starts_with("0x") {
        // hexadecimal float
        let mut k = j + 2;
        let mut v = 0f64;
        let mut any = false;
        while k < b.len() && b[k].is_ascii_hexdigit() {
            v = v * 16.0 + (b[k] as char).to_digit(16).unwrap_or(0) as f64;
            k += 1;
            any = true;
        }
        if k < b.len() && b[k] == b'.' {
            k += 1;
            let mut scale = 1.0 / 16.0;
            while k < b.len() && b[k].is_ascii_hexdigit() {
                v += (b[k] as char).to_digit(16).unwrap_or(0) as f64 * scale;
                scale /= 16.0;
                k += 1;
                any = true;
            }
        }
        if !any {
            return (0.0, true); // "0" consumed
        }
        if k < b.len() && (b[k] == b'p' || b[k] == b'P') {
            let mut m = k + 1;
            let mut eneg = false;
            if m < b.len() && (b[m] == b'+' || b[m] == b'-') {
                eneg = b[m] == b'-';
                m += 1;
            }
            let es = m;
            let mut e = 0i32;
            while m < b.len() && b[m].is_ascii_digit() {
                e = e.saturating_mul(10).saturating_add((b[m] - b'0') as i32);
                m += 1;
            }
            if m > es {
                v *= 2f64.powi(if eneg { -e } else { e });
            }
        }
        return (if neg { -v } else { v }, true);
    }
    let mut k = j;
    let ds = k;
    while k < b.len() && b[k].is_ascii_digit() {
        k += 1;
    }
    let mut nd = k - ds;
    if k < b.len() && b[k] == b'.' {
        k += 1;
        let fs = k;
        while k < b.len() && b[k].is_ascii_digit() {
            k += 1;
        }
        nd += k - fs;
    }
    if nd == 0 {
        return (0.0, false);
    }
    if k < b.len() && (b[k] == b'e' || b[k] == b'E') {
        let mut m = k + 1;
        if m < b.len() && (b[m] == b'+' || b[m] == b'-') {
            m += 1;
        }
        let es = m;
        while m < b.len() && b[m].is_ascii_digit() {
            m += 1;
        }
        if m > es {
            k = m;
        }
    }
    let text = &s[start..k];
    let text = if text.ends_with('.') && text.len() > 1 {
        &text[..text.len() - 1]
    } else {
        text
    };
    (text.parse::<f64>().unwrap_or(0.0), true)
}

/// C's `(long long)` cast of a double.
pub(super) fn c_double_to_i64(x: f64) -> i64 {
    // 2^63, the first double past i64::MAX (exactly representable).
    const LIMIT: f64 = 9_223_372_036_854_775_808.0;
    if x.is_nan() || !(-LIMIT..LIMIT).contains(&x) {
        i64::MIN
    } else {
        x as i64
    }
}

/// C's `(int)` cast of a double.
pub(super) fn c_double_to_i32(x: f64) -> i32 {
    if x.is_nan() || x >= 2_147_483_648.0 || x <= -2_147_483_649.0 {
        i32::MIN
    } else {
        x as i32
    }
}
