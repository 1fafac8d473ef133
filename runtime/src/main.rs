//! The `lobster` binary: a thin shell over the library.

fn main() {
    // `args_os`: a non-UTF-8 argument is a parse error, not a panic.
    let code = match lobster::cli::os_args::utf8_args(std::env::args_os().skip(1).collect()) {
        Ok(args) => lobster::cli::main(args),
        Err(code) => code,
    };
    std::process::exit(code);
}
