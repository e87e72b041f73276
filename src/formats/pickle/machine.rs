//! A pickle machine that only builds a tree. Every opcode of protocols 0–5 is understood; none
//! imports, calls or constructs anything: GLOBAL, STACK_GLOBAL, INST, REDUCE, NEWOBJ, OBJ and
//! BUILD become nodes that record what would be called with what. The memo, the stack, the
//! node count and the marks are bounded; at a limit, or at bytes that do not parse, the machine
//! stops with a [`Stopped`] and the tree built so far is kept.

use crate::hash::HashMap;

/// A node's index in [`Tree::nodes`].
pub type Id = u32;

/// Most nodes one pickle may build (a trainer checkpoint of 10k tensors with optimizer state needs
/// about 200k); at about 72 bytes a node this bounds the tree near 75 MB.
pub const MAX_NODES: usize = 1 << 20;
/// Most memo entries.
pub const MAX_MEMO: usize = 1 << 20;
/// Most open marks (nesting of MARK ... TUPLE / LIST / DICT).
pub const MAX_MARKS: usize = 4096;
/// Longest text or bytes item copied into a node; longer ones keep their position only.
pub const MAX_TEXT: usize = 1 << 20;
/// Longest module plus name a global may have.
pub const MAX_GLOBAL_BYTES: usize = 1024;

/// What a call-like opcode was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallKind {
    Reduce,
    NewObj,
    NewObjEx,
    Inst,
    Obj,
}

/// One value of the tree.
#[derive(Clone, Debug, PartialEq)]
pub enum Node {
    None,
    Bool(bool),
    Int(i64),
    /// An integer too large for `i64`: its little-endian two's-complement bytes (at most 64 kept).
    BigInt(Vec<u8>),
    Float(f64),
    Str(String),
    /// Bytes: kept when short, with their position in the pickle.
    Bytes {
        at: u64,
        len: u64,
        kept: Option<Vec<u8>>,
    },
    Tuple(Vec<Id>),
    List(Vec<Id>),
    Dict(Vec<(Id, Id)>),
    Set(Vec<Id>),
    FrozenSet(Vec<Id>),
    /// `module.name` as GLOBAL, STACK_GLOBAL or INST names it; `at` is the opcode's offset.
    Global {
        module: String,
        name: String,
        at: u64,
    },
    /// What would be called: `func(*args)`, then items and appends set on the result, then
    /// `state` applied by BUILD.
    Call {
        kind: CallKind,
        func: Id,
        args: Id,
        items: Vec<(Id, Id)>,
        appended: Vec<Id>,
        state: Option<Id>,
    },
    /// A persistent id (PERSID / BINPERSID): for torch, the storage a tensor views.
    Persistent(Id),
    /// An extension-registry code (EXT1/2/4): a global by number, unresolved.
    Ext(u32),
    /// An out-of-band buffer (protocol 5).
    Buffer,
}

/// Why the machine stopped before STOP.
#[derive(Clone, Debug, PartialEq)]
pub struct Stopped {
    /// Offset of the opcode that could not be run.
    pub at: u64,
    pub why: String,
}

/// What a pickle builds.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Tree {
    pub nodes: Vec<Node>,
    /// The value STOP returned (the top of the stack when the machine stopped early).
    pub root: Option<Id>,
    /// The protocol PROTO declared (0 when none).
    pub protocol: u8,
    /// Offset just past STOP, when it was reached.
    pub end: Option<u64>,
    /// Why it stopped early, when it did.
    pub stopped: Option<Stopped>,
    /// Whether the bytes ran out before STOP (a longer read may finish it).
    pub truncated: bool,
    /// The first opcode torch's weights-only unpickler does not run, and its offset.
    pub refused_opcode: Option<(u8, u64)>,
}

/// The opcodes `torch.load(weights_only=True)` runs (torch/_weights_only_unpickler.py): GLOBAL,
/// NEWOBJ, REDUCE, BUILD, APPEND(S), SETITEM(S), MARK, TUPLE/1/2/3, NONE, NEWFALSE, NEWTRUE,
/// EMPTY_TUPLE/LIST/DICT/SET, BININT/1/2, BINFLOAT, BINUNICODE, SHORT_BINSTRING, BINPERSID,
/// (LONG_)BINGET, (LONG_)BINPUT, LONG1, PROTO and STOP; any other is refused.
const WEIGHTS_ONLY_OPCODES: [bool; 256] = {
    let ops = b"c\x81Rbaesu(t\x85\x86\x87N\x89\x88)]}\x8fJKMGXUQhjqr\x8a\x80.";
    let mut table = [false; 256];
    let mut i = 0;
    while i < ops.len() {
        table[ops[i] as usize] = true;
        i += 1;
    }
    table
};

struct Machine<'a> {
    b: &'a [u8],
    pos: usize,
    /// Absolute offset of `b[0]`, for the offsets recorded.
    base: u64,
    tree: Tree,
    stack: Vec<Id>,
    marks: Vec<usize>,
    memo: HashMap<u64, Id>,
}

enum Fault {
    Truncated,
    Bad(String),
}

type R<T> = Result<T, Fault>;

fn bad<T>(why: impl Into<String>) -> R<T> {
    Err(Fault::Bad(why.into()))
}

/// Run the pickle in `bytes` (which starts at absolute offset `base`) up to its STOP.
pub fn run(bytes: &[u8], base: u64) -> Tree {
    let mut m = Machine {
        b: bytes,
        pos: 0,
        base,
        tree: Tree::default(),
        stack: Vec::new(),
        marks: Vec::new(),
        memo: HashMap::default(),
    };
    loop {
        let at = m.pos;
        if let Some(&op) = m.b.get(at) {
            if m.tree.refused_opcode.is_none() && !WEIGHTS_ONLY_OPCODES[op as usize] {
                m.tree.refused_opcode = Some((op, base + at as u64));
            }
        }
        match m.step() {
            Ok(true) => {
                m.tree.end = Some(base + m.pos as u64);
                m.tree.root = m.stack.pop();
                break;
            }
            Ok(false) => {}
            Err(f) => {
                let why = match f {
                    Fault::Truncated => {
                        m.tree.truncated = true;
                        "the pickle ends before its STOP opcode".to_owned()
                    }
                    Fault::Bad(w) => w,
                };
                let op = m.b.get(at).copied().unwrap_or(0);
                m.tree.stopped = Some(Stopped { at: base + at as u64, why: format!("opcode 0x{op:02x}: {why}") });
                m.tree.root = m.stack.last().copied();
                break;
            }
        }
    }
    m.tree
}

impl Machine<'_> {
    fn take(&mut self, n: usize) -> R<&[u8]> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.b.len()).ok_or(Fault::Truncated)?;
        let s = &self.b[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    fn u8(&mut self) -> R<u8> {
        Ok(self.take(1)?[0])
    }

    fn le<const N: usize>(&mut self) -> R<[u8; N]> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N)?);
        Ok(a)
    }

    /// A length read as `u64`, checked against the bytes left.
    fn len(&mut self, n: u64) -> R<usize> {
        let left = (self.b.len() - self.pos) as u64;
        if n > left {
            return Err(Fault::Truncated);
        }
        Ok(n as usize)
    }

    /// A text line up to `\n` (the newline dropped).
    fn line(&mut self) -> R<&str> {
        let rest = &self.b[self.pos..];
        let nl = rest.iter().position(|&c| c == b'\n').ok_or(Fault::Truncated)?;
        self.pos += nl + 1;
        std::str::from_utf8(&rest[..nl]).or_else(|_| bad("a text argument is not UTF-8"))
    }

    fn node(&mut self, n: Node) -> R<Id> {
        if self.tree.nodes.len() >= MAX_NODES {
            return bad(format!("more than {MAX_NODES} values; the rest is not read"));
        }
        self.tree.nodes.push(n);
        Ok((self.tree.nodes.len() - 1) as Id)
    }

    fn push(&mut self, n: Node) -> R<()> {
        let id = self.node(n)?;
        self.push_id(id)
    }

    fn push_id(&mut self, id: Id) -> R<()> {
        if self.stack.len() >= MAX_NODES {
            return bad("the stack grows past its limit");
        }
        self.stack.push(id);
        Ok(())
    }

    fn pop(&mut self) -> R<Id> {
        let floor = self.marks.last().copied().unwrap_or(0);
        if self.stack.len() <= floor {
            return bad("pops from an empty stack");
        }
        Ok(self.stack.pop().expect("checked above"))
    }

    fn top(&self) -> R<Id> {
        match self.stack.last() {
            Some(&id) if self.stack.len() > self.marks.last().copied().unwrap_or(0) => Ok(id),
            _ => bad("reads the top of an empty stack"),
        }
    }

    /// Everything above the last mark, which is removed.
    fn pop_mark(&mut self) -> R<Vec<Id>> {
        let m = self.marks.pop().ok_or(Fault::Bad("no MARK to pop to".into()))?;
        Ok(self.stack.split_off(m.min(self.stack.len())))
    }

    fn text(&mut self, n: usize) -> R<()> {
        let at = self.pos;
        let bytes = self.take(n)?;
        let s = match std::str::from_utf8(bytes) {
            Ok(s) if n <= MAX_TEXT => Node::Str(s.to_owned()),
            Ok(_) => Node::Bytes { at: self.base + at as u64, len: n as u64, kept: None },
            Err(_) => return bad("a string is not UTF-8"),
        };
        self.push(s)
    }

    /// A Python 2 `str` (STRING, BINSTRING, SHORT_BINSTRING): text when it is UTF-8, as
    /// `torch.load` decodes it (`encoding="utf-8"`), else bytes.
    fn py2_str(&mut self, n: usize) -> R<()> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.b.len()).ok_or(Fault::Truncated)?;
        if std::str::from_utf8(&self.b[self.pos..end]).is_ok() {
            self.text(n)
        } else {
            self.bytes(n)
        }
    }

    fn bytes(&mut self, n: usize) -> R<()> {
        let at = self.pos;
        let b = self.take(n)?;
        let kept = (n <= MAX_TEXT).then(|| b.to_vec());
        self.push(Node::Bytes { at: self.base + at as u64, len: n as u64, kept })
    }

    fn memo_put(&mut self, key: u64) -> R<()> {
        let id = self.top()?;
        if self.memo.len() >= MAX_MEMO && !self.memo.contains_key(&key) {
            return bad(format!("more than {MAX_MEMO} memo entries"));
        }
        self.memo.insert(key, id);
        Ok(())
    }

    fn memo_get(&mut self, key: u64) -> R<()> {
        let id = *self.memo.get(&key).ok_or_else(|| Fault::Bad(format!("memo entry {key} was never stored")))?;
        self.push_id(id)
    }

    fn int(&mut self, v: i64) -> R<()> {
        self.push(Node::Int(v))
    }

    fn long_bytes(&mut self, n: usize) -> R<()> {
        let b = self.take(n)?.to_vec();
        if n <= 8 {
            let neg = b.last().is_some_and(|&x| x & 0x80 != 0);
            let mut a = [if neg { 0xff } else { 0 }; 8];
            a[..n].copy_from_slice(&b);
            self.int(i64::from_le_bytes(a))
        } else {
            let mut b = b;
            b.truncate(64);
            self.push(Node::BigInt(b))
        }
    }

    fn global(&mut self, module: String, name: String, at: usize) -> R<Id> {
        // Python's dotted names are short; a long one reused through the memo would be copied
        // per use (4,000 uses of a 1 MiB string are 8 GB).
        if module.len() + name.len() > MAX_GLOBAL_BYTES {
            return bad(format!(
                "a global's module and name are {} bytes, over the limit of {MAX_GLOBAL_BYTES}",
                module.len() + name.len()
            ));
        }
        self.node(Node::Global { module, name, at: self.base + at as u64 })
    }

    fn call(&mut self, kind: CallKind, func: Id, args: Id) -> R<()> {
        self.push(Node::Call { kind, func, args, items: vec![], appended: vec![], state: None })
    }

    /// Add items to the dict (or object) `target`.
    fn set_items(&mut self, target: Id, pairs: Vec<(Id, Id)>) -> R<()> {
        match self.tree.nodes.get_mut(target as usize) {
            Some(Node::Dict(d)) => d.extend(pairs),
            Some(Node::Call { items, .. }) => items.extend(pairs),
            _ => return bad("sets items on a value that is not a dict"),
        }
        Ok(())
    }

    fn append(&mut self, target: Id, values: Vec<Id>) -> R<()> {
        match self.tree.nodes.get_mut(target as usize) {
            Some(Node::List(l)) => l.extend(values),
            Some(Node::Set(l)) => l.extend(values),
            Some(Node::Call { appended, .. }) => appended.extend(values),
            _ => return bad("appends to a value that is not a list"),
        }
        Ok(())
    }

    /// Run one opcode; `true` at STOP.
    fn step(&mut self) -> R<bool> {
        let at = self.pos;
        let op = self.u8()?;
        match op {
            b'.' => return Ok(true),
            b'(' => {
                if self.marks.len() >= MAX_MARKS {
                    return bad(format!("more than {MAX_MARKS} nested marks"));
                }
                self.marks.push(self.stack.len());
            }
            b'0' => {
                if self.stack.len() == self.marks.last().copied().unwrap_or(0) && !self.marks.is_empty() {
                    self.marks.pop(); // POP on a mark pops the mark
                } else {
                    self.pop()?;
                }
            }
            b'1' => {
                self.pop_mark()?;
            }
            b'2' => {
                let t = self.top()?;
                self.push_id(t)?;
            }
            b'F' => {
                let v = self.line()?.trim().parse::<f64>().or_else(|_| bad("FLOAT is not a number"))?;
                self.push(Node::Float(v))?;
            }
            b'I' => {
                let l = self.line()?.trim().to_owned();
                match l.as_str() {
                    "00" => self.push(Node::Bool(false))?,
                    "01" => self.push(Node::Bool(true))?,
                    t => self.int(t.parse::<i64>().or_else(|_| bad("INT is not a number"))?)?,
                }
            }
            b'J' => {
                let v = i32::from_le_bytes(self.le()?);
                self.int(v.into())?;
            }
            b'K' => {
                let v = self.u8()?;
                self.int(v.into())?;
            }
            b'M' => {
                let v = u16::from_le_bytes(self.le()?);
                self.int(v.into())?;
            }
            b'L' => {
                let l = self.line()?.trim().trim_end_matches('L').to_owned();
                match (l.parse::<i64>(), decimal_le(&l)) {
                    (Ok(v), _) => self.int(v)?,
                    (Err(_), Some(b)) => self.push(Node::BigInt(b))?,
                    (Err(_), None) => return bad("LONG is not a number"),
                }
            }
            0x8a => {
                let n = self.u8()? as usize;
                self.long_bytes(n)?;
            }
            0x8b => {
                let n = i32::from_le_bytes(self.le()?);
                let n = usize::try_from(n).or_else(|_| bad("LONG4 has a negative length"))?;
                let n = self.len(n as u64)?;
                self.long_bytes(n)?;
            }
            b'N' => self.push(Node::None)?,
            0x88 => self.push(Node::Bool(true))?,
            0x89 => self.push(Node::Bool(false))?,
            b'G' => {
                let v = f64::from_be_bytes(self.le()?);
                self.push(Node::Float(v))?;
            }
            b'S' => {
                let l = self.line()?.trim_end();
                let inner = l
                    .strip_prefix('\'')
                    .and_then(|s| s.strip_suffix('\''))
                    .or_else(|| l.strip_prefix('"').and_then(|s| s.strip_suffix('"')))
                    .ok_or(Fault::Bad("STRING is not quoted".into()))?
                    .to_owned();
                self.push(Node::Str(inner))?;
            }
            b'V' => {
                let l = self.line()?.to_owned();
                self.push(Node::Str(l))?;
            }
            b'T' => {
                let n = i32::from_le_bytes(self.le()?);
                let n = usize::try_from(n).or_else(|_| bad("BINSTRING has a negative length"))?;
                let n = self.len(n as u64)?;
                self.py2_str(n)?;
            }
            b'U' => {
                let n = self.u8()? as usize;
                self.py2_str(n)?;
            }
            b'X' => {
                let n = u32::from_le_bytes(self.le()?);
                let n = self.len(n.into())?;
                self.text(n)?;
            }
            0x8c => {
                let n = self.u8()? as usize;
                self.text(n)?;
            }
            0x8d => {
                let n = u64::from_le_bytes(self.le()?);
                let n = self.len(n)?;
                self.text(n)?;
            }
            b'B' => {
                let n = u32::from_le_bytes(self.le()?);
                let n = self.len(n.into())?;
                self.bytes(n)?;
            }
            b'C' => {
                let n = self.u8()? as usize;
                self.bytes(n)?;
            }
            0x8e | 0x96 => {
                let n = u64::from_le_bytes(self.le()?);
                let n = self.len(n)?;
                self.bytes(n)?;
            }
            0x97 => self.push(Node::Buffer)?,
            0x98 => {
                self.top()?;
            }
            b')' => self.push(Node::Tuple(vec![]))?,
            b't' => {
                let items = self.pop_mark()?;
                self.push(Node::Tuple(items))?;
            }
            0x85..=0x87 => {
                let n = (op - 0x84) as usize;
                let mut items = Vec::with_capacity(n);
                for _ in 0..n {
                    items.push(self.pop()?);
                }
                items.reverse();
                self.push(Node::Tuple(items))?;
            }
            b']' => self.push(Node::List(vec![]))?,
            b'l' => {
                let items = self.pop_mark()?;
                self.push(Node::List(items))?;
            }
            b'}' => self.push(Node::Dict(vec![]))?,
            b'd' => {
                let items = self.pop_mark()?;
                if items.len() % 2 != 0 {
                    return bad("DICT has an odd number of items");
                }
                let pairs = items.chunks(2).map(|p| (p[0], p[1])).collect();
                self.push(Node::Dict(pairs))?;
            }
            0x8f => self.push(Node::Set(vec![]))?,
            0x91 => {
                let items = self.pop_mark()?;
                self.push(Node::FrozenSet(items))?;
            }
            b'a' => {
                let v = self.pop()?;
                let target = self.top()?;
                self.append(target, vec![v])?;
            }
            b'e' | 0x90 => {
                let items = self.pop_mark()?;
                let target = self.top()?;
                self.append(target, items)?;
            }
            b's' => {
                let v = self.pop()?;
                let k = self.pop()?;
                let target = self.top()?;
                self.set_items(target, vec![(k, v)])?;
            }
            b'u' => {
                let items = self.pop_mark()?;
                if items.len() % 2 != 0 {
                    return bad("SETITEMS has an odd number of items");
                }
                let target = self.top()?;
                self.set_items(target, items.chunks(2).map(|p| (p[0], p[1])).collect())?;
            }
            b'c' => {
                let module = self.line()?.to_owned();
                let name = self.line()?.to_owned();
                let g = self.global(module, name, at)?;
                self.push_id(g)?;
            }
            0x93 => {
                let name = self.pop()?;
                let module = self.pop()?;
                let text = |id: Id, nodes: &[Node]| match nodes.get(id as usize) {
                    Some(Node::Str(s)) => Some(s.clone()),
                    _ => None,
                };
                let (Some(module), Some(name)) = (text(module, &self.tree.nodes), text(name, &self.tree.nodes)) else {
                    return bad("STACK_GLOBAL names are not strings");
                };
                let g = self.global(module, name, at)?;
                self.push_id(g)?;
            }
            b'i' => {
                let module = self.line()?.to_owned();
                let name = self.line()?.to_owned();
                let args = self.pop_mark()?;
                let g = self.global(module, name, at)?;
                let args = self.node(Node::Tuple(args))?;
                self.call(CallKind::Inst, g, args)?;
            }
            b'o' => {
                let mut items = self.pop_mark()?;
                if items.is_empty() {
                    return bad("OBJ has no class");
                }
                let cls = items.remove(0);
                let args = self.node(Node::Tuple(items))?;
                self.call(CallKind::Obj, cls, args)?;
            }
            b'R' => {
                let args = self.pop()?;
                let func = self.pop()?;
                self.call(CallKind::Reduce, func, args)?;
            }
            0x81 => {
                let args = self.pop()?;
                let cls = self.pop()?;
                self.call(CallKind::NewObj, cls, args)?;
            }
            0x92 => {
                let _kwargs = self.pop()?;
                let args = self.pop()?;
                let cls = self.pop()?;
                self.call(CallKind::NewObjEx, cls, args)?;
            }
            b'b' => {
                let state = self.pop()?;
                let target = self.top()?;
                match self.tree.nodes.get_mut(target as usize) {
                    Some(Node::Call { state: s, .. }) => *s = Some(state),
                    _ => {
                        // BUILD on a plain value (a global, a dict): record it as a call of nothing.
                        let args = self.node(Node::Tuple(vec![]))?;
                        let id = self.node(Node::Call {
                            kind: CallKind::Reduce,
                            func: target,
                            args,
                            items: vec![],
                            appended: vec![],
                            state: Some(state),
                        })?;
                        let last = self.stack.len() - 1;
                        self.stack[last] = id;
                    }
                }
            }
            b'P' => {
                let l = self.line()?.to_owned();
                let s = self.node(Node::Str(l))?;
                self.push(Node::Persistent(s))?;
            }
            b'Q' => {
                let id = self.pop()?;
                self.push(Node::Persistent(id))?;
            }
            0x82 => {
                let c = self.u8()?;
                self.push(Node::Ext(c.into()))?;
            }
            0x83 => {
                let c = u16::from_le_bytes(self.le()?);
                self.push(Node::Ext(c.into()))?;
            }
            0x84 => {
                let c = i32::from_le_bytes(self.le()?);
                self.push(Node::Ext(c as u32))?;
            }
            b'g' => {
                let k = self.line()?.trim().parse::<u64>().or_else(|_| bad("GET is not a number"))?;
                self.memo_get(k)?;
            }
            b'h' => {
                let k = self.u8()?;
                self.memo_get(k.into())?;
            }
            b'j' => {
                let k = u32::from_le_bytes(self.le()?);
                self.memo_get(k.into())?;
            }
            b'p' => {
                let k = self.line()?.trim().parse::<u64>().or_else(|_| bad("PUT is not a number"))?;
                self.memo_put(k)?;
            }
            b'q' => {
                let k = self.u8()?;
                self.memo_put(k.into())?;
            }
            b'r' => {
                let k = u32::from_le_bytes(self.le()?);
                self.memo_put(k.into())?;
            }
            0x94 => {
                let k = self.memo.len() as u64;
                self.memo_put(k)?;
            }
            0x80 => {
                self.tree.protocol = self.u8()?;
                if self.tree.protocol > 5 {
                    return bad(format!("protocol {} is newer than 5", self.tree.protocol));
                }
            }
            0x95 => {
                let _frame_len = u64::from_le_bytes(self.le()?);
            }
            other => return bad(format!("0x{other:02x} is not a pickle opcode")),
        }
        Ok(false)
    }
}

impl Tree {
    /// The node `id`, or `None` for an id outside the tree.
    pub fn get(&self, id: Id) -> Option<&Node> {
        self.nodes.get(id as usize)
    }

    /// The text of a string node.
    pub fn str(&self, id: Id) -> Option<&str> {
        match self.get(id)? {
            Node::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The value of an integer node.
    pub fn int(&self, id: Id) -> Option<i64> {
        match self.get(id)? {
            Node::Int(v) => Some(*v),
            Node::Bool(b) => Some(i64::from(*b)),
            _ => None,
        }
    }

    /// The items of a tuple or list node.
    pub fn items(&self, id: Id) -> Option<&[Id]> {
        match self.get(id)? {
            Node::Tuple(v) | Node::List(v) => Some(v),
            _ => None,
        }
    }

    /// `(module, name)` of a global node.
    pub fn global(&self, id: Id) -> Option<(&str, &str)> {
        match self.get(id)? {
            Node::Global { module, name, .. } => Some((module, name)),
            _ => None,
        }
    }

    /// Every global the pickle names: `(module, name, offset)`, in the order they occur.
    pub fn globals(&self) -> impl Iterator<Item = (&str, &str, u64)> {
        self.nodes.iter().filter_map(|n| match n {
            Node::Global { module, name, at } => Some((module.as_str(), name.as_str(), *at)),
            _ => None,
        })
    }
}

/// A decimal integer (an optional `-`, then digits) as little-endian two's-complement bytes,
/// as LONG1 stores it: at most 64 bytes kept, like [`Node::BigInt`]. `None` when not a number.
fn decimal_le(text: &str) -> Option<Vec<u8>> {
    let (neg, digits) = match text.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, text),
    };
    if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    // Magnitude, little-endian base 256; one spare byte for the sign. 155 digits fill 64 bytes.
    let mut mag: Vec<u8> = vec![0];
    for d in digits.bytes().take(160) {
        let mut carry = u32::from(d - b'0');
        for b in mag.iter_mut() {
            let v = u32::from(*b) * 10 + carry;
            *b = v as u8;
            carry = v >> 8;
        }
        if carry > 0 {
            mag.push(carry as u8);
        }
    }
    while mag.len() > 1 && mag[mag.len() - 1] == 0 {
        mag.pop();
    }
    if mag.last().is_some_and(|&b| b & 0x80 != 0) {
        mag.push(0);
    }
    if neg {
        // Two's complement: invert and add one.
        let mut carry = 1u16;
        for b in mag.iter_mut() {
            let v = u16::from(!*b) + carry;
            *b = v as u8;
            carry = v >> 8;
        }
    }
    mag.truncate(64);
    Some(mag)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protocol_2_dict_of_lists() {
        // pickle.dumps({'a': [1, 2.5, None, True], 'b': 'x'}, protocol=2)
        let p = b"\x80\x02}q\x00(X\x01\x00\x00\x00aq\x01]q\x02(K\x01G@\x04\x00\x00\x00\x00\x00\x00N\x88eX\x01\x00\x00\x00bq\x03X\x01\x00\x00\x00xq\x04u.";
        let t = run(p, 0);
        assert_eq!(t.stopped, None);
        assert_eq!(t.protocol, 2);
        let Some(Node::Dict(items)) = t.get(t.root.unwrap()) else { panic!("{:?}", t) };
        assert_eq!(items.len(), 2);
        assert_eq!(t.str(items[0].0), Some("a"));
        assert_eq!(t.items(items[0].1).unwrap().len(), 4);
        assert_eq!(t.str(items[1].1), Some("x"));
    }

    #[test]
    fn python_2_strings_are_text_when_utf8_as_torch_load_decodes_them() {
        // Python 2's pickle.dumps(['storage', '\xff'], protocol=2): SHORT_BINSTRING and BINSTRING.
        let t = run(b"\x80\x02]q\x00(U\x07storageq\x01T\x01\x00\x00\x00\xffq\x02e.", 0);
        let items = t.items(t.root.unwrap()).unwrap();
        assert_eq!(t.str(items[0]), Some("storage"));
        assert!(matches!(t.get(items[1]), Some(Node::Bytes { len: 1, .. })), "not UTF-8: kept as bytes");
    }

    #[test]
    fn text_longs_are_stored_as_long1_stores_them() {
        // pickle.dumps(0x1950a86a20f9469cfc6c, protocol=1) and LONG1's own encoding.
        let text = run(b"L119547037146038801333356L\n.", 0);
        let long1 = run(b"\x80\x02\x8a\x0al\xfc\x9cF\xf9 j\xa8P\x19.", 0);
        assert_eq!(text.get(text.root.unwrap()), long1.get(long1.root.unwrap()));
        assert_eq!(decimal_le("-128"), Some(vec![0x80, 0xff]));
        assert_eq!(decimal_le("255"), Some(vec![0xff, 0x00]));
        assert_eq!(decimal_le("12x"), None);
        assert_eq!(decimal_le(&"9".repeat(1000)).map(|b| b.len()), Some(64));
    }

    #[test]
    fn a_reduce_is_recorded_not_run() {
        // pickle.dumps of an os.system reduce, protocol 0.
        let p = b"cposix\nsystem\np0\n(Vecho pwned\np1\ntp2\nRp3\n.";
        let t = run(p, 100);
        assert!(t.stopped.is_none(), "{:?}", t.stopped);
        let Some(Node::Call { func, args, .. }) = t.get(t.root.unwrap()) else { panic!() };
        assert_eq!(t.global(*func), Some(("posix", "system")));
        assert_eq!(t.str(t.items(*args).unwrap()[0]), Some("echo pwned"));
        assert_eq!(t.globals().next().unwrap().2, 100, "the offset of the GLOBAL opcode");
    }

    #[test]
    fn hostile_pickles_stop_with_a_reason() {
        for (p, why) in [
            (&b"\x80\x02h\x05."[..], "never stored"),
            (b"\x80\x02X\xff\xff\xff\x7fabc", "ends before"),
            (b"\x80\x020", "empty stack"),
            (b"\x80\x02\xff.", "not a pickle opcode"),
            (b"\x80\x09.", "newer than 5"),
            (b"\x80\x02(K\x01K\x02K\x03d.", "odd number"),
            (b"\x80\x02K\x01s.", "empty stack"),
        ] {
            let t = run(p, 0);
            let s = t.stopped.as_ref().unwrap_or_else(|| panic!("{p:?} ran"));
            assert!(s.why.contains(why), "{p:?}: {}", s.why);
        }
        // Deep nesting: marks are bounded.
        let deep: Vec<u8> = std::iter::once(0x80).chain([2]).chain(std::iter::repeat_n(b'(', 10_000)).collect();
        assert!(run(&deep, 0).stopped.unwrap().why.contains("nested marks"));
        // A flood of empty lists stops at the node limit, quickly and within memory.
        let mut flood = vec![0x80, 2];
        flood.extend(std::iter::repeat_n(b']', MAX_NODES + 10));
        let t = run(&flood, 0);
        assert!(t.stopped.unwrap().why.contains("values"));
        assert_eq!(t.nodes.len(), MAX_NODES);
        assert!(std::mem::size_of::<Node>() <= 80, "the node bound is a memory bound");
    }

    #[test]
    fn a_list_that_contains_itself_is_a_tree_with_a_cycle_not_a_hang() {
        // l = []; l.append(l); pickle.dumps(l, 2)
        let t = run(b"\x80\x02]q\x00h\x00a.", 0);
        assert!(t.stopped.is_none());
        let root = t.root.unwrap();
        assert_eq!(t.items(root), Some(&[root][..]));
    }
}
