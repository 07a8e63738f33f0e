//! Reading config files: statements, `include`, `use`, `if`, `@=`, `error`/`warning`, and the
//! local config files and directories read after the main file.
//!
//! `include : COMMAND |` (a command whose output is configuration) is refused unless
//! [`LoadOptions::allow_commands`] is set: a central manager that runs commands named in files
//! an admin may not have reviewed is a risk we do not take by default. When allowed, the command
//! is run directly (split on whitespace, no shell) and its standard output is read as a file.
use crate::cond::{CondEnv, IfStack};
use crate::config::{Config, Context, Origin};
use crate::error::{ConfigError, Location};
use crate::expand;
use crate::metaknobs;
use crate::source::logical_lines;
use std::path::{Path, PathBuf};

/// HTCondor's limit on nested includes and metaknobs.
pub const MAX_NESTING_DEPTH: u32 = 20;

/// How to read a configuration.
#[derive(Debug, Clone)]
pub struct LoadOptions {
    /// The daemon the configuration is read for (prefix rules; macros in the files expand with
    /// it while reading, as in HTCondor).
    pub context: Context,
    /// Allow `include : COMMAND |` and `LOCAL_CONFIG_FILE = COMMAND |` (off by default).
    pub allow_commands: bool,
    /// Read `LOCAL_CONFIG_DIR` and `LOCAL_CONFIG_FILE` after the main file (on by default).
    pub local_config: bool,
    /// Apply `_CONDOR_<NAME>=value` (any case) and `_AERIE_<NAME>=value` environment variables
    /// last, as HTCondor applies `_CONDOR_` ones (on by default).
    pub env_overrides: bool,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            context: Context::default(),
            allow_commands: false,
            local_config: true,
            env_overrides: true,
        }
    }
}

impl LoadOptions {
    /// Options for a subsystem (e.g. `NEGOTIATOR`).
    pub fn for_subsystem(name: &str) -> Self {
        LoadOptions {
            context: Context::subsystem(name),
            ..LoadOptions::default()
        }
    }
}

/// Where the text being parsed comes from.
#[derive(Clone)]
enum Src {
    /// A file (or command output, or a string) with its display name and its directory (for
    /// relative includes).
    File { name: String, dir: Option<PathBuf> },
    /// A metaknob template used at `at`.
    Template { at: Location, template: String },
}

impl Src {
    fn location(&self, line: u32) -> Location {
        match self {
            Src::File { name, .. } => Location {
                file: name.clone(),
                line,
                template: None,
            },
            Src::Template { at, template } => Location {
                file: at.file.clone(),
                line: at.line,
                template: Some(Box::new((template.clone(), line))),
            },
        }
    }
}

pub(crate) struct Loader<'o> {
    pub cfg: Config,
    opts: &'o LoadOptions,
    /// Canonical paths of the files being read, outermost first (loop detection).
    stack: Vec<PathBuf>,
}

struct Env<'a>(&'a Config);

impl CondEnv for Env<'_> {
    fn lookup_raw(&self, name: &str) -> Option<String> {
        self.0.lookup(name).map(|f| f.raw)
    }
    fn has_metaknob(&self, category: &str, template: Option<&str>) -> bool {
        metaknobs::is_category(category)
            && template.is_none_or(|t| metaknobs::lookup(category, t).is_some())
    }
    fn expand(&self, text: &str) -> Result<String, String> {
        expand::expand(text, self.0, false)
    }
}

struct Heredoc {
    name: String,
    tag: String,
    data: String,
    start: u32,
}

impl<'o> Loader<'o> {
    pub fn new(opts: &'o LoadOptions) -> Self {
        Loader {
            cfg: Config::empty(opts.context.clone()),
            opts,
            stack: Vec::new(),
        }
    }

    /// Reads the main file, then the local config directories and files.
    pub fn load_main(&mut self, path: &Path) -> Result<(), ConfigError> {
        // HTCondor sets CONFIG_ROOT to the directory of the main configuration file
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            self.cfg
                .insert_entry("CONFIG_ROOT", dir.display().to_string(), Origin::Detected);
        }
        self.file(path, 0, true)?;
        if self.opts.local_config {
            self.local_config()?;
        }
        self.env_overrides();
        Ok(())
    }

    fn env_overrides(&mut self) {
        if !self.opts.env_overrides {
            return;
        }
        for (k, v) in std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        {
            let name = ["_condor_", "_aerie_"].iter().find_map(|p| {
                k.get(..p.len())
                    .filter(|h| h.eq_ignore_ascii_case(p))
                    .map(|_| k[p.len()..].trim_end())
            });
            if let Some(name) = name.filter(|n| !n.is_empty()) {
                self.cfg
                    .insert_entry(name, v.trim_start().to_string(), Origin::Environment);
            }
        }
    }

    /// Reads text given directly (name is used in messages), then the local config.
    pub fn load_text(&mut self, text: &str, name: &str) -> Result<(), ConfigError> {
        self.cfg.sources.push(name.to_string());
        let src = Src::File {
            name: name.to_string(),
            dir: None,
        };
        self.text(text, &src, 0)?;
        if self.opts.local_config {
            self.local_config()?;
        }
        self.env_overrides();
        Ok(())
    }

    fn param(&self, name: &str) -> Result<Option<String>, ConfigError> {
        self.cfg.expanded(name)
    }

    fn local_config(&mut self) -> Result<(), ConfigError> {
        let dirs1 = self.param("LOCAL_CONFIG_DIR")?;
        if let Some(d) = &dirs1 {
            self.directories(d)?;
        }
        self.local_files()?;
        let dirs2 = self.param("LOCAL_CONFIG_DIR")?;
        if let Some(d) = &dirs2 {
            if dirs1.as_deref() != Some(d.as_str()) {
                self.directories(d)?;
            }
        }
        Ok(())
    }

    fn local_files(&mut self) -> Result<(), ConfigError> {
        let required = self.cfg.bool("REQUIRE_LOCAL_CONFIG_FILE")?.unwrap_or(true);
        let Some(mut value) = self.param("LOCAL_CONFIG_FILE")? else {
            return Ok(());
        };
        let split = |v: &str| -> Vec<String> {
            if v.trim_end().ends_with('|') {
                vec![v.trim().to_string()]
            } else {
                crate::config::split_list(v)
            }
        };
        let mut todo = split(&value);
        let mut done: Vec<String> = Vec::new();
        let mut guard = 0;
        while let Some(src) = (!todo.is_empty()).then(|| todo.remove(0)) {
            guard += 1;
            if guard > 1000 {
                return Err(ConfigError::new(
                    "LOCAL_CONFIG_FILE keeps changing while its files are read",
                )
                .with_knob("LOCAL_CONFIG_FILE"));
            }
            if src.ends_with('|') {
                self.command(&src, None, 1)?;
            } else {
                self.file(Path::new(&src), 1, required)?;
            }
            done.push(src);
            let newv = self.param("LOCAL_CONFIG_FILE")?.unwrap_or_default();
            if newv != value {
                todo = split(&newv)
                    .into_iter()
                    .filter(|s| !done.contains(s))
                    .collect();
                value = newv;
            }
        }
        Ok(())
    }

    fn exclude_regex(&self) -> Result<Option<regex::Regex>, ConfigError> {
        match self.param("LOCAL_CONFIG_DIR_EXCLUDE_REGEXP")? {
            None => Ok(None),
            Some(r) => regex::Regex::new(&r).map(Some).map_err(|e| {
                ConfigError::new(format!(
                    "LOCAL_CONFIG_DIR_EXCLUDE_REGEXP is not a valid regular expression: {e}"
                ))
                .with_knob("LOCAL_CONFIG_DIR_EXCLUDE_REGEXP")
            }),
        }
    }

    /// The files of a config directory, in lexical order, without the excluded ones
    /// (`LOCAL_CONFIG_DIR_EXCLUDE_REGEXP`: dot files, editor backups, package leftovers...).
    fn dir_files(&self, dir: &Path) -> Result<Vec<PathBuf>, ConfigError> {
        let re = self.exclude_regex()?;
        let Ok(rd) = std::fs::read_dir(dir) else {
            return Ok(Vec::new());
        };
        let mut files: Vec<PathBuf> = rd
            .filter_map(|e| e.ok())
            .filter(|e| !e.path().is_dir())
            .filter(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                re.as_ref().is_none_or(|r| !r.is_match(&name))
            })
            .map(|e| e.path())
            .collect();
        files.sort();
        Ok(files)
    }

    fn directories(&mut self, list: &str) -> Result<(), ConfigError> {
        for d in crate::config::split_list(list) {
            for f in self.dir_files(Path::new(&d))? {
                self.file(&f, 1, true)?;
            }
        }
        Ok(())
    }

    fn file(&mut self, path: &Path, depth: u32, required: bool) -> Result<(), ConfigError> {
        let name = path.display().to_string();
        let bytes = match std::fs::read(path) {
            Ok(b) => b,
            Err(e) if !required && e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(ConfigError::new(format!("can't open file {name}: {e}"))),
        };
        let canon = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        if self.stack.contains(&canon) {
            return Err(ConfigError::new(format!(
                "include loop: {name} is already being read (it includes itself)"
            )));
        }
        self.stack.push(canon);
        self.cfg.sources.push(name.clone());
        let text = String::from_utf8_lossy(&bytes);
        let src = Src::File {
            name,
            dir: path.parent().map(Path::to_path_buf),
        };
        let r = self.text(&text, &src, depth);
        self.stack.pop();
        r
    }

    fn command(
        &mut self,
        cmdline: &str,
        at: Option<&Location>,
        depth: u32,
    ) -> Result<(), ConfigError> {
        let cmd = cmdline.trim().trim_end_matches('|').trim();
        if !self.opts.allow_commands {
            let e = ConfigError::new(format!(
                "reading configuration from a command ('{cmd} |') is disabled in Aerie; run the command \
                 yourself and include its output file, or load with commands allowed"
            ));
            return Err(match at {
                Some(l) => e.or_at(l),
                None => e,
            });
        }
        let mut words = cmd.split_whitespace();
        let prog = words
            .next()
            .ok_or_else(|| ConfigError::new("empty command in include"))?;
        let out = std::process::Command::new(prog)
            .args(words)
            .stdin(std::process::Stdio::null())
            .output()
            .map_err(|e| ConfigError::new(format!("can't run '{cmd}': {e}")))?;
        if !out.status.success() {
            return Err(ConfigError::new(format!(
                "command '{cmd}' failed: {}",
                out.status
            )));
        }
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        self.cfg.sources.push(cmdline.trim().to_string());
        let src = Src::File {
            name: cmdline.trim().to_string(),
            dir: None,
        };
        self.text(&text, &src, depth)
    }

    fn insert(&mut self, name: &str, raw: &str, loc: Location) -> Result<(), ConfigError> {
        let short = self.cfg.short_name(name).map(str::to_string);
        let v = expand::expand_self(raw, name, short.as_deref(), &self.cfg)
            .map_err(|m| ConfigError::at(loc.clone(), m).with_knob(name))?;
        self.cfg.insert_entry(name, v, Origin::File(loc));
        Ok(())
    }

    /// Parses config text (a file's, or a template's after argument expansion).
    fn text(&mut self, text: &str, src: &Src, depth: u32) -> Result<(), ConfigError> {
        let lines: Vec<(String, u32)> = match src {
            Src::File { .. } => logical_lines(text)
                .into_iter()
                .map(|l| (l.text, l.line))
                .collect(),
            Src::Template { .. } => text
                .split('\n')
                .map(|l| l.trim().to_string())
                .filter(|l| !l.is_empty())
                .enumerate()
                .map(|(i, l)| (l, i as u32))
                .collect(),
        };
        let mut ifs = IfStack::default();
        let mut here: Option<Heredoc> = None;
        let mut last_line = 0;
        for (line, no) in lines {
            last_line = no;
            let loc = src.location(no);
            let mut t: &str = &line;
            if t.is_empty() || t.starts_with('#') {
                continue;
            }
            if let Some(h) = here.as_mut() {
                if t.starts_with('@') && t[1..] == h.tag {
                    let h = here.take().expect("heredoc is open");
                    self.insert(&h.name, &h.data, loc)?;
                } else {
                    if !h.data.is_empty() {
                        h.data.push('\n');
                    }
                    h.data.push_str(t);
                }
                continue;
            }
            if t.starts_with(':') && (ifs.inside_if() || is_if_keyword(&t[1..])) {
                t = &t[1..];
            }
            if let Some(r) = ifs.handle(t, &Env(&self.cfg)) {
                r.map_err(|m| ConfigError::at(loc.clone(), m))?;
                continue;
            }
            if !ifs.enabled() {
                continue;
            }
            if let Some(h) = self.statement(t, &loc, src, depth)? {
                here = Some(Heredoc {
                    name: h.0,
                    tag: h.1,
                    data: String::new(),
                    start: no,
                });
            }
        }
        if let Some(h) = here {
            return Err(ConfigError::at(
                src.location(h.start),
                format!("found end-of-file while scanning for '@{}' (the end of the multi-line value of {})", h.tag, h.name),
            )
            .with_knob(h.name));
        }
        if ifs.inside_if() {
            return Err(ConfigError::at(
                src.location(last_line),
                "endif(s) not found before end-of-file",
            ));
        }
        Ok(())
    }

    /// One statement. Returns `Some((name, tag))` when it opens a `NAME @= tag` value.
    fn statement(
        &mut self,
        t: &str,
        loc: &Location,
        src: &Src,
        depth: u32,
    ) -> Result<Option<(String, String)>, ConfigError> {
        let b = t.as_bytes();
        let name_end = b
            .iter()
            .position(|&c| c.is_ascii_whitespace() || c == b'=' || c == b':');
        let Some(name_end) = name_end else {
            if t.starts_with('[') {
                return Ok(None); // an .ini section header, ignored as HTCondor does
            }
            return Err(ConfigError::at(
                loc.clone(),
                format!("syntax error: expected NAME = value, found '{t}'"),
            ));
        };
        // find the operator: = or : or @=, skipping words in between as HTCondor 23.9.6 does
        let mut op_pos = name_end;
        let mut op = b[name_end];
        if op.is_ascii_whitespace() {
            op = 0;
            let mut i = name_end;
            while i < b.len() {
                let c = b[i];
                if c == b'=' || c == b':' {
                    op = c;
                    op_pos = i;
                    break;
                }
                if c == b'@' && b.get(i + 1) == Some(&b'=') {
                    op = b'@';
                    op_pos = i;
                    break;
                }
                i += 1;
            }
        }
        if op == 0 {
            return Err(ConfigError::at(
                loc.clone(),
                format!("syntax error: missing = or : in '{t}'"),
            ));
        }
        let rhs_start = if op == b'@' { op_pos + 2 } else { op_pos + 1 };
        let rhs = t[rhs_start..].trim_start_matches(|c: char| c.is_ascii_whitespace());
        let word = &t[..name_end];
        let word_noat = word.strip_prefix('@').unwrap_or(word);
        let between = t[name_end..op_pos].trim();
        if op == b':' {
            if word_noat.eq_ignore_ascii_case("include") {
                self.include(between, rhs, loc, src, depth)?;
                return Ok(None);
            }
            if word_noat.eq_ignore_ascii_case("use") {
                self.use_templates(between, rhs, loc, depth)?;
                return Ok(None);
            }
            let is_error = word_noat.eq_ignore_ascii_case("error");
            if is_error || word_noat.eq_ignore_ascii_case("warning") {
                let msg = expand::expand(rhs, &self.cfg, false).unwrap_or_else(|_| rhs.to_string());
                if is_error {
                    return Err(ConfigError::at(loc.clone(), msg));
                }
                self.cfg.warnings.push(format!("{loc}: {msg}"));
                return Ok(None);
            }
            if !word.eq_ignore_ascii_case("RunBenchmarks") {
                self.cfg.warnings.push(format!(
                    "{loc}: obsolete use of ':' for parameter assignment at {word} : {rhs}"
                ));
            }
        }
        // the knob name may itself contain macros (not in templates)
        let name = if is_template_src(src) {
            word.to_string()
        } else {
            expand::expand(word, &self.cfg, false).map_err(|m| ConfigError::at(loc.clone(), m))?
        };
        if name.is_empty() || !name.bytes().all(expand::is_idchar) {
            return Err(ConfigError::at(
                loc.clone(),
                format!("illegal identifier: <{name}> (knob names are letters, digits, _ . /)"),
            ));
        }
        if op == b'@' {
            if rhs.is_empty() {
                return Err(ConfigError::at(
                    loc.clone(),
                    format!("{name} @= needs a tag (e.g. {name} @= end ... @end)"),
                )
                .with_knob(name));
            }
            return Ok(Some((name, rhs.to_string())));
        }
        self.insert(&name, rhs, loc.clone())?;
        Ok(None)
    }

    fn include(
        &mut self,
        options: &str,
        rhs: &str,
        loc: &Location,
        src: &Src,
        depth: u32,
    ) -> Result<(), ConfigError> {
        let mut optional = false;
        for opt in options.split_whitespace() {
            if opt.eq_ignore_ascii_case("ifexist") {
                optional = true;
            } else if opt.eq_ignore_ascii_case("command") {
                // "include command : X |" says the same as the trailing |
            } else {
                return Err(ConfigError::at(
                    loc.clone(),
                    format!("unexpected keyword(s) '{options}' after include (Aerie supports 'include : FILE', 'include ifexist : FILE')"),
                ));
            }
        }
        if is_template_src(src) {
            return Err(ConfigError::at(
                loc.clone(),
                "include is not allowed inside a metaknob template",
            ));
        }
        let target =
            expand::expand(rhs, &self.cfg, false).map_err(|m| ConfigError::at(loc.clone(), m))?;
        let target = target.trim();
        if target.is_empty() {
            return Err(ConfigError::at(loc.clone(), "include needs a file name"));
        }
        if depth + 1 >= MAX_NESTING_DEPTH {
            return Err(ConfigError::at(
                loc.clone(),
                format!("includes nested too deep (more than {MAX_NESTING_DEPTH} levels)"),
            ));
        }
        let chain = |mut e: ConfigError| {
            if e.location.is_none() {
                e.location = Some(loc.clone());
            } else {
                e.included_from.push(loc.clone());
            }
            e
        };
        if target.ends_with('|') {
            return self.command(target, Some(loc), depth + 1).map_err(chain);
        }
        let mut path = PathBuf::from(target);
        if path.is_relative() {
            if let Src::File { dir: Some(d), .. } = src {
                path = d.join(path);
            }
        }
        if path.is_dir() {
            // HTCondor 23.9.6 opens the directory, reads nothing from it and goes on; only
            // LOCAL_CONFIG_DIR reads the files of a directory.
            self.cfg.warnings.push(format!(
                "{loc}: include of a directory ({}) reads nothing; use LOCAL_CONFIG_DIR",
                path.display()
            ));
            self.cfg.sources.push(path.display().to_string());
            return Ok(());
        }
        self.file(&path, depth + 1, !optional).map_err(chain)
    }

    fn use_templates(
        &mut self,
        category: &str,
        rhs: &str,
        loc: &Location,
        depth: u32,
    ) -> Result<(), ConfigError> {
        if category.is_empty() {
            return Err(ConfigError::at(
                loc.clone(),
                format!("use needs a category before ':' (use ROLE : ...): {rhs}"),
            ));
        }
        if !metaknobs::is_category(category) {
            return Err(ConfigError::at(
                loc.clone(),
                format!("use {category}: unknown metaknob category (known: ROLE, FEATURE, POLICY, SECURITY)"),
            ));
        }
        if depth + 1 >= MAX_NESTING_DEPTH {
            return Err(ConfigError::at(
                loc.clone(),
                format!("use {category}: nesting too deep"),
            ));
        }
        for item in metaknobs::parse_use_list(rhs) {
            let tpl = metaknobs::lookup(category, &item.name).ok_or_else(|| {
                ConfigError::at(
                    loc.clone(),
                    format!(
                        "use {}: does not recognise {} (known: {})",
                        category.to_ascii_uppercase(),
                        item.name,
                        metaknobs::templates(category).join(", ")
                    ),
                )
            })?;
            let text = if item.args.is_some() || expand::has_meta_args(&tpl.text) {
                expand::expand_meta_args(&tpl.text, item.args.as_deref().unwrap_or(""))
            } else {
                tpl.text.clone()
            };
            // statements of a template report the file line of the `use` plus their offset
            let at = loc.clone();
            let src = Src::Template {
                at,
                template: format!("{}:{}", tpl.category, tpl.name),
            };
            self.text(&text, &src, depth + 1)?;
        }
        Ok(())
    }
}

fn is_template_src(src: &Src) -> bool {
    matches!(src, Src::Template { .. })
}

fn is_if_keyword(t: &str) -> bool {
    t.get(..2).is_some_and(|h| h.eq_ignore_ascii_case("if"))
        && t[2..]
            .chars()
            .next()
            .is_none_or(|c| c.is_ascii_whitespace())
}

impl Config {
    /// Reads a configuration file (then `LOCAL_CONFIG_DIR` / `LOCAL_CONFIG_FILE` unless turned
    /// off in `opts`).
    pub fn load(path: impl AsRef<Path>, opts: &LoadOptions) -> Result<Config, ConfigError> {
        let mut l = Loader::new(opts);
        l.load_main(path.as_ref())?;
        Ok(l.cfg)
    }

    /// Reads configuration text; `name` stands for the file in messages.
    pub fn parse_str(text: &str, name: &str, opts: &LoadOptions) -> Result<Config, ConfigError> {
        let mut l = Loader::new(opts);
        l.load_text(text, name)?;
        Ok(l.cfg)
    }
}
