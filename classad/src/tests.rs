//! Unit tests of the public surface: parse errors with positions, operator corners, scoping,
//! unparse round trips, matching, and robustness against deep or hostile input.
use crate::*;

fn ev(text: &str) -> Value {
    eval(&parse_expr(text).unwrap_or_else(|e| panic!("{text}: {e}")))
}

fn ev_in(ad: &str, text: &str) -> Value {
    let ad = parse_ad(ad).expect("ad parses");
    ad.eval_expr(&parse_expr(text).expect("expr parses"))
}

#[test]
fn deep_nesting_is_an_error_or_a_value_never_a_crash() {
    // Run in a thread with a 2 MiB stack (the default for test threads) on purpose.
    let h = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(|| {
            for n in [10usize, 500, 990, 1000, 5000, 100_000] {
                let parens = format!("{}1{}", "(".repeat(n), ")".repeat(n));
                let _ = parse_expr(&parens).map(|e| (eval(&e), e.to_string()));
                let neg = format!("{}1", "-".repeat(n));
                let _ = parse_expr(&neg).map(|e| eval(&e));
                let chain = vec!["1"; n].join(" + ");
                let _ = parse_expr(&chain).map(|e| (eval(&e), e.to_string()));
                let lists = format!("{}1{}", "{".repeat(n), "}".repeat(n));
                let _ = parse_expr(&lists).map(|e| eval(&e));
                let ads = format!("{}{}", "[a=".repeat(n), "]".repeat(n));
                let _ = parse_expr(&ads);
                let calls = format!("{}1{}", "int(".repeat(n), ")".repeat(n));
                let _ = parse_expr(&calls).map(|e| eval(&e));
            }
            // attribute chains and cycles
            let mut ad = ClassAd::new();
            for i in 0..5000 {
                ad.insert(
                    &format!("a{i}"),
                    parse_expr(&format!("a{} + 1", i + 1)).expect("parses"),
                );
            }
            assert_eq!(ad.eval_attr("a0"), Value::Error);
            let cyc = parse_ad("[a = a + 1; b = c; c = b; d = {d}]").expect("parses");
            assert_eq!(cyc.eval_attr("a"), Value::Error);
            assert_eq!(cyc.eval_attr("b"), Value::Error);
        })
        .expect("spawn");
    h.join().expect("no stack overflow or panic");
}

#[test]
fn nesting_limit_is_reported_with_position() {
    let e = parse_expr(&format!("{}1{}", "(".repeat(1500), ")".repeat(1500))).unwrap_err();
    assert_eq!(e.line, 1);
    assert!(e.message.contains("nested"), "{e}");
    assert!(parse_expr(&format!("{}1{}", "(".repeat(900), ")".repeat(900))).is_ok());
}

#[test]
fn parse_errors_name_line_column_and_expectation() {
    let e = parse_expr("(1 + 2").unwrap_err();
    assert_eq!((e.line, e.column), (1, 7));
    assert!(
        e.to_string().starts_with("line 1, column 7: expected ')'"),
        "{e}"
    );
    let e = parse_expr("a +\n  * 3").unwrap_err();
    assert_eq!((e.line, e.column), (2, 3));
    let e = parse_expr("f(1,)").unwrap_err();
    assert_eq!((e.line, e.column), (1, 5));
    let e = parse_expr("\"unterminated").unwrap_err();
    assert!(e.message.contains("closing \""), "{e}");
    let e = parse_expr("010").unwrap_err();
    assert!(e.message.contains("octal"), "{e}");
    let e = parse_ad("[ a = 1; b = ]").unwrap_err();
    assert_eq!((e.line, e.column), (1, 14));
    let e = parse_old_ads_strict("A = 1\nB = (2\n").unwrap_err();
    assert_eq!(e.line, 2);
    // The lenient reader (what libclassad does) stops the ad at the bad line.
    let ads = parse_old_ads("A = 1\nB = (2\nC = 3\n\nD = 4\n").expect("lenient");
    assert_eq!(ads.len(), 2);
    assert_eq!(ads[0].len(), 1);
    assert_eq!(ads[1].eval_attr("d"), Value::Int(4));
}

#[test]
fn arithmetic_corners_follow_the_reference() {
    assert_eq!(ev("1 + 2 * 3 - 4 / 5 % 6"), Value::Int(7));
    assert_eq!(ev("-5 / 3"), Value::Int(-1));
    assert_eq!(ev("-5 % 3"), Value::Int(-2));
    assert_eq!(ev("1 / 0"), Value::Error);
    assert_eq!(ev("1 % 0"), Value::Error);
    assert_eq!(ev("1.0 / 0"), Value::Error);
    assert_eq!(ev("5.5 % 2"), Value::Error);
    assert_eq!(ev("9223372036854775807 + 1"), Value::Int(i64::MIN));
    assert_eq!(ev("(-9223372036854775807 - 1) / -1"), Value::Int(i64::MAX));
    assert_eq!(ev("true + 1"), Value::Int(2));
    assert_eq!(ev("true * 2.5"), Value::Real(2.5));
    assert_eq!(ev("-true"), Value::Error);
    assert_eq!(ev("1e308 * 10"), Value::Error);
    assert!(matches!(ev("0.0 / 0"), Value::Real(r) if r.is_nan()));
    assert_eq!(ev("1 << 65"), Value::Int(2));
    assert_eq!(ev("-8 >> 1"), Value::Int(-4));
    assert_eq!(ev("-8 >>> 1"), Value::Int(9223372036854775804));
    assert_eq!(ev("1 & true"), Value::Error);
    assert_eq!(ev("~5"), Value::Int(-6));
    assert_eq!(ev("\"a\" * 2"), Value::Error);
}

#[test]
fn three_valued_logic_and_comparisons() {
    assert_eq!(ev("false && error"), Value::Bool(false));
    assert_eq!(ev("error && false"), Value::Error);
    assert_eq!(ev("undefined || true"), Value::Bool(true));
    assert_eq!(ev("undefined && true"), Value::Undefined);
    assert_eq!(ev("undefined && false"), Value::Bool(false));
    assert_eq!(ev("true && 5"), Value::Bool(true));
    assert_eq!(ev("true && \"a\""), Value::Error);
    assert_eq!(ev("!undefined"), Value::Undefined);
    assert_eq!(ev("undefined == undefined"), Value::Undefined);
    assert_eq!(ev("undefined =?= undefined"), Value::Bool(true));
    assert_eq!(ev("1 =?= 1.0"), Value::Bool(false));
    assert_eq!(ev("1 == 1.0"), Value::Bool(true));
    assert_eq!(ev("\"abc\" == \"ABC\""), Value::Bool(true));
    assert_eq!(ev("\"abc\" =?= \"ABC\""), Value::Bool(false));
    assert_eq!(ev("\"a\" < \"B\""), Value::Bool(true));
    assert_eq!(ev("1 < \"a\""), Value::Error);
    assert_eq!(ev("true == 1"), Value::Bool(true));
    assert_eq!(ev("{1} == {1}"), Value::Error);
    assert_eq!(ev("undefined ? 1 : 2"), Value::Undefined);
    assert_eq!(ev("\"x\" ? 1 : 2"), Value::Error);
    assert_eq!(ev("undefined ?: 5"), Value::Int(5));
    assert_eq!(ev("0 ?: 5"), Value::Int(0));
    // The seed's literal meaning: "coltrane" * 10^12 is an error, so the whole rank is.
    assert_eq!(
        ev_in(
            "[Owner = \"coltrane\"; Imagesize = 5]",
            "(Owner == \"coltrane\" * 1000000000000) + Imagesize"
        ),
        Value::Error
    );
    assert_eq!(
        ev_in(
            "[Owner = \"coltrane\"; Imagesize = 5]",
            "(Owner == \"coltrane\") * 1000000000000 + Imagesize"
        ),
        Value::Int(1_000_000_000_005)
    );
}

#[test]
fn scoping_my_target_parent_and_nested_ads() {
    let my =
        parse_ad("[ Cpus = 4; x = y; N = [ q = 2; r = Cpus; s = PARENT.Cpus ]; L = {1, Cpus} ]")
            .expect("my");
    let target = parse_ad("[ RequestCpus = 2; y = 7; Cpus = 99 ]").expect("target");
    let e = |t: &str| my.eval_expr_with(&parse_expr(t).expect("parses"), Some(&target));
    assert_eq!(e("MY.Cpus >= TARGET.RequestCpus"), Value::Bool(true));
    assert_eq!(
        e("x"),
        Value::Int(7),
        "a bare name missing from MY is found in TARGET"
    );
    assert_eq!(
        e("cpus"),
        Value::Int(4),
        "names are case-insensitive; MY wins"
    );
    assert_eq!(e("TARGET.Cpus"), Value::Int(99));
    assert_eq!(e("N.r"), Value::Int(4), "nested ads see their enclosing ad");
    assert_eq!(e("N.s"), Value::Int(4));
    assert_eq!(e("N[\"q\"]"), Value::Int(2));
    assert_eq!(e("L[1]"), Value::Int(4));
    assert_eq!(e("L[2]"), Value::Error);
    assert_eq!(e("TARGET.Missing"), Value::Undefined);
    assert_eq!(
        my.eval_expr(&parse_expr("x").expect("parses")),
        Value::Undefined,
        "no target, no fallback"
    );
}

#[test]
fn unparse_matches_libclassad() {
    let cases = [
        ("1.0", "1.000000000000000E+00"),
        ("0.0", "0.0"),
        ("-(1)", " -(1)"),
        ("-1", "-1"),
        ("a =?= b", "a is b"),
        ("(1+2)*3", "(1 + 2) * 3"),
        ("{1,2+3}", "{ 1,2 + 3 }"),
        ("[b = 1; a = x; Name = 2]", "[ a = x; b = 1; Name = 2 ]"),
        ("f(1, \"a\\n\")", "f(1,\"a\\n\")"),
        ("a ?: b", "a ?: b"),
        ("relTime(\"1d\")", "relTime(\"1+00:00:00\")"),
        (
            "absTime(\"2020-01-01T00:00:00Z\")",
            "absTime(\"2020-01-01T00:00:00-00:00\")",
        ),
        ("'x y'.z", "'x y'.z"),
        ("PARENT.q", "'PARENT'.q"),
        ("1e30", "1.000000000000000E+30"),
    ];
    for (src, want) in cases {
        assert_eq!(parse_expr(src).expect(src).to_string(), want, "{src}");
        // Round trip: what we print parses back to the same print.
        let again = parse_expr(want).expect(want).to_string();
        assert_eq!(again, want, "round trip of {src}");
    }
    assert_eq!(Value::Real(f64::INFINITY).to_string(), "real(\"INF\")");
    assert_eq!(Value::str("a\"b").to_string(), "\"a\\\"b\"");
    assert_eq!(ev("string(1.5)"), Value::str("1.500000000000000E+00"));
}

/// -0.0 as libclassad 23 prints it (HTCondor's Python bindings, classad2): `str()` of the ad
/// `[x = -0.0]` shows `x = -0.0`, its `printOld()` `x = -0.0`, and `string(-0.0)`,
/// `strcat(-0.0)` and `unparse(x)` give "-0.0". Never printf's `%g` of it (`-0`), although
/// both syntaxes print other reals with printf formats.
#[test]
fn negative_zero_prints_as_libclassad_does() {
    let ad = parse_ad("[x = -0.0; y = 0.0 * -1]").expect("ad");
    assert_eq!(ad.eval_attr("y"), Value::Real(-0.0));
    let y = Expr::Lit(ad.eval_attr("y"));
    assert_eq!(y.to_string(), "-0.0");
    let mut old = String::new();
    format::unparse_expr_old(&mut old, &y);
    assert_eq!(old, "-0.0");
    for call in ["string(-0.0)", "strcat(-0.0)", "string(0.0 * -1)"] {
        assert_eq!(ev(call), Value::str("-0.0"), "{call}");
    }
    assert_eq!(ev_in("[x = -0.0]", "unparse(x)"), Value::str("-0.0"));
}

#[test]
fn matching_requires_exactly_true_and_ranks_as_float() {
    let job = parse_ad(
        "[ Requirements = TARGET.Memory >= RequestMemory && TARGET.Arch == \"X86_64\"; RequestMemory = 1024; Rank = TARGET.Mips; Owner = \"alice\" ]",
    )
    .expect("job");
    let slot = parse_ad("[ Requirements = Owner == \"alice\"; Memory = 2048; Arch = \"x86_64\"; Mips = 5000; Rank = Owner == \"alice\" ]")
        .expect("slot");
    assert!(symmetric_match(&job, &slot));
    assert_eq!(rank(&job, &slot), 5000.0);
    assert_eq!(rank(&slot, &job), 1.0, "a boolean rank counts as 1/0");
    let other = parse_ad("[ Requirements = Owner == \"bob\"; Memory = 2048; Arch = \"X86_64\" ]")
        .expect("other");
    assert!(!symmetric_match(&job, &other));
    let undefined_req =
        parse_ad("[ Requirements = Missing > 3; Memory = 2048; Arch = \"X86_64\" ]").expect("u");
    assert!(
        !symmetric_match(&job, &undefined_req),
        "undefined Requirements do not match"
    );
    let no_rank = parse_ad("[ Rank = \"x\" ]").expect("r");
    assert_eq!(rank(&no_rank, &slot), 0.0);
}

#[test]
fn builtins_sample() {
    assert_eq!(
        ev("strcat(\"slot\", 5 - 4, \"_State\")"),
        Value::str("slot1_State")
    );
    assert_eq!(ev("quantize(3, {1, 2, 4})"), Value::Int(4));
    assert_eq!(ev("quantize(1500, 1024)"), Value::Int(2048));
    assert_eq!(
        ev("stringListMember(\"b\", \"a, b ,c\")"),
        Value::Bool(true)
    );
    assert_eq!(ev("stringListIMember(\"B\", \"a,b,c\")"), Value::Bool(true));
    assert_eq!(
        ev("splitUserName(\"alice@example.org\")"),
        Value::list(vec![Value::str("alice"), Value::str("example.org")])
    );
    assert_eq!(ev("size({1, 2, 3})"), Value::Int(3));
    assert_eq!(ev("sum({1, 2.5})"), Value::Real(3.5));
    assert_eq!(ev("regexp(\"^a.c$\", \"abc\")"), Value::Bool(true));
    assert_eq!(
        ev("regexps(\"(\\\\w+)@(\\\\w+)\", \"me@host\", \"\\\\2\")"),
        Value::str("host")
    );
    assert_eq!(ev("ifThenElse(undefined, 1, 2)"), Value::Undefined);
    assert_eq!(ev("member(2, {1, 2})"), Value::Bool(true));
    assert_eq!(ev("versioncmp(\"1.10\", \"1.9\") > 0"), Value::Bool(true));
    assert_eq!(ev("eval(\"1 + 2\")"), Value::Int(3));
    assert_eq!(ev("nosuchfunction(1)"), Value::Error);
    assert_eq!(
        ev("argsToList(\"a 'b c'\")"),
        Value::list(vec![Value::str("a"), Value::str("b c")])
    );
    assert_eq!(
        ev("formatTime(0, \"%Y-%m-%d %H:%M:%S\")"),
        Value::str("1970-01-01 00:00:00")
    );
    assert_eq!(ev_in("[ a = 1 ]", "unparse(a)"), Value::str("1"));
}

#[test]
fn ads_are_case_insensitive_and_ordered() {
    let mut ad = ClassAd::new();
    ad.insert_int("Cpus", 4);
    ad.insert_str("Owner", "alice");
    ad.insert_int("CPUS", 8);
    assert_eq!(ad.len(), 2);
    assert_eq!(ad.eval_attr("cpus"), Value::Int(8));
    assert_eq!(
        ad.iter().map(|(n, _)| n).collect::<Vec<_>>(),
        ["Cpus", "Owner"]
    );
    assert!(ad.remove("OWNER").is_some());
    assert_eq!(ad.lookup("owner").map(|e| e.to_string()), None);
    assert_eq!(ad.to_old_syntax(), "Cpus = 8\n");
    let refs = parse_expr("TARGET.Memory >= RequestMemory && MY.Cpus > 1")
        .expect("parses")
        .references();
    assert!(refs.external.contains("memory"));
    assert!(refs.internal.contains("requestmemory") && refs.internal.contains("cpus"));
}

#[test]
fn quoted_function_names_print_so_they_read_back() {
    // Found by the parse_eval fuzz target: `'='(...)` printed as `=(...)`, which is no
    // expression at all.
    for text in [
        "'='(\"x\")",
        "'a b'(1, 2)",
        "'true'(1)",
        "strcat(\"a\", \"b\")",
    ] {
        let e = parse_expr(text).expect("parses");
        let printed = e.to_string();
        let again = parse_expr(&printed).unwrap_or_else(|err| panic!("{printed}: {err}"));
        assert_eq!(again.to_string(), printed, "{text}");
    }
    assert_eq!(parse_expr("'='(1)").expect("parses").to_string(), "'='(1)");
    assert_eq!(
        parse_expr("strcat(1)").expect("parses").to_string(),
        "strcat(1)"
    );
}

#[test]
fn cached_old_syntax_parse_gives_the_same_ads() {
    let ad = |i: usize| {
        format!(
            "MyType = \"Machine\"\nName = \"slot{i}@host\"\nCpus = 4\nRequirements = START && TARGET.RequestCpus <= MY.Cpus\nStart = true\nWhen = absTime(\"2020-01-01T00:00:00+05:30\")\n"
        )
    };
    let mut cache = AttrCache::new(1000);
    for round in 0..3 {
        for i in 0..5 {
            let text = ad(i);
            let plain = parse_old_ads_strict(&text).expect("parses");
            let cached = parse_old_ads_cached(&text, &mut cache).expect("parses");
            assert_eq!(plain.len(), 1);
            assert_eq!(plain, cached, "round {round} ad {i}");
            assert_eq!(plain[0].to_old_syntax(), cached[0].to_old_syntax());
        }
    }
    // A line is parsed at its first and second sighting and served from the cache after
    // that: the five lines every ad shares from the third ad on, each ad's Name line from
    // its third update on.
    let (hits, misses) = cache.stats();
    assert_eq!(cache.len(), 10, "{cache:?}");
    assert_eq!(misses, 5 * 2 + 5 * 2);
    assert_eq!(hits, 3 * 5 * 6 - misses);
    // A bad line is still an error with its position, cache or not.
    let e = parse_old_ads_cached("A = 1\nB = (\n", &mut cache).unwrap_err();
    assert_eq!(e.line, 2);
    // A full cache starts over rather than growing.
    let mut small = AttrCache::new(2);
    for _ in 0..2 {
        for i in 0..10 {
            parse_old_ads_cached(&format!("X{i} = {i}\n"), &mut small).expect("parses");
        }
    }
    assert!(small.len() <= 2);
}

#[test]
fn an_ad_with_more_attributes_than_16_bit_slots_hold_still_finds_them_all() {
    let mut ad = ClassAd::new();
    let n = 70_000;
    for i in 0..n {
        ad.insert_int(&format!("a{i}"), i as i64);
    }
    assert_eq!(ad.len(), n);
    for i in [0, 1, 65_533, 65_534, 65_535, 65_536, n - 1] {
        assert_eq!(ad.eval_attr(&format!("A{i}")), Value::Int(i as i64), "a{i}");
    }
    assert!(ad.lookup("a70000").is_none());
    ad.insert_int("A65535", -1);
    assert_eq!(ad.len(), n);
    assert_eq!(ad.eval_attr("a65535"), Value::Int(-1));
}

#[test]
fn list_values_are_the_elements_evaluated_where_the_list_was_written() {
    let my = parse_ad("[ B = 1; L = {MY.B, B, TARGET.B} ]").expect("my");
    let target = parse_ad("[ B = 2; L = {MY.B, B, TARGET.B} ]").expect("target");
    let val = |text: &str| my.eval_expr_with(&parse_expr(text).expect("parses"), Some(&target));
    let ints = |v: Value| -> Vec<i64> {
        match v {
            Value::List(l) => l.iter().map(|x| x.as_int().unwrap_or(-1)).collect(),
            other => panic!("not a list: {other:?}"),
        }
    };
    // A list's elements, as the public API gives them, are evaluated in the ad the list was
    // written in: TARGET's MY is TARGET, its TARGET is MY.
    assert_eq!(ints(val("MY.L")), vec![1, 1, 2]);
    assert_eq!(ints(val("TARGET.L")), vec![2, 2, 1]);
    assert_eq!(val("TARGET.L[2]").as_int(), Some(1));
    // The list functions evaluate the elements where the call stands.
    assert_eq!(val("sum(TARGET.L)").as_int(), Some(4));
    assert_eq!(val("join(\",\", TARGET.L)").as_str(), Some("1,1,2"));
    // A copy taken out by `ad["name"]` has no scope left.
    assert!(matches!(val("TARGET[\"L\"]"), Value::List(l) if l.iter().all(Value::is_undefined)));
    // A list prints (and converts to a string) as its element expressions.
    assert_eq!(val("TARGET.L").to_string(), "{ MY.B,B,TARGET.B }");
    assert_eq!(
        val("string(TARGET.L)").as_str(),
        Some("{ MY.B,B,TARGET.B }")
    );
    assert_eq!(
        Value::list(vec![Value::Int(1), Value::str("a")]).to_string(),
        "{ 1,\"a\" }"
    );
}

#[test]
fn a_list_that_contains_itself_is_evaluated_only_as_far_as_it_is_used() {
    let v = ev("[b = {B, 1}].b");
    let mut cur = v.clone();
    for _ in 0..50 {
        let Value::List(l) = cur else {
            panic!("not a list: {cur:?}")
        };
        assert_eq!(l.len(), 2);
        assert_eq!(l.get(1).and_then(Value::as_int), Some(1));
        cur = l.get(0).cloned().expect("two elements");
    }
    // Comparing it with itself ends too.
    assert_eq!(v, v.clone());
    assert_eq!(ev("[b = {B, 1}].b[0][0][1]").as_int(), Some(1));
}

/// Issue 13.2: attributes that refer to each other twice over (`a0 = a1 + a1`, ... `a60 = 1`)
/// would take 2^60 steps; evaluation stops with `error` after MAX_EVAL_STEPS instead of
/// hanging, through the interpreter, a budget, and matching (compiled Requirements) alike.
#[test]
fn exponential_attribute_chains_stop_instead_of_hanging() {
    let mut text = String::from("[ a60 = 1; ");
    for i in 0..60 {
        text.push_str(&format!("a{i} = a{} + a{}; ", i + 1, i + 1));
    }
    text.push_str("Requirements = a0 > 0; Name = a0 ]");
    let ad = crate::parse_ad(&text).expect("parses");
    let t = std::time::Instant::now();
    assert_eq!(ad.eval_attr("a0"), Value::Error);
    assert_eq!(ad.eval_attr("Name"), Value::Error);
    let mut budget = 1_000_000;
    let e = ad
        .eval_expr_budget(&crate::parse_expr("a0").unwrap(), None, &mut budget)
        .unwrap_err();
    assert_eq!(e.steps, crate::MAX_EVAL_STEPS);
    assert!(budget <= 1_000_000 - crate::MAX_EVAL_STEPS);
    let slot = crate::parse_ad("[ Requirements = true ]").unwrap();
    assert!(!crate::matches(&ad, &slot));
    assert!(
        t.elapsed() < std::time::Duration::from_secs(10),
        "{:?}",
        t.elapsed()
    );
    // An ordinary evaluation within a budget takes a few steps from it.
    let mut budget = 100;
    let v = slot
        .eval_expr_budget(&crate::parse_expr("1 + 2").unwrap(), None, &mut budget)
        .unwrap();
    assert_eq!(v, Value::Int(3));
    assert!(budget < 100 && budget > 90);
}
