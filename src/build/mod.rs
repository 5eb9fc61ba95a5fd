//! Runs the profile's build command, streams and keeps its output, and parses its diagnostics.
