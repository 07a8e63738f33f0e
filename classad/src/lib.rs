//! classad
