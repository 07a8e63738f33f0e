//! Tokenizer following libclassad's lexer (with HTCondor's old-ClassAd semantics switched on, as
//! the `htcondor` Python module does): a `-` directly before a digit after an operator is part of
//! the number, integers with a leading zero are rejected, strings have C escapes (new syntax) or
//! only `\"` (old syntax), adjacent string literals are concatenated.
use crate::error::ParseError;

/// A token.
#[derive(Clone, Debug, PartialEq)]
pub enum Tok {
    /// An integer literal (decimal, octal `017` or hex `0x1F`).
    Int(i64),
    /// A real literal.
    Real(f64),
    /// A string literal, escapes resolved (adjacent literals already joined).
    Str(String),
    /// An identifier: an attribute or function name, or a scope keyword.
    Ident(String),
    /// A `'quoted'` attribute name.
    QIdent(String),
    /// `true`
    True,
    /// `false`
    False,
    /// `undefined`
    Undefined,
    /// `error`
    Error,
    /// `is`
    Is,
    /// `isnt`
    Isnt,
    // punctuation
    /// `.`
    Dot,
    /// `*`
    Star,
    /// `/`
    Slash,
    /// `%`
    Percent,
    /// `+`
    Plus,
    /// `-`
    Minus,
    /// `~`
    Tilde,
    /// `^`
    Caret,
    /// `?`
    Question,
    /// `:`
    Colon,
    /// `;`
    Semi,
    /// `,`
    Comma,
    /// `[`
    LBox,
    /// `]`
    RBox,
    /// `{`
    LBrace,
    /// `}`
    RBrace,
    /// `(`
    LParen,
    /// `)`
    RParen,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `<<`
    Shl,
    /// `>>`
    Shr,
    /// `>>>`
    Ushr,
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// `=?=`
    MetaEq,
    /// `=!=`
    MetaNe,
    /// `=`
    Assign,
    /// `!`
    Not,
    /// `&`
    And,
    /// `&&`
    AndAnd,
    /// `|`
    Or,
    /// `||`
    OrOr,
    /// The end of the text.
    End,
}

impl Tok {
    /// How a parse error names the token (`integer 3`, `'+'`, `end of input`).
    pub fn describe(&self) -> String {
        match self {
            Tok::Int(i) => format!("integer {}", i),
            Tok::Real(r) => format!("real {}", r),
            Tok::Str(_) => "string literal".into(),
            Tok::Ident(s) => format!("identifier '{}'", s),
            Tok::QIdent(s) => format!("quoted identifier '{}'", s),
            Tok::End => "end of input".into(),
            other => format!("'{}'", punct_text(other)),
        }
    }
}

fn punct_text(t: &Tok) -> &'static str {
    match t {
        Tok::True => "true",
        Tok::False => "false",
        Tok::Undefined => "undefined",
        Tok::Error => "error",
        Tok::Is => "is",
        Tok::Isnt => "isnt",
        Tok::Dot => ".",
        Tok::Star => "*",
        Tok::Slash => "/",
        Tok::Percent => "%",
        Tok::Plus => "+",
        Tok::Minus => "-",
        Tok::Tilde => "~",
        Tok::Caret => "^",
        Tok::Question => "?",
        Tok::Colon => ":",
        Tok::Semi => ";",
        Tok::Comma => ",",
        Tok::LBox => "[",
        Tok::RBox => "]",
        Tok::LBrace => "{",
        Tok::RBrace => "}",
        Tok::LParen => "(",
        Tok::RParen => ")",
        Tok::Lt => "<",
        Tok::Le => "<=",
        Tok::Gt => ">",
        Tok::Ge => ">=",
        Tok::Shl => "<<",
        Tok::Shr => ">>",
        Tok::Ushr => ">>>",
        Tok::Eq => "==",
        Tok::Ne => "!=",
        Tok::MetaEq => "=?=",
        Tok::MetaNe => "=!=",
        Tok::Assign => "=",
        Tok::Not => "!",
        Tok::And => "&",
        Tok::AndAnd => "&&",
        Tok::Or => "|",
        Tok::OrOr => "||",
        _ => "?",
    }
}

/// Tokens of a text, read one at a time with their line and column.
pub struct Lexer<'a> {
    src: &'a [u8],
    pos: usize,
    line: u32,
    col: u32,
    /// Old-syntax string lexing (backslash only escapes a quote).
    old_strings: bool,
    /// The previous token allows a following `-digit` to be a binary minus.
    prev_is_operand: bool,
}

/// A token with the position of its first character.
#[derive(Clone, Debug)]
pub struct Spanned {
    /// The token.
    pub tok: Tok,
    /// 1-based line of its first character.
    pub line: u32,
    /// 1-based column of its first character.
    pub col: u32,
}

impl<'a> Lexer<'a> {
    /// A lexer at the start of `src`; `old_strings` reads strings as old syntax does (a
    /// backslash escapes only a quote).
    pub fn new(src: &'a str, old_strings: bool) -> Self {
        Lexer {
            src: src.as_bytes(),
            pos: 0,
            line: 1,
            col: 1,
            old_strings,
            prev_is_operand: false,
        }
    }

    /// Count lines and columns from `line`:`col` (for text cut out of a larger file, so that
    /// errors point into the file).
    pub fn set_position(&mut self, line: u32, col: u32) {
        self.line = line;
        self.col = col;
    }

    #[inline]
    fn peek(&self) -> u8 {
        self.src.get(self.pos).copied().unwrap_or(0)
    }
    #[inline]
    fn peek_at(&self, k: usize) -> u8 {
        self.src.get(self.pos + k).copied().unwrap_or(0)
    }
    #[inline]
    fn bump(&mut self) -> u8 {
        let c = self.peek();
        if self.pos < self.src.len() {
            self.pos += 1;
            if c == b'\n' {
                self.line += 1;
                self.col = 1;
            } else if (c & 0xC0) != 0x80 {
                self.col += 1;
            }
        }
        c
    }

    fn err(&self, line: u32, col: u32, msg: impl Into<String>) -> ParseError {
        ParseError::new(line, col, msg)
    }

    fn skip_ws(&mut self) -> Result<(), ParseError> {
        loop {
            let c = self.peek();
            if c.is_ascii_whitespace() || c == 0x0b {
                self.bump();
            } else if c == b'/' && self.peek_at(1) == b'/' {
                while self.pos < self.src.len() && self.peek() != b'\n' {
                    self.bump();
                }
            } else if c == b'/' && self.peek_at(1) == b'*' {
                let (l, co) = (self.line, self.col);
                self.bump();
                self.bump();
                loop {
                    if self.pos >= self.src.len() {
                        return Err(self.err(
                            l,
                            co,
                            "expected '*/' to close the comment, found end of input",
                        ));
                    }
                    if self.peek() == b'*' && self.peek_at(1) == b'/' {
                        self.bump();
                        self.bump();
                        break;
                    }
                    self.bump();
                }
            } else {
                return Ok(());
            }
        }
    }

    /// The next token ([`Tok::End`] at the end), or the error at a malformed one.
    pub fn next_token(&mut self) -> Result<Spanned, ParseError> {
        self.skip_ws()?;
        let (line, col) = (self.line, self.col);
        let tok = self.token(line, col)?;
        self.prev_is_operand = matches!(
            tok,
            Tok::Int(_)
                | Tok::Real(_)
                | Tok::True
                | Tok::False
                | Tok::Str(_)
                | Tok::Undefined
                | Tok::Error
                | Tok::Ident(_)
                | Tok::QIdent(_)
                | Tok::Dot
                | Tok::RBox
                | Tok::RParen
                | Tok::RBrace
        );
        Ok(Spanned { tok, line, col })
    }

    fn token(&mut self, line: u32, col: u32) -> Result<Tok, ParseError> {
        let c = self.peek();
        if c == 0 && self.pos >= self.src.len() {
            return Ok(Tok::End);
        }
        if c == b'-' && !self.prev_is_operand {
            let n = self.peek_at(1);
            if n.is_ascii_digit() || (n == b'.' && self.peek_at(2).is_ascii_digit()) {
                return self.number(line, col);
            }
        }
        if c.is_ascii_digit() || c == b'.' {
            if c == b'.' && !self.peek_at(1).is_ascii_digit() {
                self.bump();
                return Ok(Tok::Dot);
            }
            return self.number(line, col);
        }
        if c.is_ascii_alphabetic() || c == b'_' {
            return Ok(self.word());
        }
        if c == b'"' {
            return Ok(Tok::Str(self.string(b'"', line, col)?));
        }
        if c == b'\'' {
            return Ok(Tok::QIdent(self.string(b'\'', line, col)?));
        }
        self.bump();
        let n = self.peek();
        let t = match c {
            b'*' => Tok::Star,
            b'/' => Tok::Slash,
            b'%' => Tok::Percent,
            b'+' => Tok::Plus,
            b'-' => Tok::Minus,
            b'~' => Tok::Tilde,
            b'^' => Tok::Caret,
            b'?' => Tok::Question,
            b':' => Tok::Colon,
            b';' => Tok::Semi,
            b',' => Tok::Comma,
            b'[' => Tok::LBox,
            b']' => Tok::RBox,
            b'{' => Tok::LBrace,
            b'}' => Tok::RBrace,
            b'(' => Tok::LParen,
            b')' => Tok::RParen,
            b'<' => {
                if n == b'=' {
                    self.bump();
                    Tok::Le
                } else if n == b'<' {
                    self.bump();
                    Tok::Shl
                } else {
                    Tok::Lt
                }
            }
            b'>' => {
                if n == b'=' {
                    self.bump();
                    Tok::Ge
                } else if n == b'>' {
                    self.bump();
                    if self.peek() == b'>' {
                        self.bump();
                        Tok::Ushr
                    } else {
                        Tok::Shr
                    }
                } else {
                    Tok::Gt
                }
            }
            b'=' => {
                if n == b'=' {
                    self.bump();
                    Tok::Eq
                } else if n == b'?' && self.peek_at(1) == b'=' {
                    self.bump();
                    self.bump();
                    Tok::MetaEq
                } else if n == b'!' && self.peek_at(1) == b'=' {
                    self.bump();
                    self.bump();
                    Tok::MetaNe
                } else {
                    Tok::Assign
                }
            }
            b'!' => {
                if n == b'=' {
                    self.bump();
                    Tok::Ne
                } else {
                    Tok::Not
                }
            }
            b'&' => {
                if n == b'&' {
                    self.bump();
                    Tok::AndAnd
                } else {
                    Tok::And
                }
            }
            b'|' => {
                if n == b'|' {
                    self.bump();
                    Tok::OrOr
                } else {
                    Tok::Or
                }
            }
            _ => {
                let shown = std::str::from_utf8(&self.src[self.pos - 1..])
                    .ok()
                    .and_then(|s| s.chars().next())
                    .map(|ch| ch.to_string())
                    .unwrap_or_else(|| format!("\\x{:02x}", c));
                return Err(self.err(
                    line,
                    col,
                    format!("expected a token, found unexpected character '{}'", shown),
                ));
            }
        };
        Ok(t)
    }

    fn word(&mut self) -> Tok {
        let start = self.pos;
        while self.peek().is_ascii_alphanumeric() || self.peek() == b'_' {
            self.bump();
        }
        let w = std::str::from_utf8(&self.src[start..self.pos]).unwrap_or("");
        let has_non_alpha = w.bytes().any(|b| !b.is_ascii_alphabetic());
        if !has_non_alpha {
            if w.eq_ignore_ascii_case("true") {
                return Tok::True;
            } else if w.eq_ignore_ascii_case("false") {
                return Tok::False;
            } else if w.eq_ignore_ascii_case("undefined") {
                return Tok::Undefined;
            } else if w.eq_ignore_ascii_case("error") {
                return Tok::Error;
            } else if w.eq_ignore_ascii_case("is") {
                return Tok::Is;
            } else if w.eq_ignore_ascii_case("isnt") {
                return Tok::Isnt;
            }
        }
        Tok::Ident(w.to_string())
    }

    fn number(&mut self, line: u32, col: u32) -> Result<Tok, ParseError> {
        let start = self.pos;
        let bad = |l: &Lexer, what: &str| {
            l.err(
                line,
                col,
                format!("expected a number, found malformed {}", what),
            )
        };
        let neg = self.peek() == b'-';
        if neg {
            self.bump();
        }
        let first = self.peek();
        let mut is_real = false;
        if first == b'0' && (self.peek_at(1) == b'x' || self.peek_at(1) == b'X') {
            if !neg {
                return Err(bad(self, "hexadecimal integer (not allowed in ClassAds)"));
            }
            // libclassad lexes `-0x1F` as one token and reads it as decimal: "-0" -> 0.
            self.bump();
            self.bump();
            if !self.peek().is_ascii_hexdigit() {
                return Err(bad(self, "hexadecimal integer"));
            }
            while self.peek().is_ascii_hexdigit() {
                self.bump();
            }
            return Ok(Tok::Int(0));
        }
        let digits_start = self.pos;
        while self.peek().is_ascii_digit() {
            self.bump();
        }
        let int_digits = self.pos - digits_start;
        let digits = &self.src[digits_start..self.pos];
        if self.peek() == b'.' {
            self.bump();
            if !self.peek().is_ascii_digit() && int_digits > 0 {
                return Err(bad(self, "real (no digit after '.')"));
            }
            while self.peek().is_ascii_digit() {
                self.bump();
            }
            is_real = true;
        }
        if self.peek() == b'e' || self.peek() == b'E' {
            self.bump();
            if self.peek() == b'+' || self.peek() == b'-' {
                self.bump();
            }
            if !self.peek().is_ascii_digit() {
                return Err(bad(self, "real (exponent without digits)"));
            }
            while self.peek().is_ascii_digit() {
                self.bump();
            }
            is_real = true;
        }
        let text = std::str::from_utf8(&self.src[start..self.pos]).unwrap_or("0");
        if is_real {
            return Ok(Tok::Real(text.parse::<f64>().unwrap_or(0.0)));
        }
        if digits.len() > 1 && digits[0] == b'0' {
            // A leading zero means octal to the lexer: 8 or 9 is malformed; otherwise only a
            // negative literal survives the old-ClassAd check (and is read as decimal).
            if !neg || digits.iter().any(|&d| d == b'8' || d == b'9') {
                return Err(bad(self, "integer (leading zero: octal is not allowed)"));
            }
        }
        // Overflow gives 0, as the reference's from_chars leaves the value untouched.
        Ok(Tok::Int(text.parse::<i64>().unwrap_or(0)))
    }

    fn string(&mut self, delim: u8, line: u32, col: u32) -> Result<String, ParseError> {
        let mut out: Vec<u8> = Vec::new();
        loop {
            self.bump(); // opening quote
            let mut raw: Vec<u8> = Vec::new();
            loop {
                if self.pos >= self.src.len() {
                    return Err(self.err(
                        line,
                        col,
                        format!(
                            "expected closing {} for the string, found end of input",
                            delim as char
                        ),
                    ));
                }
                let c = self.peek();
                if c == 0 {
                    // libclassad's lexer stops at a NUL byte: the string never closes.
                    return Err(self.err(
                        line,
                        col,
                        format!(
                            "expected closing {} for the string, found a NUL byte",
                            delim as char
                        ),
                    ));
                }
                if c == delim {
                    if self.old_strings {
                        // `\"` keeps the quote unless it is the last thing on the line.
                        if raw.last() == Some(&b'\\') {
                            let n = self.peek_at(1);
                            if n != 0 && n != b'\n' {
                                raw.pop();
                                raw.push(delim);
                                self.bump();
                                continue;
                            }
                        }
                        break;
                    }
                    // count preceding backslashes
                    let mut k = 0;
                    while k < raw.len() && raw[raw.len() - 1 - k] == b'\\' {
                        k += 1;
                    }
                    if k % 2 == 1 {
                        raw.push(c);
                        self.bump();
                        continue;
                    }
                    break;
                }
                raw.push(c);
                self.bump();
            }
            self.bump(); // closing quote
            if self.old_strings {
                out.extend_from_slice(&raw);
                break;
            }
            if !convert_escapes(&raw, &mut out) {
                return Err(self.err(
                    line,
                    col,
                    "expected a string without \\0, found a NUL escape",
                ));
            }
            // Adjacent literals (only whitespace between) are concatenated.
            let save = (self.pos, self.line, self.col);
            while self.peek().is_ascii_whitespace() {
                self.bump();
            }
            if self.peek() != delim {
                self.pos = save.0;
                self.line = save.1;
                self.col = save.2;
                break;
            }
        }
        Ok(String::from_utf8(out)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()))
    }
}

fn is_odigit(c: u8) -> bool {
    (b'0'..=b'7').contains(&c)
}

/// libclassad's escape conversion; false when the result would contain a NUL.
fn convert_escapes(raw: &[u8], out: &mut Vec<u8>) -> bool {
    let mut i = 0;
    let n = raw.len();
    while i < n {
        let mut c = raw[i];
        if c == b'\\' && i < n - 1 {
            i += 1;
            c = raw[i];
            c = match c {
                b'"' => b'"',
                b'\'' => b'\'',
                b'?' => b'?',
                b'a' => 0x07,
                b'b' => 0x08,
                b'f' => 0x0c,
                b'n' => b'\n',
                b'r' => b'\r',
                b't' => b'\t',
                b'v' => 0x0b,
                b'\\' => b'\\',
                d if is_odigit(d) => {
                    let mut num: u32 = (d - b'0') as u32;
                    if i + 1 < n && is_odigit(raw[i + 1]) {
                        i += 1;
                        num = (num << 3) + (raw[i] - b'0') as u32;
                        if num < 0x20 && i + 1 < n && is_odigit(raw[i + 1]) {
                            i += 1;
                            num = (num << 3) + (raw[i] - b'0') as u32;
                        }
                    }
                    let b = num as u8;
                    if b == 0 {
                        return false;
                    }
                    b
                }
                other => other,
            };
        }
        out.push(c);
        i += 1;
    }
    true
}
