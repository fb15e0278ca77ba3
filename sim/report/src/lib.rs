//! loopsim report (see its issue).
