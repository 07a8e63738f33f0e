//! A `schedd` query answered in rows: each job's projected attributes as typed cells
//! ([`RowWriter`] on the access point), read back into job ads at the client ([`read_ads`]).
//!
//! Why: `cmctl q` over 100,000 jobs spent most of its time on the access point cutting each
//! ad to the projection and printing it as ClassAd text, and in cmctl parsing that text back.
//! HTCondor's schedd sends condor_q the projected attributes only
//! (src/condor_schedd.V6/qmgmt.cpp, `GetNextJobByConstraint` with a projection, and
//! src/condor_q.V6/queue.cpp building the projection from its print format); here the values
//! go as typed protobuf fields, so neither side prints nor parses text for the integers and
//! strings that make up condor_q's views. The ads read back are the ones the text path gives
//! (`project` on the access point, then `parse_old_ads`): the same attributes (the projection
//! plus, transitively, what a kept expression refers to) with the same values, reals rounded
//! as old ClassAd syntax prints them (%.16G) and anything not a plain literal sent as its old
//! syntax text.
use crate::schedd::{cell, Cell, QueryReply, Row};
use classad::{Attr, ClassAd, Expr, Name, Value};
use std::sync::Arc;

/// A non-literal expression seen in a column, kept so that the next job with the same
/// expression (one per job for `MemoryUsage`) is neither printed nor scanned again.
struct Seen {
    expr: Expr,
    text: String,
    refs: Vec<usize>,
}

/// Writes the rows of one query: the projection's names are resolved (hashed) once per
/// query, not once per job, and each job costs a probe of its ad per attribute.
pub struct RowWriter {
    names: Vec<Name>,
    projected: usize,
    seen: Vec<Option<Seen>>,
    rows: Vec<Row>,
    /// Per row scratch: the columns still to look up, and those done.
    pending: Vec<usize>,
    done: Vec<bool>,
}

impl RowWriter {
    /// A writer for `projection` (each name once, case insensitively, first spelling kept).
    pub fn new(projection: &[String]) -> RowWriter {
        let mut w = RowWriter {
            names: Vec::with_capacity(projection.len()),
            projected: 0,
            seen: Vec::new(),
            rows: Vec::new(),
            pending: Vec::new(),
            done: Vec::new(),
        };
        for p in projection {
            w.column(p);
        }
        w.projected = w.names.len();
        w
    }

    /// The column of attribute `name`, added when new.
    fn column(&mut self, name: &str) -> usize {
        let hash = classad::name::ci_hash(name);
        if let Some(i) = self
            .names
            .iter()
            .position(|n| n.hash() == hash && n.as_str().eq_ignore_ascii_case(name))
        {
            return i;
        }
        self.names.push(Name::new(name));
        self.seen.push(None);
        self.names.len() - 1
    }

    /// Adds one job's row: its projected attributes, then those their expressions refer to.
    pub fn push(&mut self, ad: &ClassAd) {
        let mut cells = Vec::with_capacity(self.projected);
        self.pending.clear();
        self.pending.extend((0..self.projected).rev());
        self.done.clear();
        self.done.resize(self.names.len(), false);
        while let Some(c) = self.pending.pop() {
            if c >= self.done.len() {
                self.done.resize(c + 1, false);
            }
            if std::mem::replace(&mut self.done[c], true) {
                continue;
            }
            let Some(e) = ad.lookup_by_name(&self.names[c]) else {
                continue;
            };
            let value = match e {
                Expr::Lit(v) => literal(v),
                _ => None,
            };
            let value = match value {
                Some(v) => v,
                None => {
                    let refs = self.refs_of(c, e);
                    // Referred attributes follow in the order they are named.
                    self.pending.extend(refs.iter().rev());
                    cell::Value::Expr(
                        self.seen[c]
                            .as_ref()
                            .map_or_else(String::new, |s| s.text.clone()),
                    )
                }
            };
            cells.push(Cell {
                column: c as u32,
                value: Some(value),
            });
        }
        self.rows.push(Row { cells });
    }

    /// The columns `e` (column `c`'s expression) refers to, remembered for the next job.
    fn refs_of(&mut self, c: usize, e: &Expr) -> Vec<usize> {
        if let Some(s) = &self.seen[c] {
            if s.expr.same_as(e) {
                return s.refs.clone();
            }
        }
        let mut text = String::new();
        classad::format::unparse_expr_old(&mut text, e);
        let refs: Vec<usize> = e
            .references()
            .internal
            .iter()
            .map(|r| self.column(r))
            .collect();
        self.seen[c] = Some(Seen {
            expr: e.clone(),
            text,
            refs: refs.clone(),
        });
        refs
    }

    /// How many rows so far.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether no row was written.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The answer: the columns and the rows.
    pub fn finish(self) -> QueryReply {
        QueryReply {
            ads: Vec::new(),
            columns: self.names.iter().map(|n| n.as_str().to_string()).collect(),
            rows: self.rows,
            in_rows: true,
            queue_counts: None,
        }
    }
}

/// A literal as a typed cell; `None` for what goes as text (undefined, error, lists, ads,
/// reals old syntax cannot read back as a plain number).
fn literal(v: &Value) -> Option<cell::Value> {
    Some(match v {
        Value::Int(i) => cell::Value::Int(*i),
        Value::Bool(b) => cell::Value::Bool(*b),
        Value::Str(s) => cell::Value::Str(s.to_string()),
        Value::Real(_) => {
            // The value the text path delivers: printed as old syntax prints it, read back.
            let mut text = String::new();
            classad::format::unparse_expr_old(&mut text, &Expr::Lit(v.clone()));
            cell::Value::Real(text.parse().ok()?)
        }
        _ => return None,
    })
}

/// The job ads of a query's answer: parsed from `ads`, or built from `columns` and `rows`
/// when the access point answered in rows. Errors name the ad or row and the attribute.
pub fn read_ads(reply: &QueryReply) -> Result<Vec<ClassAd>, String> {
    if !reply.in_rows {
        let mut ads = Vec::with_capacity(reply.ads.len());
        for (i, t) in reply.ads.iter().enumerate() {
            let mut parsed =
                classad::parse_old_ads(t).map_err(|e| format!("job ad {i} does not parse: {e}"))?;
            if let Some(a) = parsed.pop() {
                ads.push(a);
            }
        }
        return Ok(ads);
    }
    let names: Vec<Name> = reply.columns.iter().map(|c| Name::new(c)).collect();
    // The last attribute built per column: consecutive jobs (a cluster's) mostly share
    // Owner, QDate, JobStatus..., and then share one attribute rather than copies.
    let mut last: Vec<Option<(&cell::Value, Arc<Attr>)>> = vec![None; names.len()];
    let mut ads = Vec::with_capacity(reply.rows.len());
    for (i, row) in reply.rows.iter().enumerate() {
        let mut ad = ClassAd::with_capacity(row.cells.len());
        for cell in &row.cells {
            let c = cell.column as usize;
            let (Some(name), Some(value)) = (names.get(c), cell.value.as_ref()) else {
                return Err(format!(
                    "row {i}: a cell names column {c} of {} or has no value",
                    names.len()
                ));
            };
            let attr = match &last[c] {
                Some((v, a)) if *v == value => a.clone(),
                _ => {
                    let a = Attr::new(name.clone(), Arc::new(expr_of(name, value, i)?));
                    last[c] = Some((value, a.clone()));
                    a
                }
            };
            ad.insert_attr(attr);
        }
        ads.push(ad);
    }
    Ok(ads)
}

/// A cell's expression.
fn expr_of(name: &Name, v: &cell::Value, row: usize) -> Result<Expr, String> {
    Ok(Expr::Lit(match v {
        cell::Value::Int(i) => Value::Int(*i),
        cell::Value::Real(r) => Value::Real(*r),
        cell::Value::Str(s) => Value::str(s),
        cell::Value::Bool(b) => Value::Bool(*b),
        cell::Value::Expr(text) => {
            // As the text path reads it: one old-syntax line.
            let ad = classad::parse_ad(&format!("{} = {text}", name.as_str()))
                .map_err(|e| format!("row {row}: attribute {}: {text:?}: {e}", name.as_str()))?;
            return ad.lookup_by_name(name).cloned().ok_or_else(|| {
                format!("row {row}: attribute {}: {text:?} is empty", name.as_str())
            });
        }
    }))
}

#[cfg(test)]
mod tests;
