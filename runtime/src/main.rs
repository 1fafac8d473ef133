//! The `lobster` binary: a thin shell over the library.

/// mimalloc instead of glibc's malloc: `lobster serve` answers runs from many
/// threads, and glibc's per-thread arenas (allocate on a worker, free on
/// another) cost a quarter of its time under load.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    // `args_os`: a non-UTF-8 argument is a parse error, not a panic.
    let code = match lobster::cli::os_args::utf8_args(std::env::args_os().skip(1).collect()) {
        Ok(args) => lobster::cli::main(args),
        Err(code) => code,
    };
    std::process::exit(code);
}
