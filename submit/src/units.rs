//! Sizes with units, as condor_submit reads `request_memory`, `request_disk` and
//! `image_size` (metric_units.cpp `parse_int64_bytes`): an integer, optionally with a fraction
//! of up to three digits, then optionally `K`, `M`, `G` or `T` (powers of 1024, an optional
//! trailing `B`); without a unit the number is already in the attribute's base unit. The
//! result is rounded up to the base unit (MiB for memory, KiB for disk). Anything else is not
//! a size and is taken as a ClassAd expression.

/// The size in `base`-byte units, or `None` when `input` is not a plain size.
pub fn parse_bytes(input: &str, base: i64) -> Option<i64> {
    let s = input.trim_start().as_bytes();
    let mut p = 0;
    let neg = s.first() == Some(&b'-');
    if neg || s.first() == Some(&b'+') {
        p += 1;
    }
    let digits_start = p;
    while p < s.len() && s[p].is_ascii_digit() {
        p += 1;
    }
    if p == digits_start {
        return None;
    }
    let mut val: i64 = std::str::from_utf8(&s[digits_start..p])
        .ok()?
        .parse()
        .ok()?;
    if neg {
        val = -val;
    }
    let mut fract = 0.0f64;
    if s.get(p) == Some(&b'.') {
        p += 1;
        let mut scale = 0.1;
        let mut n = 0;
        while p < s.len() && s[p].is_ascii_digit() {
            if n < 3 {
                fract += f64::from(s[p] - b'0') * scale;
                scale /= 10.0;
            }
            n += 1;
            p += 1;
        }
    }
    while p < s.len() && s[p].is_ascii_whitespace() {
        p += 1;
    }
    let mult: i64 = match s.get(p).map(|c| c.to_ascii_uppercase()) {
        None => base,
        Some(b'K') => 1 << 10,
        Some(b'M') => 1 << 20,
        Some(b'G') => 1 << 30,
        Some(b'T') => 1 << 40,
        Some(_) => return None,
    };
    let scaled = ((val as f64 + fract) * mult as f64) as i64;
    let value = (scaled + base - 1) / base;
    if p >= s.len() || p + 1 >= s.len() {
        return Some(value);
    }
    let mut q = p + 1;
    if s[q] == b'b' || s[q] == b'B' {
        q += 1;
    }
    while q < s.len() && s[q].is_ascii_whitespace() {
        q += 1;
    }
    (q >= s.len()).then_some(value)
}

#[cfg(test)]
mod tests {
    use super::parse_bytes;

    #[test]
    fn memory_in_mib_and_disk_in_kib() {
        let mib = 1 << 20;
        assert_eq!(parse_bytes("2G", mib), Some(2048));
        assert_eq!(parse_bytes("512", mib), Some(512));
        assert_eq!(parse_bytes("1024K", mib), Some(1));
        assert_eq!(parse_bytes("1.5G", mib), Some(1536));
        assert_eq!(parse_bytes("1 GB", mib), Some(1024));
        assert_eq!(parse_bytes("3M", 1024), Some(3072));
        assert_eq!(parse_bytes("1T", 1024), Some(1 << 30));
        assert_eq!(parse_bytes("20000", 1024), Some(20000));
        assert_eq!(parse_bytes("12Q", mib), None);
        assert_eq!(parse_bytes("100 * 1024", 1024), None);
        assert_eq!(parse_bytes("MemoryUsage", mib), None);
        assert_eq!(parse_bytes("1Gx", mib), None);
    }
}
