//! Whether an importance matrix or a control vector fits a GGUF model, from the two headers:
//! what `llama-quantize --imatrix` and llama.cpp's `--control-vector` need of the pair.

use crate::gguf::Value;
use crate::model::Checkpoint;

/// The model's architecture and embedding width.
fn model_facts(m: &Checkpoint) -> (Option<&str>, Option<u64>) {
    let arch = m.gguf("general.architecture").and_then(Value::as_str);
    let width = arch.and_then(|a| m.gguf(&format!("{a}.embedding_length"))?.as_u64());
    (arch, width)
}

/// An importance matrix fits a model when the architectures agree (where both state one) and
/// each `X.in_sum2` it holds has a tensor `X` in the model as wide (ggml's `ne[0]`, the inputs
/// the statistics are per) and, for experts, with as many experts; else the first difference.
pub fn imatrix(m: &Checkpoint, imatrix: &Checkpoint) -> Result<(), String> {
    if let (Some(a), Some(b)) = (imatrix.gguf("general.architecture").and_then(Value::as_str), model_facts(m).0) {
        if a != b {
            return Err(format!("the importance matrix is for {a} models, the model is {b}"));
        }
    }
    let mut checked = 0;
    for t in imatrix.tensors.iter() {
        let Some(name) = t.name.strip_suffix(".in_sum2") else { continue };
        let Some(target) = m.tensor(name) else {
            return Err(format!("the model has no {name}, which the importance matrix covers"));
        };
        let experts = |shape: &[u64], at: usize| shape.get(at).copied().unwrap_or(1);
        if t.shape.first() != target.shape.first() || experts(&t.shape, 1) != experts(&target.shape, 2) {
            return Err(format!(
                "{name}: the importance matrix has {:?} statistics, the tensor's shape is {:?}",
                t.shape, target.shape
            ));
        }
        checked += 1;
    }
    match checked {
        0 => Err("the importance matrix holds no statistics to compare".into()),
        _ => Ok(()),
    }
}

/// A control vector fits a model whose embedding width is its directions' (`direction.N`, one
/// per layer `N`); else the first difference. Directions for layers the model does not have
/// are not a difference: llama.cpp applies those it has and leaves the rest.
pub fn control_vector(m: &Checkpoint, cv: &Checkpoint) -> Result<(), String> {
    let (_, width) = model_facts(m);
    let Some(width) = width else { return Err("the model's embedding width is not stated".into()) };
    for t in cv.tensors.iter().filter(|t| t.name.starts_with("direction.")) {
        if t.shape.first() != Some(&width) {
            return Err(format!("{}: directions of {:?} values, the model is {width} wide", t.name, t.shape));
        }
    }
    Ok(())
}
