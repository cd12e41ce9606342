//! The arguments of a print format: C expressions over the record's fields (`REC->x`),
//! casts, arithmetic, bit operations, comparisons, conditionals, indexing, and the
//! kernel's helpers (`__print_flags`, `__get_str`, ...), parsed into [`Expr`] trees.
//!
//! Binary operators bind as in C. What libtraceevent 1.7 cannot parse fails here too, so
//! that such an event prints `[FAILED TO PARSE]` as `trace-cmd report -N` prints it: a
//! function it does not know (trace-cmd's plugins define a few; `-N` loads none), a
//! compound literal (`{`), a pointer-to-pointer cast, `sizeof` of anything but `int`,
//! `long`, `long long` and a non-array field, an index after `__get_dynamic_array(...)`,
//! a flag value it cannot compute (`*`, `/`, `%`, `^`, `!`, `?:` or a field in it).

use super::lex::{Lexer, Tok};
use super::PField;

/// A binary or unary operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    Mul,
    Div,
    Mod,
    Add,
    Sub,
    Shl,
    Shr,
    Lt,
    Gt,
    Le,
    Ge,
    Eq,
    Ne,
    And,
    Xor,
    Or,
    LogAnd,
    LogOr,
    /// Unary `-`.
    Neg,
    /// Unary `+`.
    Plus,
    /// Unary `!`.
    Not,
    /// Unary `~`.
    BitNot,
}

impl Op {
    /// A binary operator and its C precedence (higher binds tighter).
    fn binary(tok: &Tok) -> Option<(Op, u8)> {
        let Tok::Op(o) = tok else {
            return None;
        };
        Some(match o.as_str() {
            "*" => (Op::Mul, 10),
            "/" => (Op::Div, 10),
            "%" => (Op::Mod, 10),
            "+" => (Op::Add, 9),
            "-" => (Op::Sub, 9),
            "<<" => (Op::Shl, 8),
            ">>" => (Op::Shr, 8),
            "<" => (Op::Lt, 7),
            ">" => (Op::Gt, 7),
            "<=" => (Op::Le, 7),
            ">=" => (Op::Ge, 7),
            "==" => (Op::Eq, 6),
            "!=" => (Op::Ne, 6),
            "&" => (Op::And, 5),
            "^" => (Op::Xor, 4),
            "|" => (Op::Or, 3),
            "&&" => (Op::LogAnd, 2),
            "||" => (Op::LogOr, 1),
            _ => return None,
        })
    }
}

/// One argument of a print format (libtraceevent's `tep_print_arg`).
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Expr {
    /// A word, number or string literal, as written (`1U`, `"R"`, `unsigned long`).
    Atom(String),
    /// `REC->name`: the field's index, `None` when the event has no such field.
    Field(String, Option<usize>),
    /// `(type) value`.
    Cast(String, Box<Expr>),
    /// A unary operator (`Neg`, `Plus`, `Not`, `BitNot`) of its operand.
    Unary(Op, Box<Expr>),
    /// A binary operator.
    Binary(Op, Box<Expr>, Box<Expr>),
    /// `cond ? a : b`.
    Cond(Box<Expr>, Box<Expr>, Box<Expr>),
    /// `array[index]`.
    Index(Box<Expr>, Box<Expr>),
    /// `__print_flags(value, delim, { flag, "name" }, ...)`.
    Flags {
        value: Box<Expr>,
        delim: Option<String>,
        table: Vec<(i64, String)>,
    },
    /// `__print_symbolic(value, { value, "name" }, ...)`.
    Symbolic {
        value: Box<Expr>,
        table: Vec<(i64, String)>,
    },
    /// `__print_hex(buf, len)` (bytes apart) or `__print_hex_str(buf, len)` (`joined`).
    Hex {
        buf: Box<Expr>,
        len: Box<Expr>,
        joined: bool,
    },
    /// `__print_array(array, count, element size)`.
    IntArray {
        array: Box<Expr>,
        count: Box<Expr>,
        size: Box<Expr>,
    },
    /// `__get_str(name)`: looked up when printed.
    Str(String),
    /// `__get_bitmask(name)`.
    Bitmask(String),
    /// `__get_cpumask(name)`.
    Cpumask(String),
    /// `__get_dynamic_array(name)` (and `__get_sockaddr`): the field's index.
    DynArray(usize),
    /// `__get_dynamic_array_len(name)`.
    DynArrayLen(usize),
    /// A string argument of a binary printk (`ftrace:bprint`'s `%s`).
    Bstr(Vec<u8>),
}

impl Expr {
    /// libtraceevent's number for the kind of an argument (`enum tep_print_arg_type`),
    /// which it prints in `ARG TYPE NOT FIELD BUT 7`.
    pub(crate) fn type_number(&self) -> u32 {
        match self {
            Expr::Atom(_) => 1,
            Expr::Field(..) => 2,
            Expr::Flags { .. } => 3,
            Expr::Symbolic { .. } => 4,
            Expr::Hex { joined: false, .. } => 5,
            Expr::IntArray { .. } => 6,
            Expr::Cast(..) => 7,
            Expr::Str(_) => 8,
            Expr::Bstr(_) => 9,
            Expr::DynArray(_) => 10,
            Expr::Unary(..) | Expr::Binary(..) | Expr::Cond(..) | Expr::Index(..) => 11,
            Expr::Bitmask(_) => 13,
            Expr::DynArrayLen(_) => 14,
            Expr::Hex { joined: true, .. } => 15,
            Expr::Cpumask(_) => 16,
        }
    }

    /// The expression under any casts.
    pub(crate) fn uncast(&self) -> &Expr {
        let mut e = self;
        while let Expr::Cast(_, inner) = e {
            e = inner;
        }
        e
    }
}

type Res<T> = Result<T, String>;

/// Parses a print format's text: the format string and its arguments.
pub(crate) struct Parser<'a> {
    lex: Lexer<'a>,
    tok: Tok,
    fields: &'a [PField],
    long_size: usize,
}

impl<'a> Parser<'a> {
    /// `print_fmt` is what follows `print fmt:`; `fields` the event's (common ones first).
    pub(crate) fn new(print_fmt: &'a str, fields: &'a [PField], long_size: usize) -> Self {
        let mut lex = Lexer::new(print_fmt);
        let tok = lex.next();
        Parser {
            lex,
            tok,
            fields,
            long_size,
        }
    }

    fn advance(&mut self) -> Tok {
        std::mem::replace(&mut self.tok, self.lex.next())
    }

    fn expect_delim(&mut self, c: char) -> Res<()> {
        if self.tok.is_delim(c) {
            self.advance();
            Ok(())
        } else {
            Err(format!("expected `{c}`, found {:?}", self.tok))
        }
    }

    fn expect_op(&mut self, op: &str) -> Res<()> {
        if self.tok.is_op(op) {
            self.advance();
            Ok(())
        } else {
            Err(format!("expected `{op}`, found {:?}", self.tok))
        }
    }

    fn word(&mut self) -> Res<String> {
        match self.advance() {
            Tok::Item(w) => Ok(w),
            t => Err(format!("expected a name, found {t:?}")),
        }
    }

    /// A field by name, common fields first (`tep_find_any_field`).
    fn any_field(&self, name: &str) -> Option<usize> {
        self.fields.iter().position(|f| &*f.name == name)
    }

    /// A field that is not a common one (`tep_find_field`).
    fn own_field(&self, name: &str) -> Option<usize> {
        self.fields
            .iter()
            .position(|f| !f.common && &*f.name == name)
    }

    /// The format string and the arguments. Parsing stops without error at a token that
    /// cannot follow an argument (libtraceevent ignores the rest).
    pub(crate) fn print_fmt(mut self) -> Res<(String, Vec<Expr>)> {
        let Tok::Str(format) = self.advance() else {
            return Err("expected the format string".into());
        };
        let mut args = Vec::new();
        match &self.tok {
            Tok::End => return Ok((format, args)),
            Tok::Delim(',') => {
                self.advance();
            }
            t => return Err(format!("expected `,` after the format string, found {t:?}")),
        }
        loop {
            args.push(self.expr()?);
            match &self.tok {
                Tok::Delim(',') => {
                    self.advance();
                }
                Tok::Op(o) => return Err(format!("unknown op `{o}`")),
                _ => return Ok((format, args)),
            }
        }
    }

    /// A full expression (a conditional one: no comma operator).
    pub(crate) fn expr(&mut self) -> Res<Expr> {
        let cond = self.binary(1)?;
        if !self.tok.is_op("?") {
            return Ok(cond);
        }
        self.advance();
        let a = self.expr()?;
        self.expect_op(":")?;
        let b = self.expr()?;
        Ok(Expr::Cond(Box::new(cond), Box::new(a), Box::new(b)))
    }

    fn binary(&mut self, min: u8) -> Res<Expr> {
        let mut lhs = self.unary()?;
        while let Some((op, prec)) = Op::binary(&self.tok) {
            if prec < min {
                break;
            }
            self.advance();
            // `(type *)`: a star before the closing parenthesis makes a pointer type.
            if op == Op::Mul && self.tok.is_delim(')') {
                let Expr::Atom(ty) = lhs else {
                    return Err("bad pointer type".into());
                };
                return Ok(Expr::Atom(format!("{ty} *")));
            }
            let rhs = self.binary(prec + 1)?;
            lhs = Expr::Binary(op, Box::new(lhs), Box::new(rhs));
        }
        Ok(lhs)
    }

    /// A primary expression with its prefix operators and `[index]` suffixes.
    fn unary(&mut self) -> Res<Expr> {
        let mut e = match self.advance() {
            Tok::Item(w) if w == "REC" => {
                self.expect_op("->")?;
                let name = self.word()?;
                let i = self.any_field(&name);
                Expr::Field(name, i)
            }
            Tok::Item(w) => {
                if self.tok.is_delim('(') {
                    self.advance();
                    self.function(&w)?
                } else {
                    let mut atom = w;
                    while let Tok::Item(more) = &self.tok {
                        atom.push(' ');
                        atom.push_str(more);
                        self.advance();
                    }
                    Expr::Atom(atom)
                }
            }
            Tok::Str(s) | Tok::Char(s) => Expr::Atom(s),
            Tok::Delim('(') => self.paren()?,
            Tok::Op(o) => {
                let op = match o.as_str() {
                    "-" => Op::Neg,
                    "+" => Op::Plus,
                    "!" => Op::Not,
                    "~" => Op::BitNot,
                    _ => return Err(format!("bad op token {o}")),
                };
                return Ok(Expr::Unary(op, Box::new(self.unary()?)));
            }
            t => return Err(format!("unexpected {t:?}")),
        };
        while self.tok.is_op("[") {
            self.advance();
            // libtraceevent takes one primary as the index.
            let index = self.unary()?;
            self.expect_op("]")?;
            e = Expr::Index(Box::new(e), Box::new(index));
        }
        Ok(e)
    }

    /// After `(`: a parenthesized expression, or a cast when a word, string or `(`
    /// follows the `)`; `(REC)->name` is a field.
    fn paren(&mut self) -> Res<Expr> {
        if self.tok == Tok::Item("REC".into()) && self.lex.next_is(b')') {
            self.advance();
            self.advance();
            self.expect_op("->")?;
            let name = self.word()?;
            let i = self.any_field(&name);
            return Ok(Expr::Field(name, i));
        }
        let inner = self.expr()?;
        self.expect_delim(')')?;
        if !(self.tok.is_item() || self.tok.is_delim('(')) {
            return Ok(inner);
        }
        let Expr::Atom(ty) = inner else {
            return Err("a cast's type must be a name".into());
        };
        Ok(Expr::Cast(ty, Box::new(self.unary()?)))
    }

    /// `name(` was read: one of the helpers libtraceevent knows.
    fn function(&mut self, name: &str) -> Res<Expr> {
        Ok(match name {
            "__print_flags" => {
                let value = Box::new(self.expr()?);
                self.expect_delim(',')?;
                let delim = match &self.tok {
                    Tok::Item(s) | Tok::Str(s) | Tok::Char(s) => {
                        let d = s.clone();
                        self.advance();
                        Some(d)
                    }
                    _ => None,
                };
                self.expect_delim(',')?;
                let table = self.table()?;
                self.expect_delim(')')?;
                Expr::Flags {
                    value,
                    delim,
                    table,
                }
            }
            "__print_symbolic" => {
                let value = Box::new(self.expr()?);
                self.expect_delim(',')?;
                let table = self.table()?;
                self.expect_delim(')')?;
                Expr::Symbolic { value, table }
            }
            "__print_hex" | "__print_hex_str" => {
                let buf = Box::new(self.expr()?);
                self.expect_delim(',')?;
                let len = Box::new(self.expr()?);
                self.expect_delim(')')?;
                Expr::Hex {
                    buf,
                    len,
                    joined: name == "__print_hex_str",
                }
            }
            "__print_array" => {
                let array = Box::new(self.expr()?);
                self.expect_delim(',')?;
                let count = Box::new(self.expr()?);
                self.expect_delim(',')?;
                let size = Box::new(self.expr()?);
                self.expect_delim(')')?;
                Expr::IntArray { array, count, size }
            }
            "__get_str" | "__get_rel_str" => Expr::Str(self.name_arg()?),
            "__get_bitmask" | "__get_rel_bitmask" => Expr::Bitmask(self.name_arg()?),
            "__get_cpumask" | "__get_rel_cpumask" => Expr::Cpumask(self.name_arg()?),
            "__get_dynamic_array"
            | "__get_rel_dynamic_array"
            | "__get_sockaddr"
            | "__get_sockaddr_rel" => {
                let f = self.name_arg()?;
                let i = self.own_field(&f).ok_or_else(|| format!("no field {f}"))?;
                if self.tok.is_op("[") {
                    // libtraceevent refuses an index here.
                    return Err("an index after __get_dynamic_array()".into());
                }
                Expr::DynArray(i)
            }
            "__get_dynamic_array_len" | "__get_rel_dynamic_array_len" => {
                let f = self.name_arg()?;
                let i = self.own_field(&f).ok_or_else(|| format!("no field {f}"))?;
                Expr::DynArrayLen(i)
            }
            "__builtin_expect" => {
                let cond = self.unary()?;
                self.expect_delim(',')?;
                self.word()?;
                self.expect_delim(')')?;
                cond
            }
            "sizeof" => self.size_of()?,
            other => return Err(format!("function {other} not defined")),
        })
    }

    /// `name)` of a helper that takes a field name.
    fn name_arg(&mut self) -> Res<String> {
        let name = self.word()?;
        self.expect_delim(')')?;
        Ok(name)
    }

    /// `sizeof(...)` after the `(`: `int`, `unsigned`, `long`, `long long` (each
    /// optionally `unsigned`) or `REC->field` of a field that is not an array.
    fn size_of(&mut self) -> Res<Expr> {
        let mut word = self.word()?;
        let mut closed = false;
        if word == "unsigned" {
            match &self.tok {
                Tok::Item(w) => {
                    word = w.clone();
                    self.advance();
                }
                _ => closed = true,
            }
        }
        let size = if closed || word == "int" {
            4
        } else if word == "long" {
            if self.tok == Tok::Item("long".into()) {
                self.advance();
                8
            } else {
                self.long_size
            }
        } else if word == "REC" {
            self.expect_op("->")?;
            let name = self.word()?;
            let f = self
                .any_field(&name)
                .map(|i| &self.fields[i])
                .ok_or_else(|| format!("no field {name}"))?;
            if f.is(super::ARRAY) {
                return Err("sizeof of an array".into());
            }
            f.size
        } else {
            return Err(format!("sizeof({word}) not handled"));
        };
        self.expect_delim(')')?;
        Ok(Expr::Atom(size.to_string()))
    }

    /// `{ value, "name" }, ...` of `__print_flags` and `__print_symbolic`: each value
    /// computed now, as libtraceevent's `eval_flag` reads it.
    fn table(&mut self) -> Res<Vec<(i64, String)>> {
        let mut table = Vec::new();
        while self.tok.is_op("{") {
            self.advance();
            let value = self.expr()?;
            self.expect_delim(',')?;
            let name = self.unary()?;
            self.expect_op("}")?;
            let value = flag_value(&constant(&value)?);
            table.push((value, constant(&name)?));
            if !self.tok.is_delim(',') {
                break;
            }
            self.advance();
        }
        Ok(table)
    }
}

/// A table entry as text (libtraceevent's `arg_eval`): an atom as written, through
/// casts, or an operation computed (`%lld`).
fn constant(e: &Expr) -> Res<String> {
    match e {
        Expr::Atom(a) => Ok(a.clone()),
        Expr::Cast(_, inner) => constant(inner),
        Expr::Unary(..) | Expr::Binary(..) => Ok(const_num(e)?.to_string()),
        _ => Err("a flag table entry that is not a constant".into()),
    }
}

/// An operation of constants (`arg_num_eval`): signed, and only the operators
/// libtraceevent computes there.
fn const_num(e: &Expr) -> Res<i64> {
    Ok(match e {
        Expr::Atom(a) => super::eval::strtoull(a) as i64,
        Expr::Cast(ty, inner) => super::eval::cast(const_num(inner)? as u64, ty, false) as i64,
        Expr::Unary(Op::Neg, r) => const_num(r)?.wrapping_neg(),
        Expr::Unary(Op::Plus, r) => const_num(r)?,
        Expr::Unary(Op::BitNot, r) => !const_num(r)?,
        Expr::Binary(op, l, r) => {
            let (l, r) = (const_num(l)?, const_num(r)?);
            match op {
                Op::Or => l | r,
                Op::LogOr => i64::from(l != 0 || r != 0),
                Op::And => l & r,
                Op::LogAnd => i64::from(l != 0 && r != 0),
                Op::Lt => i64::from(l < r),
                Op::Le => i64::from(l <= r),
                Op::Gt => i64::from(l > r),
                Op::Ge => i64::from(l >= r),
                Op::Shl => l.wrapping_shl(r as u32),
                Op::Shr => l.wrapping_shr(r as u32),
                Op::Eq => i64::from(l == r),
                Op::Ne => i64::from(l != r),
                Op::Sub => l.wrapping_sub(r),
                Op::Add => l.wrapping_add(r),
                _ => return Err("an operator libtraceevent does not compute in a table".into()),
            }
        }
        _ => return Err("a flag table entry that is not a constant".into()),
    })
}

/// The value of a table entry's text (`eval_flag`): a number when it starts with a
/// digit, a few softirq and hrtimer names, else -1.
fn flag_value(s: &str) -> i64 {
    if s.starts_with(|c: char| c.is_ascii_digit()) {
        return super::eval::strtoull(s) as i64;
    }
    const NAMES: [(&str, i64); 12] = [
        ("HI_SOFTIRQ", 0),
        ("TIMER_SOFTIRQ", 1),
        ("NET_TX_SOFTIRQ", 2),
        ("NET_RX_SOFTIRQ", 3),
        ("BLOCK_SOFTIRQ", 4),
        ("IRQ_POLL_SOFTIRQ", 5),
        ("TASKLET_SOFTIRQ", 6),
        ("SCHED_SOFTIRQ", 7),
        ("HRTIMER_SOFTIRQ", 8),
        ("RCU_SOFTIRQ", 9),
        ("HRTIMER_NORESTART", 0),
        ("HRTIMER_RESTART", 1),
    ];
    NAMES.iter().find(|(n, _)| *n == s).map_or(-1, |(_, v)| *v)
}
