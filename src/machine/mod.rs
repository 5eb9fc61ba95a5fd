//! The state machine: states, outcomes, and the one pure transition function.

mod state;

pub use state::{ErrorClass, State};
