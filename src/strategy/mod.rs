//! Patch strategies: turn evidence into candidate patches.
