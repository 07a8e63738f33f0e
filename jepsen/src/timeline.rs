//! The timeline picture of a run (`timeline.html`), like Jepsen's timeline and latency plots
//! (jepsen.checker.timeline, jepsen.checker.perf): time runs left to right; each client has a
//! lane with one bar per operation from its invocation to its completion, coloured by outcome
//! (ok, fail, unknown); every nemesis fault is a shaded band across the whole picture with a
//! labelled bar in the nemesis lane; the leader lane shows which CM reported `Leader`, in which
//! term, from the status samples.
//!
//! A self-contained HTML page with one inline SVG: no script, no network, so it opens from the
//! run's directory anywhere. Hovering a bar shows its details (SVG `<title>`). Pure: the
//! history in, the page out.

use crate::history::{FaultKind, History, OpKind, Outcome};
use std::fmt::Write;
use std::time::Duration;

/// Left margin (lane labels), in pixels.
const LEFT: f64 = 110.0;
/// Width of the time axis, in pixels.
const WIDTH: f64 = 1100.0;
/// Height of one lane.
const LANE: f64 = 16.0;
/// Colours of the CMs in the leader lane, by id.
const CM_COLOURS: &[&str] = &[
    "#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#9c755f", "#76b7b2", "#edc948",
];

/// Escapes `s` for XML text and attributes.
fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

/// One fault or partition, as drawn: label, start, end (`None`: still in place at the end).
struct Band {
    label: String,
    start: Duration,
    end: Option<Duration>,
    colour: &'static str,
}

fn bands(h: &History) -> Vec<Band> {
    let open = |d: Duration| (d != Duration::MAX).then_some(d);
    let mut v: Vec<Band> = h
        .partitions
        .iter()
        .map(|p| Band {
            label: p.shape.clone(),
            start: p.start,
            end: open(p.end),
            colour: "#e15759",
        })
        .collect();
    for f in &h.faults {
        let (what, colour) = match f.kind {
            FaultKind::Kill => ("kill -9".to_string(), "#7f7f7f"),
            FaultKind::Pause => ("SIGSTOP".to_string(), "#b07aa1"),
            FaultKind::DiskFull => ("disk full".to_string(), "#9c755f"),
            FaultKind::DiskStall(ms) => (format!("fsync +{ms} ms"), "#9c755f"),
            FaultKind::Clock(o) => (format!("clock {o:+} s"), "#edc948"),
            FaultKind::Membership(c) => (
                format!("member {}", crate::membership::change_name(c)),
                "#76b7b2",
            ),
        };
        v.push(Band {
            label: format!("{what} CM {}", f.node),
            start: f.start,
            end: open(f.end),
            colour,
        });
    }
    v.sort_by_key(|b| b.start);
    v
}

/// The row of the nemesis lane each of `bands` (sorted by start) is drawn in: the first row
/// whose previous band has ended, so overlapping faults (a membership change during a
/// partition) stack instead of hiding each other's labels. Open bands last until `end`.
fn rows(bands: &[Band], end: Duration) -> Vec<usize> {
    let mut free_from: Vec<Duration> = Vec::new();
    bands
        .iter()
        .map(|b| {
            let until = b.end.unwrap_or(end);
            match free_from.iter().position(|f| *f <= b.start) {
                Some(r) => {
                    free_from[r] = until;
                    r
                }
                None => {
                    free_from.push(until);
                    free_from.len() - 1
                }
            }
        })
        .collect()
}

/// Who led when: runs of consecutive samples in which the same CM reported `Leader` in the
/// same term, as (CM, term, first sample, last sample).
pub fn leader_spans(h: &History) -> Vec<(u64, u64, Duration, Duration)> {
    let mut samples: Vec<_> = h.samples.iter().collect();
    samples.sort_by_key(|s| s.at);
    let mut spans: Vec<(u64, u64, Duration, Duration)> = Vec::new();
    // A sample from the CM leading the latest span in the same term extends it; another
    // leader (or term) starts a new span. Two CMs both claiming to lead show as alternating
    // spans.
    for s in samples.into_iter().filter(|s| s.state == "Leader") {
        match spans.last_mut() {
            Some(last) if last.0 == s.node && last.1 == s.term => last.3 = s.at,
            _ => spans.push((s.node, s.term, s.at, s.at)),
        }
    }
    spans
}

/// The timeline of `h` as a self-contained HTML page titled `title`.
pub fn render(h: &History, title: &str) -> String {
    let processes = h.ops.iter().map(|o| o.process).max().map_or(0, |m| m + 1);
    let bands = bands(h);
    let spans = leader_spans(h);
    let end = h
        .ops
        .iter()
        .map(|o| o.complete)
        .chain(h.samples.iter().map(|s| s.at))
        .chain(bands.iter().flat_map(|b| [Some(b.start), b.end]).flatten())
        .max()
        .unwrap_or_default()
        .max(Duration::from_millis(1));
    let x = |d: Duration| LEFT + WIDTH * secs(d.min(end)) / secs(end);
    // Lanes: leader, nemesis, then one per client.
    let top = 30.0;
    let leader_y = top;
    let nemesis_y = top + LANE + 4.0;
    let rows = rows(&bands, end);
    let nemesis_rows = rows.iter().max().map_or(1, |r| r + 1);
    let client_y =
        |p: usize| nemesis_y + (LANE + 2.0) * nemesis_rows as f64 + 2.0 + (LANE + 4.0) * p as f64;
    let bottom = client_y(processes) + 10.0;
    let height = bottom + 40.0;
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{height}" font-family="sans-serif" font-size="11">"#,
        LEFT + WIDTH + 20.0
    );
    // Fault bands across every lane, under the bars.
    for b in &bands {
        let (x0, x1) = (x(b.start), x(b.end.unwrap_or(end)));
        let _ = writeln!(
            svg,
            r#"<rect class="fault" x="{x0:.1}" y="{top}" width="{:.1}" height="{:.1}" fill="{}" fill-opacity="0.15"><title>{}</title></rect>"#,
            (x1 - x0).max(1.0),
            bottom - top,
            b.colour,
            esc(&format!(
                "{} from {:.3} s to {}",
                b.label,
                secs(b.start),
                b.end
                    .map_or("the end".into(), |e| format!("{:.3} s", secs(e)))
            ))
        );
    }
    // Lane labels.
    let _ = writeln!(
        svg,
        r#"<text x="4" y="{:.1}">leader</text>"#,
        leader_y + 12.0
    );
    let _ = writeln!(
        svg,
        r#"<text x="4" y="{:.1}">nemesis</text>"#,
        nemesis_y + 12.0
    );
    for p in 0..processes {
        let _ = writeln!(
            svg,
            r#"<text x="4" y="{:.1}">client {p}</text>"#,
            client_y(p) + 12.0
        );
    }
    // Leaders.
    for (node, term, from, to) in &spans {
        let (x0, x1) = (x(*from), x(*to));
        let colour = CM_COLOURS[(*node as usize) % CM_COLOURS.len()];
        let _ = writeln!(
            svg,
            r#"<rect class="leader" x="{x0:.1}" y="{leader_y}" width="{:.1}" height="{LANE}" fill="{colour}"><title>CM {node} leader in term {term}, {:.3}-{:.3} s</title></rect>"#,
            (x1 - x0).max(2.0),
            secs(*from),
            secs(*to)
        );
        if x1 - x0 > 40.0 {
            let _ = writeln!(
                svg,
                r#"<text x="{:.1}" y="{:.1}" fill="white">CM {node} t{term}</text>"#,
                x0 + 2.0,
                leader_y + 12.0
            );
        }
    }
    // The nemesis lane: one labelled bar per fault.
    for (b, row) in bands.iter().zip(&rows) {
        let (x0, x1) = (x(b.start), x(b.end.unwrap_or(end)));
        let y = nemesis_y + (LANE + 2.0) * *row as f64;
        let _ = writeln!(
            svg,
            r#"<rect x="{x0:.1}" y="{y:.1}" width="{:.1}" height="{LANE}" fill="{}"/><text x="{:.1}" y="{:.1}">{}</text>"#,
            (x1 - x0).max(1.0),
            b.colour,
            x0 + 2.0,
            y + 12.0,
            esc(&b.label)
        );
    }
    // Operations.
    for op in &h.ops {
        let (class, colour, detail) = match &op.outcome {
            Outcome::Ok(_) => ("ok", "#59a14f", String::new()),
            Outcome::Fail(e) => ("fail", "#e15759", format!(": {e}")),
            Outcome::Unknown(e) => ("unknown", "#f1a340", format!(": {e}")),
        };
        let what = match &op.kind {
            OpKind::Write { name, value } => format!("write {name}={value}"),
            OpKind::Read => "read".to_string(),
        };
        let (x0, x1) = (x(op.invoke), x(op.complete));
        let _ = writeln!(
            svg,
            r#"<rect class="op {class}" x="{x0:.1}" y="{:.1}" width="{:.1}" height="{LANE}" fill="{colour}" stroke="white" stroke-width="0.3"><title>{}</title></rect>"#,
            client_y(op.process),
            (x1 - x0).max(1.0),
            esc(&format!(
                "{what} via CM {} {:.3}-{:.3} s {class}{detail}",
                op.node,
                secs(op.invoke),
                secs(op.complete)
            ))
        );
    }
    // The time axis, a tick a second (or fewer on long runs).
    let step = ((secs(end) / 20.0).ceil()).max(1.0);
    let mut t = 0.0;
    while t <= secs(end) {
        let xt = x(Duration::from_secs_f64(t));
        let _ = writeln!(
            svg,
            r##"<line x1="{xt:.1}" y1="{bottom}" x2="{xt:.1}" y2="{:.1}" stroke="#333"/><text x="{xt:.1}" y="{:.1}" text-anchor="middle">{t} s</text>"##,
            bottom + 5.0,
            bottom + 18.0
        );
        t += step;
    }
    svg.push_str("</svg>\n");
    let (ok, fail, unknown) = h.counts();
    format!(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{t}</title></head>\n\
         <body style=\"font-family:sans-serif\">\n<h1 style=\"font-size:16px\">{t}</h1>\n\
         <p>{n} operations: <span style=\"color:#59a14f\">ok {ok}</span>, \
         <span style=\"color:#e15759\">fail {fail}</span>, \
         <span style=\"color:#f1a340\">unknown {unknown}</span>; {f} faults (shaded); \
         leader lane from {s} status samples. Hover a bar for details.</p>\n{svg}</body></html>\n",
        t = esc(title),
        n = h.ops.len(),
        f = bands.len(),
        s = h.samples.len(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{Change, Fault, Op, Partition, Sample};

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn op(process: usize, t: (u64, u64), outcome: Outcome) -> Op {
        Op {
            process,
            node: 1,
            kind: OpKind::Write {
                name: format!("w<{process}>"),
                value: 1.0,
            },
            invoke: ms(t.0),
            complete: ms(t.1),
            outcome,
        }
    }

    fn sample(at: u64, node: u64, term: u64, state: &str) -> Sample {
        Sample {
            at: ms(at),
            node,
            term,
            state: state.into(),
        }
    }

    fn history() -> History {
        History {
            ops: vec![
                op(0, (0, 100), Outcome::Ok(None)),
                op(1, (50, 3050), Outcome::Unknown("timeout".into())),
                op(0, (200, 250), Outcome::Fail("no leader".into())),
            ],
            partitions: vec![Partition {
                shape: "isolate 1".into(),
                minority: vec![1],
                start: ms(100),
                end: ms(2000),
            }],
            faults: vec![
                Fault {
                    kind: FaultKind::Clock(3600),
                    node: 2,
                    start: ms(500),
                    end: Duration::MAX,
                },
                Fault {
                    kind: FaultKind::Membership(Change::Add),
                    node: 4,
                    start: ms(600),
                    end: ms(900),
                },
            ],
            samples: vec![
                sample(0, 1, 1, "Leader"),
                sample(10, 2, 1, "Follower"),
                sample(90, 1, 1, "Leader"),
                sample(1500, 2, 2, "Leader"),
                sample(1600, 2, 2, "Leader"),
                sample(1700, 1, 2, "Follower"),
            ],
        }
    }

    #[test]
    fn one_bar_per_operation_one_band_per_fault_and_a_span_per_leader() {
        let html = render(&history(), "kill-leader seed 1");
        assert_eq!(html.matches(r#"class="op "#).count(), 3);
        assert_eq!(html.matches(r#"class="op ok""#).count(), 1);
        assert_eq!(html.matches(r#"class="op fail""#).count(), 1);
        assert_eq!(html.matches(r#"class="op unknown""#).count(), 1);
        assert_eq!(html.matches(r#"class="fault""#).count(), 3);
        assert_eq!(html.matches(r#"class="leader""#).count(), 2);
        assert!(html.contains("CM 1 leader in term 1"));
        assert!(html.contains("CM 2 leader in term 2"));
        assert!(html.contains("clock +3600 s CM 2"));
        assert!(html.contains("member add CM 4"));
        // Self-contained: no script, nothing fetched.
        assert!(!html.contains("<script"));
        // The only address is the SVG namespace's name.
        assert_eq!(html.matches("http").count(), 1);
        // Names are escaped.
        assert!(html.contains("w&lt;1&gt;") && !html.contains("w<1>"));
    }

    #[test]
    fn bars_run_from_invocation_to_completion_on_one_time_scale() {
        let html = render(&history(), "t");
        // The history ends at 3.05 s: client 1's unknown op (its lane under the leader's,
        // the nemesis's and client 0's) spans from 50 ms to the right edge.
        let start = LEFT + WIDTH * 0.05 / 3.05;
        let width = WIDTH - (start - LEFT);
        // Three overlapping faults: three nemesis rows above the clients.
        let y = 30.0 + LANE + 4.0 + 3.0 * (LANE + 2.0) + 2.0 + (LANE + 4.0);
        assert!(
            html.contains(&format!(r#"x="{start:.1}" y="{y:.1}" width="{width:.1}""#)),
            "{html}"
        );
        // The open clock fault runs to the end.
        let x0 = LEFT + WIDTH * 0.5 / 3.05;
        assert!(html.contains(&format!(
            r#"class="fault" x="{x0:.1}" y="30" width="{:.1}""#,
            LEFT + WIDTH - x0
        )));
    }

    #[test]
    fn overlapping_faults_get_rows_of_their_own_and_later_ones_reuse_them() {
        let band = |start: u64, end: Option<u64>| Band {
            label: String::new(),
            start: ms(start),
            end: end.map(ms),
            colour: "",
        };
        let b = [
            band(0, Some(100)),
            band(50, None),
            band(60, Some(80)),
            band(100, Some(200)),
            band(150, Some(160)),
        ];
        assert_eq!(rows(&b, ms(1000)), vec![0, 1, 2, 0, 2]);
        assert!(rows(&[], ms(1)).is_empty());
    }

    #[test]
    fn leader_spans_follow_the_samples() {
        let spans = leader_spans(&history());
        assert_eq!(
            spans,
            vec![(1, 1, ms(0), ms(90)), (2, 2, ms(1500), ms(1600))]
        );
        assert!(leader_spans(&History::default()).is_empty());
    }
}
