//! argv → request → outcome → stdout/stderr/exit code.

/// Run the CLI with `args` (without the program name); returns the exit code.
pub fn main(_args: Vec<String>) -> i32 {
    0
}
