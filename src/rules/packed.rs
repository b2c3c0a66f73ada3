//! Built-in rules read when c3 is built: each rule's definition with its
//! formulas and patterns already parsed, in a small binary form.
//!
//! `build.rs` includes this file (with `ast.rs`, `parse.rs` and `yaml.rs`)
//! to read every built-in rule's block as a run would, parse each of its
//! texts with the formula grammar, and write the result with [`write_def`];
//! a run reads it back with [`read_def`] instead of the YAML and pest (two
//! fifths of a small model's start-up). It uses nothing but `std` and the
//! rule types for that reason.
//!
//! The form: unsigned numbers as LEB128, signed ones zigzagged, strings as
//! a length and UTF-8 bytes, options and enums as a leading tag byte, trees
//! parents first.

use super::ast::{BinOp, DimPat, Expr, ExprKind, Span, TensorPat, UnOp};
use super::parse::{parse_formula, parse_patterns};
use super::yaml::{BackwardDef, GradDef, OrderedMap, Place, RuleDef, Scalar, Text, Tree};

/// Parses each text of a rule as compiling it would: `inputs:` and
/// `outputs:` as pattern lists, every other text as a formula. A text that
/// does not parse keeps no tree (compiling it reports the error).
pub fn parse_texts(def: &mut RuleDef) {
    let patterns = |t: &mut Text| t.tree = parse_patterns(&t.value.0).ok().map(Tree::Patterns);
    let formula = |t: &mut Text| t.tree = parse_formula(&t.value.0).ok().map(Tree::Formula);
    patterns(&mut def.inputs);
    patterns(&mut def.outputs);
    def.attrs
        .0
        .iter_mut()
        .filter_map(|(_, t)| t.as_mut())
        .for_each(formula);
    def.lets.0.iter_mut().for_each(|(_, t)| formula(t));
    [&mut def.flops, &mut def.mread, &mut def.mwrite]
        .into_iter()
        .chain(def.iops.as_mut())
        .chain(def.class.as_mut())
        .chain(def.calls.as_mut())
        .chain(def.time.as_mut())
        .for_each(formula);
    def.params.0.iter_mut().for_each(|(_, t)| formula(t));
    if let Some(b) = &mut def.backward {
        for (_, g) in &mut b.grads {
            [&mut g.flops, &mut g.mread, &mut g.mwrite]
                .into_iter()
                .for_each(formula);
        }
    }
}

/// A rule definition and its parsed texts as bytes.
pub fn write_def(def: &RuleDef) -> Vec<u8> {
    let mut w = Writer(Vec::new());
    w.opt_str(def.domain.as_deref());
    w.str(&def.category);
    w.str(&def.summary);
    w.str(&def.doc);
    w.text(&def.inputs);
    w.text(&def.outputs);
    w.len(def.attrs.0.len());
    for (name, default) in &def.attrs.0 {
        w.str(name);
        w.opt_text(default.as_ref());
    }
    w.named_texts(&def.lets);
    w.text(&def.flops);
    w.text(&def.mread);
    w.text(&def.mwrite);
    w.opt_text(def.iops.as_ref());
    w.opt_text(def.class.as_ref());
    w.opt_text(def.calls.as_ref());
    w.opt_text(def.time.as_ref());
    w.named_texts(&def.params);
    w.opt_str(def.unsupported.as_deref());
    match &def.backward {
        None => w.tag(0),
        Some(b) => {
            w.tag(1);
            w.len(b.grads.len());
            for (name, g) in &b.grads {
                w.str(name);
                w.text(&g.flops);
                w.text(&g.mread);
                w.text(&g.mwrite);
            }
            w.opt_str(b.saves.as_deref());
        }
    }
    w.0
}

/// The definition [`write_def`] wrote; `None` for bytes it did not write
/// (the caller then reads the rule's YAML).
pub fn read_def(bytes: &[u8]) -> Option<RuleDef> {
    let mut r = Reader { bytes, pos: 0 };
    let def = RuleDef {
        domain: r.opt_str()?,
        category: r.str()?,
        summary: r.str()?,
        doc: r.str()?,
        inputs: r.text()?,
        outputs: r.text()?,
        attrs: {
            let n = r.len()?;
            let mut attrs = Vec::with_capacity(n);
            for _ in 0..n {
                attrs.push((r.str()?, r.opt_text()?));
            }
            OrderedMap(attrs)
        },
        lets: r.named_texts()?,
        flops: r.text()?,
        mread: r.text()?,
        mwrite: r.text()?,
        iops: r.opt_text()?,
        class: r.opt_text()?,
        calls: r.opt_text()?,
        time: r.opt_text()?,
        params: r.named_texts()?,
        unsupported: r.opt_str()?,
        backward: match r.byte()? {
            0 => None,
            1 => {
                let n = r.count()?;
                let mut grads = Vec::with_capacity(n);
                for _ in 0..n {
                    let name = r.str()?;
                    let g = GradDef {
                        flops: r.text()?,
                        mread: r.text()?,
                        mwrite: r.text()?,
                    };
                    grads.push((name, g));
                }
                Some(BackwardDef {
                    grads,
                    saves: r.opt_str()?,
                })
            }
            _ => return None,
        },
    };
    (r.pos == bytes.len()).then_some(def)
}

struct Writer(Vec<u8>);

impl Writer {
    fn u(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.0.push(v as u8 | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
    }

    fn len(&mut self, n: usize) {
        self.u(n as u64);
    }

    fn i(&mut self, v: i64) {
        self.u(((v << 1) ^ (v >> 63)) as u64);
    }

    fn tag(&mut self, t: u8) {
        self.0.push(t);
    }

    fn str(&mut self, s: &str) {
        self.len(s.len());
        self.0.extend_from_slice(s.as_bytes());
    }

    fn opt_str(&mut self, s: Option<&str>) {
        match s {
            None => self.tag(0),
            Some(s) => {
                self.tag(1);
                self.str(s);
            }
        }
    }

    fn span(&mut self, s: Span) {
        self.len(s.start);
        self.len(s.end);
    }

    fn text(&mut self, t: &Text) {
        self.str(&t.value.0);
        match t.at {
            Place::Byte(b) => {
                self.tag(0);
                self.len(b);
            }
            Place::LineCol(line, col) => {
                self.tag(1);
                self.len(line);
                self.len(col);
            }
        }
        match &t.tree {
            None => self.tag(0),
            Some(Tree::Formula(e)) => {
                self.tag(1);
                self.expr(e);
            }
            Some(Tree::Patterns(pats)) => {
                self.tag(2);
                self.len(pats.len());
                for p in pats {
                    self.pattern(p);
                }
            }
        }
    }

    fn opt_text(&mut self, t: Option<&Text>) {
        match t {
            None => self.tag(0),
            Some(t) => {
                self.tag(1);
                self.text(t);
            }
        }
    }

    fn named_texts(&mut self, m: &OrderedMap<Text>) {
        self.len(m.0.len());
        for (name, t) in &m.0 {
            self.str(name);
            self.text(t);
        }
    }

    fn exprs(&mut self, es: &[Expr]) {
        self.len(es.len());
        for e in es {
            self.expr(e);
        }
    }

    fn expr(&mut self, e: &Expr) {
        match &e.kind {
            ExprKind::Int(v) => {
                self.tag(0);
                self.i(*v);
            }
            ExprKind::Str(s) => {
                self.tag(1);
                self.str(s);
            }
            ExprKind::Name(s) => {
                self.tag(2);
                self.str(s);
            }
            ExprKind::Size(s) => {
                self.tag(3);
                self.str(s);
            }
            ExprKind::Call(f, args) => {
                self.tag(4);
                self.str(f);
                self.exprs(args);
            }
            ExprKind::List(items) => {
                self.tag(5);
                self.exprs(items);
            }
            ExprKind::Index(a, i) => {
                self.tag(6);
                self.expr(a);
                self.expr(i);
            }
            ExprKind::Unary(op, a) => {
                self.tag(7);
                self.tag(UNARY.iter().position(|u| u == op).unwrap_or(0) as u8);
                self.expr(a);
            }
            ExprKind::Binary(op, a, b) => {
                self.tag(8);
                self.tag(BINARY.iter().position(|o| o == op).unwrap_or(0) as u8);
                self.expr(a);
                self.expr(b);
            }
            ExprKind::Cond(c, a, b) => {
                self.tag(9);
                self.expr(c);
                self.expr(a);
                self.expr(b);
            }
        }
        self.span(e.span);
    }

    fn pattern(&mut self, p: &TensorPat) {
        self.str(&p.name);
        match &p.dims {
            None => self.tag(0),
            Some(dims) => {
                self.tag(1);
                self.len(dims.len());
                for d in dims {
                    match d {
                        DimPat::Fixed(n) => {
                            self.tag(0);
                            self.u(*n);
                        }
                        DimPat::Name(n) => {
                            self.tag(1);
                            self.str(n);
                        }
                        DimPat::Rest(n) => {
                            self.tag(2);
                            self.str(n);
                        }
                    }
                }
            }
        }
        self.tag(u8::from(p.optional) | u8::from(p.variadic) << 1);
        self.span(p.span);
    }
}

/// The operators in the order of their tag.
const UNARY: [UnOp; 2] = [UnOp::Neg, UnOp::Not];
const BINARY: [BinOp; 13] = [
    BinOp::Or,
    BinOp::And,
    BinOp::Eq,
    BinOp::Ne,
    BinOp::Lt,
    BinOp::Le,
    BinOp::Gt,
    BinOp::Ge,
    BinOp::Add,
    BinOp::Sub,
    BinOp::Mul,
    BinOp::Div,
    BinOp::Rem,
];

/// Trees deeper than this are not read (the grammar's own limits keep a
/// parsed formula far shallower).
const MAX_DEPTH: usize = 512;

struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl Reader<'_> {
    fn byte(&mut self) -> Option<u8> {
        let b = *self.bytes.get(self.pos)?;
        self.pos += 1;
        Some(b)
    }

    fn u(&mut self) -> Option<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            v |= u64::from(b & 0x7f) << shift;
            if b < 0x80 {
                return Some(v);
            }
        }
        None
    }

    fn len(&mut self) -> Option<usize> {
        usize::try_from(self.u()?).ok()
    }

    /// A count of items, each at least one byte: no more than remain.
    fn count(&mut self) -> Option<usize> {
        self.len()
            .filter(|&n| n <= self.bytes.len().saturating_sub(self.pos))
    }

    fn i(&mut self) -> Option<i64> {
        let v = self.u()?;
        Some((v >> 1) as i64 ^ -((v & 1) as i64))
    }

    fn str(&mut self) -> Option<String> {
        let n = self.len()?;
        let end = self.pos.checked_add(n)?;
        let s = std::str::from_utf8(self.bytes.get(self.pos..end)?).ok()?;
        self.pos = end;
        Some(s.to_string())
    }

    fn opt_str(&mut self) -> Option<Option<String>> {
        match self.byte()? {
            0 => Some(None),
            1 => Some(Some(self.str()?)),
            _ => None,
        }
    }

    fn span(&mut self) -> Option<Span> {
        Some(Span {
            start: self.len()?,
            end: self.len()?,
        })
    }

    fn text(&mut self) -> Option<Text> {
        let value = Scalar(self.str()?);
        let at = match self.byte()? {
            0 => Place::Byte(self.len()?),
            1 => Place::LineCol(self.len()?, self.len()?),
            _ => return None,
        };
        let tree = match self.byte()? {
            0 => None,
            1 => Some(Tree::Formula(self.expr(0)?)),
            2 => {
                let n = self.count()?;
                let mut pats = Vec::with_capacity(n);
                for _ in 0..n {
                    pats.push(self.pattern()?);
                }
                Some(Tree::Patterns(pats))
            }
            _ => return None,
        };
        Some(Text { value, at, tree })
    }

    fn opt_text(&mut self) -> Option<Option<Text>> {
        match self.byte()? {
            0 => Some(None),
            1 => Some(Some(self.text()?)),
            _ => None,
        }
    }

    fn named_texts(&mut self) -> Option<OrderedMap<Text>> {
        let n = self.count()?;
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            out.push((self.str()?, self.text()?));
        }
        Some(OrderedMap(out))
    }

    fn exprs(&mut self, depth: usize) -> Option<Vec<Expr>> {
        let n = self.count()?;
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            out.push(self.expr(depth)?);
        }
        Some(out)
    }

    fn boxed(&mut self, depth: usize) -> Option<Box<Expr>> {
        self.expr(depth).map(Box::new)
    }

    fn expr(&mut self, depth: usize) -> Option<Expr> {
        if depth > MAX_DEPTH {
            return None;
        }
        let d = depth + 1;
        let kind = match self.byte()? {
            0 => ExprKind::Int(self.i()?),
            1 => ExprKind::Str(self.str()?),
            2 => ExprKind::Name(self.str()?),
            3 => ExprKind::Size(self.str()?),
            4 => ExprKind::Call(self.str()?, self.exprs(d)?),
            5 => ExprKind::List(self.exprs(d)?),
            6 => ExprKind::Index(self.boxed(d)?, self.boxed(d)?),
            7 => ExprKind::Unary(*UNARY.get(usize::from(self.byte()?))?, self.boxed(d)?),
            8 => {
                let op = *BINARY.get(usize::from(self.byte()?))?;
                ExprKind::Binary(op, self.boxed(d)?, self.boxed(d)?)
            }
            9 => ExprKind::Cond(self.boxed(d)?, self.boxed(d)?, self.boxed(d)?),
            _ => return None,
        };
        Some(Expr::new(kind, self.span()?))
    }

    fn pattern(&mut self) -> Option<TensorPat> {
        let name = self.str()?;
        let dims = match self.byte()? {
            0 => None,
            1 => {
                let n = self.count()?;
                let mut dims = Vec::with_capacity(n);
                for _ in 0..n {
                    dims.push(match self.byte()? {
                        0 => DimPat::Fixed(self.u()?),
                        1 => DimPat::Name(self.str()?),
                        2 => DimPat::Rest(self.str()?),
                        _ => return None,
                    });
                }
                Some(dims)
            }
            _ => return None,
        };
        let flags = self.byte()?;
        if flags > 3 {
            return None;
        }
        Some(TensorPat {
            name,
            dims,
            optional: flags & 1 != 0,
            variadic: flags & 2 != 0,
            span: self.span()?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(value: &str, at: Place) -> Text {
        Text {
            value: Scalar(value.into()),
            at,
            tree: None,
        }
    }

    /// What the built-in rules never hold: a place given as line and
    /// column, a text left unparsed, the extremes of a number.
    #[test]
    fn what_is_written_reads_back() {
        let mut def = RuleDef {
            domain: Some("com.example".into()),
            category: "test".into(),
            summary: "s".into(),
            doc: "d\n".into(),
            inputs: text("X[N, 3, *S], B?, Rest...", Place::LineCol(4, 11)),
            outputs: text("Y", Place::Byte(0)),
            attrs: OrderedMap(vec![
                ("axis".into(), None),
                ("k".into(), Some(text("-1", Place::Byte(7)))),
            ]),
            lets: OrderedMap(vec![(
                "m".into(),
                text(
                    "a ? f(|X|, [1, S[-1]]) : !b || \"x\" == c % 2",
                    Place::Byte(9),
                ),
            )]),
            flops: text("-9223372036854775807 - 1", Place::Byte(1)),
            mread: text("9223372036854775807", Place::Byte(2)),
            mwrite: text("not parsed", Place::LineCol(1, 1)),
            iops: None,
            class: None,
            calls: None,
            // A built-in rule could carry a time formula: it travels too.
            time: Some(text(
                "compute_s / compute_eff + 5 / 1000000",
                Place::Byte(13),
            )),
            params: OrderedMap(vec![("W".into(), text("|W|", Place::Byte(3)))]),
            unsupported: Some("why".into()),
            backward: Some(BackwardDef {
                grads: vec![(
                    "X".into(),
                    GradDef {
                        flops: text("fma ? |Y| : 2 * |Y|", Place::Byte(11)),
                        mread: text("|Y| + |B|", Place::LineCol(7, 3)),
                        mwrite: text("|X|", Place::Byte(12)),
                    },
                )],
                saves: Some("X, B".into()),
            }),
        };
        parse_texts(&mut def);
        // Kept unparsed, as a text the build could not parse is.
        def.mwrite.tree = None;
        let bytes = write_def(&def);
        let back = read_def(&bytes).expect("reads back");
        // Debug shows every field, spans and places included (`==` on trees ignores spans).
        assert_eq!(format!("{back:?}"), format!("{def:?}"));
        let Some(Tree::Formula(e)) = &back.flops.tree else {
            panic!("a formula")
        };
        assert!(matches!(e.kind, ExprKind::Binary(BinOp::Sub, ..)));
        // Every shorter prefix runs out of bytes, and a byte more is refused.
        for n in 0..bytes.len() {
            assert!(read_def(&bytes[..n]).is_none(), "{n} bytes");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(read_def(&longer).is_none());
    }

    /// Damaged bytes read as some definition or none, never a panic, and a
    /// tree nested past the limit is refused before it can overflow the
    /// stack.
    #[test]
    fn damaged_bytes_do_not_panic() {
        let mut def = RuleDef {
            domain: None,
            category: String::new(),
            summary: String::new(),
            doc: String::new(),
            inputs: text("X[N, C]", Place::Byte(0)),
            outputs: text("Y[N]", Place::Byte(0)),
            attrs: OrderedMap::default(),
            lets: OrderedMap::default(),
            flops: text("a * (b + -c) / f(x, [1, 2])[0]", Place::Byte(0)),
            mread: text("0", Place::Byte(0)),
            mwrite: text("0", Place::Byte(0)),
            iops: None,
            class: None,
            calls: None,
            time: None,
            params: OrderedMap::default(),
            unsupported: None,
            backward: Some(BackwardDef::default()),
        };
        parse_texts(&mut def);
        let bytes = write_def(&def);
        for i in 0..bytes.len() {
            for v in [0u8, 1, 2, 9, 10, 0x7f, 0x80, 0xff] {
                let mut b = bytes.clone();
                b[i] = v;
                let _ = read_def(&b);
            }
        }
        // `-` nested 10,000 deep: tag 7 (unary), operator 0, then the operand.
        let mut deep = Vec::new();
        for _ in 0..10_000 {
            deep.extend([7, 0]);
        }
        let mut r = Reader {
            bytes: &deep,
            pos: 0,
        };
        assert!(r.expr(0).is_none());
        assert!(r.pos <= 2 * (MAX_DEPTH + 2));
    }
}
