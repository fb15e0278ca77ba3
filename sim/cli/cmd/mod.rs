//! One module per command; each parses nothing itself and wires the libraries together.

pub mod check;
pub mod codes;
pub mod compare;
pub mod diff;
pub mod explore;
pub mod guard;
pub mod import;
pub mod init;
pub mod list;
pub mod live;
pub mod manual;
pub mod replay;
pub mod run;
pub mod sweep;
pub mod validate;
