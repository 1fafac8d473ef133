//! The `lobster` binary: a thin shell over the library.

/// mimalloc instead of glibc's malloc: `lobster serve` answers runs from many
/// threads, and glibc's per-thread arenas (allocate on a worker, free on
/// another) cost a quarter of its time under load.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc's `arena_reserve` option (its index in `mi_option_t`, v3 as
/// built by libmimalloc-sys; the crate has no constant for it).
const MI_OPTION_ARENA_RESERVE: libmimalloc_sys::mi_option_t = 23;
/// mimalloc's `allow_thp` option (index in `mi_option_t`, v3).
const MI_OPTION_ALLOW_THP: libmimalloc_sys::mi_option_t = 43;
/// mimalloc's `destroy_on_exit` option (index in `mi_option_t`, v3).
const MI_OPTION_DESTROY_ON_EXIT: libmimalloc_sys::mi_option_t = 22;

/// Run before `main` and before anything allocates:
/// - mimalloc reserves address space for its arenas 1 GiB at a time, which
///   under `ulimit -v` leaves too little for WebAssembly memories (a guest
///   then sees its `memory.grow` fail instead of the host's memory limit);
///   64 MiB at a time costs nothing measurable;
/// - with transparent huge pages, partly used 2 MiB pages kept `lobster
///   serve`'s RSS growing (203 → 238 MB over 150,000 runs; without them,
///   127 → 130 MB, `runtime/benches/serve.sh`);
/// - at exit mimalloc would collect every heap and give its pages back to
///   the kernel one `madvise` at a time (~40 calls after one `lobster run`)
///   just before the kernel frees the whole address space anyway; a value
///   above 1 makes its exit hook return at once (`_mi_auto_process_done`).
extern "C" fn tune_allocator() {
    // SAFETY: sets plain options before mimalloc's first use.
    unsafe {
        libmimalloc_sys::mi_option_set(MI_OPTION_ARENA_RESERVE, 64 * 1024);
        libmimalloc_sys::mi_option_set(MI_OPTION_ALLOW_THP, 0);
        libmimalloc_sys::mi_option_set(MI_OPTION_DESTROY_ON_EXIT, 2);
    }
}

#[used]
#[link_section = ".init_array"]
static TUNE_ALLOCATOR: extern "C" fn() = tune_allocator;

fn main() {
    // `args_os`: a non-UTF-8 argument is a parse error, not a panic.
    let code = match lobster::cli::os_args::utf8_args(std::env::args_os().skip(1).collect()) {
        Ok(args) => lobster::cli::main(args),
        Err(code) => code,
    };
    std::process::exit(code);
}
