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

fn same_values(a: &classad::ClassAd, b: &classad::ClassAd) {
    assert_eq!(a.len(), b.len());
    for (name, _) in a.iter() {
        assert_eq!(a.eval_attr(name), b.eval_attr(name), "{name}");
    }
}

/// Old-syntax round trip: every ad we read must print (old and new syntax) to text that parses
/// again to the same values. Regression inputs found by `cargo fuzz run old_ads`.
fn old_round_trip(text: &str) -> Vec<classad::ClassAd> {
    let ads = parse_old_ads(text).expect("lenient old-syntax parsing never fails");
    for ad in &ads {
        let old = ad.to_old_syntax();
        let again = classad::parse_old_ads_strict(&old)
            .unwrap_or_else(|e| panic!("our old-syntax print {old:?} does not parse: {e}"));
        // The text may fold on re-read (` -0` reads back as 0, as in libclassad), so compare
        // values, attribute by attribute.
        assert_eq!(again.len(), 1, "{old:?}");
        same_values(ad, &again[0]);
        let new = ad.to_string();
        let again = parse_ad(&new)
            .unwrap_or_else(|e| panic!("our new-syntax print {new:?} does not parse: {e}"));
        same_values(ad, &again);
    }
    ads
}

#[test]
fn fuzz_old_ads_nul_in_attribute_name_is_an_error() {
    // fuzz crash-87d7cd74: the name `A\t\0\0\0` was accepted but cannot be printed as a quoted
    // name (quoted names cannot hold NUL), so the new-syntax print did not parse again.
    let text = "A\t\0\0\0 = 1\nA \x08\0\0\0\0\0\0\x003\n";
    let err = classad::parse_old_ads_strict(text).expect_err("NUL in a name is an error");
    let msg = err.to_string();
    assert!(
        msg.contains("line 1, column 3") && msg.contains("NUL"),
        "{msg}"
    );
    // The lenient reader ends the ad at the bad line, as for any line that does not parse.
    let ads = old_round_trip(text);
    assert!(ads.iter().all(|a| a.is_empty()), "{}", ads.len());
    // Names with inner spaces and tabs are fine (quoted in new syntax).
    let ads = old_round_trip("A B = 1\nC\tD = \"x\"\n");
    assert_eq!(ads.len(), 1);
    assert_eq!(ads[0].eval_attr("A B").as_int(), Some(1));
}

#[test]
fn fuzz_old_ads_unary_minus_zero_prints_like_libclassad_and_reparses() {
    // fuzz crash-bd97c8e5: `ProcId = - 0` prints ` -0` (as libclassad's printOld does), which
    // reads back as the literal 0; the value is the same and the second print is fixed.
    let ads = old_round_trip("ClusterId = 12\nProcId = - 0\nB = - -1\n");
    assert_eq!(ads.len(), 1);
    let old = ads[0].to_old_syntax();
    assert_eq!(old, "ClusterId = 12\nProcId =  -0\nB =  --1\n");
    assert_eq!(ads[0].eval_attr("ProcId").as_int(), Some(0));
    assert_eq!(ads[0].eval_attr("B").as_int(), Some(1));
}

#[test]
fn fuzz_select_on_a_number_literal_prints_like_libclassad() {
    // fuzz crash-41b1c59b: `100\n\n\n\n.XXXX` prints as `100.XXXX`, libclassad's form, which
    // lexes as a malformed real. We keep libclassad's print (the differential test compares
    // it); re-reading it is a clear parse error, never a panic, and the value is error.
    for (text, printed) in [
        ("100\n\n\n\n.XXXX", "100.XXXX"),
        ("1.5 .a", "1.500000000000000E+00.a"),
        ("(7).b", "(7).b"),
    ] {
        let e = parse_expr(text).expect("parses");
        let p = e.to_string();
        assert_eq!(p, printed, "{text:?}");
        if let Err(err) = parse_expr(&p) {
            assert!(err.to_string().contains("malformed real"), "{p:?}: {err}");
        }
        assert!(classad::eval(&e).is_error(), "{text:?}");
    }
}

#[test]
fn fuzz_old_ads_quoted_name_with_control_byte_prints_raw_in_old_syntax() {
    // fuzz crash-2256c77d: a quoted name holding \x01 was printed in old syntax with the
    // new-syntax escape `\001`, which the old-syntax reader keeps literally, so every round
    // trip added backslashes. libclassad's printOld writes the byte raw; so do we now.
    let text = "(A = 1\nT= ------------A---'-~z---- 2\x01'";
    let ads = old_round_trip(text);
    assert_eq!(ads.len(), 1);
    let ads = old_round_trip("T = 'a\x01b' + 1\n");
    assert_eq!(ads[0].to_old_syntax(), "T = 'a\x01b' + 1\n");
    assert_eq!(ads[0].to_string(), "[ T = 'a\\001b' + 1 ]");
}

#[test]
fn fuzz_selected_names_that_need_quotes_stay_quoted() {
    // fuzz crash (parse_eval, base64 ZGF5VGltZSgp...): `' >= '.''''` selects the empty name
    // (adjacent quoted names concatenate); it printed as `' >= '.`, which does not parse.
    let text = "dayTime() >= ' >= '.''''''''''''''''''''''\x0c\x0c";
    let e = parse_expr(text).expect("parses");
    let p = e.to_string();
    assert_eq!(p, "dayTime() >= ' >= '.''");
    assert_eq!(parse_expr(&p).expect("print parses").to_string(), p);
    for (text, printed) in [
        ("a.'b c'", "a.'b c'"),
        ("MY.'x y'", "MY.'x y'"),
        ("a.b", "a.b"),
    ] {
        let p = parse_expr(text).expect("parses").to_string();
        assert_eq!(p, printed);
        assert_eq!(parse_expr(&p).expect("print parses").to_string(), p);
    }
}

#[test]
fn fuzz_huge_relative_times_print_so_they_reparse() {
    // fuzz crash (parse_eval, base64 cm5nZXgocmVsVGltZSgi...): relTime of ~3.3e17 s went
    // through C's (int) cast, wrapped negative and printed as a string relTime() rejects.
    let text = "rnngex(relTime(\"1+0333333733333333305\"))/Hours";
    let e = parse_expr(text).expect("parses");
    let p = e.to_string();
    let again = parse_expr(&p).unwrap_or_else(|err| panic!("{p:?}: {err}"));
    assert_eq!(
        again.to_string(),
        parse_expr(&again.to_string())
            .expect("reparses")
            .to_string()
    );
    // Inside the i32 range the libclassad form is unchanged.
    let p = parse_expr("relTime(\"1+02:03:04\")")
        .expect("parses")
        .to_string();
    assert_eq!(p, "relTime(\"1+02:03:04\")");
}

#[test]
fn fuzz_old_ads_repeated_unary_minus_on_zero_keeps_its_value() {
    // fuzz (old_ads): `- - - - 0` prints ` - - - -0`, and each re-read folds one `-0` into 0,
    // so the text is not a fixed point (as in libclassad) but the value is always 0.
    let ads = old_round_trip("X = - - - - 0 - - - 4\n");
    assert_eq!(ads[0].eval_attr("X").as_int(), Some(-4));
    let again = classad::parse_old_ads_strict(&ads[0].to_old_syntax()).expect("reparses");
    assert_eq!(again[0].eval_attr("X").as_int(), Some(-4));
}
