//! Front ends.
