//! Reading condor_advertise's FILE: old ClassAd syntax (`Attr = expression` per line, `#`
//! comments), one ad, or with `-multiple` several separated by blank lines.
//!
//! Without `-multiple` condor_advertise ignores blank lines, so two ads written one after the
//! other become one ad, the second's values replacing the first's. Here a blank line inside
//! one ad is still ignored, but a part after a blank line that sets an attribute again is
//! another ad, and that is an error: the admin meant `-multiple`, or the file is not the one
//! they meant.
use classad::{ClassAd, Value};

/// One ad of the file: where it is, its text and its parsed form.
#[derive(Debug, Clone)]
pub struct FileAd {
    /// The file's name as given (`(stdin)` for standard input).
    pub file: String,
    /// 1-based position among the file's ads.
    pub index: usize,
    /// The line it starts on (1-based).
    pub line: usize,
    /// Its lines as written, comments included: what is sent to the collector.
    pub text: String,
    /// The ad, parsed.
    pub ad: ClassAd,
}

impl FileAd {
    /// Its `Name`, when that is a string.
    pub fn name(&self) -> Option<String> {
        match self.ad.eval_attr("Name") {
            Value::Str(s) => Some(s.to_string()),
            _ => None,
        }
    }

    /// How messages name it: `FILE, ad 2 (line 5, "slot1@b")`.
    pub fn label(&self) -> String {
        label(&self.file, self.index, self.line, self.name().as_deref())
    }

    /// A message about one attribute of this ad.
    pub fn fault(&self, attr: &str, what: &str) -> String {
        format!("{}, attribute {attr}: {what}", self.label())
    }
}

fn label(file: &str, index: usize, line: usize, name: Option<&str>) -> String {
    match name {
        Some(n) => format!("{file}, ad {index} (line {line}, {n:?})"),
        None => format!("{file}, ad {index} (line {line})"),
    }
}

/// A run of non-blank lines: one ad with `-multiple`, a part of the one ad without.
struct Part<'a> {
    /// The line it starts on.
    first: usize,
    lines: Vec<&'a str>,
}

impl Part<'_> {
    /// Whether it holds anything but comments.
    fn has_attributes(&self) -> bool {
        self.lines.iter().any(|l| !l.trim_start().starts_with('#'))
    }

    fn text(&self) -> String {
        self.lines.join("\n")
    }
}

/// The file's runs of non-blank lines.
fn parts(text: &str) -> Vec<Part<'_>> {
    let mut out: Vec<Part<'_>> = Vec::new();
    let mut cur: Option<Part<'_>> = None;
    for (i, raw) in text.split('\n').enumerate() {
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        if line.trim().is_empty() {
            out.extend(cur.take());
        } else {
            cur.get_or_insert_with(|| Part {
                first: i + 1,
                lines: Vec::new(),
            })
            .lines
            .push(line);
        }
    }
    out.extend(cur);
    out.retain(Part::has_attributes);
    out
}

/// Parses one part as one ad; an error names the file, the line, the ad and the attribute.
fn parse_part(file: &str, index: usize, part: &Part<'_>) -> Result<ClassAd, String> {
    let mut ads = classad::parse_old_ads_strict(&part.text()).map_err(|e| {
        let rel = (e.line as usize).max(1);
        let bad = part.lines.get(rel - 1).copied().unwrap_or("");
        let line = part.first + rel - 1;
        let attr = bad.split_once('=').map(|(n, _)| n.trim()).unwrap_or("");
        let ad = label(file, index, part.first, name_in(part).as_deref());
        if attr.is_empty() {
            format!("{ad}: line {line} does not parse: {}", e.message)
        } else {
            format!(
                "{ad}, attribute {attr}: line {line} does not parse (column {}): {}",
                e.column, e.message
            )
        }
    })?;
    match ads.len() {
        1 => Ok(ads.remove(0)),
        n => Err(format!(
            "{}: read as {n} ads (internal error, please report)",
            label(file, index, part.first, None)
        )),
    }
}

/// The `Name` of a part that does not parse, from its own line if that one does.
fn name_in(part: &Part<'_>) -> Option<String> {
    part.lines
        .iter()
        .filter(|l| {
            l.split_once('=')
                .is_some_and(|(n, _)| n.trim().eq_ignore_ascii_case("Name"))
        })
        .find_map(|l| classad::parse_old_ads_strict(l).ok()?.pop())
        .and_then(|ad| ad.eval_attr("Name").as_str().map(str::to_string))
}

/// The ads of `text`, the contents of `file`, as condor_advertise reads them (see the module
/// documentation for blank lines without `multiple`). Every line must parse: an error names
/// the file, the ad and the attribute, and nothing is sent (condor_advertise sends nothing
/// either when a line does not parse).
pub fn read_ads(file: &str, text: &str, multiple: bool) -> Result<Vec<FileAd>, String> {
    let parts = parts(text);
    if parts.is_empty() {
        return Err(format!("{file} is empty"));
    }
    let mut ads: Vec<FileAd> = Vec::new();
    for part in &parts {
        let index = if multiple { ads.len() + 1 } else { 1 };
        let ad = parse_part(file, index, part)?;
        match ads.last_mut() {
            Some(one) if !multiple => {
                if let Some((again, _)) = ad.iter().find(|(n, _)| one.ad.contains(n)) {
                    return Err(format!(
                        "{file} holds more than one ad: the part at line {} sets {again} again \
                         (after {}); use -multiple to send each ad, or remove the blank line if \
                         it is one ad (condor_advertise would merge them, the later values \
                         replacing the earlier)",
                        part.first,
                        one.label()
                    ));
                }
                one.ad.update(&ad);
                one.text.push('\n');
                one.text.push_str(&part.text());
            }
            _ => ads.push(FileAd {
                file: file.to_string(),
                index,
                line: part.first,
                text: part.text(),
                ad,
            }),
        }
    }
    Ok(ads)
}
