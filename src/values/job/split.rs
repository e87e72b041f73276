//! Operations cut into orders, planned once: each split holds its orders, the bytes they read
//! (a progress bar's total, known before anything runs) and how their replies, in order, make
//! the operation's result — exactly the one a single sequential read gives. The CLI's threads
//! and the browser's workers (or the page, where workers cannot run) carry out the same orders
//! and merge them through the same [`Split`].

use super::check::CheckOutcome;
use super::npy::npy_plan;
use super::scaled::{scaled_plan, ScaleMap};
use super::scan::{plan_target, plan_targets, HistogramSink, NonFiniteSink, ScanOutcome, ValuesError};
use super::work::{piece_ranges, Order, Reply, Takers, TensorRef};
use crate::model::{Checkpoint, Tensor};
use crate::plan::Selection;
use crate::st_quant::scaled_values;

/// A scan order gathers small tensors up to this many bytes of data, or [`ORDER_UNITS`] of them.
const ORDER_BYTES: u64 = 64 << 20;
const ORDER_UNITS: usize = 4096;

/// An operation cut into orders.
pub trait Split {
    /// What the merged replies make.
    type Output;
    /// The orders, to run in any order on any thread or worker.
    fn orders(&self) -> &[Order];
    /// Bytes the orders read, all together.
    fn bytes(&self) -> u64;
    /// The result from the replies to [`Split::orders`], in their order; `None` when a reply
    /// does not answer its order.
    fn merge(self, replies: Vec<Reply>) -> Option<Self::Output>;
}

/// The histogram of a selection of one tensor's values.
pub struct HistogramSplit {
    orders: Vec<Order>,
    bytes: u64,
}

/// The histogram of `sel` over `t` for `takers`; with `scales`, the block scales'
/// histogram too. A weight stored with scales in other tensors is dequantized with them.
pub fn histogram_split(
    cp: &Checkpoint,
    t: &Tensor,
    sel: &Selection,
    scales: bool,
    takers: Takers,
) -> Result<HistogramSplit, ValuesError> {
    let len = |t: &Tensor| cp.files.get(t.file).map_or(0, |f| f.size);
    let refer = |t: &Tensor| TensorRef::of(t, len(t)).ok_or_else(|| ValuesError::Undecodable(t.dtype.name()));
    if let Some(scaled) = cp.tensor_index(&t.name).and_then(|i| scaled_values(cp, i)) {
        let s = scaled.map_err(ValuesError::Scheme)?;
        // Checked here, where an error can be shown, not in a worker.
        let plan = scaled_plan(&s.weight, &s.inputs, sel)?;
        let weight = refer(&s.weight)?;
        let inputs: Vec<(TensorRef, ScaleMap, bool)> =
            s.inputs.iter().map(|i| Ok((refer(&i.tensor)?, i.map, i.divide))).collect::<Result<_, ValuesError>>()?;
        let order = |pieces| Order::Scaled { weight: weight.clone(), inputs: inputs.clone(), sel: sel.clone(), pieces };
        let orders = piece_ranges(&plan, takers).into_iter().map(order).collect();
        return Ok(HistogramSplit { orders, bytes: plan.bytes_of(0..plan.pieces) });
    }
    let plan = plan_target(t, sel)?;
    let tensor = refer(t)?;
    let order = |pieces| Order::Histogram { tensor: tensor.clone(), sel: sel.clone(), scales, pieces };
    let orders = piece_ranges(&plan, takers).into_iter().map(order).collect();
    Ok(HistogramSplit { orders, bytes: plan.bytes_of(0..plan.pieces) })
}

impl Split for HistogramSplit {
    type Output = HistogramSink;

    fn orders(&self) -> &[Order] {
        &self.orders
    }

    fn bytes(&self) -> u64 {
        self.bytes
    }

    fn merge(self, replies: Vec<Reply>) -> Option<HistogramSink> {
        if replies.len() != self.orders.len() {
            return None;
        }
        let parts: Option<Vec<HistogramSink>> = replies
            .into_iter()
            .map(|r| match r {
                Reply::Histogram(h) => Some(*h),
                _ => None,
            })
            .collect();
        Some(HistogramSink::join(parts?))
    }
}

/// One tensor as `.npy` bytes, streamed from a single order (its output goes out in parts as it
/// is decoded; the merge is the last part).
pub struct NpySplit {
    orders: Vec<Order>,
    bytes: u64,
}

/// The `.npy` export of `t` (in a file of `file_len` bytes), refused as the job would refuse it
/// (before any worker starts).
pub fn npy_split(t: &Tensor, file_len: u64) -> Result<NpySplit, ValuesError> {
    let bytes = npy_plan(t)?.bytes;
    let tensor = TensorRef::of(t, file_len).ok_or_else(|| ValuesError::Undecodable(t.dtype.name()))?;
    Ok(NpySplit { orders: vec![Order::Npy { tensor }], bytes })
}

impl Split for NpySplit {
    type Output = Vec<u8>;

    fn orders(&self) -> &[Order] {
        &self.orders
    }

    fn bytes(&self) -> u64 {
        self.bytes
    }

    fn merge(self, replies: Vec<Reply>) -> Option<Vec<u8>> {
        match <[Reply; 1]>::try_from(replies) {
            Ok([Reply::Npy(last)]) => Some(last),
            _ => None,
        }
    }
}

/// The check of a checkpoint: SHA-256 of every file, NaN/Inf counts of every tensor.
pub struct CheckSplit {
    orders: Vec<Order>,
    bytes: u64,
    /// Whether files are hashed (the first orders, one per file).
    sha256: bool,
    /// Per tensor, when scanning: the outcome known without reading, or `None` (counted).
    known: Option<Vec<Option<ScanOutcome>>>,
    /// Per scan order, the tensor of each of its units.
    unit_tensors: Vec<Vec<usize>>,
}

/// The check of `cp` for `takers`: files are hashed in parallel, tensors scanned in pieces,
/// small tensors gathered into one order.
pub fn check_split(cp: &Checkpoint, sha256: bool, scan: bool, takers: Takers) -> CheckSplit {
    let mut orders = Vec::new();
    let mut total = 0u64;
    if sha256 {
        orders.extend(cp.files.iter().enumerate().map(|(file, f)| Order::Sha256 { file, len: f.size }));
        total = cp.files.iter().fold(0, |n, f| n.saturating_add(f.size));
    }
    let mut unit_tensors = Vec::new();
    let known = scan.then(|| {
        let targets = plan_targets(cp);
        // Orders small enough that every worker gets some, even of a set of one tensor.
        let scanned: u64 = targets.iter().filter_map(|t| t.as_ref().ok()).map(|p| p.bytes).sum();
        let order_bytes = ORDER_BYTES.min((scanned / (takers.count() as u64 * 4)).max(1));
        let (mut units, mut tensors, mut bytes) = (Vec::new(), Vec::new(), 0u64);
        for (i, target) in targets.iter().enumerate() {
            let Ok(plan) = target else { continue };
            let Some(tref) = TensorRef::of(&cp.tensors[i], cp.files[plan.file].size) else { continue };
            for pieces in piece_ranges(plan, takers) {
                let piece_bytes = plan.bytes_of(pieces.clone());
                bytes += piece_bytes;
                total = total.saturating_add(piece_bytes);
                units.push((tref.clone(), pieces));
                tensors.push(i);
                if bytes >= order_bytes || units.len() >= ORDER_UNITS {
                    orders.push(Order::Scan { units: std::mem::take(&mut units) });
                    unit_tensors.push(std::mem::take(&mut tensors));
                    bytes = 0;
                }
            }
        }
        if !units.is_empty() {
            orders.push(Order::Scan { units });
            unit_tensors.push(tensors);
        }
        targets.into_iter().map(|t| t.err()).collect()
    });
    CheckSplit { orders, bytes: total, sha256, known, unit_tensors }
}

impl Split for CheckSplit {
    type Output = CheckOutcome;

    fn orders(&self) -> &[Order] {
        &self.orders
    }

    fn bytes(&self) -> u64 {
        self.bytes
    }

    fn merge(self, replies: Vec<Reply>) -> Option<CheckOutcome> {
        if replies.len() != self.orders.len() {
            return None;
        }
        let mut replies = replies.into_iter();
        let mut out = CheckOutcome::default();
        if self.sha256 {
            let files = self.orders.iter().filter(|o| matches!(o, Order::Sha256 { .. })).count();
            let digests: Option<Vec<String>> = replies
                .by_ref()
                .take(files)
                .map(|r| match r {
                    Reply::Sha256(d) => Some(d),
                    _ => None,
                })
                .collect();
            out.digests = Some(digests?);
        }
        if let Some(known) = self.known {
            let mut sums: Vec<NonFiniteSink> = vec![NonFiniteSink::default(); known.len()];
            for (tensors, reply) in self.unit_tensors.iter().zip(replies) {
                let Reply::Scan(counts) = reply else { return None };
                if counts.len() != tensors.len() {
                    return None;
                }
                for (&t, c) in tensors.iter().zip(counts) {
                    let s = &mut sums[t];
                    s.values += c.values;
                    s.nan += c.nan;
                    s.inf += c.inf;
                }
            }
            let outcomes = known.into_iter().zip(sums).map(|(k, sum)| k.unwrap_or(ScanOutcome::Counted(sum)));
            out.scan = Some(outcomes.collect());
        }
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::super::work::order_job;
    use super::super::Job;
    use super::*;
    use crate::model::{Dtype, Extent, FileInfo, Format};
    use crate::safetensors::Dtype as St;

    /// A checkpoint of one file holding F32 tensors of the given byte sizes back to back.
    fn checkpoint(sizes: &[u64]) -> Checkpoint {
        let mut cp = Checkpoint::empty(Format::Safetensors);
        let mut at = 8u64;
        for (i, &n) in sizes.iter().enumerate() {
            let dtype = Dtype::Safetensors(St::F32);
            let shape = vec![n / 4];
            let data = Extent::check(&dtype, &shape, at, n, 8 + sizes.iter().sum::<u64>());
            cp.tensors.push(Tensor {
                name: format!("t{i}"),
                dtype,
                shape,
                file: 0,
                offset: Some(at),
                nbytes: n,
                data,
                strides: None,
            });
            at += n;
        }
        cp.files.push(FileInfo::new("x.safetensors", at));
        cp
    }

    fn job_bytes(orders: &[Order]) -> u64 {
        orders.iter().map(|o| order_job(o).unwrap().progress().total).sum()
    }

    /// A split's bytes, known when it is planned, are what its orders' jobs read.
    #[test]
    fn a_split_knows_the_bytes_its_orders_read() {
        let cp = checkpoint(&[3 << 20, 4, 41 << 17, 0, 1 << 10]);
        for takers in [1, 2, 7].into_iter().flat_map(|n| [Takers::Threads(n), Takers::Workers(n)]) {
            for t in cp.tensors.iter() {
                for sel in [
                    Selection::Whole,
                    Selection::Sample { budget_bytes: 1000 },
                    Selection::Elements { start: 3, end: 70_000 },
                ] {
                    let Ok(split) = histogram_split(&cp, t, &sel, false, takers) else { continue };
                    assert_eq!(split.bytes(), job_bytes(split.orders()), "{} {sel:?} {takers:?}", t.name);
                }
            }
            for (sha, scan) in [(true, true), (true, false), (false, true)] {
                let split = check_split(&cp, sha, scan, takers);
                assert_eq!(split.bytes(), job_bytes(split.orders()), "check {sha} {scan} {takers:?}");
            }
            let split = npy_split(&cp.tensors[2], cp.files[0].size).unwrap();
            assert_eq!(split.bytes(), job_bytes(split.orders()));
            assert_eq!(split.bytes(), 41 << 17);
        }
    }

    /// Replies that do not answer the orders are refused, not merged.
    #[test]
    fn replies_that_do_not_answer_are_refused() {
        let cp = checkpoint(&[1 << 20]);
        let split = histogram_split(&cp, &cp.tensors[0], &Selection::Whole, false, Takers::Threads(2)).unwrap();
        assert!(split.merge(vec![Reply::Sha256(String::new())]).is_none());
        let split = check_split(&cp, true, false, Takers::Threads(2));
        assert!(split.merge(vec![]).is_none());
        let split = npy_split(&cp.tensors[0], cp.files[0].size).unwrap();
        assert_eq!(split.merge(vec![Reply::Npy(vec![1, 2])]), Some(vec![1, 2]));
    }
}
