//! Developer tool: the work one call of each built-in family costs, free of a shared
//! machine's timing noise when run under valgrind (instruction counts):
//!
//! ```sh
//! valgrind --tool=cachegrind --cache-sim=no target/release/examples/callspeed eval 2000
//! ```
//!
//! `callspeed parse|eval|none N [INDEX]` parses or evaluates the calls of
//! `benches/data.rs`'s FUNCTION_CALLS (only the INDEXth one if given) N times; `none` counts
//! the setup, to subtract.
use std::hint::black_box;

#[path = "../benches/data.rs"]
#[allow(dead_code)]
mod data;

fn main() {
    let mut args = std::env::args().skip(1);
    let mode = args.next().expect("parse, eval or none");
    let n: usize = args.next().expect("a count").parse().expect("a count");
    let calls: Vec<&str> = match args.next() {
        Some(i) => vec![data::FUNCTION_CALLS[i.parse::<usize>().expect("an index")]],
        None => data::FUNCTION_CALLS.to_vec(),
    };
    let exprs: Vec<classad::Expr> = calls
        .iter()
        .map(|t| classad::parse_expr(t).expect("call parses"))
        .collect();
    let mut ok = 0usize;
    for _ in 0..n {
        match mode.as_str() {
            "parse" => {
                for t in &calls {
                    ok += classad::parse_expr(black_box(t)).is_ok() as usize;
                }
            }
            "eval" => {
                for e in &exprs {
                    ok += !classad::eval(black_box(e)).is_error() as usize;
                }
            }
            _ => {}
        }
    }
    println!("{ok} calls gave a value");
}
