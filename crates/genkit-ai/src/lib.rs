//! placeholder crate root, replaced by the crate's owner
