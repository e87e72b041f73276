//! What a viewer shows of a whole checkpoint at once: the summary, the kind, each tensor's
//! logical parameters and the memory estimate's inputs. The per-tensor part is gathered in one
//! walk over the tensors, in pieces, so a caller on a UI thread can pause between them; the
//! roles of a quantized checkpoint's tensors (before it) and the kind (after it) are each a
//! pass of their own.

use std::sync::Arc;

use super::describe::describe;
use super::estimate::{Gathering, Inputs};
use super::kind::{kind, Kind};
use super::model::Checkpoint;
use super::st_quant::{params, quant_roles, Role};
use super::summary::{Summary, Tally};

/// The digest of one checkpoint.
#[derive(Clone, Debug, PartialEq)]
pub struct Digest {
    pub summary: Summary,
    pub kind: Kind,
    /// [`describe`] of the kind.
    pub kind_detail: String,
    /// Each tensor's logical parameters ([`crate::st_quant::logical_params`]), by tensor index.
    pub params: Arc<Vec<u64>>,
    pub estimate: Inputs,
}

/// A digest being gathered: [`Digesting::step`] until it returns true, then
/// [`Digesting::finish`].
pub struct Digesting<'a> {
    cp: &'a Checkpoint,
    /// `None`: every tensor is plain.
    roles: Option<Vec<Role>>,
    next: usize,
    params: Vec<u64>,
    tally: Tally<'a>,
    estimate: Gathering,
}

impl<'a> Digesting<'a> {
    pub fn new(cp: &'a Checkpoint) -> Self {
        Digesting {
            cp,
            roles: quant_roles(cp),
            next: 0,
            params: Vec::with_capacity(cp.tensors.len()),
            tally: Tally::default(),
            estimate: Gathering::new(cp),
        }
    }

    /// Take in the next `n` tensors; true once every tensor is taken in.
    pub fn step(&mut self, n: usize) -> bool {
        let cp = self.cp;
        let end = self.next.saturating_add(n).min(cp.tensors.len());
        for (i, t) in cp.tensors.iter().enumerate().take(end).skip(self.next) {
            let role = self.roles.as_ref().map(|r| &r[i]);
            let p = params(t, role);
            self.params.push(p);
            self.tally.add(t, p, role);
            self.estimate.add(t);
        }
        self.next = end;
        end == cp.tensors.len()
    }

    /// The digest; tensors not yet taken in are taken in first.
    pub fn finish(mut self) -> Digest {
        self.step(usize::MAX);
        let kind = kind(self.cp);
        Digest {
            summary: self.tally.finish(),
            kind,
            kind_detail: describe(self.cp, kind),
            params: Arc::new(self.params),
            estimate: self.estimate.finish(),
        }
    }
}

/// The whole digest of `cp` at once.
pub fn digest(cp: &Checkpoint) -> Digest {
    Digesting::new(cp).finish()
}
