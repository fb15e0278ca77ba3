//! loopsim world (see its issue).
