//! The committed trace, typed, checked by hand.
