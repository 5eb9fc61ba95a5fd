//! The run's outputs: report.json, report.md and junit.xml.
