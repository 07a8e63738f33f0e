//! Recursive-descent parser with libclassad's grammar and precedence (lowest first):
//! `?:`, `||`, `&&`, `|`, `^`, `&`, `== != =?= =!= is isnt`, `< <= > >=`, `<< >> >>>`, `+ -`,
//! `* / %`, unary `+ - ! ~`, postfix `.name` and `[i]`, primary. Nesting deeper than
//! [`MAX_DEPTH`] is a parse error (never a stack overflow).
use crate::ad::{Attr, ClassAd};
use crate::builtins::Builtin;
use crate::cache::AttrCache;
use crate::error::ParseError;
use crate::expr::{BinOp, Call, Expr, ScopeKw, UnOp};
use crate::lexer::{Lexer, Spanned, Tok};
use crate::name::Name;
use crate::value::Value;
use std::sync::Arc;

/// Maximum nesting of expressions (the reference also stops at 1000).
pub const MAX_DEPTH: usize = 1000;

/// A parser over one text, one token of lookahead.
pub struct Parser<'a> {
    lex: Lexer<'a>,
    tok: Spanned,
    depth: usize,
}

impl<'a> Parser<'a> {
    /// A parser at the start of `text`; `old_strings` reads strings as old syntax does.
    pub fn new(text: &'a str, old_strings: bool) -> Result<Self, ParseError> {
        let mut lex = Lexer::new(text, old_strings);
        let tok = lex.next_token()?;
        Ok(Parser { lex, tok, depth: 0 })
    }

    /// Start at a given position (for old-syntax lines inside a bigger text).
    pub fn new_at(
        text: &'a str,
        old_strings: bool,
        line: u32,
        col: u32,
    ) -> Result<Self, ParseError> {
        let mut lex = Lexer::new(text, old_strings);
        lex.set_position(line, col);
        let tok = lex.next_token()?;
        Ok(Parser { lex, tok, depth: 0 })
    }

    fn advance(&mut self) -> Result<Spanned, ParseError> {
        let next = self.lex.next_token()?;
        Ok(std::mem::replace(&mut self.tok, next))
    }

    fn expected(&self, what: &str) -> ParseError {
        ParseError::new(
            self.tok.line,
            self.tok.col,
            format!("expected {}, found {}", what, self.tok.tok.describe()),
        )
    }

    fn expect(&mut self, t: Tok, what: &str) -> Result<(), ParseError> {
        if self.tok.tok == t {
            self.advance()?;
            Ok(())
        } else {
            Err(self.expected(what))
        }
    }

    /// Whether the whole text has been read.
    pub fn at_end(&self) -> bool {
        self.tok.tok == Tok::End
    }

    /// Ok at the end of the text, else the error naming what is left.
    pub fn finish(&self) -> Result<(), ParseError> {
        if self.at_end() {
            Ok(())
        } else {
            Err(self.expected("end of input"))
        }
    }

    fn enter(&mut self) -> Result<(), ParseError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(ParseError::new(
                self.tok.line,
                self.tok.col,
                format!(
                    "expected an expression nested at most {} deep, found deeper nesting",
                    MAX_DEPTH
                ),
            ));
        }
        Ok(())
    }

    /// Parse one expression (the lowest precedence, `?:`) from the current token.
    pub fn expression(&mut self) -> Result<Expr, ParseError> {
        self.enter()?;
        // Grow the stack on demand (checked every few levels): nesting up to MAX_DEPTH must
        // parse on any thread, including 2 MiB test threads.
        let r = stacker::maybe_grow(128 * 1024, 2 * 1024 * 1024, || self.ternary());
        self.depth -= 1;
        r
    }

    fn ternary(&mut self) -> Result<Expr, ParseError> {
        let cond = self.binary(0)?;
        if self.tok.tok != Tok::Question {
            return Ok(cond);
        }
        self.advance()?;
        let middle = if self.tok.tok == Tok::Colon {
            self.advance()?;
            None
        } else {
            let m = self.expression()?;
            self.expect(Tok::Colon, "':' of the conditional expression")?;
            Some(Box::new(m))
        };
        let other = self.expression()?;
        Ok(Expr::Cond(Box::new(cond), middle, Box::new(other)))
    }

    /// The binary operator at the current token and its precedence level (0 = `||`, 9 = `*`).
    fn binop(&self) -> Option<(BinOp, usize)> {
        let r = match self.tok.tok {
            Tok::OrOr => (BinOp::Or, 0),
            Tok::AndAnd => (BinOp::And, 1),
            Tok::Or => (BinOp::BitOr, 2),
            Tok::Caret => (BinOp::BitXor, 3),
            Tok::And => (BinOp::BitAnd, 4),
            Tok::Eq => (BinOp::Eq, 5),
            Tok::Ne => (BinOp::Ne, 5),
            Tok::MetaEq | Tok::Is => (BinOp::Is, 5),
            Tok::MetaNe | Tok::Isnt => (BinOp::Isnt, 5),
            Tok::Lt => (BinOp::Lt, 6),
            Tok::Le => (BinOp::Le, 6),
            Tok::Gt => (BinOp::Gt, 6),
            Tok::Ge => (BinOp::Ge, 6),
            Tok::Shl => (BinOp::Shl, 7),
            Tok::Shr => (BinOp::Shr, 7),
            Tok::Ushr => (BinOp::Ushr, 7),
            Tok::Plus => (BinOp::Add, 8),
            Tok::Minus => (BinOp::Sub, 8),
            Tok::Star => (BinOp::Mul, 9),
            Tok::Slash => (BinOp::Div, 9),
            Tok::Percent => (BinOp::Mod, 9),
            _ => return None,
        };
        Some(r)
    }

    /// Precedence climbing: all binary operators are left-associative.
    fn binary(&mut self, min: usize) -> Result<Expr, ParseError> {
        let mut left = self.unary()?;
        // Each operator applied deepens the (left-leaning) tree: count it, so that no tree is
        // deeper than MAX_DEPTH and evaluating, printing or dropping it cannot overflow.
        let saved = self.depth;
        while let Some((op, level)) = self.binop() {
            if level < min {
                break;
            }
            self.advance()?;
            if let Err(e) = self.enter() {
                self.depth = saved;
                return Err(e);
            }
            let right = self.binary(level + 1);
            left = Expr::Binary(
                op,
                Box::new(left),
                Box::new(match right {
                    Ok(r) => r,
                    Err(e) => {
                        self.depth = saved;
                        return Err(e);
                    }
                }),
            );
        }
        self.depth = saved;
        Ok(left)
    }

    fn unary(&mut self) -> Result<Expr, ParseError> {
        let op = match self.tok.tok {
            Tok::Minus => UnOp::Minus,
            Tok::Plus => UnOp::Plus,
            Tok::Tilde => UnOp::BitNot,
            Tok::Not => UnOp::Not,
            _ => return self.postfix(),
        };
        self.advance()?;
        self.enter()?;
        let e = stacker::maybe_grow(128 * 1024, 2 * 1024 * 1024, || self.unary());
        self.depth -= 1;
        Ok(Expr::Unary(op, Box::new(e?)))
    }

    fn ident_name(&mut self, what: &str) -> Result<String, ParseError> {
        match &self.tok.tok {
            Tok::Ident(s) | Tok::QIdent(s) => {
                let s = s.clone();
                self.advance()?;
                Ok(s)
            }
            _ => Err(self.expected(what)),
        }
    }

    fn postfix(&mut self) -> Result<Expr, ParseError> {
        let saved = self.depth;
        let r = self.postfix_chain();
        self.depth = saved;
        r
    }

    /// `e.name` and `e[i]` chains; each link deepens the tree and counts toward MAX_DEPTH.
    fn postfix_chain(&mut self) -> Result<Expr, ParseError> {
        let mut e = self.primary()?;
        loop {
            if matches!(self.tok.tok, Tok::LBox | Tok::Dot) {
                self.enter()?;
            }
            match self.tok.tok {
                Tok::LBox => {
                    self.advance()?;
                    let idx = self.expression()?;
                    self.expect(Tok::RBox, "']' closing the subscript")?;
                    e = Expr::Index(Box::new(e), Box::new(idx));
                }
                Tok::Dot => {
                    self.advance()?;
                    // libclassad's lexer folds `..` into one selection.
                    while self.tok.tok == Tok::Dot {
                        self.advance()?;
                    }
                    let name = self.ident_name("an attribute name after '.'")?;
                    e = match e {
                        Expr::Attr(prefix) => {
                            let kw = if prefix.is("my") {
                                Some(ScopeKw::My)
                            } else if prefix.is("target") {
                                Some(ScopeKw::Target)
                            } else if prefix.is("parent") {
                                Some(ScopeKw::Parent)
                            } else {
                                None
                            };
                            match kw {
                                Some(k) => Expr::Scoped(k, prefix, Name::new(&name)),
                                None => {
                                    Expr::Select(Box::new(Expr::Attr(prefix)), Name::new(&name))
                                }
                            }
                        }
                        other => Expr::Select(Box::new(other), Name::new(&name)),
                    };
                }
                _ => return Ok(e),
            }
        }
    }

    fn primary(&mut self) -> Result<Expr, ParseError> {
        let t = self.tok.tok.clone();
        match t {
            Tok::Ident(s) | Tok::QIdent(s) => {
                self.advance()?;
                if self.tok.tok == Tok::LParen && !s.is_empty() {
                    let (line, col) = (self.tok.line, self.tok.col);
                    let args = self.arguments()?;
                    return make_call(&s, args).ok_or_else(|| {
                        ParseError::new(
                            line,
                            col,
                            format!("expected a valid time string as the argument of {}()", s),
                        )
                    });
                }
                Ok(Expr::Attr(Name::new(&s)))
            }
            Tok::Dot => {
                self.advance()?;
                let name = self.ident_name("an attribute name after '.'")?;
                Ok(Expr::Abs(Name::new(&name)))
            }
            Tok::LParen => {
                self.advance()?;
                let e = self.expression()?;
                self.expect(Tok::RParen, "')'")?;
                Ok(Expr::Paren(Box::new(e)))
            }
            Tok::LBox => {
                self.enter()?;
                let ad = self.classad();
                self.depth -= 1;
                Ok(Expr::Ad(Arc::new(ad?)))
            }
            Tok::LBrace => {
                self.enter()?;
                let l = self.list();
                self.depth -= 1;
                l
            }
            Tok::Undefined => {
                self.advance()?;
                Ok(Expr::Lit(Value::Undefined))
            }
            Tok::Error => {
                self.advance()?;
                Ok(Expr::Lit(Value::Error))
            }
            Tok::True => {
                self.advance()?;
                Ok(Expr::Lit(Value::Bool(true)))
            }
            Tok::False => {
                self.advance()?;
                Ok(Expr::Lit(Value::Bool(false)))
            }
            Tok::Int(i) => {
                self.advance()?;
                Ok(Expr::Lit(Value::Int(i)))
            }
            Tok::Real(r) => {
                self.advance()?;
                Ok(Expr::Lit(Value::Real(r)))
            }
            Tok::Str(s) => {
                self.advance()?;
                Ok(Expr::Lit(Value::str(&s)))
            }
            _ => Err(self.expected("an expression")),
        }
    }

    fn arguments(&mut self) -> Result<Vec<Expr>, ParseError> {
        self.expect(Tok::LParen, "'('")?;
        let mut args = Vec::new();
        if self.tok.tok != Tok::RParen {
            loop {
                args.push(self.expression()?);
                match self.tok.tok {
                    Tok::Comma | Tok::Semi => {
                        self.advance()?;
                    }
                    Tok::RParen => break,
                    _ => return Err(self.expected("',' or ')' in the argument list")),
                }
            }
        }
        self.advance()?;
        Ok(args)
    }

    fn list(&mut self) -> Result<Expr, ParseError> {
        self.expect(Tok::LBrace, "'{'")?;
        let mut items = Vec::new();
        if self.tok.tok != Tok::RBrace {
            loop {
                items.push(self.expression()?);
                match self.tok.tok {
                    Tok::Comma => {
                        self.advance()?;
                    }
                    Tok::RBrace => break,
                    _ => return Err(self.expected("',' or '}' in the list")),
                }
            }
        }
        self.advance()?;
        Ok(Expr::List(items.into()))
    }

    /// `[ name = expr; ... ]`
    pub fn classad(&mut self) -> Result<ClassAd, ParseError> {
        self.expect(Tok::LBox, "'[' to start a ClassAd")?;
        let mut ad = ClassAd::new();
        while self.tok.tok != Tok::RBox {
            if self.tok.tok == Tok::Semi {
                self.advance()?;
                continue;
            }
            let name = self.ident_name("an attribute name or ']' in the ClassAd")?;
            self.expect(Tok::Assign, "'=' after the attribute name")?;
            let e = self.expression()?;
            ad.insert_named(Name::new(&name), e);
            match self.tok.tok {
                Tok::Semi | Tok::RBox => {}
                _ => return Err(self.expected("';' or ']' in the ClassAd")),
            }
        }
        self.advance()?;
        Ok(ad)
    }
}

/// Build a call node; `absTime("...")`/`relTime("...")` of a string literal become time
/// literals at parse time, as libclassad does.
fn make_call(name: &str, args: Vec<Expr>) -> Option<Expr> {
    if args.len() == 1
        && (name.eq_ignore_ascii_case("abstime") || name.eq_ignore_ascii_case("reltime"))
    {
        if let Expr::Lit(Value::Str(s)) = &args[0] {
            return if name.eq_ignore_ascii_case("abstime") {
                crate::builtins::time::make_abs_time(s).map(Expr::Lit)
            } else {
                crate::builtins::time::make_rel_time(s).map(Expr::RelTimeLit)
            };
        }
    }
    Some(Expr::Call(Box::new(Call {
        name: Arc::from(name),
        func: Builtin::lookup(name),
        args,
    })))
}

/// Parse `text` as one new-syntax expression and nothing after it.
pub fn parse_expr(text: &str) -> Result<Expr, ParseError> {
    let mut p = Parser::new(text, false)?;
    let e = p.expression()?;
    p.finish()?;
    Ok(e)
}

/// A new-syntax ad `[ ... ]`.
pub fn parse_new_ad(text: &str) -> Result<ClassAd, ParseError> {
    let mut p = Parser::new(text, false)?;
    let ad = p.classad()?;
    p.finish()?;
    Ok(ad)
}

/// Parse one old-syntax line `Name = expr` (line/column for errors). The name is everything
/// before the first `=`, trimmed, as libclassad's long-form reader takes it. Through a cache,
/// a line seen before is not parsed again and names are interned.
fn parse_old_line(
    line: &str,
    lineno: u32,
    cache: Option<&mut AttrCache>,
) -> Result<Arc<Attr>, ParseError> {
    let mut cache = cache;
    let mut hash = 0;
    if let Some(c) = cache.as_mut() {
        match c.get(line) {
            (_, Some(attr)) => return Ok(attr),
            (h, None) => hash = h,
        }
    }
    let Some(eq) = line.find('=') else {
        let col = line.len() - line.trim_start().len() + 1;
        return Err(ParseError::new(
            lineno,
            col as u32,
            "expected 'Name = expression', found no '='",
        ));
    };
    let name = line[..eq].trim();
    if name.is_empty() {
        let lead = line.len() - line.trim_start().len();
        return Err(ParseError::new(
            lineno,
            lead as u32 + 1,
            "expected an attribute name before '='",
        ));
    }
    // A NUL cannot be written in a quoted name either, so such a name could never be printed
    // back (found by the old_ads fuzz target).
    if let Some(pos) = name.find('\0') {
        let lead = line.len() - line.trim_start().len();
        let col = line[..lead + pos].chars().count() as u32 + 1;
        return Err(ParseError::new(
            lineno,
            col,
            "expected an attribute name without a NUL character",
        ));
    }
    let rhs = &line[eq + 1..];
    let e = match simple_literal(rhs) {
        Some(v) => Expr::Lit(v),
        None => {
            let col = line[..eq + 1].chars().count() as u32 + 1;
            let mut p = Parser::new_at(rhs, true, lineno, col)?;
            let mut e = p.expression()?;
            p.finish()?;
            zero_abs_offsets(&mut e);
            e
        }
    };
    let name = match cache.as_mut() {
        Some(c) => c.name(name),
        None => Name::new(name),
    };
    let attr = Attr::new(name, Arc::new(e));
    if let Some(c) = cache {
        c.offer(line, hash, &attr);
    }
    Ok(attr)
}

/// The value of an old-syntax right-hand side that is one plain literal (most lines of a
/// dump: `Cpus = 8`, `LoadAvg = 0.250000`, `Name = "slot1@host"`, `HasVM = false`), read
/// without the lexer: exactly what the parser gives for these texts, and `None` for anything
/// else (which the parser then reads, errors included). Only spaces and tabs may surround it.
fn simple_literal(rhs: &str) -> Option<Value> {
    let t = rhs.trim_matches(|c| c == ' ' || c == '\t').as_bytes();
    let (&first, rest) = t.split_first()?;
    if first == b'"' {
        // Old syntax: a backslash before a quote escapes it; leave those (and NULs) to the
        // lexer. Without either, the literal is the bytes up to the closing quote.
        let body = rest.strip_suffix(b"\"")?;
        if body.iter().any(|&b| b == b'"' || b == b'\\' || b == 0) {
            return None;
        }
        return std::str::from_utf8(body).ok().map(Value::str);
    }
    if first.is_ascii_alphabetic() {
        if t.eq_ignore_ascii_case(b"true") {
            return Some(Value::Bool(true));
        }
        if t.eq_ignore_ascii_case(b"false") {
            return Some(Value::Bool(false));
        }
        return None;
    }
    // [-]digits[.digits]: no exponent, no leading zero (octal), at most 18 integer digits.
    let digits = if first == b'-' { rest } else { t };
    let int_len = digits.iter().take_while(|b| b.is_ascii_digit()).count();
    if int_len == 0 || int_len > 18 || (int_len > 1 && digits[0] == b'0') {
        return None;
    }
    let text = std::str::from_utf8(t).ok()?;
    match &digits[int_len..] {
        [] => text.parse::<i64>().ok().map(Value::Int),
        [b'.', frac @ ..] if !frac.is_empty() && frac.iter().all(u8::is_ascii_digit) => {
            text.parse::<f64>().ok().map(Value::Real)
        }
        _ => None,
    }
}

/// libclassad's long-form (old syntax) reader evaluates absolute-time literals in UTC (the
/// written offset is only kept for printing).
fn zero_abs_offsets(e: &mut Expr) {
    stacker::maybe_grow(64 * 1024, 1024 * 1024, || match e {
        Expr::Lit(Value::AbsTime { secs, offset_secs }) => {
            *e = Expr::OldAbsTimeLit {
                secs: *secs,
                offset_secs: *offset_secs,
            }
        }
        Expr::Select(x, _) | Expr::Unary(_, x) | Expr::Paren(x) => zero_abs_offsets(x),
        Expr::Index(a, b) | Expr::Binary(_, a, b) => {
            zero_abs_offsets(a);
            zero_abs_offsets(b);
        }
        Expr::Cond(c, m, x) => {
            zero_abs_offsets(c);
            if let Some(m) = m {
                zero_abs_offsets(m);
            }
            zero_abs_offsets(x);
        }
        // Arguments of a function call keep their offset: in an old-syntax ad libclassad gives
        // formatTime(absTime("...+05:30")) in the written zone (differential case, seed 1).
        Expr::Call(_) => {}
        Expr::List(l) => l.make_mut().iter_mut().for_each(zero_abs_offsets),
        _ => {}
    })
}

/// Lines of `text` with their 1-based numbers, without `\r`.
fn numbered_lines(text: &str) -> impl Iterator<Item = (u32, &str)> {
    text.split('\n')
        .enumerate()
        .map(|(i, raw)| (i as u32 + 1, raw.strip_suffix('\r').unwrap_or(raw)))
}

/// Old-syntax ads separated by blank lines, read as libclassad does: a line that does not
/// parse ends its ad (the rest up to the next blank line is ignored). Never fails; use
/// [`parse_old_ads_strict`] to report the first bad line.
pub fn parse_old_ads(text: &str) -> Result<Vec<ClassAd>, ParseError> {
    let mut ads = Vec::new();
    let mut cur = Vec::new();
    let mut broken = false;
    for (lineno, line) in numbered_lines(text) {
        let t = line.trim();
        if t.is_empty() {
            if !cur.is_empty() {
                ads.push(ClassAd::from_attrs(&mut cur));
            }
            broken = false;
            continue;
        }
        if t.starts_with('#') || broken {
            continue;
        }
        match parse_old_line(line, lineno, None) {
            Ok(attr) => cur.push(attr),
            Err(_) => broken = true,
        }
    }
    if !cur.is_empty() {
        ads.push(ClassAd::from_attrs(&mut cur));
    }
    Ok(ads)
}

/// Like [`parse_old_ads`] but every line must parse: the first bad line is the error.
pub fn parse_old_ads_strict(text: &str) -> Result<Vec<ClassAd>, ParseError> {
    parse_old_ads_with(text, None)
}

/// [`parse_old_ads_strict`], optionally through a cache of parsed lines. Each ad's lines are
/// gathered first and the ad is built once, its tables sized to fit.
pub(crate) fn parse_old_ads_with(
    text: &str,
    mut cache: Option<&mut AttrCache>,
) -> Result<Vec<ClassAd>, ParseError> {
    let mut ads = Vec::new();
    let mut cur = Vec::new();
    for (lineno, line) in numbered_lines(text) {
        let t = line.trim();
        if t.is_empty() {
            if !cur.is_empty() {
                ads.push(ClassAd::from_attrs(&mut cur));
            }
            continue;
        }
        if t.starts_with('#') {
            continue;
        }
        cur.push(parse_old_line(line, lineno, cache.as_deref_mut())?);
    }
    if !cur.is_empty() {
        ads.push(ClassAd::from_attrs(&mut cur));
    }
    Ok(ads)
}

/// One old-syntax ad: all blank-line separated parts merged (libclassad's parseOne).
pub fn parse_old_ad(text: &str) -> Result<ClassAd, ParseError> {
    let mut ad = ClassAd::new();
    for part in parse_old_ads(text)? {
        ad.update(&part);
    }
    Ok(ad)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the full parser makes of an old-syntax right-hand side.
    fn parsed(rhs: &str) -> Result<Expr, ParseError> {
        let mut p = Parser::new_at(rhs, true, 1, 1)?;
        let e = p.expression()?;
        p.finish()?;
        Ok(e)
    }

    #[test]
    fn simple_literals_read_as_the_parser_reads_them() {
        let read = [
            " 0",
            " 7",
            " -7",
            " -0",
            "\t42\t",
            " 123456789012345678",
            " -123456789012345678",
            " 0.5",
            " -0.25",
            " 3.450000",
            " 10.0",
            " \"\"",
            " \"slot1@host\"",
            " \"<10.0.0.1:9618?addrs=10.0.0.1-9618&noUDP>\"",
            " \"caf\u{e9}\"",
            " true",
            " FALSE",
            " True ",
        ];
        for rhs in read {
            let fast = simple_literal(rhs).unwrap_or_else(|| panic!("{rhs:?} is simple"));
            let slow = parsed(rhs).unwrap_or_else(|e| panic!("{rhs:?}: {e}"));
            assert!(
                Expr::Lit(fast.clone()).same_as(&slow),
                "{rhs:?}: {fast:?} vs {slow:?}"
            );
            assert!(matches!(slow, Expr::Lit(_)), "{rhs:?}");
        }
        // Everything else goes to the parser: errors (octal, `5.`, unclosed), escapes,
        // concatenations, exponents, overflow, words, expressions, comments, odd spaces.
        let left = [
            " 017",
            " 08",
            " 5.",
            " 1e5",
            " 1.5e3",
            " .5",
            " +5",
            " 1234567890123456789",
            " 99999999999999999999",
            " \"a\\\"b\"",
            " \"a\\\\\"",
            " \"a\" \"b\"",
            " \"a",
            " \"a\"b",
            " undefined",
            " error",
            " truex",
            " x",
            " 1 + 2",
            " -",
            " 5 // c",
            " 5\r",
            " \u{a0}5",
            " \"\0\"",
            "",
        ];
        for rhs in left {
            assert!(
                simple_literal(rhs).is_none(),
                "{rhs:?} must be left to the parser"
            );
        }
    }

    #[test]
    fn random_right_hand_sides_read_without_the_lexer_only_as_the_parser_reads_them() {
        // Short texts over the bytes that matter to literals (LCG, fixed seed): whenever the
        // fast path reads one, the parser must read the same literal.
        const ALPHABET: &[u8] = b"0123456789-.+eE\" \t\\xtrueTRUEfalsFALS#/*";
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let (mut fast, mut total) = (0, 0);
        for _ in 0..50_000 {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            let len = (x >> 60) as usize + 1;
            let mut t = String::new();
            for k in 0..len {
                let r = x.rotate_left(7 * k as u32 + 3) ^ (k as u64).wrapping_mul(0x9e37_79b9);
                t.push(ALPHABET[(r % ALPHABET.len() as u64) as usize] as char);
            }
            total += 1;
            if let Some(v) = simple_literal(&t) {
                fast += 1;
                let slow = parsed(&t).unwrap_or_else(|e| panic!("{t:?} read as {v:?}: {e}"));
                assert!(
                    Expr::Lit(v.clone()).same_as(&slow),
                    "{t:?}: {v:?} vs {slow:?}"
                );
            }
        }
        assert!(
            fast > 500 && fast < total,
            "{fast} of {total} read by the fast path"
        );
    }

    #[test]
    fn an_ad_built_from_its_lines_equals_one_built_by_inserts() {
        let text = "A = 1\nb = \"x\"\na = 2\nC = B + 1\nB = 3\n";
        let ads = parse_old_ads_strict(text).expect("parses");
        let mut by_insert = ClassAd::new();
        for (k, v) in [
            ("A", "1"),
            ("b", "\"x\""),
            ("a", "2"),
            ("C", "B + 1"),
            ("B", "3"),
        ] {
            by_insert.insert_expr_str(k, v).expect("parses");
        }
        assert_eq!(ads, vec![by_insert.clone()]);
        // Later lines replace earlier ones and keep the first spelling, in first order.
        assert_eq!(ads[0].to_old_syntax(), by_insert.to_old_syntax());
        assert_eq!(ads[0].to_old_syntax(), "A = 2\nb = 3\nC = B + 1\n");
    }
}
