//! aerie-tests
