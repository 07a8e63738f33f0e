//! condor_status's `-long` and `-af` text, rendered on the CM for `Collector.QueryText`.
//!
//! HTCondor's condor_status (src/condor_status.V6/status.cpp) fetches the ads, projected to
//! the attributes its print mask needs, and prints them itself. At 50,000 slots most of
//! `cmctl status -long`'s time went into parsing the ads the CM had just unparsed, so here the
//! CM writes the very text `cmctl` would print ([`aerie_core::print`], shared by both) and the
//! client copies bytes to its output. The matching ads are taken under the table's read lock
//! as shared references ([`Shown`]); rendering happens after the lock is released, a wave of
//! chunks at a time over the machine's cores, each chunk whole ads, sent in the table's order.
//!
//! Only the public part of an ad reaches [`Shown`]: private attributes (`ClaimId`,
//! `Capability`, ...) are split off when the ad is stored and never rendered.
use super::Shown;
use aerie_core::print::LongWriter;
use classad::{ClassAd, Expr, Value};

/// The attribute the collector adds to every ad it shows: when it last heard of the ad.
const LAST_HEARD_FROM: &str = "LastHeardFrom";

/// What to render of each ad.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TextFormat {
    /// `-long`: every attribute, sorted by name, a blank line after each ad.
    Long,
    /// `-af ATTR...`: one line per ad, the values separated by spaces.
    Autoformat(Vec<String>),
}

impl TextFormat {
    /// Ads per chunk: about 1 MB of `-long` text (slot ads are ~2 KB), or of `-af` lines.
    pub fn ads_per_chunk(&self) -> usize {
        match self {
            TextFormat::Long => 500,
            TextFormat::Autoformat(_) => 10_000,
        }
    }
}

/// Appends the text of one ad.
pub fn render_ad(out: &mut String, shown: &Shown, format: &TextFormat) {
    Renderer::new(format).ad(out, shown)
}

/// Renders ads one after another in one format (the `-long` writer remembers the last ad's
/// order of attributes).
struct Renderer<'f> {
    format: &'f TextFormat,
    long: LongWriter,
}

impl<'f> Renderer<'f> {
    fn new(format: &'f TextFormat) -> Self {
        Renderer {
            format,
            long: LongWriter::default(),
        }
    }

    /// Appends the text of one ad.
    fn ad(&mut self, out: &mut String, shown: &Shown) {
        match self.format {
            TextFormat::Long => {
                let heard = Expr::Lit(Value::Int(shown.last_heard_from));
                let attrs = shown
                    .ad
                    .iter()
                    .filter(|(n, _)| !n.eq_ignore_ascii_case(LAST_HEARD_FROM))
                    .chain(std::iter::once((LAST_HEARD_FROM, &heard)));
                self.long.write(out, attrs);
            }
            TextFormat::Autoformat(names) => autoformat(out, shown, names),
        }
    }
}

/// One `-af` line. Each value is what `cmctl` prints from the ad reduced to the projection
/// (as the collector sends it to condor_status): a literal attribute is its own value; an
/// expression is evaluated in the projected ad, built only for such an ad.
fn autoformat(out: &mut String, shown: &Shown, names: &[String]) {
    let literal = |name: &str| -> Option<Option<Value>> {
        if name.eq_ignore_ascii_case(LAST_HEARD_FROM) {
            return Some(Some(Value::Int(shown.last_heard_from)));
        }
        match shown.ad.lookup(name) {
            None => Some(None),
            Some(Expr::Lit(v)) => Some(Some(v.clone())),
            Some(_) => None,
        }
    };
    let values: Option<Vec<Option<Value>>> = names.iter().map(|n| literal(n)).collect();
    let Some(values) = values else {
        aerie_core::print::autoformat_line(out, &projected(shown, names), names);
        return;
    };
    for (i, v) in values.into_iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        out.push_str(&aerie_core::print::value_text(
            v.unwrap_or(Value::Undefined),
        ));
    }
    out.push('\n');
}

/// The ad reduced to `names` (with `LastHeardFrom` when named), as `Collector.Query`
/// projects it.
fn projected(shown: &Shown, names: &[String]) -> ClassAd {
    let mut p = ClassAd::with_capacity(names.len());
    for name in names {
        if name.eq_ignore_ascii_case(LAST_HEARD_FROM) {
            p.insert_int(name, shown.last_heard_from);
        } else if let Some(x) = shown.ad.lookup(name) {
            p.insert(name, x.clone());
        }
    }
    p
}

/// The text of `ads`, one chunk per [`TextFormat::ads_per_chunk`] ads, handed to `send` in
/// order until it returns false (the client went away). The chunks of a wave (one per
/// thread, `threads` at least 1) are rendered at once on scoped threads. Fails, after the
/// chunks before it were sent, if rendering a chunk panicked (a bug: the caller ends the
/// stream with an error rather than leave the output silently short).
pub fn render_chunks(
    ads: &[Shown],
    format: &TextFormat,
    threads: usize,
    mut send: impl FnMut(String) -> bool,
) -> Result<(), String> {
    let per_chunk = format.ads_per_chunk();
    let threads = threads.max(1);
    let chunk_text = |chunk: &[Shown]| {
        let per_ad = match format {
            TextFormat::Long => 2048, // a slot ad's text
            TextFormat::Autoformat(_) => 64,
        };
        let mut out = String::with_capacity(chunk.len() * per_ad);
        let mut r = Renderer::new(format);
        for s in chunk {
            r.ad(&mut out, s);
        }
        out
    };
    for (w, wave) in ads.chunks(per_chunk * threads).enumerate() {
        let texts: Vec<Option<String>> = if threads == 1 || wave.len() <= per_chunk {
            wave.chunks(per_chunk)
                .map(|c| Some(chunk_text(c)))
                .collect()
        } else {
            std::thread::scope(|scope| {
                let mut chunks = wave.chunks(per_chunk);
                let first = chunks.next().unwrap_or_default();
                let others: Vec<_> = chunks.map(|c| scope.spawn(move || chunk_text(c))).collect();
                let mut texts = vec![Some(chunk_text(first))];
                texts.extend(others.into_iter().map(|h| h.join().ok()));
                texts
            })
        };
        for (i, t) in texts.into_iter().enumerate() {
            let Some(t) = t else {
                let first = w * per_chunk * threads + i * per_chunk;
                return Err(format!(
                    "rendering the ads from the {first}th on failed (a bug in the CM)"
                ));
            };
            if !send(t) {
                return Ok(());
            }
        }
    }
    Ok(())
}

/// The threads to render on: the machine's cores, at most 8.
pub fn render_threads() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(8)
}
