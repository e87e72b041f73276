//! Work orders as bytes (the [`super::wire`] form), to post to a Web Worker and read back there:
//! every variant and field written in order, every tag and length checked when read.

use std::ops::Range;

use super::compare::{Pairing, Values};
use super::scaled::ScaleMap;
use super::wire::{Reader, Writer};
use super::work::{Order, TensorRef};
use crate::gguf::GgmlType;
use crate::model::Dtype;
use crate::plan::Selection;
use crate::safetensors::Dtype as StDtype;

impl Order {
    /// The order as bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut w = Writer::default();
        match self {
            Order::Histogram { tensor, sel, scales, pieces } => {
                w.u64(0);
                tensor.write(&mut w);
                selection(&mut w, sel);
                w.bool(*scales);
                range(&mut w, pieces);
            }
            Order::Scan { units } => {
                w.u64(1).u64(units.len() as u64);
                for (t, pieces) in units {
                    t.write(&mut w);
                    range(&mut w, pieces);
                }
            }
            Order::Sha256 { file, len } => {
                w.u64(2).u64(*file as u64).u64(*len);
            }
            Order::Spans { spans } => {
                w.u64(3).u64(spans.len() as u64);
                for &(file, start, end) in spans {
                    w.u64(file as u64).u64(start).u64(end);
                }
            }
            Order::Npy { tensor } => {
                w.u64(4);
                tensor.write(&mut w);
            }
            Order::Compare { a, b, values, pairing } => {
                w.u64(5);
                a.write(&mut w);
                b.write(&mut w);
                w.bool(*values == Values::All);
                match *pairing {
                    Pairing::Same => w.u64(0),
                    Pairing::Expert { index, stacked_is_b } => w.u64(1).u64(index).bool(stacked_is_b),
                    Pairing::PermutedRows { heads, hf_is_a } => w.u64(2).u64(heads).bool(hf_is_a),
                    Pairing::PlusOne { hf_is_a } => w.u64(3).bool(hf_is_a),
                };
            }
            Order::Scaled { weight, inputs, sel, pieces } => {
                w.u64(6);
                weight.write(&mut w);
                w.u64(inputs.len() as u64);
                for (t, map, divide) in inputs {
                    t.write(&mut w);
                    match *map {
                        ScaleMap::Group { elems } => w.u64(0).u64(elems),
                        ScaleMap::Blocks { cols, rows, block_cols } => w.u64(1).u64(cols).u64(rows).u64(block_cols),
                    };
                    w.bool(*divide);
                }
                selection(&mut w, sel);
                range(&mut w, pieces);
            }
        }
        w.0
    }

    /// An order read back from [`Order::to_bytes`]; `None` for bytes that are not one.
    pub fn from_bytes(bytes: &[u8]) -> Option<Order> {
        let r = &mut Reader(bytes);
        let order = match r.u64()? {
            0 => Order::Histogram {
                tensor: TensorRef::read(r)?,
                sel: read_selection(r)?,
                scales: r.bool()?,
                pieces: read_range(r)?,
            },
            1 => Order::Scan { units: list(r, 8 * 8, |r| Some((TensorRef::read(r)?, read_range(r)?)))? },
            2 => Order::Sha256 { file: index(r)?, len: r.u64()? },
            3 => Order::Spans { spans: list(r, 24, |r| Some((index(r)?, r.u64()?, r.u64()?)))? },
            4 => Order::Npy { tensor: TensorRef::read(r)? },
            5 => Order::Compare {
                a: TensorRef::read(r)?,
                b: TensorRef::read(r)?,
                values: if r.bool()? { Values::All } else { Values::Sample },
                pairing: match r.u64()? {
                    0 => Pairing::Same,
                    1 => Pairing::Expert { index: r.u64()?, stacked_is_b: r.bool()? },
                    2 => Pairing::PermutedRows { heads: r.u64()?, hf_is_a: r.bool()? },
                    3 => Pairing::PlusOne { hf_is_a: r.bool()? },
                    _ => return None,
                },
            },
            6 => Order::Scaled {
                weight: TensorRef::read(r)?,
                inputs: list(r, 8 * 8, |r| {
                    let t = TensorRef::read(r)?;
                    let map = match r.u64()? {
                        0 => ScaleMap::Group { elems: r.u64()? },
                        1 => ScaleMap::Blocks { cols: r.u64()?, rows: r.u64()?, block_cols: r.u64()? },
                        _ => return None,
                    };
                    Some((t, map, r.bool()?))
                })?,
                sel: read_selection(r)?,
                pieces: read_range(r)?,
            },
            _ => return None,
        };
        r.is_empty().then_some(order)
    }
}

impl TensorRef {
    fn write(&self, w: &mut Writer) {
        let dtype = match &self.dtype {
            Dtype::Safetensors(d) => format!("st:{}", d.name()),
            Dtype::Ggml(g) => format!("ggml:{}", g.0),
            Dtype::Unknown(name) => format!("?:{name}"),
        };
        w.bytes(dtype.as_bytes()).u64(self.shape.len() as u64);
        for &d in &self.shape {
            w.u64(d);
        }
        w.u64(self.file as u64).u64(self.offset).u64(self.nbytes).u64(self.file_len);
        let strides = self.strides.as_deref().unwrap_or_default();
        w.u64(strides.len() as u64);
        for &s in strides {
            w.u64(s);
        }
    }

    fn read(r: &mut Reader) -> Option<TensorRef> {
        Some(TensorRef {
            dtype: match String::from_utf8(r.bytes()?).ok()?.split_once(':')? {
                ("st", name) => Dtype::Safetensors(StDtype::from_name(name)?),
                ("ggml", id) => Dtype::Ggml(GgmlType(id.parse().ok()?)),
                _ => return None,
            },
            shape: list(r, 8, |r| r.u64())?,
            file: index(r)?,
            offset: r.u64()?,
            nbytes: r.u64()?,
            file_len: r.u64()?,
            strides: Some(list(r, 8, |r| r.u64())?).filter(|s| !s.is_empty()),
        })
    }
}

fn selection(w: &mut Writer, sel: &Selection) {
    match *sel {
        Selection::Whole => w.u64(0),
        Selection::Elements { start, end } => w.u64(1).u64(start).u64(end),
        Selection::Sample { budget_bytes } => w.u64(2).u64(budget_bytes),
    };
}

fn read_selection(r: &mut Reader) -> Option<Selection> {
    Some(match r.u64()? {
        0 => Selection::Whole,
        1 => Selection::Elements { start: r.u64()?, end: r.u64()? },
        2 => Selection::Sample { budget_bytes: r.u64()? },
        _ => return None,
    })
}

fn range(w: &mut Writer, r: &Range<u64>) {
    w.u64(r.start).u64(r.end);
}

fn read_range(r: &mut Reader) -> Option<Range<u64>> {
    Some(r.u64()?..r.u64()?)
}

fn index(r: &mut Reader) -> Option<usize> {
    usize::try_from(r.u64()?).ok()
}

/// A length-prefixed list of items of at least `min_bytes` each (a length the bytes left cannot
/// hold is refused before allocating).
fn list<T>(r: &mut Reader, min_bytes: usize, mut item: impl FnMut(&mut Reader) -> Option<T>) -> Option<Vec<T>> {
    let n = usize::try_from(r.u64()?).ok()?;
    if n > r.0.len() / min_bytes {
        return None;
    }
    (0..n).map(|_| item(r)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(dtype: Dtype, shape: &[u64]) -> TensorRef {
        let (shape, file, offset, nbytes, file_len) = (shape.to_vec(), 2, 8, 96, 1 << 40);
        TensorRef { dtype, shape, file, offset, nbytes, file_len, strides: None }
    }

    /// One order of each kind, with every variant of what they hold.
    fn every_order() -> Vec<Order> {
        let (a, b) = (t(Dtype::Safetensors(StDtype::F32), &[4, 6]), t(Dtype::Ggml(GgmlType(12)), &[256, 3]));
        let mut out = vec![
            Order::Histogram { tensor: a.clone(), sel: Selection::Whole, scales: true, pieces: 0..u64::MAX },
            Order::Histogram {
                tensor: b.clone(),
                sel: Selection::Elements { start: 3, end: 1 << 33 },
                scales: false,
                pieces: 5..9,
            },
            Order::Histogram {
                tensor: a.clone(),
                sel: Selection::Sample { budget_bytes: 1 << 20 },
                scales: false,
                pieces: 0..1,
            },
            Order::Scan { units: vec![(a.clone(), 0..3), (b.clone(), 7..8)] },
            Order::Scan { units: vec![] },
            Order::Sha256 { file: 7, len: 5 << 30 },
            Order::Spans { spans: vec![(0, 0, 10), (3, 1 << 35, (1 << 35) + 9)] },
            Order::Npy { tensor: b.clone() },
            Order::Npy { tensor: TensorRef { strides: Some(vec![1, 4]), ..a.clone() } },
            Order::Scaled {
                weight: a.clone(),
                inputs: vec![
                    (b.clone(), ScaleMap::Group { elems: 32 }, false),
                    (a.clone(), ScaleMap::Blocks { cols: 7168, rows: 128, block_cols: 128 }, true),
                ],
                sel: Selection::Whole,
                pieces: 2..4,
            },
        ];
        for (values, pairing) in [
            (Values::Sample, Pairing::Same),
            (Values::All, Pairing::Expert { index: 5, stacked_is_b: true }),
            (Values::Sample, Pairing::PermutedRows { heads: 32, hf_is_a: false }),
            (Values::All, Pairing::PlusOne { hf_is_a: true }),
        ] {
            out.push(Order::Compare { a: a.clone(), b: b.clone(), values, pairing });
        }
        out
    }

    #[test]
    fn every_order_survives_bytes_and_cut_or_padded_bytes_are_refused() {
        for order in every_order() {
            let bytes = order.to_bytes();
            assert_eq!(Order::from_bytes(&bytes).as_ref(), Some(&order));
            for cut in 0..bytes.len() {
                assert_eq!(Order::from_bytes(&bytes[..cut]), None, "{order:?} cut at {cut}");
            }
            let mut longer = bytes.clone();
            longer.push(0);
            assert_eq!(Order::from_bytes(&longer), None, "a byte too many");
        }
        assert_eq!(Order::from_bytes(&7u64.to_le_bytes()), None, "no such order");
        // A list claiming more items than bytes: refused before allocating.
        let mut w = Writer::default();
        w.u64(3).u64(u64::MAX >> 4);
        assert_eq!(Order::from_bytes(&w.0), None);
    }
}
