//! Where Aerie deliberately differs from what the reference harness (libclassad through its
//! Python bindings) shows, pinned with the reason. Everything else is judged by the reference in
//! differential.rs.

/// The matchmaking rule: a bare attribute name missing from MY is looked up in TARGET (HTCondor's
/// negotiator and condor_q -better-analyze do this; issue 2 requires it). The Python bindings'
/// ExprTree.eval(scope, target) does not, which is why the generator only writes bare names that
/// MY defines.
#[test]
fn bare_name_missing_from_my_resolves_in_target() {
    let my = classad::parse_ad("[ Cpus = 4; Requirements = RequestCpus <= Cpus ]").expect("my ad");
    let target = classad::parse_ad("[ RequestCpus = 2; Cpus = 99 ]").expect("target ad");
    let expr = classad::parse_expr("RequestCpus").expect("expr");
    assert_eq!(
        my.eval_expr_with(&expr, Some(&target)),
        classad::Value::Int(2)
    );
    // A name MY defines is still MY's.
    let expr = classad::parse_expr("Cpus").expect("expr");
    assert_eq!(
        my.eval_expr_with(&expr, Some(&target)),
        classad::Value::Int(4)
    );
    assert_eq!(
        my.eval_attr_with("Requirements", Some(&target)),
        classad::Value::Bool(true)
    );
}

/// Several blank lines between old-syntax ads (as hand-edited files and concatenated
/// `condor_status -long` dumps have): the Python bindings' parseAds() stops with an error at the
/// second blank line (a quirk of its generator loop, not of the old-ClassAd format); Aerie
/// treats any run of blank lines as one separator.
#[test]
fn several_blank_lines_separate_old_ads() {
    let ads = classad::parse_old_ads("A = 1\nB = 2\n\n\n\nA = 3\n").expect("old ads");
    assert_eq!(ads.len(), 2);
    assert_eq!(ads[0].eval_attr("B"), classad::Value::Int(2));
    assert_eq!(ads[1].eval_attr("A"), classad::Value::Int(3));
}
