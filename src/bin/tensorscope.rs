//! The `tensorscope` command line.

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let status = tensorscope::cli::run(&args, &mut std::io::stdout().lock(), &mut std::io::stderr().lock());
    std::process::exit(status);
}

#[cfg(target_arch = "wasm32")]
fn main() {}
