//! aerie-config
