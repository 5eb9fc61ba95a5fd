//! Patch policy: rules as data, risk score, and the approval gate.
