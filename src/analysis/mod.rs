//! Log triage, compiler and linker diagnostics, and crash (fault) decoding and symbolisation.
