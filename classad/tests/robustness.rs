//! "Arbitrary input never panics": a deterministic, seeded mutator over a grammar-shaped corpus
//! (the same properties as the cargo-fuzz target in classad/fuzz, which needs nightly Rust).
use classad::{parse_ad, parse_expr, parse_old_ads, symmetric_match};

/// xorshift64*: deterministic and dependency-free.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

const SEEDS: &[&str] = &[
    "(TARGET.Arch == \"X86_64\") && (TARGET.Memory >= RequestMemory) && stringListMember(\"a\", \"a,b\")",
    "[ a = 1; b = a + 1; c = { a, b, [ d = PARENT.a ] }; e = c[2].d ]",
    "A = 1\nB = \"x\\\"y\"\nC = A + 1\n\nD = {1, 2}\n",
    "regexps(\"(\\\\w+)@(\\\\w+)\", \"me@host\", \"\\\\2-\\\\1\") + formatTime(0, \"%Y\")",
    "splitTime(relTime(\"1+02:03:04\")).Hours ?: absTime(\"2020-01-01T00:00:00Z\") - absTime(0)",
    "x =?= undefined || y isnt error ? -1 >>> 2 : ~3 << 65 % 0",
    "eval(strcat(\"slot\", 1, \"_State\")) && member(1, {1, 2.0, \"3\"}) && quantize(3, {1, 2, 4}) > 2",
    "unparse(a) + unresolved(b) + evalInEachContext(u > 1, {[u = 1], [u = 2]})",
];

const TOKENS: &[&str] = &[
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    ",",
    ";",
    "=",
    "==",
    "=?=",
    "=!=",
    "&&",
    "||",
    "!",
    "~",
    "?",
    ":",
    ".",
    "+",
    "-",
    "*",
    "/",
    "%",
    "<<",
    ">>",
    ">>>",
    "\"",
    "'",
    "\\",
    "1e308",
    "-9223372036854775808",
    "0.5",
    "undefined",
    "error",
    "MY.",
    "TARGET.",
    "PARENT.",
    "a",
    "\n",
    " ",
    "\"\\101\"",
    "absTime(",
    "relTime(",
    "strcat(",
    "eval(\"",
    "[a=",
    "{{",
];

fn mutate(rng: &mut Rng, base: &str) -> String {
    let mut bytes: Vec<u8> = base.as_bytes().to_vec();
    for _ in 0..1 + rng.below(6) {
        let pos = if bytes.is_empty() {
            0
        } else {
            rng.below(bytes.len() + 1)
        };
        match rng.below(5) {
            0 if !bytes.is_empty() && pos < bytes.len() => {
                bytes.remove(pos);
            }
            1 => {
                let t = TOKENS[rng.below(TOKENS.len())];
                bytes.splice(pos..pos, t.bytes());
            }
            2 if pos < bytes.len() => bytes[pos] = (rng.next() & 0x7f) as u8,
            3 => {
                // splice in a piece of another seed
                let other = SEEDS[rng.below(SEEDS.len())].as_bytes();
                let a = rng.below(other.len());
                let b = (a + rng.below(20)).min(other.len());
                bytes.splice(pos..pos, other[a..b].iter().copied());
            }
            _ => {
                let t = TOKENS[rng.below(TOKENS.len())].repeat(1 + rng.below(50));
                bytes.splice(pos..pos, t.bytes());
            }
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

fn exercise(text: &str, target: &classad::ClassAd) {
    if let Ok(e) = parse_expr(text) {
        let _ = classad::eval(&e);
        let _ = target.eval_expr_with(&e, Some(target));
        let printed = e.to_string();
        assert!(
            parse_expr(&printed).is_ok(),
            "our print of {text:?} does not parse again: {printed:?}"
        );
    }
    if let Ok(ad) = parse_ad(text) {
        let _ = ad.to_string();
        for (name, _) in ad.iter() {
            let _ = ad.eval_attr_with(name, Some(target));
        }
        let _ = symmetric_match(&ad, target);
    }
    let _ = parse_old_ads(text);
}

#[test]
fn mutated_inputs_never_panic() {
    let target = parse_ad("[ Cpus = 4; Memory = 2048; Requirements = MY.Cpus > 1; x = a; a = x ]")
        .expect("target");
    let mut rng = Rng(0x5eed_c1a5_5ad0_0001);
    let cases = std::env::var("AERIE_ROBUSTNESS_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    for _ in 0..cases {
        let base = SEEDS[rng.below(SEEDS.len())];
        let text = mutate(&mut rng, base);
        exercise(&text, &target);
    }
}

#[test]
fn hostile_shapes_are_errors_not_crashes() {
    let target = parse_ad("[ a = 1 ]").expect("target");
    for text in [
        "(".repeat(100_000),
        "[a=".repeat(10_000),
        "-".repeat(100_000) + "1",
        vec!["1"; 50_000].join("+"),
        "\"".to_string() + &"\\".repeat(10_001),
        "a.".repeat(10_000) + "b",
        "f(".repeat(3000) + &")".repeat(3000),
    ] {
        exercise(&text, &target);
    }
}
