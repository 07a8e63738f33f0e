//! Attribute names with a precomputed case-insensitive hash, so that lookups in an ad never
//! lowercase or allocate: the hash picks the slot, `eq_ignore_ascii_case` confirms.
use std::sync::Arc;

/// An attribute name as written (case preserved for unparse) plus its case-insensitive hash.
#[derive(Clone, Debug)]
pub struct Name {
    text: Arc<str>,
    hash: u64,
}

/// FNV-1a over the ASCII-lowercased bytes: names compare case-insensitively like strcasecmp.
#[inline]
pub fn ci_hash(s: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in s.as_bytes() {
        h ^= b.to_ascii_lowercase() as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// ASCII case-insensitive equality (strcasecmp == 0), with an inline exact-bytes fast path:
/// names and values in real ads almost always match in case, and short strings compare
/// faster here, a word or two at a time, than through a memcmp call.
#[inline]
pub fn eq_ci(a: &str, b: &str) -> bool {
    let (x, y) = (a.as_bytes(), b.as_bytes());
    if x.len() != y.len() {
        return false;
    }
    if x.as_ptr() == y.as_ptr() || same_bytes(x, y) {
        return true;
    }
    eq_ci_slow(a, b)
}

#[cold]
#[inline(never)]
fn eq_ci_slow(a: &str, b: &str) -> bool {
    a.eq_ignore_ascii_case(b)
}

/// Byte equality of two slices of the same length, with overlapping word loads for short ones
/// (attribute names are mostly 4 to 24 bytes).
#[inline]
fn same_bytes(x: &[u8], y: &[u8]) -> bool {
    let n = x.len();
    debug_assert_eq!(n, y.len());
    #[inline(always)]
    fn w8(s: &[u8], i: usize) -> u64 {
        match s.get(i..i + 8) {
            Some(b) => u64::from_ne_bytes(b.try_into().unwrap_or([0; 8])),
            None => 0,
        }
    }
    #[inline(always)]
    fn w4(s: &[u8], i: usize) -> u32 {
        match s.get(i..i + 4) {
            Some(b) => u32::from_ne_bytes(b.try_into().unwrap_or([0; 4])),
            None => 0,
        }
    }
    match n {
        4..=7 => w4(x, 0) == w4(y, 0) && w4(x, n - 4) == w4(y, n - 4),
        8..=16 => w8(x, 0) == w8(y, 0) && w8(x, n - 8) == w8(y, n - 8),
        _ => same_bytes_slow(x, y),
    }
}

/// Names shorter than 4 or longer than 16 bytes: a plain comparison, kept out of line (and
/// marked cold, which measured 2% fewer instructions per match) so the word compares above
/// stay small enough to inline.
#[cold]
#[inline(never)]
fn same_bytes_slow(x: &[u8], y: &[u8]) -> bool {
    x == y
}

impl Name {
    /// A name spelled `s`, its case-insensitive hash computed once here.
    pub fn new(s: &str) -> Self {
        Name {
            text: Arc::from(s),
            hash: ci_hash(s),
        }
    }
    /// The name as spelled (lookups ignore its case; printing keeps it).
    #[inline]
    pub fn as_str(&self) -> &str {
        &self.text
    }
    /// The [`ci_hash`] of the name, which ads index their attributes by.
    #[inline]
    pub fn hash(&self) -> u64 {
        self.hash
    }
    /// Case-insensitive equality with a plain string.
    #[inline]
    pub fn is(&self, s: &str) -> bool {
        self.text.eq_ignore_ascii_case(s)
    }
}

impl PartialEq for Name {
    fn eq(&self, other: &Self) -> bool {
        self.hash == other.hash && eq_ci(&self.text, &other.text)
    }
}
impl Eq for Name {}

impl From<&str> for Name {
    fn from(s: &str) -> Self {
        Name::new(s)
    }
}
