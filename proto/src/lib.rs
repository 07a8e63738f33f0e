//! aerie-proto
