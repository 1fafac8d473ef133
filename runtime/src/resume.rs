//! Pausing at gates and resuming from tokens.
