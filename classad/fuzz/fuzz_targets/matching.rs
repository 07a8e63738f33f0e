//! Fuzz target: two fuzzed ads (split at the first NUL byte; each new or old syntax) matched
//! against each other. symmetric_match, matches and rank must never panic or hang,
//! symmetric_match must be symmetric, and the compiled Requirements/Rank must give the
//! interpreter's values.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (left, right) = text
        .split_once('\0')
        .unwrap_or((text, "[ Requirements = true ]"));
    let (Ok(a), Ok(b)) = (classad::parse_ad(left), classad::parse_ad(right)) else {
        return;
    };
    let ab = classad::symmetric_match(&a, &b);
    let ba = classad::symmetric_match(&b, &a);
    assert_eq!(ab, ba, "symmetric_match is not symmetric");
    let _ = classad::matches(&a, &b);
    let _ = classad::matches(&b, &a);
    let _ = classad::rank(&a, &b);
    let _ = classad::rank(&b, &a);
    for (my, target) in [(&a, &b), (&b, &a)] {
        for (attr, compiled) in [
            (
                "Requirements",
                classad::matching::requirements_value(my, target),
            ),
            ("Rank", classad::matching::rank_value(my, target)),
        ] {
            let interpreted = my
                .lookup(attr)
                .map(|e| my.eval_expr_with(&e.clone(), Some(target)));
            // Values that change between evaluations (time()) cannot be compared.
            let again = my
                .lookup(attr)
                .map(|e| my.eval_expr_with(&e.clone(), Some(target)));
            if interpreted == again {
                assert_eq!(compiled, interpreted, "{attr}: compiled vs interpreted");
            }
        }
    }
    for (name, _) in a.iter() {
        let _ = a.eval_attr_with(name, Some(&b));
    }
    for (name, _) in b.iter() {
        let _ = b.eval_attr_with(name, Some(&a));
    }
});
