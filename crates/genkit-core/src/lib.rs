//! Genkit core.
