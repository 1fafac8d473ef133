//! The `lobster` binary: a thin shell over the library.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    std::process::exit(lobster::cli::main(args));
}
