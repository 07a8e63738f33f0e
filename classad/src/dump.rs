//! Reading whole dumps of old-syntax ads (`condor_status -long`, `condor_q -long`: ads
//! separated by blank lines) on every core.
//!
//! HTCondor's tools read such files, "the traditional -long form" (`Parse_long` of
//! `CondorClassAdFileParseHelper`), one ad at a time on one thread (`CondorClassAdFileIterator`,
//! each line through `InsertLongFormAttrValue` and the ClassAd cache; all in
//! src/condor_utils/compat_classad_util.h). A blank line ends an
//! ad whatever came before it (old syntax has one attribute per line), so a dump can be cut
//! after any blank line and the pieces read independently: here several dumps are cut into
//! pieces of similar size, threads take pieces in turn, each reading through its own
//! [`AttrCache`] (so ads read on one thread share the attributes they have in common), and
//! each dump's ads are put back together in the order of the text. The result is the one
//! [`crate::parse_old_ads_strict`] gives, error included (the first bad line of the dump, its
//! line counted from the start of the dump).
use crate::cache::AttrCache;
use crate::error::ParseError;
use crate::ClassAd;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Pieces no smaller than this: below it, handing a piece to a thread costs more than it saves.
const MIN_PIECE: usize = 256 * 1024;

/// Pieces per thread: enough that a thread finishing early finds more work.
const PIECES_PER_THREAD: usize = 4;

/// One piece of one dump.
struct Piece<'a> {
    /// Which dump it comes from.
    dump: usize,
    /// Its byte offset in that dump.
    start: usize,
    text: &'a str,
}

/// Parses each of `dumps` as [`crate::parse_old_ads_strict`] does, on up to `threads` threads
/// (the available parallelism when 0), giving one result per dump, in the same order. Ads are
/// read through per-thread caches of parsed lines, as [`crate::parse_old_ads_cached`] reads
/// them.
pub fn parse_old_dumps(dumps: &[&str], threads: usize) -> Vec<Result<Vec<ClassAd>, ParseError>> {
    read(dumps, threads, MIN_PIECE)
}

/// [`parse_old_dumps`] with pieces of at least `min_piece` bytes.
fn read(dumps: &[&str], threads: usize, min_piece: usize) -> Vec<Result<Vec<ClassAd>, ParseError>> {
    let threads = match threads {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    };
    let total: usize = dumps.iter().map(|d| d.len()).sum();
    let piece_len = (total / (threads * PIECES_PER_THREAD)).max(min_piece);
    let pieces: Vec<Piece> = dumps
        .iter()
        .enumerate()
        .flat_map(|(dump, text)| {
            cut(text, piece_len)
                .into_iter()
                .map(move |(start, end)| Piece {
                    dump,
                    start,
                    text: &text[start..end],
                })
        })
        .collect();
    let workers = threads.min(pieces.len()).max(1);
    let next = AtomicUsize::new(0);
    let work = || {
        let mut cache = AttrCache::default();
        let mut done = Vec::new();
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(p) = pieces.get(i) else {
                return done;
            };
            done.push((
                i,
                crate::parser::parse_old_ads_with(p.text, Some(&mut cache)),
            ));
        }
    };
    let mut results: Vec<Option<Result<Vec<ClassAd>, ParseError>>> =
        (0..pieces.len()).map(|_| None).collect();
    std::thread::scope(|s| {
        let others: Vec<_> = (1..workers).map(|_| s.spawn(work)).collect();
        let mine = work();
        for (i, r) in others
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .chain(mine)
        {
            results[i] = Some(r);
        }
    });
    let mut out: Vec<Result<Vec<ClassAd>, ParseError>> =
        dumps.iter().map(|_| Ok(Vec::new())).collect();
    for (p, r) in pieces.iter().zip(results) {
        let slot = &mut out[p.dump];
        let Ok(ads) = slot else {
            continue; // an earlier piece of this dump failed: that is the dump's error
        };
        match r.unwrap_or_else(|| Ok(Vec::new())) {
            Ok(mut more) => {
                if ads.is_empty() {
                    *ads = more;
                } else {
                    ads.append(&mut more);
                }
            }
            Err(mut e) => {
                let before = dumps[p.dump][..p.start].bytes().filter(|&b| b == b'\n');
                e.line += before.count() as u32;
                *slot = Err(e);
            }
        }
    }
    out
}

/// Cuts `text` into `(start, end)` byte ranges of about `len` bytes, each ending just after a
/// blank line (or at the end of the text).
fn cut(text: &str, len: usize) -> Vec<(usize, usize)> {
    let mut ranges = Vec::new();
    let mut start = 0;
    while text.len() - start > len {
        match blank_line_end(text, start + len) {
            Some(end) => {
                ranges.push((start, end));
                start = end;
            }
            None => break,
        }
    }
    ranges.push((start, text.len()));
    ranges
}

/// The offset just after the first blank line (empty or all whitespace, as the reader takes
/// it) that starts after `from`, if that is before the end of the text.
fn blank_line_end(text: &str, from: usize) -> Option<usize> {
    let b = text.as_bytes();
    // The start of the line after the one `from` is in.
    let mut line = from + b.get(from..)?.iter().position(|&c| c == b'\n')? + 1;
    while line < b.len() {
        let end = b[line..]
            .iter()
            .position(|&c| c == b'\n')
            .map_or(b.len(), |k| line + k + 1);
        // `text[line..end]` is whole lines of a str, so on char boundaries.
        if text[line..end].trim().is_empty() {
            return (end < b.len()).then_some(end);
        }
        line = end;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A dump of `n` ads of differing sizes, with comments, `\r\n` endings, runs of blank
    /// lines and whitespace-only lines between ads.
    fn dump(n: usize) -> String {
        let mut s = String::new();
        for i in 0..n {
            s.push_str(&format!("Name = \"slot{i}@host\"\nCpus = {}\n", i % 7));
            for k in 0..i % 5 {
                s.push_str(&format!("Extra{k} = TARGET.Memory >= {}\n", k * 100));
            }
            match i % 4 {
                0 => s.push('\n'),
                1 => s.push_str("# a comment\r\nRank = 0.5\r\n\r\n"),
                2 => s.push_str("\n\n\n"),
                _ => s.push_str("Start = true\n \t \n"),
            }
        }
        s
    }

    fn same(a: &[ClassAd], b: &[ClassAd]) {
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(b) {
            assert_eq!(x, y);
            assert_eq!(x.to_old_syntax(), y.to_old_syntax());
        }
    }

    #[test]
    fn pieces_cover_the_text_and_end_after_blank_lines() {
        let text = dump(500);
        for len in [1, 10, 100, 1000, 100_000] {
            let r = cut(&text, len);
            assert_eq!(r.first().map(|p| p.0), Some(0));
            assert_eq!(r.last().map(|p| p.1), Some(text.len()));
            for w in r.windows(2) {
                assert_eq!(w[0].1, w[1].0);
                let before = text[..w[0].1].strip_suffix('\n').expect("ends a line");
                let last = before.rsplit('\n').next().expect("a line");
                assert!(last.trim().is_empty(), "{len}: piece ends after {last:?}");
            }
        }
    }

    #[test]
    fn dumps_read_in_pieces_on_threads_give_the_sequential_ads_in_order() {
        let a = dump(3000);
        let b = dump(700).replace("slot", "job");
        let want_a = crate::parse_old_ads_strict(&a).expect("parses");
        let want_b = crate::parse_old_ads_strict(&b).expect("parses");
        assert_eq!(want_a.len(), 3000);
        for threads in [1, 2, 3, 8] {
            let got = read(&[&a, "", &b], threads, 1000);
            assert_eq!(got.len(), 3);
            same(got[0].as_ref().expect("a parses"), &want_a);
            assert!(got[1].as_ref().expect("empty parses").is_empty());
            same(got[2].as_ref().expect("b parses"), &want_b);
        }
        // Small pieces, so that every boundary shape is cut at.
        let pieces = cut(&a, 1000);
        assert!(pieces.len() > 50);
        let mut cache = AttrCache::default();
        let mut ads = Vec::new();
        for (s, e) in pieces {
            ads.extend(crate::parser::parse_old_ads_with(&a[s..e], Some(&mut cache)).expect("ok"));
        }
        same(&ads, &want_a);
    }

    #[test]
    fn the_first_bad_line_is_the_error_with_its_line_in_the_whole_dump() {
        let mut text = dump(4000);
        let good = text.clone();
        // Two bad lines, in different pieces: the first is the one reported.
        let at = text.len() * 2 / 3;
        let at = at + text[at..].find('\n').expect("a line") + 1;
        text.insert_str(at, "Broken = (1 +\n");
        text.push_str("Worse = \n");
        let want = crate::parse_old_ads_strict(&text).expect_err("bad line");
        assert_eq!(want.line as usize, text[..at].matches('\n').count() + 1);
        for threads in [1, 2, 4] {
            let got = read(&[&good, &text], threads, 1000);
            assert!(got[0].is_ok());
            assert_eq!(
                got[1].as_ref().expect_err("bad line"),
                &want,
                "{threads} threads"
            );
        }
    }
}
