//! The configuration language without the oracle: statements, errors with file and line,
//! include loops and nesting limits, reload fallback, and a seeded fuzz test (never panic).
use aerie_config::{Config, ConfigError, ConfigHandle, Context, LoadOptions, Origin};
use rand::{Rng, SeedableRng};
use std::path::PathBuf;

fn parse(text: &str) -> Result<Config, ConfigError> {
    Config::parse_str(text, "test.conf", &LoadOptions::default())
}

struct Dir(PathBuf);
impl Dir {
    fn new(name: &str) -> Dir {
        let d =
            std::env::temp_dir().join(format!("aerie-config-lang-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Dir(d)
    }
    fn write(&self, rel: &str, text: &str) -> PathBuf {
        let p = self.0.join(rel);
        std::fs::write(&p, text.replace("@DIR@", &self.0.display().to_string())).unwrap();
        p
    }
}
impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn values_origins_and_self_reference() {
    let c = parse("A = 1\nb = $(A) two\nB = $(B) three\nH @= end\n x\n  y\n@end\nE =\n").unwrap();
    assert_eq!(c.expanded("B").unwrap().as_deref(), Some("1 two three"));
    assert_eq!(c.lookup("b").unwrap().raw, "$(A) two three");
    assert_eq!(c.expanded("H").unwrap().as_deref(), Some("x\ny"));
    match c.lookup("H").unwrap().origin {
        Origin::File(l) => assert_eq!((l.file.as_str(), l.line), ("test.conf", 7)),
        o => panic!("{o:?}"),
    }
    assert_eq!(c.expanded("E").unwrap(), None);
    assert!(c.lookup("E").is_some(), "an empty knob is defined");
    assert_eq!(c.lookup("UNKNOWN_ADMIN_MACRO"), None);
}

#[test]
fn unknown_knobs_are_kept_and_readable() {
    let c =
        parse("MY_SITE_MACRO = (Arch == \"X86_64\")\nSTART = $(MY_SITE_MACRO) && True\n").unwrap();
    assert_eq!(
        c.expanded("START").unwrap().as_deref(),
        Some("(Arch == \"X86_64\") && True")
    );
    assert_eq!(
        c.expanded("my_site_macro").unwrap().as_deref(),
        Some("(Arch == \"X86_64\")")
    );
}

#[test]
fn metaknobs_expand_to_htcondors_templates() {
    let c = parse("use ROLE : CentralManager\nuse FEATURE : PartitionableSlot(2, cpus=4)\nuse POLICY : ALWAYS_RUN_JOBS\n").unwrap();
    assert_eq!(
        c.expanded("DAEMON_LIST").unwrap().as_deref(),
        Some("MASTER COLLECTOR NEGOTIATOR")
    );
    assert_eq!(
        c.expanded("SLOT_TYPE_2").unwrap().as_deref(),
        Some("cpus=4")
    );
    assert_eq!(c.bool("SLOT_TYPE_2_PARTITIONABLE").unwrap(), Some(true));
    assert_eq!(c.expanded("PREEMPT").unwrap().as_deref(), Some("False"));
    match c.lookup("SLOT_TYPE_2").unwrap().origin {
        Origin::File(l) => assert_eq!(
            l.to_string(),
            "test.conf, line 2, use FEATURE:PartitionableSlot+2"
        ),
        o => panic!("{o:?}"),
    }
}

#[test]
fn group_and_limit_names_with_dots() {
    let c = Config::parse_str(
        "GROUP_NAMES = group_physics, group_physics.hep\nGROUP_QUOTA_group_physics.hep = 15\n\
         NEGOTIATOR.GROUP_QUOTA_DYNAMIC_group_physics = 0.5\nGROUP_QUOTA_group_physics = 20\n\
         CONCURRENCY_LIMIT_DEFAULT_LARGE = 100\nLARGE.SWLICENSE_LIMIT = 7\n",
        "t",
        &LoadOptions::for_subsystem("NEGOTIATOR"),
    )
    .unwrap();
    assert_eq!(
        c.group_names().unwrap(),
        vec!["group_physics", "group_physics.hep"]
    );
    assert_eq!(c.group_quota("GROUP_PHYSICS.HEP").unwrap(), Some(15.0));
    assert_eq!(c.group_quota_dynamic("group_physics").unwrap(), Some(0.5));
    assert_eq!(
        c.names_with_prefix("GROUP_QUOTA_"),
        vec![
            "GROUP_QUOTA_DYNAMIC_group_physics",
            "GROUP_QUOTA_group_physics",
            "GROUP_QUOTA_group_physics.hep"
        ]
    );
    assert_eq!(c.concurrency_limit("large.swlicense").unwrap(), Some(7.0));
    assert_eq!(c.concurrency_limit("LARGE.DB").unwrap(), Some(100.0));
    assert_eq!(c.concurrency_limit("OTHER").unwrap(), Some(2308032.0));
}

#[test]
fn errors_name_file_and_line() {
    let cases: &[(&str, u32, &str)] = &[
        ("A = 1\nH @= end\nfoo\n", 2, "@end"),
        ("A = 1\nuse ROLE : Bogus\n", 2, "does not recognise Bogus"),
        ("A = 1\nuse NOPE : X\n", 2, "unknown metaknob category"),
        (
            "A = 1\nif $(A) > 3\nendif\n",
            2,
            "complex conditionals are not supported",
        ),
        ("if true\nB = 1\n", 2, "endif"),
        ("endif\n", 1, "endif without matching if"),
        ("A = 1\nthis is bad\n", 2, "missing = or :"),
        ("A = 1\nB-C = 2\n", 2, "illegal identifier"),
        ("X = 3\nerror : stop at $(X)\n", 2, "stop at 3"),
        (
            "include : /nonexistent/aerie/x.conf\n",
            1,
            "can't open file",
        ),
        ("include : /bin/echo A = 1 |\n", 1, "disabled"),
        (
            "use FEATURE : AssignAccountingGroup\n",
            1,
            "requires a map_file",
        ),
        ("H @=\n", 1, "needs a tag"),
    ];
    for (text, line, msg) in cases {
        let e = parse(text).expect_err(text);
        let loc = e
            .location
            .clone()
            .unwrap_or_else(|| panic!("no location: {e}"));
        assert_eq!(
            (loc.file.as_str(), loc.line),
            ("test.conf", *line),
            "{text:?}: {e}"
        );
        assert!(e.to_string().contains(msg), "{text:?}: {e}");
    }
}

#[test]
fn reference_loops_are_errors_not_hangs() {
    let c = parse("A = $(B)\nB = $(A)\n").unwrap();
    let e = c.expanded("A").unwrap_err();
    assert_eq!(e.knob.as_deref(), Some("A"));
    assert!(e.to_string().contains("does not terminate"), "{e}");
}

#[test]
fn include_loops_and_depth() {
    let d = Dir::new("loops");
    let a = d.write("a.conf", "A = 1\ninclude : @DIR@/b.conf\n");
    d.write("b.conf", "B = 1\ninclude : @DIR@/a.conf\n");
    let e = Config::load(&a, &LoadOptions::default()).unwrap_err();
    assert!(e.to_string().contains("include loop"), "{e}");
    assert!(e.location.as_ref().unwrap().file.ends_with("b.conf"), "{e}");
    assert_eq!(e.included_from.len(), 1, "{e}");

    // a chain of 25 distinct files is too deep (HTCondor's limit is 20)
    for i in 0..25 {
        d.write(
            &format!("c{i}.conf"),
            &format!("C{i} = {i}\ninclude : @DIR@/c{}.conf\n", i + 1),
        );
    }
    d.write("c25.conf", "END = 1\n");
    let e = Config::load(d.0.join("c0.conf"), &LoadOptions::default()).unwrap_err();
    assert!(e.to_string().contains("nested too deep"), "{e}");
    // 10 levels are fine
    d.write("c10.conf", "END = 1\n");
    let c = Config::load(d.0.join("c0.conf"), &LoadOptions::default()).unwrap();
    assert_eq!(c.int("C9").unwrap(), Some(9));
    assert_eq!(c.sources().len(), 11);
}

#[test]
fn relative_includes_resolve_against_the_including_file() {
    let d = Dir::new("relative");
    std::fs::create_dir_all(d.0.join("sub")).unwrap();
    let main = d.write("main.conf", "include : sub/x.conf\n");
    d.write("sub/x.conf", "X = from sub\n");
    let c = Config::load(&main, &LoadOptions::default()).unwrap();
    assert_eq!(c.expanded("X").unwrap().as_deref(), Some("from sub"));
}

#[test]
fn commands_run_only_when_allowed() {
    let opts = LoadOptions {
        allow_commands: true,
        ..LoadOptions::default()
    };
    let c = Config::parse_str("include : /bin/echo FROM_CMD = 42 |\n", "t", &opts).unwrap();
    assert_eq!(c.int("FROM_CMD").unwrap(), Some(42));
}

#[test]
fn reload_keeps_previous_configuration_when_broken() {
    let d = Dir::new("reload");
    let p = d.write("cm.conf", "NEGOTIATOR_INTERVAL = 30\n");
    let mut h = ConfigHandle::load(&p, LoadOptions::for_subsystem("NEGOTIATOR")).unwrap();
    assert_eq!(h.current().int("NEGOTIATOR_INTERVAL").unwrap(), Some(30));
    d.write(
        "cm.conf",
        "NEGOTIATOR_INTERVAL = 45\nif $(NEGOTIATOR_INTERVAL) > 3\nendif\n",
    );
    let e = h.reload().unwrap_err();
    assert!(e.to_string().contains("cm.conf, line 2"), "{e}");
    assert_eq!(
        h.current().int("NEGOTIATOR_INTERVAL").unwrap(),
        Some(30),
        "previous configuration kept"
    );
    assert!(h.last_error().is_some());
    d.write("cm.conf", "NEGOTIATOR_INTERVAL = 45\n");
    assert_eq!(
        h.reload().unwrap().int("NEGOTIATOR_INTERVAL").unwrap(),
        Some(45)
    );
    assert!(h.last_error().is_none());
}

#[test]
fn catalogue_types_check_values() {
    let c = parse(
        "NEGOTIATOR_INTERVAL = often\nGROUP_ACCEPT_SURPLUS = maybe\nAERIE_ELECTION_TIMEOUT = 2s\n",
    )
    .unwrap();
    assert!(c.check_type("NEGOTIATOR_INTERVAL").is_err());
    assert!(c.check_type("GROUP_ACCEPT_SURPLUS").is_err());
    assert_eq!(
        c.duration("AERIE_ELECTION_TIMEOUT").unwrap(),
        Some(std::time::Duration::from_secs(2))
    );
    assert_eq!(
        c.duration("AERIE_HEARTBEAT_INTERVAL").unwrap(),
        Some(std::time::Duration::from_millis(250))
    );
    let collector = c.string("AERIE_COLLECTOR_ADDRESS").unwrap();
    assert_eq!(collector.as_deref(), Some("0.0.0.0:9618"));
}

/// Random text built from config-language fragments must never panic, and must either load or
/// give an error with a location.
#[test]
fn arbitrary_input_never_panics() {
    let pieces = [
        "A",
        "b.c",
        "$(",
        "$(A)",
        "$(A:",
        ")",
        "$$(",
        "$ENV(",
        "$INT(",
        "$REAL(",
        "$SUBSTR(A,",
        "$CHOICE(",
        "$RANDOM_INTEGER(",
        "$RANDOM_CHOICE(",
        "$F",
        "$Fqpdnx(",
        "$STRING(",
        "$EVAL(",
        "$(DOLLAR)",
        "=",
        " = ",
        ":",
        "@=",
        "@",
        "\\",
        "\n",
        "\n",
        "\n",
        "#",
        " ",
        ",",
        "if ",
        "elif ",
        "else",
        "endif",
        "defined ",
        "version ",
        ">= 23.0",
        "!",
        "true",
        "0",
        "1.5",
        "use ",
        "ROLE",
        "FEATURE",
        "PartitionableSlot(",
        "include ",
        "ifexist",
        "error",
        "warning",
        "é",
        "\t",
        "\r",
        "$(1)",
        "$(2+:x)",
        "\u{0}",
        "((",
        "[x]",
        "%d",
        "-1",
        "99999999999999999999",
    ];
    let mut rng = rand::rngs::StdRng::seed_from_u64(0xAE12E);
    let mut loaded = 0;
    for _ in 0..3000 {
        let n = rng.gen_range(1..40);
        let text: String = (0..n)
            .map(|_| pieces[rng.gen_range(0..pieces.len())])
            .collect();
        match parse(&text) {
            Ok(c) => {
                loaded += 1;
                for e in c.entries().map(|e| e.name.clone()).collect::<Vec<_>>() {
                    let _ = c.expanded(&e);
                    let _ = c.int(&e);
                    let _ = c.bool(&e);
                    let _ = c.expr(&e);
                    let _ = c.duration(&e);
                }
            }
            Err(e) => {
                assert!(
                    e.location.is_some() || e.message.contains("can't open"),
                    "{text:?}: {e}"
                );
            }
        }
    }
    assert!(loaded > 100, "only {loaded} inputs loaded");
}

#[test]
fn context_is_applied_while_reading() {
    let c = Config::parse_str(
        "X = base\nNEGOTIATOR.X = neg\nif defined NEGOTIATOR.X\n Y = $(X)\nendif\n",
        "t",
        &LoadOptions {
            context: Context::subsystem("negotiator"),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(c.expanded("Y").unwrap().as_deref(), Some("neg"));
    assert_eq!(
        c.expanded("SUBSYSTEM").unwrap().as_deref(),
        Some("NEGOTIATOR")
    );
}

#[test]
fn slot_and_vanilla_forms() {
    let c = parse(
        "favorite_color = \"blue\"\nSLOT2_favorite_color = \"green\"\nSUSPEND = False\nSUSPEND_VANILLA = True\n\
         START = ((\nNEGOTIATOR_INTERVAL = 5 * 12\n",
    )
    .unwrap();
    assert_eq!(
        c.slot_value(1, "favorite_color").unwrap().as_deref(),
        Some("\"blue\"")
    );
    assert_eq!(
        c.slot_value(2, "favorite_color").unwrap().as_deref(),
        Some("\"green\"")
    );
    assert_eq!(c.vanilla_value("SUSPEND").unwrap().as_deref(), Some("True"));
    assert_eq!(
        c.vanilla_value("PREEMPT").unwrap().as_deref(),
        Some("False")
    );
    let errs = c.check_catalogue_types();
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert_eq!(errs[0].knob.as_deref(), Some("START"));
    assert_eq!(errs[0].location.as_ref().unwrap().line, 5);
    assert_eq!(c.int("NEGOTIATOR_INTERVAL").unwrap(), Some(60));
}

#[test]
fn environment_overrides_come_last() {
    // a variable name unique to this test, so parallel tests are not affected
    std::env::set_var(
        "_CONDOR_AERIE_LANG_TEST_KNOB",
        "$(AERIE_LANG_TEST_BASE) from env",
    );
    let c = parse("AERIE_LANG_TEST_KNOB = file\nAERIE_LANG_TEST_BASE = 7\n").unwrap();
    std::env::remove_var("_CONDOR_AERIE_LANG_TEST_KNOB");
    assert_eq!(
        c.expanded("AERIE_LANG_TEST_KNOB").unwrap().as_deref(),
        Some("7 from env")
    );
    assert_eq!(
        c.lookup("AERIE_LANG_TEST_KNOB").unwrap().origin,
        Origin::Environment
    );
    let off = Config::parse_str(
        "X = 1\n",
        "t",
        &LoadOptions {
            env_overrides: false,
            ..Default::default()
        },
    )
    .unwrap();
    assert!(off.entries().all(|e| e.origin != Origin::Environment));
}

/// What `condor_config_val` of HTCondor 23.9.6 prints for these knobs (recorded from the
/// reference chroot; differential.rs's number_formats_match asks it again): C printf's
/// `-0`, `-nan` and `inf` spellings through `$REAL()`, with `.0` appended when the result has
/// no point, and ClassAd unparsing (`%1.15E`, `real("NaN")`, `-0.0`) through `$EVAL()`.
#[test]
fn numbers_print_as_condor_config_val_prints_them() {
    let c = parse(include_str!("data/number_formats.conf")).unwrap();
    let want = [
        ("R1", "-0 0 -NAN NAN -INF 1E+21 1E-05 0.3333333333333333"),
        ("R2", "-0.0 -0.000 -0.000000e+00 -0.0  -0.0 -0.0 +0.0  0.0"),
        ("R3", "-nan.0 nan.0 -nan.0 -inf.0 -INF.0    -nan.0 -inf  .0|"),
        ("R4", "0.33333333333333331483 1000000000000000000000.000000 1e-05.0 1.50000 1.50 +1E-05.0 -0000.00"),
        ("E1", r#"-0.0 0.0 real("NaN") real("NaN") real("-INF") 1.000000000000000E+21 1.000000000000000E-05 3.333333333333333E-01 1.500000000000000E+00"#),
        ("I1", "0 0 +0"),
    ];
    for (knob, value) in want {
        assert_eq!(c.expanded(knob).unwrap().as_deref(), Some(value), "{knob}");
    }
}
