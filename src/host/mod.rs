//! The built-in reference AHP 1.0.0 host.
