//! Host child processes for `exec` (and later workflow `run:` steps).
