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

impl Name {
    pub fn new(s: &str) -> Self {
        Name {
            text: Arc::from(s),
            hash: ci_hash(s),
        }
    }
    #[inline]
    pub fn as_str(&self) -> &str {
        &self.text
    }
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
        self.hash == other.hash && self.text.eq_ignore_ascii_case(&other.text)
    }
}
impl Eq for Name {}

impl From<&str> for Name {
    fn from(s: &str) -> Self {
        Name::new(s)
    }
}
