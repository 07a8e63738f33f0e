//! A small evaluator for constant expressions, used where HTCondor evaluates a knob value as a
//! ClassAd expression to get a number or a boolean (`COLLECTOR_SOCKET_BUFSIZE = 10000*1024`,
//! `StartIdleTime = 15 * $(MINUTE)`, `$INT(X)`, `$EVAL(...)`). It knows literals, arithmetic,
//! comparisons and logic; anything that refers to an attribute is "not constant" (`None`).

/// A constant value.
#[derive(Debug, Clone, PartialEq)]
pub enum Const {
    /// 64-bit integer.
    Int(i64),
    /// Floating point.
    Real(f64),
    /// Boolean.
    Bool(bool),
    /// String.
    Str(String),
}

impl Const {
    fn as_f64(&self) -> Option<f64> {
        match self {
            Const::Int(i) => Some(*i as f64),
            Const::Real(r) => Some(*r),
            Const::Bool(b) => Some(if *b { 1.0 } else { 0.0 }),
            Const::Str(_) => None,
        }
    }
    fn as_bool(&self) -> Option<bool> {
        match self {
            Const::Bool(b) => Some(*b),
            Const::Int(i) => Some(*i != 0),
            Const::Real(r) => Some(*r != 0.0),
            Const::Str(_) => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Num(Const),
    Str(String),
    Op(&'static str),
    LParen,
    RParen,
}

const OPS: [&str; 22] = [
    "=?=", "=!=", "&&", "||", "<=", ">=", "==", "!=", "<", ">", "+", "-", "*", "/", "%", "!", "?",
    ":", "(", ")", "is", "isnt",
];

fn tokenize(s: &str) -> Option<Vec<Tok>> {
    let b = s.as_bytes();
    let mut i = 0;
    let mut out = Vec::new();
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if c.is_ascii_digit() || (c == b'.' && i + 1 < b.len() && b[i + 1].is_ascii_digit()) {
            let start = i;
            let mut real = false;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            if i < b.len() && b[i] == b'.' {
                real = true;
                i += 1;
                while i < b.len() && b[i].is_ascii_digit() {
                    i += 1;
                }
            }
            if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
                let save = i;
                i += 1;
                if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
                    i += 1;
                }
                if i < b.len() && b[i].is_ascii_digit() {
                    real = true;
                    while i < b.len() && b[i].is_ascii_digit() {
                        i += 1;
                    }
                } else {
                    i = save;
                }
            }
            let text = &s[start..i];
            let v = if real {
                Const::Real(text.parse().ok()?)
            } else {
                Const::Int(text.parse().ok()?)
            };
            out.push(Tok::Num(v));
            continue;
        }
        if c == b'"' {
            let mut val = String::new();
            i += 1;
            loop {
                if i >= b.len() {
                    return None;
                }
                match b[i] {
                    b'"' => {
                        i += 1;
                        break;
                    }
                    b'\\' if i + 1 < b.len() => {
                        val.push(b[i + 1] as char);
                        i += 2;
                    }
                    _ => {
                        let ch = s[i..].chars().next()?;
                        val.push(ch);
                        i += ch.len_utf8();
                    }
                }
            }
            out.push(Tok::Str(val));
            continue;
        }
        if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            let word = s[start..i].to_ascii_lowercase();
            match word.as_str() {
                "true" => out.push(Tok::Num(Const::Bool(true))),
                "false" => out.push(Tok::Num(Const::Bool(false))),
                "is" => out.push(Tok::Op("=?=")),
                "isnt" => out.push(Tok::Op("=!=")),
                _ => return None, // attribute reference: not a constant
            }
            continue;
        }
        let rest = &s[i..];
        let op = OPS.iter().find(|op| rest.starts_with(**op))?;
        match *op {
            "(" => out.push(Tok::LParen),
            ")" => out.push(Tok::RParen),
            o => out.push(Tok::Op(o)),
        }
        i += op.len();
    }
    Some(out)
}

struct Parser {
    toks: Vec<Tok>,
    pos: usize,
    depth: u32,
}

impl Parser {
    fn peek_op(&self) -> Option<&'static str> {
        match self.toks.get(self.pos) {
            Some(Tok::Op(o)) => Some(o),
            _ => None,
        }
    }
    fn ternary(&mut self) -> Option<Const> {
        self.depth += 1;
        if self.depth > 200 {
            return None;
        }
        let c = self.binary(1)?;
        if self.peek_op() == Some("?") {
            self.pos += 1;
            let a = self.ternary()?;
            if self.peek_op() != Some(":") {
                return None;
            }
            self.pos += 1;
            let b = self.ternary()?;
            self.depth -= 1;
            return Some(if c.as_bool()? { a } else { b });
        }
        self.depth -= 1;
        Some(c)
    }
    fn prec(op: &str) -> Option<u8> {
        Some(match op {
            "||" => 1,
            "&&" => 2,
            "==" | "!=" | "=?=" | "=!=" => 3,
            "<" | "<=" | ">" | ">=" => 4,
            "+" | "-" => 5,
            "*" | "/" | "%" => 6,
            _ => return None,
        })
    }
    fn binary(&mut self, min: u8) -> Option<Const> {
        let mut lhs = self.unary()?;
        while let Some(op) = self.peek_op() {
            let Some(p) = Self::prec(op) else { break };
            if p < min {
                break;
            }
            self.pos += 1;
            let rhs = self.binary(p + 1)?;
            lhs = apply(op, lhs, rhs)?;
        }
        Some(lhs)
    }
    fn unary(&mut self) -> Option<Const> {
        match self.toks.get(self.pos).cloned() {
            Some(Tok::Op("-")) => {
                self.pos += 1;
                match self.unary()? {
                    Const::Int(i) => Some(Const::Int(i.checked_neg()?)),
                    Const::Real(r) => Some(Const::Real(-r)),
                    _ => None,
                }
            }
            Some(Tok::Op("+")) => {
                self.pos += 1;
                self.unary()
            }
            Some(Tok::Op("!")) => {
                self.pos += 1;
                Some(Const::Bool(!self.unary()?.as_bool()?))
            }
            Some(Tok::LParen) => {
                self.pos += 1;
                let v = self.ternary()?;
                if self.toks.get(self.pos) != Some(&Tok::RParen) {
                    return None;
                }
                self.pos += 1;
                Some(v)
            }
            Some(Tok::Num(c)) => {
                self.pos += 1;
                Some(c)
            }
            Some(Tok::Str(s)) => {
                self.pos += 1;
                Some(Const::Str(s))
            }
            _ => None,
        }
    }
}

fn apply(op: &str, a: Const, b: Const) -> Option<Const> {
    use Const::*;
    match op {
        "&&" => Some(Bool(a.as_bool()? && b.as_bool()?)),
        "||" => Some(Bool(a.as_bool()? || b.as_bool()?)),
        "==" | "!=" | "=?=" | "=!=" => {
            let eq = match (&a, &b) {
                (Str(x), Str(y)) => {
                    if op.starts_with("=") && op.len() == 3 {
                        x == y
                    } else {
                        x.eq_ignore_ascii_case(y)
                    }
                }
                (Str(_), _) | (_, Str(_)) => return None,
                _ => a.as_f64()? == b.as_f64()?,
            };
            Some(Bool(if op == "==" || op == "=?=" { eq } else { !eq }))
        }
        "<" | "<=" | ">" | ">=" => {
            let (x, y) = (a.as_f64()?, b.as_f64()?);
            Some(Bool(match op {
                "<" => x < y,
                "<=" => x <= y,
                ">" => x > y,
                _ => x >= y,
            }))
        }
        _ => match (a, b) {
            (Int(x), Int(y)) => Some(Int(match op {
                "+" => x.checked_add(y)?,
                "-" => x.checked_sub(y)?,
                "*" => x.checked_mul(y)?,
                "/" => x.checked_div(y)?,
                "%" => x.checked_rem(y)?,
                _ => return None,
            })),
            (Str(_), _) | (_, Str(_)) => None,
            (x, y) => {
                let (x, y) = (x.as_f64()?, y.as_f64()?);
                Some(Real(match op {
                    "+" => x + y,
                    "-" => x - y,
                    "*" => x * y,
                    "/" => x / y,
                    "%" => x % y,
                    _ => return None,
                }))
            }
        },
    }
}

/// Evaluates a constant expression; `None` when it is not a valid constant expression.
pub fn eval_const(text: &str) -> Option<Const> {
    let toks = tokenize(text)?;
    if toks.is_empty() {
        return None;
    }
    let mut p = Parser {
        toks,
        pos: 0,
        depth: 0,
    };
    let v = p.ternary()?;
    if p.pos != p.toks.len() {
        return None;
    }
    Some(v)
}

/// Parses an integer the way HTCondor's `param_integer` does: a plain integer, else a constant
/// expression whose value is a number (reals are truncated toward zero) or a boolean.
pub fn parse_int(text: &str) -> Option<i64> {
    let t = text.trim();
    if let Ok(i) = t.parse::<i64>() {
        return Some(i);
    }
    match eval_const(t)? {
        Const::Int(i) => Some(i),
        Const::Real(r) if r.is_finite() && r.abs() < 9.2e18 => Some(r.trunc() as i64),
        Const::Bool(b) => Some(b as i64),
        _ => None,
    }
}

/// Parses a real number: a literal or a constant numeric expression.
pub fn parse_real(text: &str) -> Option<f64> {
    let t = text.trim();
    if let Ok(r) = t.parse::<f64>() {
        if !t.eq_ignore_ascii_case("inf")
            && !t.eq_ignore_ascii_case("nan")
            && !t.to_ascii_lowercase().contains("inf")
        {
            return Some(r);
        }
    }
    match eval_const(t)? {
        Const::Int(i) => Some(i as f64),
        Const::Real(r) => Some(r),
        Const::Bool(b) => Some(if b { 1.0 } else { 0.0 }),
        Const::Str(_) => None,
    }
}

/// Parses a boolean: true/false/yes/no/t/f (any case), or a constant expression whose value is
/// a boolean or a number (non-zero is true).
pub fn parse_bool(text: &str) -> Option<bool> {
    let t = text.trim();
    match t.to_ascii_lowercase().as_str() {
        "true" | "yes" | "t" | "y" => return Some(true),
        "false" | "no" | "f" | "n" => return Some(false),
        _ => {}
    }
    eval_const(t)?.as_bool()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_and_precedence() {
        assert_eq!(eval_const("10000*1024"), Some(Const::Int(10_240_000)));
        assert_eq!(eval_const("15 * 60 + 1"), Some(Const::Int(901)));
        assert_eq!(eval_const("1 + 2 * 3"), Some(Const::Int(7)));
        assert_eq!(eval_const("(1 + 2) * 3"), Some(Const::Int(9)));
        assert_eq!(eval_const("10 - 2 - 3"), Some(Const::Int(5)));
        assert_eq!(eval_const("1.5 * 2"), Some(Const::Real(3.0)));
        assert_eq!(eval_const("-4 % 3"), Some(Const::Int(-1)));
        assert_eq!(eval_const("3 > 2 && 1 == 1"), Some(Const::Bool(true)));
        assert_eq!(eval_const("true ? 4 : 5"), Some(Const::Int(4)));
        assert_eq!(eval_const("KeyboardIdle > 3"), None);
        assert_eq!(eval_const("1 / 0"), None);
        assert_eq!(eval_const("(1"), None);
    }

    #[test]
    fn typed_parsers() {
        assert_eq!(parse_int(" 42 "), Some(42));
        assert_eq!(parse_int("5 * 60"), Some(300));
        assert_eq!(parse_int("2.9"), Some(2));
        assert_eq!(parse_int("abc"), None);
        assert_eq!(parse_real("1e10"), Some(1e10));
        assert_eq!(parse_real("1.0e100"), Some(1.0e100));
        assert_eq!(parse_real("inf"), None);
        assert_eq!(parse_bool("TRUE"), Some(true));
        assert_eq!(parse_bool("no"), Some(false));
        assert_eq!(parse_bool("0"), Some(false));
        assert_eq!(parse_bool("2 > 1"), Some(true));
        assert_eq!(parse_bool("maybe"), None);
    }
}
