//! Fuzz target: old-syntax ad dumps (`condor_status -long` style), lenient and strict.
//! Parsing must fail cleanly or succeed, and what we print (old syntax via `to_old_syntax`,
//! new syntax via `Display`) must parse again to an equal ad: same attribute names, and every
//! attribute evaluates to an equal value. The printed text itself need not be a fixed point:
//! like libclassad we print `- 0` as ` -0`, which reads back as the literal 0.
#![no_main]
use libfuzzer_sys::fuzz_target;

/// `again` must hold the same attributes as `ad`, each evaluating to an equal value (values
/// that differ between two evaluations of `ad` itself, like `time()`, are skipped).
fn assert_equal_ads(ad: &classad::ClassAd, again: &classad::ClassAd, printed: &str) {
    // The new-syntax print may order attributes differently; compare as sets.
    let mut names: Vec<&str> = ad.iter().map(|(n, _)| n).collect();
    let mut names_again: Vec<&str> = again.iter().map(|(n, _)| n).collect();
    names.sort_unstable();
    names_again.sort_unstable();
    assert_eq!(
        names, names_again,
        "attribute names changed in round trip:\n{printed}"
    );
    for name in names {
        let v = ad.eval_attr(name);
        let w = again.eval_attr(name);
        if v != w && holds_no_ad(&v) && !close_reals(&v, &w) && ad.eval_attr(name) == v {
            panic!("{name} was {v:?}, after printing and parsing is {w:?}:\n{printed}");
        }
    }
}

/// Old syntax prints reals with `%.16G` as libclassad does, one digit short of a round trip.
fn close_reals(v: &classad::Value, w: &classad::Value) -> bool {
    match (v, w) {
        // The old-syntax reader evaluates absTime literals in UTC but keeps the written offset
        // for printing; the new-syntax re-read applies it. Same instant, other offset.
        (classad::Value::AbsTime { secs: a, .. }, classad::Value::AbsTime { secs: b, .. }) => {
            a == b
        }
        (classad::Value::Real(a), classad::Value::Real(b)) => {
            (a - b).abs() <= 1e-15 * a.abs().max(b.abs())
        }
        _ => false,
    }
}

/// Nested ad values compare their (unevaluated) expressions, which may fold on re-read
/// (`{ - 2 }` reads back as `{ -2 }`), so values holding an ad are not compared.
fn holds_no_ad(v: &classad::Value) -> bool {
    match v {
        classad::Value::Ad(_) => false,
        classad::Value::List(l) => l.iter().all(holds_no_ad),
        // Known open issue (classad/fuzz/README.md, "Known parity choices"): absolute times before year 1 print with a
        // negative year (`-001-11-30T...`) that reads back as a different time.
        classad::Value::AbsTime { secs, .. } => *secs >= -62_135_596_800,
        _ => true,
    }
}

/// libclassad prints a selection from a number literal, `(100).X`, as `100.X`, which reads back
/// as a malformed real; we keep that print for parity (classad/fuzz/README.md, "Known parity choices"), so such ads are skipped.
fn known_unreadable(e: &classad::ParseError) -> bool {
    e.to_string().contains("malformed real")
}

fn check_round_trip(ads: &[classad::ClassAd]) {
    for ad in ads {
        let old = ad.to_old_syntax();
        let again = match classad::parse_old_ads_strict(&old) {
            Ok(again) => again,
            Err(e) if known_unreadable(&e) => continue,
            Err(e) => panic!("printed old-syntax ad does not parse again: {e}\n{old}"),
        };
        if ad.is_empty() {
            assert!(
                again.iter().all(|a| a.is_empty()),
                "empty ad printed as {old:?}"
            );
        } else {
            assert_eq!(
                again.len(),
                1,
                "one ad printed, {} parsed back:\n{old}",
                again.len()
            );
            assert_equal_ads(ad, &again[0], &old);
            let old2 = again[0].to_old_syntax();
            classad::parse_old_ads_strict(&old2)
                .unwrap_or_else(|e| panic!("reprinted old-syntax ad does not parse: {e}\n{old2}"));
        }
        let new = ad.to_string();
        let again = match classad::parse_ad(&new) {
            Ok(again) => again,
            Err(e) if known_unreadable(&e) => continue,
            Err(e) => panic!("printed new-syntax ad does not parse again: {e}\n{new}"),
        };
        assert_equal_ads(ad, &again, &new);
        let new2 = again.to_string();
        classad::parse_ad(&new2)
            .unwrap_or_else(|e| panic!("reprinted new-syntax ad does not parse: {e}\n{new2}"));
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(ads) = classad::parse_old_ads(text) {
        check_round_trip(&ads);
    }
    if let Ok(ads) = classad::parse_old_ads_strict(text) {
        check_round_trip(&ads);
    }
});
