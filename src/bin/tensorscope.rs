//! The `tensorscope` command line.

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    // stderr is not held locked: the progress bars write to it from the worker threads.
    let status = tensorscope::cli::run(&args, &mut std::io::stdout().lock(), &mut std::io::stderr());
    std::process::exit(status);
}

#[cfg(target_arch = "wasm32")]
fn main() {}
