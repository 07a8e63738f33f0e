//! A cache of parsed old-syntax attribute lines, for readers of many similar ads (the
//! collector): libclassad's ClassAd cache does the same job.
//!
//! Most lines of a slot ad (`Arch = "X86_64"`, `Requirements = START && ...`) are the same in
//! every slot ad of a pool and in every update of one slot. A line seen before is not parsed
//! again: the ad gets the cached attribute (shared, reference counted), which saves
//! both the parse and the memory of a private copy. Lines that are unique to one ad (`Name`,
//! `Disk`) would only fill the cache, so a line is cached only the second time it is seen;
//! the first sightings are remembered as 64-bit hashes in a bounded set.
use crate::ad::Attr;
use crate::error::ParseError;
use crate::name::Name;
use crate::ClassAd;
use foldhash::fast::RandomState;
use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasher, BuildHasherDefault, Hasher};
use std::sync::Arc;

/// A line's hash is computed once, with the cache's keyed hasher; the tables below are keyed
/// by it as it is.
#[derive(Default)]
struct Prehashed(u64);

impl Hasher for Prehashed {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        // Only u64 keys are hashed here; anything else is folded in, never dropped.
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ b as u64;
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

type ByHash = BuildHasherDefault<Prehashed>;

/// Parsed lines by their exact text (attribute name included).
pub struct AttrCache {
    /// Cached lines by hash, each with its text: a hit is a line of the same text (two lines
    /// of one hash take turns, one parsed while the other is cached).
    lines: HashMap<u64, (Box<str>, Arc<Attr>), ByHash>,
    /// Hashes of lines seen once and not (yet) cached.
    seen_once: HashSet<u64, ByHash>,
    /// Attribute names as spelled, interned: the lines not cached (`Name`, `QDate`: values
    /// unique to one ad) share their names instead of allocating one each.
    names: HashMap<Box<str>, Name, RandomState>,
    /// Keyed per cache (foldhash with a random seed: fast, and a sender cannot aim lines at
    /// one hash bucket without knowing the seed).
    hasher: RandomState,
    capacity: usize,
    hits: u64,
    misses: u64,
}

impl Default for AttrCache {
    fn default() -> Self {
        AttrCache::new(200_000)
    }
}

impl std::fmt::Debug for AttrCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AttrCache")
            .field("lines", &self.lines.len())
            .field("hits", &self.hits)
            .field("misses", &self.misses)
            .finish()
    }
}

impl AttrCache {
    /// A cache holding at most `capacity` distinct lines. When it is full it starts over
    /// (cheap, and the lines that matter come back within one round of updates).
    pub fn new(capacity: usize) -> Self {
        AttrCache {
            lines: HashMap::default(),
            seen_once: HashSet::default(),
            names: HashMap::default(),
            hasher: Default::default(),
            capacity: capacity.max(1),
            hits: 0,
            misses: 0,
        }
    }

    /// Distinct lines cached.
    pub fn len(&self) -> usize {
        self.lines.len()
    }

    /// Whether no line is cached yet.
    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    /// Lines served from the cache and lines parsed, since the cache was made.
    pub fn stats(&self) -> (u64, u64) {
        (self.hits, self.misses)
    }

    /// The cached parse of `line`, if any, and the line's hash (for [`AttrCache::offer`]).
    pub(crate) fn get(&mut self, line: &str) -> (u64, Option<Arc<Attr>>) {
        let h = self.hasher.hash_one(line);
        let hit = match self.lines.get(&h) {
            Some((text, attr)) if **text == *line => Some(Arc::clone(attr)),
            _ => None,
        };
        if hit.is_some() {
            self.hits += 1;
        } else {
            self.misses += 1;
        }
        (h, hit)
    }

    /// The interned [`Name`] spelled `name` (bounded like the lines: past `capacity` names,
    /// new ones are made but not kept).
    pub(crate) fn name(&mut self, name: &str) -> Name {
        if let Some(n) = self.names.get(name) {
            return n.clone();
        }
        let n = Name::new(name);
        if self.names.len() < self.capacity {
            self.names.insert(Box::from(name), n.clone());
        }
        n
    }

    /// Records the parse of `line` (of hash `h`); caches it if the line was seen before.
    pub(crate) fn offer(&mut self, line: &str, h: u64, attr: &Arc<Attr>) {
        if !self.seen_once.remove(&h) {
            if self.seen_once.len() >= self.capacity * 4 {
                self.seen_once.clear();
            }
            self.seen_once.insert(h);
            return;
        }
        if self.lines.len() >= self.capacity {
            self.lines.clear();
        }
        self.lines.insert(h, (Box::from(line), Arc::clone(attr)));
    }
}

/// [`crate::parse_old_ads_strict`] through a cache: the same ads, parsed once per distinct
/// line.
pub fn parse_old_ads_cached(text: &str, cache: &mut AttrCache) -> Result<Vec<ClassAd>, ParseError> {
    crate::parser::parse_old_ads_with(text, Some(cache))
}
